"""Concern filtering: the server declares concerns, each client states its preferences."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import mcp_types as mt
from mcp.shared.exceptions import MCPError
from typing_extensions import override

from fastmcp_filtering.concern.rules import ConcernLayer
from fastmcp_filtering.core.concerns import (
    COMPONENT_META_KEY,
    REQUEST_META_ALIAS,
    REQUEST_META_KEY,
    STATE_NAMESPACE,
    Concern,
    ConcernsFromToken,
    component_keys,
    declare_on,
    merge_values,
    parse_config,
)
from fastmcp_filtering.core.errors import OptionError, StateUnavailable
from fastmcp_filtering.core.options import ApplyDefaults, ConcernOptions, resolve_options
from fastmcp_filtering.core.request import (
    RequestInfo,
    add_capabilities,
    client_key,
    custom_result,
    invalid_params,
    load_state,
    request_info,
    request_override,
    save_state,
    unrestricted,
)
from fastmcp_filtering.server.hooks import Marks
from fastmcp_filtering.server.layers import LayerMiddleware, Reach, notify_changes
from fastmcp_filtering.server.wire import report

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fastmcp import FastMCP
    from fastmcp.server.context import Context
    from fastmcp.server.middleware import CallNext, MiddlewareContext
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.server.hooks import ListRequest


logger = logging.getLogger("fastmcp_filtering")

_T = TypeVar("_T")
_R = TypeVar("_R")
_C = TypeVar("_C", bound="FastMCPComponent")


def concerns(values: Mapping[str, str] | None = None, /, **kwargs: str) -> Callable[[_T], _T]:
    """Give a tool, prompt or resource concern values (the proposal's ``_meta.concerns``).

    Works above or below ``@mcp.tool`` / ``@mcp.prompt`` / ``@mcp.resource`` and on
    a component object. Values are unioned with the component's
    ``meta["concerns"]`` and the middleware's ``mapping``; giving one concern two
    different values is a ``ValueError``. Pass a mapping for names that are not
    Python identifiers.

    Example:
        ```python
        @concerns(security="high", cost="minimal")
        @mcp.tool
        def encrypt_data(data: str) -> str: ...
        ```
    """
    merged = merge_values([("@concerns", values or {}), ("@concerns", kwargs)], where="@concerns")
    if not merged:
        raise OptionError("@concerns() needs at least one value: @concerns(security='high')")

    def decorate(target: _T) -> _T:
        declare_on(target, merged)
        return target

    return decorate


_ALIASES = {"listConcerns": "concerns/list", "updateConcerns": "concerns/update"}


class ConcernMiddleware(LayerMiddleware):
    """Concern-based filtering: list only what suits the client's stated preferences.

    The server declares ``concerns`` (``capabilities.concerns`` on ``initialize``
    and ``server/discover``, and ``concerns/list``) and gives components values
    through ``mapping`` (component name or URI to values), ``meta["concerns"]``
    or ``@concerns``. A client configures its preferences in ``initialize`` /
    ``notifications/initialized``, with ``concerns/update``, or for one request
    with ``params._meta["io.github.fastmcp-filtering/concerns"]``. A component is
    listed when, for every concern the client configured (or that has a
    default), the component's value is the one asked for (or stricter, for an
    ``ordered`` concern); components without a value for a concern match any.
    A client that never stated a concern is not filtered, as the proposal
    keeps it for clients that know nothing of concerns; once it states any,
    defaults fill the rest (``apply_defaults="all"``: defaults for every
    client). Listed components carry their values in ``_meta["concerns"]``.
    Calling an excluded tool is refused with the concern that excludes it. This
    is a preference filter, not access control.

    Example:
        ```python
        install(mcp, ConcernMiddleware(
            concerns=[Concern("security", values=["high", "medium", "low"], default="medium")],
            mapping={"encrypt_data": {"security": "high"}},
        ))
        ```
    """

    answers = LayerMiddleware.answers | {
        "initialize",
        "concerns/list",
        "concerns/update",
        *_ALIASES,
    }
    meta_keys = frozenset({REQUEST_META_KEY, REQUEST_META_ALIAS})

    def __init__(
        self,
        *,
        concerns: Iterable[Concern],
        mapping: Mapping[str, Mapping[str, str]] | None = None,
        apply_defaults: ApplyDefaults = "configured",
        authorization: ConcernsFromToken | None = None,
        side_effect_lists: bool = False,
        options: ConcernOptions | None = None,
    ) -> None:
        self.options = resolve_options(
            ConcernOptions, options, {"apply_defaults": apply_defaults}, owner="ConcernMiddleware"
        )
        self.policy_layer = self._layer = ConcernLayer(
            concerns,
            mapping,
            options=self.options,
            authorization=authorization,
            side_effect_lists=side_effect_lists,
        )
        self._concerns = self._layer.concerns
        self._marks = Marks(self._concern_marks)

    @property
    def concerns(self) -> tuple[Concern, ...]:
        """The declared concerns, in declaration order."""
        return tuple(self._concerns.values())

    @property
    def defaults(self) -> dict[str, str]:
        """Each concern's ``default``: what fills the concerns a client did not state."""
        return dict(self._layer.defaults)

    @property
    def apply_defaults(self) -> ApplyDefaults:
        """``"configured"``: defaults apply once a client states a concern; ``"all"``: always."""
        return self._layer.apply_defaults

    def __repr__(self) -> str:
        return (
            f"ConcernMiddleware(concerns={list(self._concerns.values())!r}, "
            f"mapping={self._layer.mapping!r}, apply_defaults={self.apply_defaults!r})"
        )

    def values_of(self, component: FastMCPComponent) -> dict[str, str]:
        """The concern values ``component`` has from ``mapping``, ``meta`` and ``@concerns``.

        Raises ``ValueError`` when the sources disagree or name an undeclared
        concern or value.
        """
        return self._layer.values_of(component)

    def effective(self, configured: Mapping[str, str]) -> dict[str, str]:
        """A client's configuration with the defaults of the concerns it did not configure."""
        return self._layer.effective(configured)

    async def check(self, server: FastMCP) -> None:
        """Check every component's concern values on ``server``; ``ValueError`` on a conflict.

        Call it at startup to fail before serving; meanwhile a component with a
        bad declaration is hidden (and logged). Mapping entries that match no
        component are logged.

        Example:
            ```python
            await middleware.check(mcp)
            ```
        """
        unused = set(self._layer.mapping)
        with unrestricted():
            for components in await _all_components(server):
                for component in components:
                    self.values_of(component)
                    unused -= set(component_keys(component))
        if unused:
            logger.warning(
                "ConcernMiddleware mapping names no component: %s", ", ".join(sorted(unused))
            )

    @override
    def check_meta(self, context: MiddlewareContext[Any], info: RequestInfo) -> None:
        override_config = request_override(info.meta)
        if override_config is not None:
            _, warnings = parse_config(
                override_config, self._concerns, field=f"_meta[{REQUEST_META_KEY!r}]"
            )
            if warnings and context.fastmcp_context is not None:
                # A list result carries them in its _meta (other requests have no place).
                report(context.fastmcp_context.fastmcp, warnings=warnings)

    @override
    async def on_list(self, request: ListRequest[_C]) -> Sequence[_C]:
        return await self.marked(await super().on_list(request))

    @override
    async def marked(self, components: Sequence[_C]) -> Sequence[_C]:
        return self._marks.apply(components)

    def _concern_marks(self, component: FastMCPComponent) -> dict[str, Any]:
        """The proposal's ``_meta.concerns`` of a listed component, when it has values."""
        try:
            values = self.values_of(component)
        except ValueError:
            # Hidden by the policy for its bad declaration; nothing to show.
            return {}
        return {COMPONENT_META_KEY: values} if values else {}

    # -- wire ---------------------------------------------------------------------------

    def _declaration(self) -> list[dict[str, Any]]:
        return [c.to_wire() for c in self._concerns.values()]

    async def _initialize(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        """``initialize`` with the client's concerns (``capabilities.concerns``) stored."""
        info = request_info(context)
        configured: dict[str, str] | None = None
        warnings: list[str] = []
        params = info.params if info is not None else {}
        capabilities = params.get("capabilities")
        if isinstance(capabilities, Mapping) and capabilities.get("concerns") is not None:
            configured, warnings = parse_config(
                capabilities["concerns"], self._concerns, field="capabilities.concerns"
            )
        elif params.get("concerns") is not None:
            configured, warnings = parse_config(
                params["concerns"], self._concerns, field="concerns"
            )
        if configured is None:
            # The result passes this middleware's on_initialize, which announces the concerns.
            return await call_next(context)
        # Stored first, as only a refusal before the handshake is answered reaches the client;
        # a handshake refused further in leaves what was stored before.
        ctx = context.fastmcp_context
        previous = await _store_stated(ctx, info, configured, warnings)
        try:
            return await call_next(context)
        except Exception:
            await _restore(ctx, previous)
            raise

    @override
    def announce(self, result: _R) -> _R:
        return add_capabilities(result, {"concerns": self._declaration()})

    @override
    async def on_notification(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if context.method == "notifications/initialized" and isinstance(context.message, Mapping):
            raw = context.message.get("concerns")
            if raw is not None:
                try:
                    configured, warnings = parse_config(raw, self._concerns, field="concerns")
                except MCPError as exc:
                    # A notification has no reply: keep the previous configuration, say why.
                    logger.warning("notifications/initialized concerns ignored: %s", exc)
                else:
                    await _store_notified(context.fastmcp_context, configured, warnings)
        return await call_next(context)

    @override
    async def answer(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        method = _ALIASES.get(context.method or "", context.method)
        if method == "initialize":
            return await self._initialize(context, call_next)
        if method == "concerns/list":
            return custom_result(request_info(context), {"concerns": self._declaration()})
        if method == "concerns/update":
            return await self._update(context)
        return await super().answer(context, call_next)

    async def _update(self, context: MiddlewareContext[Any]) -> dict[str, Any]:
        info = request_info(context)
        params = context.message if isinstance(context.message, Mapping) else {}
        if "concerns" not in params:
            raise invalid_params(
                "concerns/update needs params.concerns, an object like {'security': 'high'} "
                "that replaces this client's whole configuration; send {} to use the defaults",
                field="concerns",
            )
        configured, warnings = parse_config(params["concerns"], self._concerns, field="concerns")
        if info is not None and self._layer.fixed(modern=info.modern):
            return custom_result(
                info, _per_request(self.effective(configured), configured, warnings)
            )
        ctx = context.fastmcp_context
        if ctx is None:
            raise _cannot_store(info, "no request context")
        try:
            # The store must answer; what it holds may be anything, as this replaces it.
            await load_state(ctx, STATE_NAMESPACE)
            reach = await Reach.of(ctx.fastmcp)
            before = await reach.seen()
            await save_state(ctx, STATE_NAMESPACE, configured)
        except StateUnavailable as exc:
            raise _cannot_store(info, str(exc), identified=client_key(ctx) is not None) from exc
        await notify_changes(ctx, before, await reach.seen())
        return custom_result(info, {"concerns": self.effective(configured), "warnings": warnings})


def _per_request(
    effective: dict[str, str], configured: dict[str, str], warnings: list[str]
) -> dict[str, Any]:
    """``concerns/update`` on 2026-07-28: the configuration to send, nothing stored.

    A list there "MUST NOT vary ... as a side effect of other requests", so the
    update changes none: the reply says so and gives the ``_meta`` to send with
    each request, where the configuration applies.
    """
    return {
        "concerns": effective,
        "warnings": warnings,
        "stored": False,
        "requestMeta": {REQUEST_META_KEY: configured},
        "message": (
            "nothing was stored: on protocol 2026-07-28 a list never changes as a side "
            "effect of another request. Send requestMeta as params._meta on each "
            "tools/list, tools/call and other list or get request to apply these concerns"
        ),
    }


async def _store_stated(
    ctx: Context | None,
    info: RequestInfo | None,
    configured: dict[str, str],
    warnings: list[str],
) -> Any:
    """Store the concerns ``initialize`` states, or refuse the handshake; returns what was
    stored before (for ``_restore``).

    Unstored, the client would count as one that stated none: with
    ``apply_defaults="configured"`` it would see every component, wider than it
    asked, and think its concerns were taken. Refused, it knows (the error says to
    send them with each request instead), as ``concerns/update`` says.
    """
    for warning in warnings:
        logger.info("initialize: %s", warning)
    if ctx is None:
        raise _cannot_store(info, "no request context")
    try:
        previous = await load_state(ctx, STATE_NAMESPACE)
        await save_state(ctx, STATE_NAMESPACE, configured)
    except StateUnavailable as exc:
        raise _cannot_store(info, str(exc), identified=client_key(ctx) is not None) from exc
    return previous


async def _restore(ctx: Context | None, previous: Any) -> None:
    """Put back what was stored before a handshake that was then refused further in."""
    if ctx is None:
        return
    try:
        await save_state(ctx, STATE_NAMESPACE, previous)
    except StateUnavailable as exc:
        logger.warning("initialize refused after storing its concerns, not undone: %s", exc)


async def _store_notified(
    ctx: Context | None, configured: dict[str, str], warnings: list[str]
) -> None:
    """Store the concerns ``notifications/initialized`` states; a notification has no
    reply, so a failure is only logged (a known gap: docs/known-gaps.md)."""
    for warning in warnings:
        logger.info("notifications/initialized: %s", warning)
    try:
        if ctx is None:
            raise StateUnavailable("no request context")
        await save_state(ctx, STATE_NAMESPACE, configured)
    except StateUnavailable as exc:
        logger.warning(
            "notifications/initialized concerns not stored (%s); the client keeps what it "
            "stated before (at initialize, or none) until concerns/update stores some",
            exc,
        )


def _cannot_store(info: RequestInfo | None, reason: str, *, identified: bool = False) -> MCPError:
    hint = (
        f"cannot store concerns for this client ({reason}); send them with each request "
        f"instead: params._meta[{REQUEST_META_KEY!r}] = {{'security': 'high', ...}} on "
        "tools/list, tools/call and the other list and get requests"
    )
    if not identified:
        hint += "; a stateless connection keeps state only for an authenticated client"
    return MCPError(
        code=mt.INTERNAL_ERROR if identified else mt.INVALID_REQUEST,
        message=hint,
        data={"reason": reason, "metaKey": REQUEST_META_KEY},
    )


async def _all_components(server: FastMCP) -> list[list[FastMCPComponent]]:
    return [
        list(await server.list_tools(run_middleware=False)),
        list(await server.list_prompts(run_middleware=False)),
        list(await server.list_resources(run_middleware=False)),
        list(await server.list_resource_templates(run_middleware=False)),
    ]

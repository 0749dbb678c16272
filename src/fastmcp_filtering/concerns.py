"""Concern filtering: the server declares concerns, each client states its preferences."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import mcp_types as mt
from mcp.shared.exceptions import MCPError
from typing_extensions import override

from fastmcp_filtering._catalog import kind_of
from fastmcp_filtering._concerns import (
    COMPONENT_META_KEY,
    MAX_CONFIG_ENTRIES,
    REQUEST_META_KEY,
    Concern,
    check_value,
    component_keys,
    declare_on,
    declared_values_of,
    label,
    merge_values,
    parse_config,
)
from fastmcp_filtering._cursor import LIST_METHODS
from fastmcp_filtering._declarations import validate_name
from fastmcp_filtering._layers import AccessLayer, ClientView
from fastmcp_filtering._protocol import (
    RequestInfo,
    add_capabilities,
    custom_result,
    invalid_params,
    request_info,
)
from fastmcp_filtering._state import StateUnavailable, client_key, load_state, save_state

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from fastmcp.server.context import Context
    from fastmcp.server.middleware import CallNext, MiddlewareContext
    from fastmcp.utilities.components import FastMCPComponent
    from mcp.server.context import CallNext as SDKCallNext
    from mcp.server.context import HandlerResult, ServerRequestContext

__all__ = ["COMPONENT_META_KEY", "REQUEST_META_KEY", "Concern", "ConcernMiddleware", "concerns"]

logger = logging.getLogger("fastmcp_filtering")

_T = TypeVar("_T")
_R = TypeVar("_R")

_STATE_NAMESPACE = "concerns"

_LIST_CHANGED: dict[str, Callable[[], mt.ServerNotification]] = {
    "tool": mt.ToolListChangedNotification,
    "prompt": mt.PromptListChangedNotification,
    "resource": mt.ResourceListChangedNotification,
}


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
        raise ValueError("@concerns() needs at least one value: @concerns(security='high')")

    def decorate(target: _T) -> _T:
        declare_on(target, merged)
        return target

    return decorate


@dataclass(frozen=True, slots=True)
class _ConcernView:
    """One client's effective concerns (its configuration plus the defaults) for one request."""

    layer: ConcernMiddleware
    asked: Mapping[str, str]

    def refusal(self, component: FastMCPComponent) -> str | None:
        return self.layer._refusal(component, self.asked)


class ConcernMiddleware(AccessLayer):
    """Concern-based filtering: list only what suits the client's stated preferences.

    The server declares ``concerns`` (``capabilities.concerns`` on ``initialize``
    and ``server/discover``, and ``concerns/list``) and gives components values
    through ``mapping`` (component name or URI to values), ``meta["concerns"]``
    or ``@concerns``. A client configures its preferences in ``initialize`` /
    ``notifications/initialized``, with ``concerns/update``, or for one request
    with ``params._meta["io.modelcontextprotocol/concerns"]``. A component is
    listed when, for every concern the client configured (or that has a
    default), the component's value is the one asked for (or stricter, for an
    ``ordered`` concern); components without a value for a concern match any.
    Calling an excluded tool is refused with the concern that excludes it. This
    is a preference filter, not access control.

    Example:
        ```python
        mcp.add_middleware(ConcernMiddleware(
            concerns=[Concern("security", values=["high", "medium", "low"], default="medium")],
            mapping={"encrypt_data": {"security": "high"}},
        ))
        ```
    """

    def __init__(
        self,
        *,
        concerns: Iterable[Concern],
        mapping: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        if isinstance(concerns, Concern | str | Mapping):
            raise ValueError(
                "concerns must be a list of Concern: concerns=[Concern('security', values=[...])]"
            )
        declared: dict[str, Concern] = {}
        for concern in concerns:
            if not isinstance(concern, Concern):
                raise ValueError(
                    f"concerns must hold Concern objects, got {type(concern).__name__}: "
                    f"use Concern({concern!r}, values=[...])"
                )
            if concern.name in declared:
                raise ValueError(f"concern {concern.name!r} is declared twice; declare it once")
            declared[concern.name] = concern
        if not declared:
            raise ValueError(
                "ConcernMiddleware needs at least one Concern: "
                "concerns=[Concern('security', values=['high', 'low'])]"
            )
        if len(declared) > MAX_CONFIG_ENTRIES:
            raise ValueError(
                f"{len(declared)} concerns declared; at most {MAX_CONFIG_ENTRIES} are supported"
            )
        self._concerns = declared
        self._mapping = self._check_mapping(mapping)
        self._defaults = {c.name: c.default for c in declared.values() if c.default is not None}
        self._checked: weakref.WeakSet[FastMCP] = weakref.WeakSet()

    def _check_mapping(
        self, mapping: Mapping[str, Mapping[str, str]] | None
    ) -> dict[str, dict[str, str]]:
        if mapping is None:
            return {}
        if not isinstance(mapping, Mapping):
            raise ValueError(
                "mapping must map component names to concern values, like "
                f"{{'encrypt_data': {{'security': 'high'}}}}, got {type(mapping).__name__}"
            )
        checked: dict[str, dict[str, str]] = {}
        for key, values in mapping.items():
            if not isinstance(key, str) or not key:
                raise ValueError(f"mapping keys must be component names or URIs, got {key!r}")
            if not isinstance(values, Mapping):
                raise ValueError(
                    f"mapping[{key!r}] must be an object like {{'security': 'high'}}, "
                    f"got {type(values).__name__}"
                )
            for name, value in values.items():
                self._check_value(name, value, where=f"mapping[{key!r}]")
            checked[key] = dict(values)
        return checked

    def _check_value(self, name: object, value: object, *, where: str) -> None:
        key = validate_name(name, what=f"concern in {where}")
        concern = self._concerns.get(key)
        if concern is None:
            raise ValueError(
                f"{where} uses concern {name!r}, which is not declared; declare "
                f"Concern({name!r}, values=[...]) or use one of {sorted(self._concerns)}"
            )
        check_value(value, what=f"{where} value of concern {name!r}")
        if value not in concern.rank:
            raise ValueError(
                f"{where} gives concern {name!r} the value {value!r}, which is not one of "
                f"its values {list(concern.values)}"
            )

    @property
    def concerns(self) -> tuple[Concern, ...]:
        """The declared concerns, in declaration order."""
        return tuple(self._concerns.values())

    @property
    def defaults(self) -> dict[str, str]:
        """What a client that configured nothing is filtered by: each concern's ``default``."""
        return dict(self._defaults)

    def __repr__(self) -> str:
        return (
            f"ConcernMiddleware(concerns={list(self._concerns.values())!r}, "
            f"mapping={self._mapping!r})"
        )

    def values_of(self, component: FastMCPComponent) -> dict[str, str]:
        """The concern values ``component`` has from ``mapping``, ``meta`` and ``@concerns``.

        Raises ``ValueError`` when the sources disagree or name an undeclared
        concern or value.
        """
        values = declared_values_of(component, self._mapping)
        where = label(component)
        for name, value in values.items():
            self._check_value(name, value, where=where)
        return values

    async def check(self, server: FastMCP) -> None:
        """Check every component's concern values on ``server``; ``ValueError`` on a conflict.

        Runs once per server on its first request; call it at startup to fail
        before serving. Mapping entries that match no component are logged.

        Example:
            ```python
            await middleware.check(mcp)
            ```
        """
        unused = set(self._mapping)
        for components in await _all_components(server):
            for component in components:
                self.values_of(component)
                unused -= set(component_keys(component))
        if unused:
            logger.warning(
                "ConcernMiddleware mapping names no component: %s", ", ".join(sorted(unused))
            )

    # -- the decision -------------------------------------------------------------------

    def effective(self, configured: Mapping[str, str]) -> dict[str, str]:
        """A client's configuration with the defaults of the concerns it did not configure."""
        return {**self._defaults, **configured}

    def _refusal(self, component: FastMCPComponent, asked: Mapping[str, str]) -> str | None:
        what = label(component)
        try:
            values = self.values_of(component)
        except ValueError as exc:
            # A component added after check() with a bad declaration: hide it, loudly.
            logger.error("ConcernMiddleware hides %s: %s", what, exc)
            return f"{what} is unavailable: the server's concern values for it are invalid"
        for name, concern in self._concerns.items():
            wanted = asked.get(name)
            value = values.get(name)
            if wanted is None or value is None or concern.admits(value, wanted):
                continue
            accepted = concern.accepted(wanted)
            asks = f"{name}={wanted!r}" + (
                f" (which accepts {accepted})" if len(accepted) > 1 else ""
            )
            return (
                f"{what} is excluded by concern {name!r}: it is {name}={value!r} and this "
                f"client's concerns ask {asks}. Concerns are a preference filter, not a "
                f"permission: to use it, send concerns/update with {name}: {value!r} (it "
                f"replaces your whole configuration) or set params._meta[{REQUEST_META_KEY!r}] "
                f"to {{{name!r}: {value!r}}} on this request"
            )
        return None

    @override
    async def client_view(self, context: MiddlewareContext[Any]) -> ClientView:
        info = request_info(context)
        override_config = info.meta.get(REQUEST_META_KEY) if info is not None else None
        if override_config is not None:
            configured, _ = parse_config(
                override_config, self._concerns, field=f"_meta[{REQUEST_META_KEY!r}]"
            )
        else:
            configured = await self._stored(context.fastmcp_context)
        return _ConcernView(self, self.effective(configured))

    async def _stored(self, ctx: Context | None) -> dict[str, str]:
        """This client's stored configuration; {} (the defaults) when it cannot be read."""
        if ctx is None:
            return {}
        try:
            raw = await load_state(ctx, _STATE_NAMESPACE)
        except StateUnavailable as exc:
            # Fail closed: the defaults apply, never the configuration of another client.
            if client_key(ctx) is not None:
                logger.warning("ConcernMiddleware uses the default concerns: %s", exc)
            return {}
        return self._sanitize(raw)

    def _sanitize(self, raw: object) -> dict[str, str]:
        """Keep the stored entries the current declarations still allow."""
        if not isinstance(raw, Mapping):
            return {}
        return {
            name: value
            for name, value in raw.items()
            if name in self._concerns
            and isinstance(value, str)
            and value in self._concerns[name].rank
        }

    # -- wire ---------------------------------------------------------------------------

    def _declaration(self) -> list[dict[str, Any]]:
        return [c.to_wire() for c in self._concerns.values()]

    @override
    async def on_message(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if context.fastmcp_context is not None:
            server = context.fastmcp_context.fastmcp
            if server not in self._checked:
                # Claimed before awaiting: clients arriving together must not install twice.
                self._checked.add(server)
                try:
                    # Until the declarations are fixed every request fails, so it is seen.
                    await self.check(server)
                except BaseException:
                    self._checked.discard(server)
                    raise
                # Outermost, like the cursor scope, so it sees the serialized list result.
                server._mcp_server.middleware.insert(0, _ListWarnings(self))
        return await super().on_message(context, call_next)

    @override
    async def on_initialize(
        self,
        context: MiddlewareContext[mt.InitializeRequest],
        call_next: CallNext[mt.InitializeRequest, mt.InitializeResult | None],
    ) -> mt.InitializeResult | None:
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
        result = await call_next(context)
        if configured is not None:
            await self._store_quietly(context.fastmcp_context, configured, warnings, "initialize")
        return None if result is None else self.announce(result)

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
                    await self._store_quietly(
                        context.fastmcp_context, configured, warnings, "notifications/initialized"
                    )
        return await call_next(context)

    async def _store_quietly(
        self, ctx: Context | None, configured: dict[str, str], warnings: list[str], source: str
    ) -> None:
        for warning in warnings:
            logger.info("%s: %s", source, warning)
        if ctx is None:
            return
        try:
            await save_state(ctx, _STATE_NAMESPACE, configured)
        except StateUnavailable as exc:
            logger.warning("%s concerns not stored, the defaults apply: %s", source, exc)

    @override
    async def on_request(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if context.method == "concerns/list":
            return custom_result(request_info(context), {"concerns": self._declaration()})
        if context.method == "concerns/update":
            return await self._update(context)
        return await super().on_request(context, call_next)

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
        ctx = context.fastmcp_context
        if ctx is None:
            raise _cannot_store(info, "no request context")
        try:
            previous = self._sanitize(await load_state(ctx, _STATE_NAMESPACE))
            before = await self._visible(context, self.effective(previous))
            await save_state(ctx, _STATE_NAMESPACE, configured)
        except StateUnavailable as exc:
            raise _cannot_store(info, str(exc), identified=client_key(ctx) is not None) from exc
        after = await self._visible(context, self.effective(configured))
        for kind, notification in _LIST_CHANGED.items():
            if before[kind] != after[kind]:
                await ctx.send_notification(notification())
        return custom_result(info, {"concerns": self.effective(configured), "warnings": warnings})

    async def _visible(
        self, context: MiddlewareContext[Any], asked: Mapping[str, str]
    ) -> dict[str, set[str]]:
        """What a client with ``asked`` would list, by list_changed notification kind."""
        visible: dict[str, set[str]] = {kind: set() for kind in _LIST_CHANGED}
        if context.fastmcp_context is None:
            return visible
        server = context.fastmcp_context.fastmcp
        for components in await _all_components(server):
            # Other layers' decisions do not depend on concerns; only this layer's may change.
            kept = list(components)
            for middleware in server.middleware:
                if isinstance(middleware, AccessLayer) and middleware is not self and kept:
                    kept = await middleware._keep(context, kept)
            for component in kept:
                if self._refusal(component, asked) is None:
                    kind = kind_of(component)
                    bucket = "resource" if kind == "template" else kind
                    visible[bucket].add(f"{kind}:{component_keys(component)[-1]}")
        return visible


class _ListWarnings:
    """SDK-level middleware: a list request's ``_meta`` override reports ignored names.

    FastMCP list hooks return components, not the result, so the ``warnings`` a
    per-request override earns are added to the serialized list result here.
    """

    def __init__(self, layer: ConcernMiddleware) -> None:
        self._layer = weakref.ref(layer)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: SDKCallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        layer = self._layer()
        params = ctx.params
        if layer is None or ctx.method not in LIST_METHODS or not isinstance(params, Mapping):
            return result
        meta = params.get("_meta")
        override_config = meta.get(REQUEST_META_KEY) if isinstance(meta, Mapping) else None
        if override_config is None or not isinstance(result, dict):
            return result
        # The list hooks already validated it; a bad override never gets this far.
        _, warnings = parse_config(override_config, layer._concerns, field=REQUEST_META_KEY)
        if warnings:
            result = {**result, "warnings": [*result.get("warnings", []), *warnings]}
        return result


def _cannot_store(info: RequestInfo | None, reason: str, *, identified: bool = False) -> MCPError:
    hint = (
        f"cannot store concerns for this client ({reason}); send them with each request "
        f"instead: params._meta[{REQUEST_META_KEY!r}] = {{'security': 'high', ...}} on "
        "tools/list, tools/call and the other list and get requests"
    )
    if not identified and info is not None and info.modern:
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

"""One list hook for the four list methods, one runtime per server set up once, ``_meta`` marks."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from fastmcp.server.middleware import Middleware
from fastmcp.server.middleware.dereference import DereferenceRefsMiddleware
from fastmcp.server.middleware.tool_injection import ToolInjectionMiddleware
from fastmcp.utilities.json_schema import dereference_refs
from typing_extensions import override

from fastmcp_filtering._fastmcp import (
    check_headers_as_listed,
    mount_paths,
    sdk_middleware,
    serving_server,
)
from fastmcp_filtering.core.catalog import same_kind
from fastmcp_filtering.core.errors import OptionError
from fastmcp_filtering.core.request import current_scope, request_info, request_memo, scoped
from fastmcp_filtering.policy.access import current_principal
from fastmcp_filtering.policy.renderers import VisibleRenderers, is_renderer
from fastmcp_filtering.server.injection import JudgedInjection, injections_to_judge
from fastmcp_filtering.server.mounts import judged_above, mount_under
from fastmcp_filtering.server.tasks import GUARDED_METHODS, TaskGuard
from fastmcp_filtering.server.transform import LISTERS, AccessTransform
from fastmcp_filtering.server.wire import Wire

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Mapping, Sequence

    import mcp_types as mt
    from fastmcp import FastMCP
    from fastmcp.prompts.base import Prompt
    from fastmcp.resources.base import Resource
    from fastmcp.resources.template import ResourceTemplate
    from fastmcp.server.middleware import CallNext, MiddlewareContext
    from fastmcp.tools.base import Tool
    from fastmcp.utilities.components import FastMCPComponent
    from mcp.server.connection import Connection

    from fastmcp_filtering.core.catalog import Catalog, ComponentKind
    from fastmcp_filtering.core.request import RequestInfo
    from fastmcp_filtering.policy.decision import PolicyLayer

_C = TypeVar("_C", bound="FastMCPComponent")
_R = TypeVar("_R")

# Where a server holds its runtime: one attribute of the server object, written only by
# FilteringRuntime's constructor (FastMCP has no slot for it, and keeps no __slots__).
_RUNTIME_ATTRIBUTE = "_fastmcp_filtering_runtime"


class FilteringRuntime:
    """The package's state for one server: what is set up, the chain judged, task guard, wire.

    Made once per server, by ``install`` (``add_filtering``), or else by the first
    ``set_up`` (FastMCP's first sight of a middleware added with ``mcp.add_middleware``),
    and kept on the server object itself, so it lives exactly as long as the
    server: every piece of per-server state the package keeps is an attribute
    here. Per-client state stays in FastMCP's state store.

    Example:
        ```python
        install(mcp, FilterMiddleware(groups=groups))
        assert FilteringRuntime.of(mcp).set_up  # the middlewares set up, in order
        ```
    """

    def __init__(self, server: FastMCP) -> None:
        self.set_up: list[Middleware] = []
        """The package's middlewares set up on the server so far, in order."""
        self.chain: tuple[object, ...] = ()
        """The server's middlewares, and the providers of every server in its mount tree,
        when last set up or checked (held, so no id is reused): a middleware added or
        swapped in since may inject tools, a server mounted since must answer to this one."""
        self.guard = TaskGuard(server)
        """The server's background-task guard, added behind a ``Gate`` by the first setup."""
        self.wire: Wire | None = None
        """The server's ``Wire`` at the SDK's dispatch, once installed."""
        setattr(server, _RUNTIME_ATTRIBUTE, self)

    def __repr__(self) -> str:
        return f"FilteringRuntime(set_up={self.set_up!r})"

    @staticmethod
    def of(server: FastMCP) -> FilteringRuntime | None:
        """The runtime of ``server``; None before its first setup."""
        runtime = vars(server).get(_RUNTIME_ATTRIBUTE)
        return runtime if isinstance(runtime, FilteringRuntime) else None

    @classmethod
    def ensure(cls, server: FastMCP) -> FilteringRuntime:
        """The runtime of ``server``, made the first time."""
        return cls.of(server) or cls(server)

    def install_guard(self, server: FastMCP) -> TaskGuard:
        """The task guard, added to ``server`` behind a ``Gate`` the first time."""
        guard = self.guard
        if not any(isinstance(m, Gate) and m.inner is guard for m in server.middleware):
            self.add(server, Gate(guard, GUARDED_METHODS))
        return guard

    def chain_changed(self, server: FastMCP) -> bool:
        """Whether a middleware, a provider or a mount changed since the last check.

        Checked once per request, by the first of the server's middlewares it reaches:
        nothing a request does changes its own chain, and each check walks every
        middleware and mounted provider.
        """
        memo = request_memo()
        if memo is not None:
            if memo.get(("chain checked", id(self))) is self:
                return False
            memo[("chain checked", id(self))] = self
        seen = self.chain
        chain = _chain_of(server)
        return len(seen) != len(chain) or any(a is not b for a, b in zip(seen, chain, strict=True))

    def set_up_server(self, server: FastMCP) -> list[Middleware]:
        """``set_up`` for this runtime's server."""
        done = self.set_up
        before = list(server.middleware)
        for middleware in before:
            if isinstance(middleware, ListHooks) and not any(middleware is d for d in done):
                middleware.setup(server)
        self._judge_injections(server)
        refuse_shared_caches(server)
        _judge_mounted(server)
        if self.wire is None:
            # Its answers may hold a mounted server's shaped ones, whatever its own middlewares.
            # Outermost at the SDK's dispatch: it sees the wire params before validation, and
            # the final result with the server's hints filled in.
            self.wire = Wire(server, _own_layers)
            sdk_middleware(server).insert(0, self.wire)
        # FastMCP's schema cache for Mcp-Param-* checks holds what any client listed.
        check_headers_as_listed(server)
        self._prefilled_last(server)
        self.chain = _chain_of(server)
        # Prefilled answers only as the innermost: a request under way goes without it.
        added = (m for m in server.middleware if not any(m is b for b in before))
        return [m for m in added if not isinstance(m, Prefilled)]

    def recheck(self, server: FastMCP) -> None:
        """Judge what was added or mounted since the last check (every request, until removed)."""
        self._judge_injections(server)
        refuse_shared_caches(server)
        _judge_mounted(server)
        self._prefilled_last(server)
        self.chain = _chain_of(server)

    def add(self, server: FastMCP, middleware: Middleware) -> None:
        """Add ``middleware`` to ``server``'s chain: the one way the package adds one."""
        server.add_middleware(middleware)

    def _judge_injections(self, server: FastMCP) -> None:
        # FastMCP lists injected tools past every transform: each other injection
        # middleware is wrapped, so the policy judges its tools too.
        chain = server.middleware
        for position, judged in injections_to_judge(
            server, own=lambda m: isinstance(m, ListHooks)
        ).items():
            chain[position] = judged

    def _prefilled_last(self, server: FastMCP) -> None:
        """Make ``Prefilled`` the innermost middleware of a server whose search prefills its
        listings: the one place a chain is reordered, when it is set up or has changed."""
        chain = server.middleware
        if chain and isinstance(chain[-1], Prefilled):
            return
        if not any(isinstance(m, ListHooks) and m.prefills for m in self.set_up):
            return
        found = next((m for m in chain if isinstance(m, Prefilled)), None)
        if found is not None:
            chain.remove(found)
        chain.append(found or Prefilled())
        memo = request_memo()
        if memo is not None:
            # This request's chain was built before: Prefilled is not its innermost.
            memo[_PREFILL_MOVED] = True


def _chain_of(server: FastMCP) -> tuple[object, ...]:
    return (*server.middleware, *_providers_below(server))


def _providers_below(server: FastMCP) -> tuple[object, ...]:
    # A mounted server's own requests never pass this server's middlewares: a mount into
    # it is only seen here.
    below = [_providers_below(child) for child, _ in mount_paths(server)]
    return (*server.providers, *(p for providers in below for p in providers))


def _judge_mounted(server: FastMCP) -> None:
    """Set up each server mounted into ``server``: the parent looks its components up by
    name through its transforms alone, so its policy must be in place before the parent's
    first lookup; and whatever it looks up by itself answers to ``server``'s policy."""
    for child, renames in mount_paths(server):
        mount_under(child, server, renames)
        set_up(child)


def set_up_on(server: FastMCP) -> tuple[Middleware, ...]:
    """The package's middlewares set up on ``server`` so far, in order."""
    runtime = FilteringRuntime.of(server)
    return tuple(runtime.set_up) if runtime is not None else ()


def set_up(server: FastMCP) -> list[Middleware]:
    """Set up every middleware of the package in ``server.middleware`` that is not set up yet.

    Each is set up once per server, in the server's order, on the server's one
    ``FilteringRuntime`` (made the first time). Returns the FastMCP
    middlewares that setting up appended to the server (the task guard, an
    access middleware), which a request already under way has not passed through.

    Example:
        ```python
        mcp.add_middleware(FilterMiddleware(groups=groups))
        set_up(mcp)  # what the first request would otherwise do
        ```
    """
    return FilteringRuntime.ensure(server).set_up_server(server)


def refuse_shared_caches(server: FastMCP) -> None:
    """Raise ``ValueError`` when FastMCP's response cache would answer for the package.

    ``ResponseCachingMiddleware`` keys a list by access token alone (every
    anonymous client shares one entry) and a call by token and arguments: it
    would hand one client the list or the result another client's groups,
    concerns or ``filter``/``query`` produced, wider than its own. No key it
    offers is per client, so the combination is refused rather than half-served.
    """
    from fastmcp.server.middleware.caching import ResponseCachingMiddleware

    if any(isinstance(m, ResponseCachingMiddleware) for m in server.middleware):
        raise OptionError(
            "ResponseCachingMiddleware cannot run beside fastmcp-filtering: it keys cached "
            "lists by access token alone (all anonymous clients share one), so one client "
            "would get the tools or a result that another client's enabled groups, concerns, "
            "filter or query produced. Remove ResponseCachingMiddleware from the server, or "
            "cache inside the tools that are slow."
        )


def _own_layers(server: FastMCP) -> Sequence[PolicyLayer]:
    """The policy layers of ``server``'s own ``AccessTransform`` (none without one)."""
    transform = AccessTransform.of(server)
    return transform.layers if transform is not None else ()


def _seen_by_fastmcp(middleware: ListHooks) -> None:
    """Set up the server FastMCP asks ``middleware`` for its tools on, the first time.

    FastMCP asks every ``ToolInjectionMiddleware`` of a server for its tools when
    the server starts (to find task tools, before it serves anything) and at
    each tool lookup, with the server in ``get_server()``: a middleware added
    with ``mcp.add_middleware`` sets its server up there, before any message.
    """
    if middleware._seen:
        return
    server = serving_server()
    if server is None:
        return
    middleware._seen = True
    set_up(server)


def _through(
    middlewares: Sequence[Middleware], call_next: CallNext[Any, Any]
) -> CallNext[Any, Any]:
    """``call_next`` behind ``middlewares`` (outermost first), as FastMCP chains them."""
    chain = call_next
    for middleware in reversed(middlewares):

        async def step(
            context: MiddlewareContext[Any],
            middleware: Middleware = middleware,
            call_next: CallNext[Any, Any] = chain,
        ) -> Any:
            return await middleware(context, call_next)

        chain = step
    return chain


def install_task_guard(server: FastMCP) -> TaskGuard:
    """The server's ``TaskGuard`` (its runtime's), added behind a ``Gate`` the first time."""
    return FilteringRuntime.ensure(server).install_guard(server)


@dataclass(frozen=True, slots=True)
class ListRequest(Generic[_C]):
    """One list request as a list hook sees it: its kind, its context, the rest of the chain."""

    kind: ComponentKind
    context: MiddlewareContext[Any]
    call_next: CallNext[Any, Sequence[_C]]

    async def rest(self) -> Sequence[_C]:
        """What the rest of the chain lists for this request."""
        return await self.call_next(self.context)


class Gate(Middleware):
    """Hands ``inner`` only the requests whose method it handles; the rest pass straight by.

    FastMCP runs every middleware for every message; a middleware that handles a few
    methods (the task guard: ``tasks/*`` and ``tools/call``) is wrapped in one, so a
    listing never runs its code.
    """

    def __init__(self, inner: Middleware, methods: frozenset[str]) -> None:
        self.inner = inner
        self.methods = methods

    def __repr__(self) -> str:
        return f"Gate({self.inner!r}, methods={sorted(self.methods)!r})"

    @override
    async def __call__(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        if context.method in self.methods:
            return await self.inner(context, call_next)
        return await call_next(context)


@dataclass(slots=True)
class _Prefill:
    message: object
    """The request it answers."""
    page: Sequence[Tool]
    used: bool = False


# Where this wire request's page waits for ``Prefilled`` (``core.request.request_memo``).
_PREFILL = ("prefill",)
# Set in a request during which the setup moved or added ``Prefilled``.
_PREFILL_MOVED = ("prefill", "moved")


class Prefilled(Middleware):
    """The innermost middleware: answers a search's ``tools/list`` with the page it ranked.

    Every other middleware runs as for any listing (its hooks, its marks), on
    the page instead of the whole catalog. Passes every other request through.
    """

    @override
    async def __call__(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        if context.method != "tools/list":
            return await call_next(context)
        return await super().__call__(context, call_next)

    @override
    async def on_list_tools(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Sequence[Tool]]
    ) -> Sequence[Tool]:
        memo = request_memo()
        prefill: _Prefill | None = memo.get(_PREFILL) if memo is not None else None
        if prefill is not None and not prefill.used and prefill.message is context.message:
            prefill.used = True
            return prefill.page
        return await call_next(context)


async def through_chain(
    page: Sequence[Tool], context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
) -> tuple[bool, Sequence[Tool]]:
    """``page`` as the rest of the chain returns it, and True; or False and the chain's own
    listing when ``Prefilled`` did not answer (it was not the innermost middleware)."""
    memo = request_memo()
    if memo is None:
        return False, await call_next(context)
    prefill = _Prefill(context.message, page)
    held = memo.get(_PREFILL)
    memo[_PREFILL] = prefill
    try:
        result = await call_next(context)
    finally:
        memo[_PREFILL] = held
    return prefill.used, result


def prefill_ready(server: FastMCP) -> bool:
    """Whether ``Prefilled`` is the innermost middleware of this request's chain: the
    server's is, and its setup did not move it while this request was under way."""
    chain = server.middleware
    if not chain or not isinstance(chain[-1], Prefilled):
        return False
    memo = request_memo()
    return memo is None or not memo.get(_PREFILL_MOVED)


async def _renderers_judged(
    context: MiddlewareContext[Any], call_next: CallNext[Any, Sequence[_C]]
) -> Sequence[_C]:
    """A resources list without the Prefab renderers of tools this client cannot see."""
    listed = await call_next(context)
    if not any(_renderer(c) for c in listed):
        return listed
    # FastMCP synthesizes a Prefab renderer resource for every Prefab tool from the
    # providers' storage, past every transform: keep those of tools this client sees.
    server = context.fastmcp_context.fastmcp if context.fastmcp_context else None
    visible = (
        VisibleRenderers([])
        if server is None
        else VisibleRenderers.of_tools(await server.list_tools())
    )
    return [c for c in listed if not _renderer(c) or visible.allows(str(getattr(c, "uri", "")))]


def _renderer(component: FastMCPComponent) -> bool:
    return is_renderer(str(getattr(component, "uri", "")))


class Announces(Middleware):
    """Hands each ``initialize`` and ``server/discover`` result to one ``announced``.

    FastMCP runs the typed hooks where the result is still a model (since 4.2,
    ``on_request`` and ``on_message`` run at the wire, around the serialized
    result): what a middleware adds to the handshake, it adds here, in both eras.

    Example:
        ```python
        class Motd(Announces):
            async def announced(self, context, result):
                return result.model_copy(update={"instructions": "Be kind."})
        ```
    """

    async def announced(self, context: MiddlewareContext[Any], result: _R) -> _R:
        """The handshake result as the client gets it; unchanged unless overridden."""
        return result

    @override
    async def on_initialize(
        self,
        context: MiddlewareContext[mt.InitializeRequest],
        call_next: CallNext[mt.InitializeRequest, mt.InitializeResult | None],
    ) -> mt.InitializeResult | None:
        result = await call_next(context)
        return None if result is None else await self.announced(context, result)

    @override
    async def on_discover(
        self,
        context: MiddlewareContext[mt.DiscoverRequest],
        call_next: CallNext[mt.DiscoverRequest, mt.DiscoverResult | dict[str, Any]],
    ) -> mt.DiscoverResult | dict[str, Any]:
        return await self.announced(context, await call_next(context))


class RoutesLists(Middleware):
    """Routes tools, prompts, resources and templates lists to one ``on_list``.

    ``list_params`` declares the parameters one of which a list must carry for
    ``on_list`` to run at all; ``judges_renderers`` keeps a resources list to the
    Prefab renderers of tools the client sees.

    Example:
        ```python
        class Shorter(RoutesLists):
            async def on_list(self, request):
                return (await request.rest())[:10]
        ```
    """

    list_params: frozenset[str] | None = None
    """Parameters one of which a list must carry for ``on_list`` to run; None: every list."""
    judges_renderers: bool = False
    """Whether a resources list keeps only the Prefab renderers of tools the client sees."""

    @override
    async def on_list_tools(
        self,
        context: MiddlewareContext[mt.ListToolsRequest],
        call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        return await self._listed(context, call_next, "tool")

    @override
    async def on_list_prompts(
        self,
        context: MiddlewareContext[mt.ListPromptsRequest],
        call_next: CallNext[mt.ListPromptsRequest, Sequence[Prompt]],
    ) -> Sequence[Prompt]:
        return await self._listed(context, call_next, "prompt")

    @override
    async def on_list_resources(
        self,
        context: MiddlewareContext[mt.ListResourcesRequest],
        call_next: CallNext[mt.ListResourcesRequest, Sequence[Resource]],
    ) -> Sequence[Resource]:
        return await self._listed(context, call_next, "resource")

    @override
    async def on_list_resource_templates(
        self,
        context: MiddlewareContext[mt.ListResourceTemplatesRequest],
        call_next: CallNext[mt.ListResourceTemplatesRequest, Sequence[ResourceTemplate]],
    ) -> Sequence[ResourceTemplate]:
        return await self._listed(context, call_next, "template")

    async def on_list(self, request: ListRequest[_C]) -> Sequence[_C]:
        """What a list shows; passes through unless overridden."""
        return await request.rest()

    async def _listed(
        self,
        context: MiddlewareContext[Any],
        call_next: CallNext[Any, Sequence[_C]],
        kind: ComponentKind,
    ) -> Sequence[_C]:
        if kind == "resource" and self.judges_renderers:
            call_next = functools.partial(_renderers_judged, call_next=call_next)
        params = self.list_params
        if params is not None:
            info = request_info(context)
            if (
                info is None
                or all(info.params.get(p) is None for p in params)
                # The client's listing read as candidates: its query and filter aside.
                or current_scope().as_listed
            ):
                return await call_next(context)
        return await self.on_list(ListRequest(kind, context, call_next))


class ListHooks(ToolInjectionMiddleware, Announces, RoutesLists):
    """The package's middleware base: lists routed to one ``on_list`` (``RoutesLists``).

    ``initialize`` and ``server/discover`` results pass through one ``announce``,
    where a middleware adds its capabilities and instructions in both eras.

    ``setup`` runs once per server: when ``install`` or ``add_filtering`` adds
    the middleware, or, for one added with ``mcp.add_middleware`` or
    ``FastMCP(middleware=[...])``, when the server starts (FastMCP asks it, a
    ``ToolInjectionMiddleware``, for its tools) or else when the first message
    reaches it (before anything of that message is looked up; the middlewares
    setting up adds also see that message). It installs the server's ``TaskGuard``
    (``server.tasks``); ``set_up`` then installs the server's ``Wire``, which binds
    pagination cursors to the parameters that shape a listing, since every
    middleware of the package narrows or reorders lists. ``meta_tools`` are the
    tools it adds to the server.

    What a subclass takes part in is declared as data, so a request it has nothing
    to do with passes by without running its code: ``answers`` (the methods its
    ``answer`` handles), ``list_params`` (the parameters a list must carry for its
    ``on_list``), ``meta_keys`` (the request ``_meta`` keys its ``check_meta``
    validates), ``catalog`` (whose session-era clients are remembered, and whose
    version its ``meta_tools`` follow).
    """

    answers: frozenset[str] = frozenset()
    """Request methods this middleware answers or checks in ``answer``."""
    meta_keys: frozenset[str] = frozenset()
    """Request ``_meta`` keys ``check_meta`` validates, before any lookup."""
    catalog: Catalog | None = None
    """The declarations this middleware shares, if any."""
    prefills: bool = False
    """Whether it answers listings from a page it made (setup keeps ``Prefilled`` innermost)."""
    _meta_built: tuple[int | None, dict[str, Tool]] | None = None
    # Whether FastMCP has asked this middleware for its tools with a server to serve
    # (``_seen_by_fastmcp``), and whether a message has reached it (``serving`` ran).
    _seen: bool = False
    _served: bool = False
    # Whether the class has a hook of its own that a tools/call runs, beyond ``pass_call``:
    # then a call never passes by.
    _hooks_calls: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A class that defines pass_call declares its on_call_tool does just that.
        declares = cast("type[ListHooks]", next(k for k in cls.__mro__ if "pass_call" in vars(k)))
        # Decided once per class, not per call (hooks are methods of the class).
        cls._hooks_calls = (
            cls.on_call_tool is not declares.on_call_tool
            or cls.on_message is not ListHooks.on_message
            or cls.on_request is not ListHooks.on_request
        )

    async def pass_call(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        """What a ``tools/call`` that passes this middleware by runs of it: nothing here.

        A subclass whose ``on_call_tool`` only wraps the call (a refusal worded
        on the way back) defines both, the hook calling this; a call that passes
        by then runs this alone, without FastMCP's dispatch of every other hook.

        Example:
            ```python
            async def pass_call(self, context, call_next):
                try:
                    return await call_next(context)
                except NotFoundError:
                    raise ToolError("Unknown tool; search_tools finds tools") from None
            ```
        """
        return await call_next(context)

    def meta_tools(self) -> dict[str, Tool]:
        """The tools this middleware adds to the server, by name (none unless overridden).

        Built again only when ``catalog``'s version changes (stable bytes for clients).
        """
        return {}

    def _current_meta_tools(self) -> dict[str, Tool]:
        version = self.catalog.version if self.catalog is not None else None
        built = self._meta_built
        if built is None or built[0] != version:
            built = self._meta_built = (version, self.meta_tools())
        return built[1]

    @property
    @override
    def injected_tools(self) -> Sequence[Tool]:
        _seen_by_fastmcp(self)
        return list(self._current_meta_tools().values())

    @override
    def get_injected_tool(self, name: str) -> Tool | None:
        _seen_by_fastmcp(self)
        return self._current_meta_tools().get(name)

    def serving(self, server: FastMCP) -> None:
        """The first message reaching this middleware on ``server`` (in the server's loop)."""

    async def answer(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        """Answer (or check, then pass on) a request whose method is in ``answers``."""
        return await call_next(context)

    def check_meta(self, context: MiddlewareContext[Any], info: RequestInfo) -> None:
        """Validate the request's ``_meta`` entries under ``meta_keys`` (-32602 when bad)."""

    def setup(self, server: FastMCP) -> None:
        """Prepare ``server`` for this middleware; called once per server, by ``set_up``."""
        # Background tasks name a task id, not a tool: the guard judges the task's tool.
        FilteringRuntime.ensure(server).install_guard(server)
        FilteringRuntime.ensure(server).set_up.append(self)

    def announce(self, result: _R) -> _R:
        """The ``initialize`` / ``server/discover`` result with what this middleware adds."""
        return result

    def announce_to(self, context: MiddlewareContext[Any], result: _R) -> _R:
        """``announce``, for the client of ``context`` (what depends on who asks)."""
        return self.announce(result)

    @override
    async def announced(self, context: MiddlewareContext[Any], result: _R) -> _R:
        return self.announce_to(context, result)

    async def marked(self, components: Sequence[_C]) -> Sequence[_C]:
        """``components`` with what this middleware adds to each listed one (``_meta`` marks).

        A listing's ``on_list`` applies it; ``search_tools``, which shows a page of
        the catalog snapshot outside any listing, applies every middleware's.
        Unchanged unless overridden.
        """
        return components

    @override
    async def __call__(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        fastmcp_context = context.fastmcp_context
        if fastmcp_context is not None:
            server = fastmcp_context.fastmcp
            runtime = FilteringRuntime.of(server)
            if runtime is None or self not in runtime.set_up:  # by identity: no __eq__ here
                # First sight of the server (added with mcp.add_middleware): set it up before
                # this message goes on, and let it pass what setting up added.
                call_next = _through(set_up(server), call_next)
            elif runtime.chain_changed(server):
                # A middleware added or swapped in since: one injecting tools is judged from
                # now on, a cache shared between clients refused (every request, until removed);
                # a server mounted since answers to this one's policy.
                runtime.recheck(server)
            if not self._served:
                self._served = True
                self.serving(server)
        if context.method == "tools/call" and self._passes_call_by(context):
            # No hook but pass_call would act: FastMCP's dispatch of them is all it would cost.
            return await self.pass_call(context, call_next)
        return await super().__call__(context, call_next)

    def _passes_call_by(self, context: MiddlewareContext[Any]) -> bool:
        """Whether a ``tools/call`` runs none of this middleware's own code: not one of its
        meta-tools, no hook of its class's own, nothing to remember or validate."""
        if (
            self._hooks_calls
            or "tools/call" in self.answers
            or getattr(context.message, "name", None) in self._current_meta_tools()
        ):
            return False
        info = request_info(context)
        return (
            info is not None
            and (self.catalog is None or info.modern or info.connection is None)
            and (not self.meta_keys or self.meta_keys.isdisjoint(info.meta))
        )

    def _remember(self, context: MiddlewareContext[Any], connection: Connection) -> None:
        """Keep a session-era client to announce runtime changes to, unless this server is
        mounted where a policy above judges it: that policy, which may hide a change from
        the client, is the request's alone, so a change here is announced to nobody (the
        client sees it at its next listing, as the parent's own announcements leave it)."""
        assert self.catalog is not None
        server = context.fastmcp_context.fastmcp if context.fastmcp_context else None
        if server is None or not judged_above(server):
            self.catalog.remember(connection, current_principal())

    @override
    async def on_message(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        info = request_info(context)
        if info is not None:
            if self.catalog is not None and not info.modern and info.connection is not None:
                self._remember(context, info.connection)
            if self.meta_keys and not self.meta_keys.isdisjoint(info.meta):
                # Bad input is -32602 here, before any lookup judges with it.
                self.check_meta(context, info)
        return await call_next(context)

    @override
    async def on_request(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if context.method in self.answers:
            return await self.answer(context, call_next)
        return await call_next(context)


# The hooks through which a middleware could change what a tools/list returns.
_LISTING_HOOKS = ("__call__", "on_message", "on_request", "on_list_tools", "on_list", "answer")
# (A layer's own ``marked`` is allowed: search applies it where it shows a page.)


def known_to_leave(middleware: Middleware, *, inner: bool) -> bool:
    """Whether a middleware's effect on a tool listing is known: none, or the package's own.

    The package's middlewares, and layers of one's own on ``LayerMiddleware``
    (the documented way to add one), are known while every listing hook is the
    package's; of FastMCP's, those that never change a listing.
    """
    from fastmcp.server.middleware.dereference import DereferenceRefsMiddleware

    if isinstance(middleware, Gate):
        return known_to_leave(middleware.inner, inner=inner)
    if type(middleware) is DereferenceRefsMiddleware:
        # Its copies change parameter text, which search ranks: outside the search only.
        return not inner
    return leaves_tools(middleware)


def leaves_tools(middleware: Middleware) -> bool:
    """Whether a listing through ``middleware`` leaves each tool as it was but for its marks.

    The package's middlewares and layers of one's own on ``LayerMiddleware`` (while every
    listing hook is the package's: their marks are ``ListHooks.marked``), FastMCP's
    ``DereferenceRefsMiddleware`` (its copies are ``hooks.marked_by``'s too), and FastMCP's
    middlewares that never change a listed tool.
    """
    from fastmcp.server.middleware.dereference import DereferenceRefsMiddleware
    from fastmcp.server.middleware.error_handling import ErrorHandlingMiddleware, RetryMiddleware
    from fastmcp.server.middleware.logging import LoggingMiddleware, StructuredLoggingMiddleware
    from fastmcp.server.middleware.rate_limiting import (
        RateLimitingMiddleware,
        SlidingWindowRateLimitingMiddleware,
    )
    from fastmcp.server.middleware.timing import DetailedTimingMiddleware, TimingMiddleware
    from fastmcp.server.middleware.tool_injection import ToolInjectionMiddleware

    from fastmcp_filtering.server.tasks import TaskGuard

    neutral: tuple[type, ...] = (
        ErrorHandlingMiddleware,
        RetryMiddleware,
        LoggingMiddleware,
        StructuredLoggingMiddleware,
        RateLimitingMiddleware,
        SlidingWindowRateLimitingMiddleware,
        TimingMiddleware,
        DetailedTimingMiddleware,
        ToolInjectionMiddleware,
        TaskGuard,
        Prefilled,
        DereferenceRefsMiddleware,
    )
    if isinstance(middleware, Gate | JudgedInjection):
        return leaves_tools(middleware.inner)
    if type(middleware) in neutral:
        return True
    return isinstance(middleware, ListHooks) and all(
        getattr(getattr(type(middleware), hook, None), "__module__", "").startswith(
            ("fastmcp_filtering.", "fastmcp.")
        )
        for hook in _LISTING_HOOKS
    )


def shaped_ahead(server: FastMCP, middleware: Middleware) -> bool:
    """Whether a middleware ahead of ``middleware`` in ``server``'s chain may change a list.

    True too when ``middleware`` is not in the chain (a mounted server's, answering
    inside its parent's request): nothing says what runs ahead of it.
    """
    for each in server.middleware:
        if each is middleware or getattr(each, "inner", None) is middleware:
            return False
        if not leaves_tools(each):
            return True
    return True


async def as_listed(server: FastMCP, kind: ComponentKind) -> Sequence[Any]:
    """What the client lists of ``kind`` through ``server``'s whole chain, its request's own
    ``filter`` and ``query`` aside (every middleware, every layer, FastMCP's checks)."""
    with scoped(replace(current_scope(), as_listed=True)):
        listed: Sequence[Any] = await getattr(server, LISTERS[kind])()
    return listed


async def marked_by(middlewares: Sequence[Middleware], tools: Sequence[Tool]) -> Sequence[Tool]:
    """``tools`` as a listing through ``middlewares`` has them: the package's marks and
    FastMCP's inlined schema ``$ref``s, innermost first.

    Example:
        ```python
        page = await marked_by(server.middleware, ranked)
        ```
    """
    for middleware in reversed(middlewares):
        if isinstance(middleware, ListHooks):
            tools = await middleware.marked(tools)
        elif isinstance(middleware, DereferenceRefsMiddleware):
            tools = [_dereferenced(t) for t in tools]
    return tools


def _dereferenced(tool: Tool) -> Tool:
    """``tool`` as FastMCP's ``DereferenceRefsMiddleware`` lists it: its schemas' refs inlined."""
    updates: dict[str, object] = {}
    for field, schema in (("parameters", tool.parameters), ("output_schema", tool.output_schema)):
        if schema is not None and ("$defs" in schema or '"$ref"' in json.dumps(schema)):
            updates[field] = dereference_refs(schema)
    return tool.model_copy(update=updates) if updates else tool


_MAX_CACHED = 100_000


class Marks:
    """Adds ``_meta`` entries to listed components, remembering each copy while ``version`` holds.

    A listing marks every component on every request: a copy is made only for a
    component whose entries differ from its own ``_meta``, and reused until the
    component object or ``version`` changes. Entries that depend on the client
    (the groups its principal may know) pass their own ``entries`` and a
    ``version`` naming that dependency; copies are kept per version. Copies
    keep the meta-tool mark.
    """

    def __init__(
        self, entries: Callable[[FastMCPComponent], Mapping[str, Any]] | None = None
    ) -> None:
        self._entries = entries
        self._copies: dict[tuple[int, Hashable], tuple[FastMCPComponent, FastMCPComponent]] = {}

    def apply(
        self,
        components: Sequence[_C],
        version: Hashable = None,
        entries: Callable[[FastMCPComponent], Mapping[str, Any]] | None = None,
    ) -> list[_C]:
        """``components`` in order, each with its entries in ``_meta``."""
        compute = entries or self._entries
        assert compute is not None, "Marks needs entries, at construction or per call"
        copies = self._copies
        marked: list[_C] = []
        for component in components:
            # The hot loop of every listing: one lookup per component while nothing changed.
            hit = copies.get((id(component), version))
            if hit is not None and hit[0] is component:
                marked.append(hit[1])  # type: ignore[arg-type]  # cast() costs a call per item
            else:
                marked.append(self._mark(component, version, compute))
        return marked

    def _mark(
        self,
        component: _C,
        version: Hashable,
        entries: Callable[[FastMCPComponent], Mapping[str, Any]],
    ) -> _C:
        wanted = entries(component)
        meta = component.meta or {}
        copy = component
        if any(meta.get(key) != value for key, value in wanted.items()):
            copy = same_kind(component, component.model_copy(update={"meta": {**meta, **wanted}}))
        if len(self._copies) > _MAX_CACHED:
            self._copies.clear()
        # Holding the original keeps its id from being reused by another object.
        self._copies[(id(component), version)] = (component, copy)
        return copy

"""One list hook for the four list methods, setup once per server, and ``_meta`` marks on lists."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, TypeVar

from fastmcp.server.middleware.tool_injection import ToolInjectionMiddleware
from typing_extensions import override

from fastmcp_filtering._fastmcp import (
    mounted_servers,
    serving_server,
)
from fastmcp_filtering.core.declarations import same_kind
from fastmcp_filtering.middleware.wire import install_wire
from fastmcp_filtering.policy.tasks import install_task_guard
from fastmcp_filtering.policy.transform import AccessTransform

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Mapping, Sequence

    import mcp_types as mt
    from fastmcp import FastMCP
    from fastmcp.prompts.base import Prompt
    from fastmcp.resources.base import Resource
    from fastmcp.resources.template import ResourceTemplate
    from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
    from fastmcp.tools.base import Tool
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.core.catalog import ComponentKind
    from fastmcp_filtering.policy.decision import PolicyLayer

__all__ = ["ListHooks", "Marks", "set_up", "set_up_on"]

_C = TypeVar("_C", bound="FastMCPComponent")
_R = TypeVar("_R")

# The package's middlewares set up on each server so far, in order.
_SET_UP: weakref.WeakKeyDictionary[FastMCP, list[Middleware]] = weakref.WeakKeyDictionary()


def set_up_on(server: FastMCP) -> tuple[Middleware, ...]:
    """The package's middlewares set up on ``server`` so far, in order."""
    return tuple(_SET_UP.get(server, ()))


def set_up(server: FastMCP) -> list[Middleware]:
    """Set up every middleware of the package in ``server.middleware`` that is not set up yet.

    Each is set up once per server, in the server's order. Returns the FastMCP
    middlewares that setting up appended to the server (the task guard, an
    access middleware), which a request already under way has not passed through.

    Example:
        ```python
        mcp.add_middleware(FilterMiddleware(groups=groups))
        set_up(mcp)  # what the first request would otherwise do
        ```
    """
    done = _SET_UP.setdefault(server, [])
    before = list(server.middleware)
    for middleware in before:
        if isinstance(middleware, ListHooks) and not any(middleware is d for d in done):
            middleware.setup(server)
    # The parent looks a mounted server's components up by name through its transforms
    # alone: the mounted server's policy must be in place before the parent's first lookup.
    for child in mounted_servers(server):
        set_up(child)
    # Its answers may hold a mounted server's shaped ones, whatever its own middlewares.
    install_wire(server, _own_layers)
    return [m for m in server.middleware if not any(m is b for b in before)]


def _own_layers(server: FastMCP) -> Sequence[PolicyLayer]:
    """The policy layers of ``server``'s own ``AccessTransform`` (none without one)."""
    transform = AccessTransform.of(server)
    return transform.layers if transform is not None else ()


_SEEN: weakref.WeakSet[ListHooks] = weakref.WeakSet()


def _seen_by_fastmcp(middleware: ListHooks) -> None:
    """Set up the server FastMCP asks ``middleware`` for its tools on, the first time.

    FastMCP asks every ``ToolInjectionMiddleware`` of a server for its tools when
    the server starts (to find task tools, before it serves anything) and at
    each tool lookup, with the server in ``get_server()``: a middleware added
    with ``mcp.add_middleware`` sets its server up there, before any message.
    """
    if middleware in _SEEN:
        return
    server = serving_server()
    if server is None:
        return
    _SEEN.add(middleware)
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


class ListHooks(ToolInjectionMiddleware):
    """Routes tools, prompts, resources and templates lists to one ``on_list``.

    ``initialize`` and ``server/discover`` results pass through one ``announce``,
    where a middleware adds its capabilities and instructions in both eras.

    ``setup`` runs once per server: when ``install`` or ``add_filtering`` adds
    the middleware, or, for one added with ``mcp.add_middleware`` or
    ``FastMCP(middleware=[...])``, when the server starts (FastMCP asks it, a
    ``ToolInjectionMiddleware``, for its tools) or else when the first message
    reaches it (before anything of that message is looked up; the middlewares
    setting up adds also see that message). It binds pagination cursors to the
    parameters that shape a listing, since every middleware of the package
    narrows or reorders lists, and installs the server's ``TaskGuard``
    (``_tasks.py``). ``meta_tools`` are the tools it adds to the server.
    """

    def meta_tools(self) -> dict[str, Tool]:
        """The tools this middleware adds to the server, by name (none unless overridden)."""
        return {}

    @property
    @override
    def injected_tools(self) -> Sequence[Tool]:
        _seen_by_fastmcp(self)
        return list(self.meta_tools().values())

    @override
    def get_injected_tool(self, name: str) -> Tool | None:
        _seen_by_fastmcp(self)
        return self.meta_tools().get(name)

    def setup(self, server: FastMCP) -> None:
        """Prepare ``server`` for this middleware; called once per server, by ``set_up``."""
        install_wire(server, _own_layers)
        # Background tasks name a task id, not a tool: the guard judges the task's tool.
        install_task_guard(server)
        _SET_UP.setdefault(server, []).append(self)

    def announce(self, result: _R) -> _R:
        """The ``initialize`` / ``server/discover`` result with what this middleware adds."""
        return result

    def announce_to(self, context: MiddlewareContext[Any], result: _R) -> _R:
        """``announce``, for the client of ``context`` (what depends on who asks)."""
        return self.announce(result)

    @override
    async def on_initialize(
        self,
        context: MiddlewareContext[mt.InitializeRequest],
        call_next: CallNext[mt.InitializeRequest, mt.InitializeResult | None],
    ) -> mt.InitializeResult | None:
        result = await call_next(context)
        return None if result is None else self.announce_to(context, result)

    @override
    async def on_discover(
        self,
        context: MiddlewareContext[mt.DiscoverRequest],
        call_next: CallNext[mt.DiscoverRequest, mt.DiscoverResult | dict[str, Any]],
    ) -> mt.DiscoverResult | dict[str, Any]:
        return self.announce_to(context, await call_next(context))

    async def on_list(
        self,
        context: MiddlewareContext[Any],
        call_next: CallNext[Any, Sequence[_C]],
        kind: ComponentKind,
    ) -> Sequence[_C]:
        """What a list of ``kind`` shows; passes through unless overridden."""
        return await call_next(context)

    @override
    async def __call__(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        fastmcp_context = context.fastmcp_context
        if fastmcp_context is not None:
            server = fastmcp_context.fastmcp
            if not any(m is self for m in _SET_UP.get(server, ())):
                # First sight of the server (added with mcp.add_middleware): set it up before
                # this message goes on, and let it pass what setting up added.
                call_next = _through(set_up(server), call_next)
        return await super().__call__(context, call_next)

    @override
    async def on_list_tools(
        self,
        context: MiddlewareContext[mt.ListToolsRequest],
        call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        return await self.on_list(context, call_next, "tool")

    @override
    async def on_list_prompts(
        self,
        context: MiddlewareContext[mt.ListPromptsRequest],
        call_next: CallNext[mt.ListPromptsRequest, Sequence[Prompt]],
    ) -> Sequence[Prompt]:
        return await self.on_list(context, call_next, "prompt")

    @override
    async def on_list_resources(
        self,
        context: MiddlewareContext[mt.ListResourcesRequest],
        call_next: CallNext[mt.ListResourcesRequest, Sequence[Resource]],
    ) -> Sequence[Resource]:
        return await self.on_list(context, call_next, "resource")

    @override
    async def on_list_resource_templates(
        self,
        context: MiddlewareContext[mt.ListResourceTemplatesRequest],
        call_next: CallNext[mt.ListResourceTemplatesRequest, Sequence[ResourceTemplate]],
    ) -> Sequence[ResourceTemplate]:
        return await self.on_list(context, call_next, "template")


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

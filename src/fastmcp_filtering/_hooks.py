"""One list hook for the four list methods, and cursor binding, for the package's middlewares."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, TypeVar

import mcp_types as mt
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from mcp.shared.exceptions import MCPError
from typing_extensions import override

from fastmcp_filtering._cursor import install_cursor_scope
from fastmcp_filtering._tasks import install_task_guard

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fastmcp import FastMCP
    from fastmcp.prompts.base import Prompt
    from fastmcp.resources.base import Resource
    from fastmcp.resources.template import ResourceTemplate
    from fastmcp.tools.base import Tool
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering._catalog import ComponentKind

__all__ = ["ListHooks", "set_up_on"]

_C = TypeVar("_C", bound="FastMCPComponent")
_R = TypeVar("_R")

# Answered even by a middleware that was not set up, so the client connects and hears why.
_HANDSHAKE = frozenset({"initialize", "server/discover", "notifications/initialized", "ping"})
# The middlewares set up on each server (by install): one that was not refuses to serve.
_SET_UP: weakref.WeakKeyDictionary[FastMCP, list[Middleware]] = weakref.WeakKeyDictionary()


def set_up_on(server: FastMCP) -> tuple[Middleware, ...]:
    """The package's middlewares set up on ``server`` so far, in order."""
    return tuple(_SET_UP.get(server, ()))


class ListHooks(Middleware):
    """Routes tools, prompts, resources and templates lists to one ``on_list``.

    ``initialize`` and ``server/discover`` results pass through one ``announce``,
    where a middleware adds its capabilities and instructions in both eras.

    ``setup`` runs once per server, when ``fastmcp_filtering.install`` (or
    ``add_filtering``) adds the middleware: it binds pagination cursors to the
    parameters that shape a listing, since every middleware of the package
    narrows or reorders lists, and installs the server's ``TaskGuard``
    (``_tasks.py``). A middleware added with ``mcp.add_middleware``
    alone refuses every request with the fix, rather than serve unset up.
    """

    def setup(self, server: FastMCP) -> None:
        """Prepare ``server`` for this middleware; called once, before it serves."""
        install_cursor_scope(server)
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
    async def on_message(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if (
            context.method not in _HANDSHAKE
            and context.fastmcp_context is not None
            and not any(m is self for m in _SET_UP.get(context.fastmcp_context.fastmcp, ()))
        ):
            raise MCPError(
                code=mt.INTERNAL_ERROR,
                message=(
                    f"{type(self).__name__} was added to this server without being set up; "
                    "the server's author should add it with fastmcp_filtering.install(mcp, "
                    "middleware) or add_filtering(mcp, ...) instead of mcp.add_middleware()"
                ),
            )
        return await call_next(context)

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

"""A ``tools/call`` passes by a middleware of the package with no hook for it, never one with."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP
from fastmcp.server.middleware import CallNext, MiddlewareContext

from fastmcp_filtering import FilterMiddleware, Group, SearchMiddleware, install

from ..conftest import Connect

GROUPS = [Group("ops")]


class _Recorded(FilterMiddleware):
    """A filter whose subclass hooks calls of its own: it must see every call."""

    seen: list[str]

    async def on_call_tool(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        self.seen.append(context.message.name)
        return await call_next(context)


class _Messages(FilterMiddleware):
    """A filter whose subclass hooks every message."""

    seen: list[str]

    async def on_message(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        self.seen.append(str(context.method))
        return await super().on_message(context, call_next)


def _server(*middlewares: Any) -> FastMCP:
    mcp = FastMCP("pass-by")

    @mcp.tool(tags={"ops"})
    def restart() -> str:
        return "restarted"

    install(mcp, *middlewares)
    return mcp


async def test_a_subclass_hook_still_runs(connect: Connect) -> None:
    calls, messages = _Recorded(groups=GROUPS), _Messages(groups=GROUPS)
    calls.seen, messages.seen = [], []
    async with connect(_server(calls)) as client:
        await client.call_tool("restart", {})
    async with connect(_server(messages)) as client:
        await client.call_tool("restart", {})
    assert calls.seen == ["restart"]
    assert "tools/call" in messages.seen


async def test_a_meta_tool_still_reaches_its_middleware(connect: Connect) -> None:
    async with connect(_server(SearchMiddleware(groups=GROUPS))) as client:
        found = await client.call_tool("search_tools", {"query": "restart"})
        plain = await client.call_tool("restart", {})
    assert "restart" in str(found.structured_content)
    assert plain.structured_content == {"result": "restarted"}

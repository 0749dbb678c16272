"""A ``tools/call`` passes by a middleware of the package with no hook for it, never one with."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP
from fastmcp.server.middleware import CallNext, MiddlewareContext

from fastmcp_filtering import (
    FilterMiddleware,
    Group,
    ProgressiveDisclosureMiddleware,
    SearchMiddleware,
    install,
)

from ..conftest import Connect

GROUPS = [Group("ops")]


def _recording(base: Any) -> Any:
    """``base`` with a call hook of the subclass's own: it must see every call."""

    class Recorded(base):  # type: ignore[misc]
        seen: list[str]

        async def on_call_tool(
            self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
        ) -> Any:
            self.seen.append(context.message.name)
            return await super().on_call_tool(context, call_next)

    return Recorded


_Recorded = _recording(FilterMiddleware)
_Layered = _recording(ProgressiveDisclosureMiddleware)


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

    @mcp.tool(tags={"admin"})
    def wipe() -> str:
        return "wiped"

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


async def test_a_layers_subclass_hook_still_runs(connect: Connect) -> None:
    layer = _Layered(groups=GROUPS, initial_groups=["ops"])
    layer.seen = []
    async with connect(_server(layer)) as client:
        await client.call_tool("restart", {})
    assert layer.seen == ["restart"]


async def test_a_call_through_a_layer_is_refused_as_before(connect: Connect, era: str) -> None:
    # The layer's own call hook only words a refusal, so a call passes it by with that hook
    # alone (2026-07-28; a 2025-11-25 session's calls are remembered, so they never pass by).
    groups = [Group("ops"), Group("admin", tools=["wipe"])]
    layer = ProgressiveDisclosureMiddleware(groups=groups, initial_groups=["ops"])
    async with connect(_server(layer)) as client:
        unknown = await client.call_tool("nope", {}, raise_on_error=False)
        wipe = await client.call_tool("wipe", {}, raise_on_error=False)
    modern = era == "modern"
    assert unknown.is_error
    assert "Unknown tool" in str(unknown.content)
    # A fixed list reaches every group's tools by name; a session enables them first.
    assert wipe.is_error is not modern
    assert ("enable_tools" in str(wipe.content)) is not modern

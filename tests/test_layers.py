"""The shared decision: an AccessLayer hides and refuses by every path, in both eras."""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import MiddlewareContext
from fastmcp.utilities.components import FastMCPComponent
from mcp.shared.exceptions import MCPError

from fastmcp_filtering._layers import AccessLayer, ClientView, admitted, refusal_for

from .conftest import Connect


class _HideSecret:
    def refusal(self, component: FastMCPComponent) -> str | None:
        if "secret" in component.tags:
            return f"{component.name} is hidden: ask for clearance first"
        return None


class HideSecret(AccessLayer):
    async def client_view(self, context: MiddlewareContext[Any]) -> ClientView:
        return _HideSecret()


def make_server() -> FastMCP:
    mcp = FastMCP("layers")

    @mcp.tool(tags={"secret"})
    def launch() -> str:
        return "launched"

    @mcp.tool
    def status() -> str:
        return "ok"

    @mcp.tool
    async def proxy(name: str, ctx: Context) -> str:
        result = await ctx.fastmcp.call_tool(name, {})
        return str((result.structured_content or {}).get("result"))

    @mcp.prompt(tags={"secret"})
    def codes() -> str:
        return "1234"

    @mcp.resource("vault://key", tags={"secret"})
    def key() -> str:
        return "k"

    @mcp.resource("vault://{name}/key", tags={"secret"})
    def named_key(name: str) -> str:
        return name

    mcp.add_middleware(HideSecret())
    return mcp


class TestAccessLayer:
    async def test_lists_hide(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            assert sorted(t.name for t in await client.list_tools()) == ["proxy", "status"]
            assert await client.list_prompts() == []
            assert await client.list_resources() == []
            assert await client.list_resource_templates() == []

    async def test_every_route_refuses_with_the_hint(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            with pytest.raises(ToolError, match="ask for clearance"):
                await client.call_tool("launch", {})
            with pytest.raises(ToolError, match="ask for clearance"):
                await client.call_tool("proxy", {"name": "launch"})
            with pytest.raises(MCPError, match="ask for clearance"):
                await client.get_prompt("codes")
            with pytest.raises(MCPError, match="ask for clearance"):
                await client.read_resource("vault://key")
            with pytest.raises(MCPError, match="ask for clearance"):
                await client.read_resource("vault://x/key")
            assert (await client.call_tool("proxy", {"name": "status"})).data == "ok"

    async def test_admitted_and_refusal_for_ask_every_layer(self) -> None:
        server = make_server()
        tools = await server.list_tools(run_middleware=False)
        context = MiddlewareContext(message=None)
        kept = await admitted(server, context, tools)
        assert sorted(t.name for t in kept) == ["proxy", "status"]
        launch = next(t for t in tools if t.name == "launch")
        assert await refusal_for(server, context, launch) == (
            "launch is hidden: ask for clearance first"
        )

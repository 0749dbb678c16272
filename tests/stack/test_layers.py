"""The shared decision: a policy layer hides and refuses by every path, in both eras."""

from __future__ import annotations

import pytest
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.utilities.tests import asgi_server
from mcp.shared.exceptions import MCPError

# The extension points as the docs name them: public names of fastmcp_filtering.
from fastmcp_filtering import (
    install,
    unrestricted,
)
from fastmcp_filtering.server.hooks import set_up_on

from .._support.layers import HideLayer, hide_secret
from ..conftest import Connect

# Every test here runs on servers set up by install and by mcp.add_middleware alone.
pytestmark = pytest.mark.usefixtures("setup_way")


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

    install(mcp, HideLayer(hide_secret))
    return mcp


class TestPolicyLayer:
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

    async def test_outside_a_request_nothing_is_shown_unless_unrestricted(
        self, setup_way: str
    ) -> None:
        server = make_server()
        if setup_way == "add_middleware":
            # The first message through the middleware (here the server's own) sets it up.
            assert len(await server.list_tools(run_middleware=False)) == 3
            await server.list_tools()
        # No request, no client to show anything to: fail closed.
        assert await server.list_tools(run_middleware=False) == []
        assert await server.get_tool("status") is None
        with unrestricted():
            listed = await server.list_tools(run_middleware=False)
        assert sorted(t.name for t in listed) == ["launch", "proxy", "status"]

    @pytest.mark.parametrize("how", ["add_middleware", "constructor"])
    async def test_added_the_fastmcp_way_it_hides_from_the_first_request(
        self, connect: Connect, how: str
    ) -> None:
        layer = HideLayer(hide_secret)
        mcp = FastMCP("plain", middleware=[layer] if how == "constructor" else None)
        if how == "add_middleware":
            mcp.add_middleware(layer)

        @mcp.tool(tags={"secret"})
        def launch() -> str:
            return "launched"

        assert set_up_on(mcp) == ()
        async with connect(mcp) as client:
            # Set up by the handshake, the first message it sees.
            with pytest.raises(ToolError, match="ask for clearance"):
                await client.call_tool("launch", {})
            assert await client.list_tools() == []
        assert set_up_on(mcp) == (layer,)

    async def test_added_the_fastmcp_way_it_is_set_up_when_the_server_starts(self) -> None:
        layer = HideLayer(hide_secret)
        mcp = FastMCP("plain", middleware=[layer])
        async with asgi_server(mcp, stateless_http=True):
            assert set_up_on(mcp) == (layer,)

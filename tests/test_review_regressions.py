"""Defects a review reproduced; each test fails without its fix."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import Tool
from mcp.shared.exceptions import MCPError

from fastmcp_filtering import Concern, ConcernMiddleware, Group, add_filtering, in_group, install
from fastmcp_filtering.client import call_method, list_tools

from .conftest import Connect


class HideSecrets(Middleware):
    """A server's own middleware that narrows tool lists."""

    async def on_list_tools(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Sequence[Tool]]
    ) -> Sequence[Tool]:
        return [t for t in await call_next(context) if "secret" not in t.name]


class TestVersions:
    async def test_a_hidden_version_is_refused(self, connect: Connect) -> None:
        mcp = FastMCP("versions")

        @in_group("admin")
        @mcp.tool(name="deploy", version="1")
        def deploy_v1() -> str:
            return "v1"

        @in_group("issues")
        @mcp.tool(name="deploy", version="2")
        def deploy_v2() -> str:
            return "v2"

        add_filtering(
            mcp,
            groups=[Group("issues"), Group("admin")],
            progressive={"initial_groups": ["issues"]},
        )
        async with connect(mcp) as client:
            v2 = await call_method(
                client,
                "tools/call",
                {"name": "deploy", "arguments": {}, "_meta": {"fastmcp": {"version": "2"}}},
            )
            v1 = await call_method(
                client,
                "tools/call",
                {"name": "deploy", "arguments": {}, "_meta": {"fastmcp": {"version": "1"}}},
            )
        assert not v2.get("isError")
        assert v1["isError"] is True
        assert 'enable_tools(groups=["admin"])' in v1["content"][0]["text"]


class TestServersOwnMiddleware:
    @pytest.mark.parametrize("outer", [True, False])
    async def test_search_tools_never_bypasses_it(self, connect: Connect, outer: bool) -> None:
        mcp = FastMCP("own")
        mcp.tool(lambda: "x", name="delete_secret_repo", description="Delete the secret repo")
        mcp.tool(lambda: "x", name="create_issue", description="Open an issue")
        if outer:
            mcp.add_middleware(HideSecrets())
        add_filtering(mcp, groups=[])
        if not outer:
            mcp.add_middleware(HideSecrets())
        async with connect(mcp) as client:
            found = await client.call_tool("search_tools", {"query": "delete secret repo"})
            queried = await list_tools(client, query="delete secret repo")
        assert [t["name"] for t in found.structured_content["tools"]] == []
        assert queried.tools == []

    async def test_enable_reply_names_only_what_the_client_can_list(self, connect: Connect) -> None:
        mcp = FastMCP("own")
        for name in ("delete_secret_repo", "list_repos"):
            in_group("admin")(mcp.tool(lambda: "x", name=name))
        mcp.add_middleware(HideSecrets())
        add_filtering(
            mcp, groups=[Group("admin")], progressive={"include_schemas": True}, search=False
        )
        async with connect(mcp) as client:
            reply = await client.call_tool("enable_tools", {"groups": ["admin"]})
            listed = [t.name for t in await client.list_tools()]
        assert reply.structured_content["available_tools"] == ["list_repos"]
        assert [t["name"] for t in reply.structured_content["tools"]] == ["list_repos"]
        assert "delete_secret_repo" not in listed


class TestBadInput:
    @pytest.mark.parametrize("tags", ["", 0, False, {}])
    async def test_falsy_filter_tags_are_invalid_params(self, connect: Connect, tags: Any) -> None:
        mcp = FastMCP("tags")
        mcp.tool(lambda: "x", name="ping")
        add_filtering(mcp, groups=[])
        async with connect(mcp) as client:
            with pytest.raises(MCPError) as error:
                await call_method(client, "tools/list", {"filter": {"tags": tags}})
        assert error.value.code == -32602
        assert error.value.data["field"] == "filter.tags"

    async def test_many_group_names_are_one_error(self, connect: Connect) -> None:
        mcp = FastMCP("many")
        add_filtering(mcp, groups=[Group("issues")], progressive=True)
        async with connect(mcp) as client:
            reply = await client.call_tool(
                "enable_tools", {"groups": [f"g{i}" for i in range(20_000)]}
            )
        assert len(reply.structured_content["errors"]) == 1
        assert "at most 100" in reply.structured_content["errors"][0]


class TestCursor:
    async def test_the_same_filter_in_another_order_keeps_its_cursor(
        self, connect: Connect
    ) -> None:
        mcp = FastMCP("order", list_page_size=1)
        for name, group in (("create_issue", "issues"), ("delete_repo", "admin")):
            in_group(group)(mcp.tool(lambda: "x", name=name))
        add_filtering(mcp, groups=[Group("issues"), Group("admin")], search=False)
        async with connect(mcp) as client:
            first = await list_tools(client, groups=["issues", "admin"])
            assert first.next_cursor is not None
            second = await list_tools(client, groups=["admin", "issues"], cursor=first.next_cursor)
        assert len(second.tools) == 1


class TestConcernsFirstRequests:
    async def test_clients_arriving_together_install_once(self) -> None:
        mcp = FastMCP("race")
        mcp.tool(lambda: "x", name="ping")
        install(mcp, ConcernMiddleware(concerns=[Concern("risk", values=["a", "b"])]))

        async def one() -> None:
            async with Client(mcp, mode="legacy") as client:
                await client.list_tools()

        await asyncio.gather(*(one() for _ in range(4)))
        installed = [type(m).__name__ for m in mcp._mcp_server.middleware]
        assert installed.count("Wire") == 1


class TestConfigTypes:
    def test_a_number_given_as_a_string_is_an_error(self, tmp_path: Any) -> None:
        from fastmcp_filtering.gateway.config import ConfigError, load_config

        config = tmp_path / "proxy.toml"
        config.write_text(
            '[[upstreams]]\ncommand = "python"\nargs = ["x.py"]\n\n[search]\nmax_results = "8"\n'
        )
        with pytest.raises(ConfigError, match=r"proxy\.toml:6: search\.max_results"):
            load_config(config)

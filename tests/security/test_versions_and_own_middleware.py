"""Concealment a request cannot get round: a hidden version of a tool, and what the server's
own middleware hides, through ``search_tools`` and the ``enable_tools`` reply."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from fastmcp import FastMCP
from fastmcp.server.auth import require_scopes
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import Tool

from fastmcp_filtering import Group, add_filtering, in_group
from fastmcp_filtering.client import call_method, list_tools

from .._principals import PrincipalByClientName, as_principal
from ..conftest import Connect


class HideSecrets(Middleware):
    """A server's own middleware that narrows tool lists."""

    async def on_list_tools(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Sequence[Tool]]
    ) -> Sequence[Tool]:
        return [t for t in await call_next(context) if "secret" not in t.name]


@pytest.mark.side_effect_lists
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


class Passthrough(Middleware):
    """A middleware the stack knows nothing of: search lists through the chain."""

    async def on_list_tools(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Sequence[Tool]]
    ) -> Sequence[Tool]:
        return list(await call_next(context))


def versioned_server(*, unknown_middleware: bool) -> FastMCP:
    """``deploy`` 1 open to all, 2 and 3 in a group only ``github:admin`` tokens may use."""
    mcp = FastMCP("versions")
    mcp.add_middleware(PrincipalByClientName())
    for version in ("1", "2", "3"):
        tool = mcp.tool(lambda v=version: v, name="deploy", version=version, description="Deploy")
        if version != "1":
            in_group("admin")(tool)
    if unknown_middleware:
        mcp.add_middleware(Passthrough())
    add_filtering(mcp, groups=[Group("admin", access=require_scopes("github:admin"))])
    return mcp


class TestVersionsAsListed:
    @pytest.mark.parametrize("unknown_middleware", [False, True])
    @pytest.mark.parametrize(("who", "versions"), [("reader", ["1"]), ("admin", ["3", "2", "1"])])
    async def test_search_tools_gives_the_definition_tools_list_gives(
        self, connect: Connect, unknown_middleware: bool, who: str, versions: list[str]
    ) -> None:
        """The same ``_meta`` (every version the client may use, no other) from the snapshot
        and from a listing through an unknown middleware."""
        mcp = versioned_server(unknown_middleware=unknown_middleware)
        async with connect(mcp, **as_principal(who)) as client:
            page = await call_method(client, "tools/list", {})
            listed = [t for t in page["tools"] if t["name"] == "deploy"]
            found = await client.call_tool("search_tools", {"query": "deploy"})
        assert found.structured_content["tools"] == listed
        assert listed[0]["_meta"]["fastmcp"]["versions"] == versions

    async def test_a_single_versioned_tool_names_its_version(self, connect: Connect) -> None:
        mcp = FastMCP("one")
        mcp.tool(lambda: "x", name="deploy", version="7", description="Deploy")
        add_filtering(mcp, groups=[])
        async with connect(mcp) as client:
            listed = (await call_method(client, "tools/list", {}))["tools"]
            found = await client.call_tool("search_tools", {"query": "deploy"})
        assert found.structured_content["tools"] == [t for t in listed if t["name"] == "deploy"]
        assert found.structured_content["tools"][0]["_meta"]["fastmcp"]["versions"] == ["7"]


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

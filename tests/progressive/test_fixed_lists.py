"""Progressive disclosure on 2026-07-28: lists no call of the client changes, the same workflow.

A list there "MUST NOT vary per-connection or as a side effect of other requests"
(``server/tools.mdx``, SEP-2567). ``enable_tools`` hands out the definitions of what a group
makes available; the tools run by their name or through ``call_tool`` on the next call; no
list moves, whoever asks and whatever they called before.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.utilities.tests import asgi_server
from inline_snapshot import snapshot

from fastmcp_filtering import Group, ProgressiveDisclosureMiddleware, in_group, install
from fastmcp_filtering.client import DisclosedTools, call_method

from .._fixed_lists import FIXED_SERVER, fixed_server, moved_lists
from .._principals import PrincipalByClientName, as_principal
from ..conftest import Connect

Opener = Callable[[FastMCP], AbstractAsyncContextManager[Client[Any]]]

TOKENS = {
    "reader-token": {"client_id": "reader", "sub": "reader", "scopes": ["github:read"]},
    "admin-token": {"client_id": "admin", "sub": "admin", "scopes": ["github:admin"]},
}


@asynccontextmanager
async def in_memory(server: FastMCP) -> AsyncIterator[Client[Any]]:
    async with Client(server) as client:
        yield client


@asynccontextmanager
async def in_memory_as_admin(server: FastMCP) -> AsyncIterator[Client[Any]]:
    server.add_middleware(PrincipalByClientName())
    async with Client(server, **as_principal("admin")) as client:
        yield client


@asynccontextmanager
async def http_without_auth(server: FastMCP) -> AsyncIterator[Client[Any]]:
    async with asgi_server(server, stateless_http=True) as running, running.client() as client:
        yield client


@asynccontextmanager
async def http_with_bearer(server: FastMCP) -> AsyncIterator[Client[Any]]:
    server.auth = StaticTokenVerifier(tokens=TOKENS)
    async with (
        asgi_server(server, stateless_http=True) as running,
        running.client(auth="reader-token") as client,
    ):
        yield client


OPENERS: dict[str, Opener] = {
    "memory": in_memory,
    "memory-principal": in_memory_as_admin,
    "http-no-auth": http_without_auth,
    "http-bearer": http_with_bearer,
}


async def send(client: Client[Any], method: str, params: dict[str, Any]) -> dict[str, Any]:
    return await call_method(client, method, params)


class TestTheInvariant:
    @pytest.mark.parametrize("opener", list(OPENERS))
    async def test_no_request_changes_any_list(self, opener: str) -> None:
        async with OPENERS[opener](fixed_server()) as client:
            assert await moved_lists(client) == []

    @pytest.mark.slow
    async def test_over_stdio(self) -> None:
        transport = StdioTransport(command=sys.executable, args=[str(FIXED_SERVER)])
        async with Client(transport) as client:
            assert await moved_lists(client) == []

    async def test_the_list_is_the_initial_groups_in_a_fixed_order(self) -> None:
        async with in_memory(fixed_server()) as client:
            listed = await send(client, "tools/list", {})
            names = [t["name"] for t in listed["tools"]]
            assert names == snapshot(
                ["search_tools", "enable_tools", "disable_tools", "call_tool", "list_issues"]
            )
            assert (listed["ttlMs"], listed["cacheScope"]) == (300_000, "private")

    async def test_the_opt_in_keeps_lists_that_follow_enable_tools(self) -> None:
        async with in_memory(fixed_server(side_effect_lists=True)) as client:
            await client.call_tool("enable_tools", {"groups": ["repos"]})
            names = {t.name for t in await client.list_tools()}
            assert {"create_repo", "delete_repo"} <= names
            listed = await send(client, "tools/list", {})
            assert listed["ttlMs"] == 0
            assert await moved_lists(client) != []


class TestEnableHandsOutDefinitions:
    @pytest.mark.parametrize("opener", list(OPENERS))
    async def test_two_calls_reach_a_tool_of_a_group_not_listed(self, opener: str) -> None:
        async with OPENERS[opener](fixed_server()) as client:
            reply = await client.call_tool("enable_tools", {"groups": ["repos"]})
            found = reply.structured_content or {}
            assert found["enabled"] == ["repos"]
            assert [t["name"] for t in found["tools"]] == ["create_repo", "delete_repo"]
            create = found["tools"][0]
            assert create["inputSchema"]["required"] == ["name"]
            assert create["_meta"]["io.modelcontextprotocol/groups"] == ["repos"]
            assert create["description"] == "Create a repository."
            result = await client.call_tool("create_repo", {"name": "demo"})
            assert result.content[0].text == "created demo"  # type: ignore[union-attr]

    async def test_the_reply_keeps_the_wags_fields(self) -> None:
        async with in_memory(fixed_server()) as client:
            reply = await client.call_tool("enable_tools", {"groups": ["repos"]})
            found = dict(reply.structured_content or {})
            found["tools"] = [t["name"] for t in found["tools"]]
            assert found == snapshot(
                {
                    "enabled": ["repos"],
                    "enabled_groups": ["issues", "repos"],
                    "available_tools": ["create_repo", "delete_repo", "list_issues"],
                    "available_groups": ["branches"],
                    "errors": [],
                    "tools": ["create_repo", "delete_repo"],
                }
            )

    async def test_through_call_tool_for_hosts_that_call_only_listed_names(self) -> None:
        async with in_memory(fixed_server()) as client:
            await client.call_tool("enable_tools", {"groups": ["repos"]})
            result = await client.call_tool(
                "call_tool", {"name": "create_repo", "arguments": {"name": "demo"}}
            )
            assert result.content[0].text == "created demo"  # type: ignore[union-attr]

    async def test_bad_arguments_are_a_tool_execution_error(self) -> None:
        # SEP-1303: the model reads what was wrong and corrects its call.
        async with in_memory(fixed_server()) as client:
            for name, arguments in [
                ("create_repo", {"name": 3}),
                ("call_tool", {"name": "create_repo", "arguments": {"wrong": "x"}}),
            ]:
                result = await client.call_tool_mcp(name, arguments)
                assert result.is_error
                assert "name" in result.content[0].text  # type: ignore[union-attr]

    async def test_a_tool_never_enabled_runs_when_called_by_name(self) -> None:
        # The choice: nothing a call depends on lives on the server, so a tool of any group
        # the caller may use runs; the list stays the initial groups.
        async with in_memory(fixed_server()) as client:
            result = await client.call_tool("delete_branch", {"name": "main"})
            assert result.content[0].text == "deleted branch main"  # type: ignore[union-attr]

    async def test_max_tools_and_disable_tools_still_hold_per_principal(self) -> None:
        async with in_memory(fixed_server()) as client:
            first = await client.call_tool("enable_tools", {"groups": ["repos"]})
            assert first.structured_content["enabled"] == ["repos"]  # type: ignore[index]
            over = await client.call_tool("enable_tools", {"groups": ["branches"]})
            assert over.structured_content["enabled"] == []  # type: ignore[index]
            assert "max_tools" in over.structured_content["errors"][0]  # type: ignore[index]
            await client.call_tool("disable_tools", {"groups": ["repos"]})
            again = await client.call_tool("enable_tools", {"groups": ["repos"]})
            assert again.structured_content["tools"]  # type: ignore[index]

    async def test_a_client_with_no_identity_starts_from_the_initial_groups_each_time(
        self,
    ) -> None:
        async with http_without_auth(fixed_server()) as client:
            for _ in range(2):
                reply = await client.call_tool("enable_tools", {"groups": ["repos"]})
                found = reply.structured_content or {}
                assert found["enabled_groups"] == ["issues", "repos"]
                assert [t["name"] for t in found["tools"]] == ["create_repo", "delete_repo"]


class TestHiddenStaysHidden:
    async def test_a_denied_group_is_neither_handed_out_nor_run(self) -> None:
        async with http_with_bearer(fixed_server()) as reader:
            reply = await reader.call_tool("enable_tools", {"groups": ["admin"]})
            found = reply.structured_content or {}
            assert found["tools"] == []
            assert "unknown group 'admin'" in found["errors"][0]
            result = await reader.call_tool_mcp("drop_table", {})
            assert result.is_error
            assert result.content[0].text == "Unknown tool: 'drop_table'"  # type: ignore[union-attr]
            proxied = await reader.call_tool_mcp("call_tool", {"name": "drop_table"})
            assert "drop_table" in proxied.content[0].text  # type: ignore[union-attr]
            assert "unknown tool" in proxied.content[0].text  # type: ignore[union-attr]

    async def test_concerns_still_refuse_by_request(self) -> None:
        async with in_memory(fixed_server()) as client:
            result = await client.call_tool_mcp(
                "delete_repo",
                {"name": "x"},
                meta={"io.github.fastmcp-filtering/concerns": {"risk": "safe"}},
            )
            assert result.is_error
            assert "excluded by concern 'risk'" in result.content[0].text  # type: ignore[union-attr]


class TestHostSideDisclosure:
    async def test_a_filter_lists_its_groups_as_real_definitions(self) -> None:
        async with in_memory(fixed_server()) as client:
            listed = await send(client, "tools/list", {"filter": {"groups": ["repos"]}})
            names = sorted(t["name"] for t in listed["tools"])
            assert names == ["create_repo", "delete_branch", "delete_repo"]
            assert listed["tools"][0]["inputSchema"]["required"] == ["name"]

    async def test_a_filter_names_no_group_the_principal_may_not_use(self) -> None:
        async with http_with_bearer(fixed_server()) as reader:
            listed = await send(reader, "tools/list", {"filter": {"groups": ["admin"]}})
            assert listed["tools"] == []

    async def test_the_helper_follows_the_replies(self, connect: Connect) -> None:
        async with connect(fixed_server(max_tools=None)) as client:
            disclosed = DisclosedTools(client)
            first = {t.name for t in await disclosed.list_tools()}
            assert "create_repo" not in first
            await disclosed.enable(["repos"])
            assert disclosed.enabled_groups == ["issues", "repos"]
            after = {t.name for t in await disclosed.list_tools()}
            assert after - first == {"create_repo", "delete_repo"}
            await disclosed.disable(["repos"])
            assert {t.name for t in await disclosed.list_tools()} == first


class TestTheMetaTools:
    async def test_call_tool_is_offered_only_where_lists_are_fixed(self) -> None:
        mcp = FastMCP("plain")
        mcp.add_tool(in_group("a")(_tool("hello")))
        install(mcp, ProgressiveDisclosureMiddleware(groups=[Group("a")]))
        async with Client(mcp) as modern:
            assert "call_tool" in {t.name for t in await modern.list_tools()}
        async with Client(mcp, mode="legacy") as legacy:
            assert "call_tool" not in {t.name for t in await legacy.list_tools()}

    async def test_a_bad_opt_in_is_refused_at_construction(self) -> None:
        with pytest.raises(ValueError, match="side_effect_lists must be True or False"):
            ProgressiveDisclosureMiddleware(groups=[Group("a")], side_effect_lists="yes")  # type: ignore[arg-type]


def _tool(name: str) -> Any:
    from fastmcp.tools import Tool

    return Tool.from_function(lambda: name, name=name)

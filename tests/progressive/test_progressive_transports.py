"""Progressive disclosure over real transports: stdio and streamable HTTP, with and without auth."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.utilities.tests import asgi_server

from fastmcp_filtering import SearchMiddleware, install
from fastmcp_filtering.client import list_tools

from .._progressive_servers import PROGRESSIVE_SERVER, progressive_http_server
from .._support.progressive import call, make_server, names
from .._support.recorder import Recorder
from ..conftest import ERAS

INITIAL = ["call_tool", "create_issue", "disable_tools", "enable_tools", "list_issues", "whoami"]


async def exercise(client: Client[Any], recorder: Recorder) -> None:
    """An agent's session: refused, enables, is notified, sees and calls, then disables."""
    assert await names(client) == INITIAL
    assert await client.list_prompts() == []
    with pytest.raises(ToolError, match=r'Call enable_tools\(groups=\["code", "repos"\]\) first'):
        await client.call_tool("create_repo", {"name": "x"})
    reply = await call(client, "enable_tools", groups=["repos", "code"])
    assert reply == {
        "enabled": ["code", "repos"],
        "enabled_groups": ["issues", "code", "repos"],
        "available_tools": ["create_issue", "create_repo", "list_issues"],
        "available_groups": [],
        "errors": [],
    }
    assert recorder.methods == [
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
    ]
    assert "create_repo" in await names(client)
    assert [p.name for p in await client.list_prompts()] == ["review"]
    assert (await client.call_tool("create_repo", {"name": "x"})).data == "created x"
    arguments = {"name": "create_repo", "arguments": {"name": "y"}}
    proxied = await client.call_tool("call_tool", arguments)
    assert proxied.data == "created y"
    with pytest.raises(ToolError, match=r'Call enable_tools\(groups=\["admin"\]\) first'):
        await client.call_tool("call_tool", {"name": "delete_repo", "arguments": {"name": "x"}})
    reply = await call(client, "disable_tools", groups=["code"])
    assert reply["disabled"] == ["code", "repos"]
    assert await names(client) == INITIAL


SIDE_EFFECT_LISTS = "--side-effect-lists"
"""The example's opt-in: on 2026-07-28 too, enable_tools changes later lists."""


@pytest.mark.slow
@pytest.mark.parametrize("era", list(ERAS))
async def test_stdio(era: str) -> None:
    recorder = Recorder()
    args = [str(PROGRESSIVE_SERVER), *([SIDE_EFFECT_LISTS] if era == "modern" else [])]
    transport = StdioTransport(command=sys.executable, args=args)
    async with Client(transport, message_handler=recorder, **ERAS[era]) as client:
        await exercise(client, recorder)


@pytest.mark.slow
async def test_streamable_http_sessions() -> None:
    """2025-11-25 over HTTP: state per session; two sessions at once stay apart."""
    first, second = Recorder(), Recorder()
    with progressive_http_server() as url:
        async with (
            Client(url, mode="legacy", message_handler=first) as client,
            Client(url, mode="legacy", message_handler=second) as other,
        ):
            await exercise(client, first)
            await call(client, "enable_tools", groups=["admin"])
            assert await names(other) == INITIAL
            assert second.methods == []


@pytest.mark.slow
async def test_streamable_http_stateless_without_auth_enables_with_no_state() -> None:
    """2026-07-28 over HTTP with no auth, the default: enable_tools hands out definitions and
    their tools run on the next call; no list changes, for this client or another."""
    with progressive_http_server() as url:
        async with Client(url) as client, Client(url) as other:
            assert await names(client) == INITIAL
            reply = await call(client, "enable_tools", groups=["repos", "code"])
            assert reply["enabled"] == ["code", "repos"]
            assert "create_repo" in [t["name"] for t in reply["tools"]]
            assert (await client.call_tool("create_repo", {"name": "x"})).data == "created x"
            proxied = {"name": "create_repo", "arguments": {"name": "y"}}
            assert (await client.call_tool("call_tool", proxied)).data == "created y"
            assert await names(client) == INITIAL
            assert await names(other) == INITIAL


@pytest.mark.slow
async def test_streamable_http_stateless_without_auth_never_shares() -> None:
    """2026-07-28 over HTTP with no auth and side_effect_lists: no identity, so the initial set
    listed, no meta-tools that could only fail, other groups' tools run by name, and
    instructions and refusals that say how to get state."""
    with progressive_http_server(SIDE_EFFECT_LISTS) as url:
        async with Client(url) as client, Client(url) as other:
            stateless = [n for n in INITIAL if n not in ("enable_tools", "disable_tools")]
            assert await names(client) == stateless
            assert client.instructions is not None
            assert "authenticate (send a bearer token) or connect with a 2025-11-25 session" in (
                client.instructions
            )
            with pytest.raises(ToolError) as refused:
                await client.call_tool("enable_tools", {"groups": ["code"]})
            assert str(refused.value) == f"Unknown tool: 'enable_tools'; {NO_STATE}"
            # Another group's tool runs by its exact name; the list stays the same.
            assert (await client.call_tool("delete_repo", {"name": "x"})).structured_content
            assert await names(client) == stateless
            assert await names(other) == stateless
            assert (await client.call_tool("create_issue", {"title": "t"})).structured_content


@pytest.mark.slow
async def test_streamable_http_stateless_per_principal() -> None:
    """2026-07-28 over HTTP with auth and side_effect_lists: state per principal; two users
    at once stay apart."""
    alice_seen, bob_seen = Recorder(), Recorder()
    with progressive_http_server("--auth", SIDE_EFFECT_LISTS) as url:
        async with (
            Client(url, auth="alice-token", message_handler=alice_seen) as alice,
            Client(url, auth="bob-token", message_handler=bob_seen) as bob,
        ):
            await exercise(alice, alice_seen)
            await call(alice, "enable_tools", groups=["admin"])
            assert "delete_repo" in await names(alice)
            assert await names(bob) == INITIAL
            assert bob_seen.methods == []
            with pytest.raises(ToolError, match=r"Enabled now: \[\"issues\"\]"):
                await bob.call_tool("delete_repo", {"name": "x"})
        # A new connection of the same user finds its groups: no session needed.
        async with Client(url, auth="alice-token") as again:
            assert "delete_repo" in await names(again)


# -- clients that cannot hold state --------------------------------------------------------------

TOKENS = {
    "alice-token": {"client_id": "agent", "sub": "alice", "scopes": []},
    "bob-token": {"client_id": "agent", "sub": "bob", "scopes": []},
}
STATE_TOOLS = {"enable_tools", "disable_tools"}
NO_STATE = (
    "groups cannot be enabled or disabled on this connection: this server keeps enabled "
    "groups per session (protocol 2025-11-25) or per authenticated user, and this stateless "
    "HTTP request has neither. Authenticate or connect with a session. Until then the initial "
    'groups are listed (["issues"]), and a tool of any other group runs when called by its '
    "exact name (search_tools finds them)"
)
HOW_TO_GET_STATE = "authenticate (send a bearer token) or connect with a 2025-11-25 session"


def searchable_server(*, auth: bool = False) -> FastMCP:
    """The progressive test server with search, a call_tool proxy and, optionally, tokens."""
    mcp, middleware = make_server(call_tool_name="call_tool")
    install(mcp, SearchMiddleware(catalog=middleware.catalog))
    if auth:
        mcp.auth = StaticTokenVerifier(tokens=TOKENS)
    return mcp


@pytest.mark.side_effect_lists
class TestClientsWithoutState:
    """Unauthenticated stateless HTTP: the meta-tools that could only fail do not exist."""

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_not_listed_not_found_not_searched(self, era: str) -> None:
        async with (
            asgi_server(searchable_server(), stateless_http=True) as running,
            running.client(**ERAS[era]) as client,
        ):
            listed = set(await names(client))
            assert not listed & STATE_TOOLS
            assert {"call_tool", "search_tools", "create_issue"} <= listed
            for tool in sorted(STATE_TOOLS):
                with pytest.raises(ToolError) as refused:
                    await client.call_tool(tool, {"groups": ["repos"]})
                assert str(refused.value) == f"Unknown tool: {tool!r}; {NO_STATE}"
                with pytest.raises(ToolError) as proxied:
                    await client.call_tool("call_tool", {"name": tool, "arguments": {}})
                assert str(proxied.value) == str(refused.value)
                found = await client.call_tool("search_tools", {"query": tool})
                assert tool not in {t["name"] for t in found.structured_content["tools"]}
                queried = await list_tools(client, query=tool)
                assert tool not in {t.name for t in queried.tools}
            assert "create_repo" not in listed

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_every_group_is_reached_by_exact_name(self, era: str) -> None:
        """Listed: the initial groups. Found by search with its definition and run by name or
        through call_tool: a tool of any group; never one no group shows."""
        async with (
            asgi_server(searchable_server(), stateless_http=True) as running,
            running.client(**ERAS[era]) as client,
        ):
            found = await client.call_tool("search_tools", {"query": "create repo"})
            hit = found.structured_content["tools"][0]
            assert hit["name"] == "create_repo"
            assert "inputSchema" in hit
            assert "available_after" not in hit
            assert (await client.call_tool("create_repo", {"name": "x"})).data == "repo x"
            proxied = await client.call_tool(
                "call_tool", {"name": "fork_repo", "arguments": {"name": "y"}}
            )
            assert proxied.content[0].text == "y"  # type: ignore[union-attr]
            readme = await client.read_resource("repo://readme")
            assert readme[0].text == "# readme"  # type: ignore[union-attr]
            with pytest.raises(ToolError) as concealed:
                await client.call_tool("typo", {})
            with pytest.raises(ToolError) as absent:
                await client.call_tool("never_was", {})
            assert str(concealed.value).replace("typo", "X") == str(absent.value).replace(
                "never_was", "X"
            )
            assert "create_repo" not in await names(client)

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_the_instructions_say_how_to_get_state(self, era: str) -> None:
        async with (
            asgi_server(searchable_server(), stateless_http=True) as running,
            running.client(**ERAS[era]) as client,
        ):
            assert client.instructions is not None
            assert HOW_TO_GET_STATE in client.instructions
            # Appended to the search paragraph, not in its place.
            assert client.instructions.startswith("Tool search:")

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_an_authenticated_client_keeps_them(self, era: str) -> None:
        async with (
            asgi_server(searchable_server(auth=True), stateless_http=True) as running,
            running.client(**ERAS[era], auth="alice-token") as client,
        ):
            assert set(await names(client)) >= STATE_TOOLS
            assert HOW_TO_GET_STATE not in (client.instructions or "")
            assert (await call(client, "enable_tools", groups=["code", "repos"]))["errors"] == []
            assert "create_repo" in await names(client)

    async def test_a_2025_11_25_session_keeps_them(self) -> None:
        async with (
            asgi_server(searchable_server()) as running,
            running.client(mode="legacy") as client,
        ):
            assert set(await names(client)) >= STATE_TOOLS
            assert HOW_TO_GET_STATE not in (client.instructions or "")
            assert (await call(client, "enable_tools", groups=["code", "repos"]))["errors"] == []

    async def test_a_principal_keeps_its_groups_across_sessions_and_eras(self) -> None:
        """Authenticated, the state is the user's: a new session or the other era finds it."""
        async with asgi_server(searchable_server(auth=True)) as running:
            async with running.client(mode="legacy", auth="alice-token") as alice:
                await call(alice, "enable_tools", groups=["code", "repos"])
            async with (
                running.client(mode="legacy", auth="alice-token") as alice_again,
                running.client(auth="alice-token") as alice_modern,
                running.client(mode="legacy", auth="bob-token") as bob,
            ):
                assert "create_repo" in await names(alice_again)
                assert "create_repo" in await names(alice_modern)
                assert "create_repo" not in await names(bob)

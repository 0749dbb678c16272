"""Progressive disclosure over real transports: stdio and streamable HTTP, with and without auth."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError

from ._progressive_servers import PROGRESSIVE_SERVER, progressive_http_server
from .conftest import ERAS
from .test_progressive import Recorder, call, names

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


@pytest.mark.parametrize("era", list(ERAS))
async def test_stdio(era: str) -> None:
    recorder = Recorder()
    transport = StdioTransport(command=sys.executable, args=[str(PROGRESSIVE_SERVER)])
    async with Client(transport, message_handler=recorder, **ERAS[era]) as client:
        await exercise(client, recorder)


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


async def test_streamable_http_stateless_without_auth_never_shares() -> None:
    """2026-07-28 over HTTP with no auth: no identity, so the initial set and a clear refusal."""
    with progressive_http_server() as url:
        async with Client(url) as client, Client(url) as other:
            with pytest.raises(ToolError) as refused:
                await client.call_tool("enable_tools", {"groups": ["code"]})
            assert str(refused.value) == (
                "groups cannot be enabled or disabled on this connection: this server keeps "
                "enabled groups per session (protocol 2025-11-25) or per authenticated user, "
                "and this stateless HTTP request has neither. Authenticate or connect with a "
                'session; until then the initial groups apply: ["issues"]'
            )
            with pytest.raises(ToolError, match=r"this connection cannot enable groups"):
                await client.call_tool("delete_repo", {"name": "x"})
            assert await names(client) == INITIAL
            assert await names(other) == INITIAL
            assert (await client.call_tool("create_issue", {"title": "t"})).structured_content


async def test_streamable_http_stateless_per_principal() -> None:
    """2026-07-28 over HTTP with auth: state per principal; two users at once stay apart."""
    alice_seen, bob_seen = Recorder(), Recorder()
    with progressive_http_server("--auth") as url:
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

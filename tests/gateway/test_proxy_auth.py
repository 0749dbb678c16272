"""Proxy mode with ``[auth]`` and ``[state]``: replicas of ``fastmcp-filtering serve --http`` on
one Redis keep each token's state apart, in both protocol eras; stdio refuses ``[auth]``; the
client's token never reaches an HTTP upstream."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError
from fastmcp.utilities.tests import asgi_server
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.client import call_method, list_groups
from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.proxy import build_proxy

from .._progressive_servers import redis_keys, redis_server
from .._servers import serve_http
from .._support.cli import CLI
from .._support.cli import serve_http as replica
from .._support.standin import EXAMPLE_CONFIG, STANDIN, names, reply
from ..conftest import ERAS

# Replicas of the proxy as subprocesses, on a redis-server.
pytestmark = pytest.mark.slow


TOKENS = {"alice": "alice-gateway-token", "bob": "bob-gateway-token"}
AUTH = "".join(
    f'\n[[auth.tokens]]\ntoken = "{token}"\nclient_id = "{who}"\nscopes = ["mcp"]\n'
    for who, token in TOKENS.items()
)
ISSUES = {"add_issue_comment", "create_issue", "get_issue", "list_issues", "update_issue"}
PULLS = {"create_pull_request", "get_pull_request", "list_pull_requests", "merge_pull_request"}


def gateway_config(tmp_path: Path, state: str) -> Path:
    """The GitHub example (issues enabled at first) with two static tokens and ``state``.

    With ``side_effect_lists``: a principal's stored state shows in its lists on
    2026-07-28 too, which is what these tests follow from replica to replica.
    """
    text = "side_effect_lists = true\n" + EXAMPLE_CONFIG.read_text(encoding="utf-8")
    text = text.replace('args = ["upstream_standin.py"]', f"args = [{json.dumps(str(STANDIN))}]")
    text += f'\n[auth]\ntype = "static"\nrequired_scopes = ["mcp"]\n{AUTH}\n{state}\n'
    path = tmp_path / "gateway.toml"
    path.write_text(text, encoding="utf-8")
    return path


async def tool_names(client: Client[Any]) -> set[str]:
    return set(await names(client))


class TestReplicasOnOneRedis:
    @pytest.mark.parametrize("era", list(ERAS))
    async def test_two_tokens_stay_apart_across_two_replicas(
        self, tmp_path: Path, era: str
    ) -> None:
        mode = ERAS[era]
        with ExitStack() as stack:
            url = stack.enter_context(redis_server())
            config = gateway_config(tmp_path, f'[state]\nurl = "{url}"\ntimeout = 2.0\n')
            one, _ = stack.enter_context(replica(config))
            two, _ = stack.enter_context(replica(config))

            # Alice enables pull requests and states a concern on replica one...
            async with Client(one, auth=TOKENS["alice"], **mode) as alice:
                assert not (await tool_names(alice)) & PULLS
                enabled = await alice.call_tool("enable_tools", {"groups": ["pull_requests"]})
                assert enabled.structured_content["errors"] == []
                await call_method(alice, "concerns/update", {"concerns": {"risk": "read"}})

            # ...and finds both on replica two, in a new session or request.
            async with (
                Client(two, auth=TOKENS["alice"], **mode) as alice,
                Client(two, auth=TOKENS["bob"], **mode) as bob,
            ):
                seen = await tool_names(alice)
                assert {"get_pull_request", "list_pull_requests"} <= seen
                assert "create_pull_request" not in seen  # risk=read hides writes
                assert "create_issue" not in seen
                called = await alice.call_tool(
                    "get_pull_request", {"owner": "o", "repo": "r", "pull_number": 1}
                )
                assert reply(called)["tool"] == "get_pull_request"

                # Bob sees neither Alice's group nor her concerns.
                seen = await tool_names(bob)
                assert not seen & PULLS
                assert seen >= ISSUES
                with pytest.raises(ToolError, match=r"Call enable_tools\(groups="):
                    await bob.call_tool(
                        "get_pull_request", {"owner": "o", "repo": "r", "pull_number": 1}
                    )

            # Bob's change on replica two is his alone, seen on replica one.
            async with Client(two, auth=TOKENS["bob"], **mode) as bob:
                await bob.call_tool("enable_tools", {"groups": ["repos"]})
            async with (
                Client(one, auth=TOKENS["alice"], **mode) as alice,
                Client(one, auth=TOKENS["bob"], **mode) as bob,
            ):
                assert "list_commits" in await tool_names(bob)
                assert "list_commits" not in await tool_names(alice)
                assert "get_pull_request" in await tool_names(alice)

            # The state is in Redis, one entry per token and kind, not in either replica.
            keys = await redis_keys(url, "*fastmcp-filtering:*")
            assert len([k for k in keys if b":progressive:" in k]) == 2
            assert len([k for k in keys if b":concerns:" in k]) == 1

    async def test_a_request_without_a_valid_token_is_refused(self, tmp_path: Path) -> None:
        with replica(gateway_config(tmp_path, "")) as (url, _):
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
            async with httpx.AsyncClient() as http:
                for headers in ({}, {"Authorization": "Bearer not-a-token"}):
                    response = await http.post(url, json=body, headers=headers)
                    assert response.status_code == 401, headers


class TestServe:
    def test_stdio_refuses_auth(self, tmp_path: Path) -> None:
        config = gateway_config(tmp_path, "")
        result = subprocess.run(
            [*CLI, "serve", str(config)], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 2
        assert result.stderr == (
            f"{config}: [auth] applies to HTTP: a stdio server's client is the process that "
            "started it, and sends no token. Serve with --http, or serve a configuration "
            "without [auth] over stdio.\n"
        )

    def test_stdio_on_a_shared_store_warns(self, tmp_path: Path) -> None:
        config = tmp_path / "stdio.toml"
        config.write_text(
            f'[[upstreams]]\ncommand = "python"\nargs = [{json.dumps(str(STANDIN))}]\n'
            '\n[state]\nurl = "redis://127.0.0.1:6379/0"\n',
            encoding="utf-8",
        )
        # No client: the server reads the end of its input and stops.
        result = subprocess.run(
            [*CLI, "serve", str(config)], input="", capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0
        assert (
            f"{config}: warning: over stdio a 2026-07-28 client is its process, and every stdio "
            "proxy on this [state] store keeps that client's state under one key: proxies of "
            "different users must not share the store"
        ) in result.stderr


ECHO_UPSTREAM = '''
import argparse, json
from fastmcp import FastMCP
from fastmcp.server.dependencies import get_http_headers

mcp = FastMCP("echo")

@mcp.tool
def seen_headers() -> str:
    """The HTTP headers this upstream received."""
    return json.dumps(get_http_headers(include_all=True))

parser = argparse.ArgumentParser()
parser.add_argument("--http", action="store_true")
parser.add_argument("--port", type=int)
mcp.run(transport="http", port=parser.parse_args().port, show_banner=False)
'''


class TestUpstreamHeaders:
    """Behind ``[auth]`` the client's Authorization header is its token for the proxy."""

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_the_clients_token_stays_at_the_proxy(self, tmp_path: Path, era: str) -> None:
        script = tmp_path / "echo_upstream.py"
        script.write_text(ECHO_UPSTREAM, encoding="utf-8")
        with serve_http(script) as upstream:
            config = FilteringConfig.model_validate(
                {
                    "upstreams": [{"url": upstream.url, "headers": {"X-Upstream-Key": "k"}}],
                    "auth": {
                        "type": "static",
                        "tokens": [{"token": TOKENS["alice"], "client_id": "alice"}],
                    },
                }
            )
            async with (
                asgi_server(build_proxy(config)) as proxy,
                proxy.client(auth=TOKENS["alice"], headers={"X-Client": "c"}, **ERAS[era]) as c,
            ):
                seen = json.loads((await c.call_tool("seen_headers", {})).content[0].text)
        assert "authorization" not in seen
        assert "x-client" not in seen
        assert seen["x-upstream-key"] == "k"

    async def test_without_auth_fastmcps_forwarding_is_kept(self, tmp_path: Path) -> None:
        script = tmp_path / "echo_upstream.py"
        script.write_text(ECHO_UPSTREAM, encoding="utf-8")
        with serve_http(script) as upstream:
            config = FilteringConfig.model_validate({"upstreams": [{"url": upstream.url}]})
            async with (
                asgi_server(build_proxy(config)) as proxy,
                proxy.client(headers={"X-Client": "c"}) as client,
            ):
                seen = json.loads((await client.call_tool("seen_headers", {})).content[0].text)
        assert seen["x-client"] == "c"


@contextmanager
def silent_store() -> Iterator[str]:
    """A Redis address that accepts connections and never answers: a hung store."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    finally:
        listener.close()
        for connection in held:
            connection.close()


class TestAStoreThatStopsAnswering:
    """The [state] timeout: a hung Redis fails requests closed, it does not hold them."""

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_requests_are_answered_and_nothing_opens_up(self, era: str) -> None:
        with silent_store() as url:
            config = FilteringConfig.model_validate(
                {
                    "upstreams": [{"command": "python", "args": [str(STANDIN)]}],
                    "groups": [{"name": "issues", "tools": ["*issue*"]}],
                    "progressive": {"initial_groups": ["issues"]},
                    "auth": {"type": "static", "tokens": [{"token": "t", "client_id": "a"}]},
                    "state": {"url": url, "timeout": 0.5},
                }
            )
            async with (
                asgi_server(build_proxy(config)) as proxy,
                proxy.client(auth="t", **ERAS[era]) as client,
            ):
                assert [g.name for g in await list_groups(client)] == ["issues"]
                # FastMCP reads its own per-session visibility from the store first.
                with pytest.raises(MCPError):
                    await client.list_tools()
                with pytest.raises(ToolError, match="could not read its session state store"):
                    await client.call_tool("enable_tools", {"groups": ["issues"]})

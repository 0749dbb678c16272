"""``Mcp-Param-*`` headers (2026-07-28 HTTP) are checked against the schema the caller itself
is shown: a hidden tool with a header-bound argument answers as an absent one, whoever else
listed it before.

The MCP SDK checks a ``tools/call``'s ``Mcp-Param-*`` headers before any middleware runs.
FastMCP hands it a server-wide cache of input schemas that every client's ``tools/list``
fills, so once an admin had listed ``move_account`` a reader's call to it was refused with
HTTP 400 naming its argument, where a tool that does not exist answers "Unknown tool".
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import FastMCP
from fastmcp.utilities.tests import asgi_server

from .._principals import PrincipalByClientName
from .._region_server import make_server
from .._servers import serve_http
from ..conftest import Connect

pytestmark = pytest.mark.skipif(
    not hasattr(FastMCP("probe")._mcp_server, "get_tool_input_schema"),
    reason="this FastMCP's MCP SDK checks no Mcp-Param-* headers",
)


def region_server(*, hidden: bool) -> FastMCP:
    """The region server (``move_account`` hidden from readers), the principal named by the
    client's ``clientInfo``."""
    return make_server(hidden=hidden, first=[PrincipalByClientName()])


def envelope(who: str) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": who, "version": "1"},
    }


@asynccontextmanager
async def raw_http(server: FastMCP) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_server(server, stateless_http=True) as running:
        transport = httpx.ASGITransport(app=running.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            yield http


async def post(
    http: httpx.AsyncClient,
    who: str,
    method: str,
    params: dict[str, Any],
    url: str = "/mcp",
    **headers: str,
) -> tuple[int, str]:
    """One request as ``who`` (its ``clientInfo``) to ``url``: its HTTP status and body."""
    sent = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
        **({"mcp-name": params["name"]} if "name" in params else {}),
        **headers,
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {**params, "_meta": envelope(who)},
    }
    reply = await http.post(url, json=body, headers=sent)
    return reply.status_code, reply.text


EU = {"mcp-param-region": "eu"}
CALLS = {
    "header and argument": ({"account_region": "eu"}, {"mcp-param-region": "eu"}),
    "argument without its header": ({"account_region": "eu"}, {}),
    "header without its argument": ({}, {"mcp-param-region": "eu"}),
}


async def reader_calls(server: FastMCP, name: str) -> list[tuple[int, str]]:
    """What the reader gets calling ``name`` each way, after an admin listed the tools."""
    got: list[tuple[int, str]] = []
    async with raw_http(server) as http:
        status, _ = await post(http, "admin", "tools/list", {})
        assert status == 200
        for arguments, headers in CALLS.values():
            params = {"name": name, "arguments": arguments}
            status, text = await post(http, "reader", "tools/call", params, **headers)
            got.append((status, text.replace(name, "NAME")))
    return got


class TestHiddenToolWithHeaderBoundArgument:
    async def test_answers_as_a_tool_that_never_was(self) -> None:
        hidden = await reader_calls(region_server(hidden=True), "move_account")
        absent = await reader_calls(region_server(hidden=False), "move_account")
        assert hidden == absent
        for status, text in hidden:
            assert status == 200
            assert json.loads(text)["result"]["content"][0]["text"] == "Unknown tool: 'NAME'"

    async def test_a_visible_tool_still_has_its_headers_checked(self) -> None:
        async with raw_http(region_server(hidden=True)) as http:
            params = {"name": "show_region", "arguments": {"account_region": "eu"}}
            missing = await post(http, "reader", "tools/call", params)
            matching = await post(
                http, "reader", "tools/call", params, **{"mcp-param-region": "eu"}
            )
        assert missing[0] == 400
        assert "account_region" in missing[1]
        assert matching[0] == 200
        assert '"eu"' in matching[1]

    async def test_the_admin_still_has_its_headers_checked(self) -> None:
        async with raw_http(region_server(hidden=True)) as http:
            params = {"name": "move_account", "arguments": {"account_region": "eu"}}
            missing = await post(http, "admin", "tools/call", params)
            matching = await post(http, "admin", "tools/call", params, **EU)
        assert missing[0] == 400
        assert matching[0] == 200
        assert "moved to eu" in matching[1]


async def test_a_session_client_sends_no_headers_and_is_refused_alike(connect: Connect) -> None:
    """Over a 2025-11-25 session (and in memory) no header is checked: the hidden tool is
    unknown, word for word as an absent one."""
    answers = []
    for hidden in (True, False):
        async with connect(region_server(hidden=hidden)) as reader:
            result = await reader.call_tool_mcp("move_account", {"account_region": "eu"})
            answers.append(result.model_dump_json())
    assert answers[0] == answers[1]
    assert "Unknown tool" in answers[0]


REGION_SERVER = Path(__file__).parents[1] / "_region_server.py"


async def over_the_network(*args: str) -> list[tuple[int, str]]:
    """The reader's calls to ``move_account`` each way, over real HTTP with bearer tokens,
    after the admin listed the tools."""
    got: list[tuple[int, str]] = []
    with serve_http(REGION_SERVER, *args) as running:
        async with httpx.AsyncClient(timeout=30) as http:
            admin = {"authorization": "Bearer admin-token"}
            status, _ = await post(http, "raw", "tools/list", {}, running.url, **admin)
            assert status == 200
            for arguments, headers in CALLS.values():
                params = {"name": "move_account", "arguments": arguments}
                reader = {"authorization": "Bearer reader-token", **headers}
                got.append(await post(http, "raw", "tools/call", params, running.url, **reader))
    return got


@pytest.mark.slow
async def test_over_http_a_hidden_tool_answers_as_an_absent_one() -> None:
    hidden = await over_the_network()
    absent = await over_the_network("--absent")
    assert hidden == absent
    assert all(status == 200 and "Unknown tool" in text for status, text in hidden)

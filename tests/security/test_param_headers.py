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
from typing import Annotated, Any

import httpx
import pytest
from fastmcp import FastMCP
from fastmcp.server.auth import require_scopes
from fastmcp.utilities.tests import asgi_server
from pydantic import Field

from fastmcp_filtering import Group, add_filtering, in_group

from .._principals import PrincipalByClientName
from ..conftest import Connect

pytestmark = pytest.mark.skipif(
    not hasattr(FastMCP("probe")._mcp_server, "get_tool_input_schema"),
    reason="this FastMCP's MCP SDK checks no Mcp-Param-* headers",
)

Region = Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]


def region_server(*, hidden: bool) -> FastMCP:
    """``ping`` and ``show_region`` for everyone and, with ``hidden``, ``move_account`` in
    the ``admin`` group only ``github:admin`` tokens may use; the last two take an
    ``account_region`` bound to the ``Mcp-Param-Region`` header."""
    mcp = FastMCP("regions")
    mcp.add_middleware(PrincipalByClientName())
    mcp.tool(lambda: "pong", name="ping")

    @mcp.tool
    def show_region(account_region: Region) -> str:
        return account_region

    if hidden:

        @in_group("admin")
        @mcp.tool
        def move_account(account_region: Region) -> str:
            return f"moved to {account_region}"

    add_filtering(mcp, groups=[Group("admin", access=require_scopes("github:admin"))])
    return mcp


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
    http: httpx.AsyncClient, who: str, method: str, params: dict[str, Any], **headers: str
) -> tuple[int, str]:
    """One request as ``who``: its HTTP status and body."""
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
    reply = await http.post("/mcp", json=body, headers=sent)
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

"""The example server as a real subprocess: stdio and streamable HTTP, FastMCP and SDK clients."""

from __future__ import annotations

import json
import sys
from typing import Any, ClassVar

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, ConfigDict

from fastmcp_filtering.client import groups_of, list_groups, list_tags, list_tools

from .._servers import EXAMPLE_SERVER, http_server
from ..conftest import ERAS

# The example server as a subprocess, over stdio and HTTP.
pytestmark = pytest.mark.slow


def stdio_transport() -> StdioTransport:
    return StdioTransport(command=sys.executable, args=[str(EXAMPLE_SERVER)])


async def exercise(client: Client[Any]) -> None:
    """What an agent does first: groups, tags, then a filtered list; checked against the server."""
    groups = await list_groups(client)
    assert [g.name for g in groups][:3] == ["code", "repos", "pull_requests"]
    assert groups[1].parents == ["code"]
    assert "destructive" in [t.name for t in await list_tags(client)]
    everything = await client.list_tools()
    assert len(everything) == 62
    issues = await list_tools(client, groups=["issues"], tags=["read-only"])
    assert sorted(t.name for t in issues.tools) == [
        "get_issue",
        "list_issue_comments",
        "list_issues",
        "search_issues",
    ]
    assert all(groups_of(t) == ["issues"] for t in issues.tools)
    result = await client.call_tool("create_issue", {"owner": "o", "repo": "r", "title": "t"})
    assert result.structured_content is not None
    assert result.structured_content["number"] == 42


@pytest.mark.parametrize("era", list(ERAS))
async def test_stdio(era: str) -> None:
    async with Client(stdio_transport(), **ERAS[era]) as client:
        await exercise(client)


@pytest.mark.parametrize("era", list(ERAS))
async def test_streamable_http(era: str) -> None:
    with http_server() as url:
        async with Client(url, **ERAS[era]) as client:
            await exercise(client)


class _Raw(BaseModel):
    method: str
    params: dict[str, Any] | None = None
    name_param: ClassVar[str | None] = None


class _Any(BaseModel):
    model_config = ConfigDict(extra="allow")


async def _sdk_session_exchange(session: ClientSession, era: str) -> None:
    """groups/list and tools/list with a filter, as plain JSON-RPC from the SDK's session."""
    if era == "legacy":
        await session.initialize()
    else:
        await session.discover()
    groups = await session.send_request(_Raw(method="groups/list"), _Any)  # type: ignore[arg-type]
    names = [g["name"] for g in groups.model_dump()["groups"]]
    assert names == [
        "code",
        "repos",
        "pull_requests",
        "issues",
        "actions",
        "releases",
        "security",
        "orgs",
        "admin",
    ]
    request = _Raw(method="tools/list", params={"filter": {"groups": ["admin"]}})
    tools = await session.send_request(request, _Any)  # type: ignore[arg-type]
    listed = tools.model_dump()["tools"]
    assert sorted(t["name"] for t in listed) == [
        "archive_repo",
        "delete_branch",
        "delete_release",
        "delete_repo",
        "transfer_repo",
        "update_branch_protection",
    ]
    assert {tuple(t["_meta"]["io.modelcontextprotocol/groups"]) for t in listed} == {("admin",)}


@pytest.mark.parametrize("era", list(ERAS))
async def test_mcp_sdk_client_session_over_stdio(era: str) -> None:
    """The MCP Python SDK's own ClientSession, sending the new methods as plain JSON-RPC."""
    params = StdioServerParameters(command=sys.executable, args=[str(EXAMPLE_SERVER)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await _sdk_session_exchange(session, era)


@pytest.mark.parametrize("era", list(ERAS))
async def test_mcp_sdk_client_session_over_http(era: str) -> None:
    with http_server() as url:
        async with (
            streamable_http_client(url) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await _sdk_session_exchange(session, era)


def test_capabilities_on_the_wire_at_top_level() -> None:
    """A client reading raw JSON finds ``filtering`` and ``groups`` where the proposals put them."""
    with http_server() as url:
        headers = {"Accept": "application/json, text/event-stream"}
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
        response = httpx.post(url, json=body, headers=headers, timeout=10)
        capabilities = _first_result(response)["capabilities"]
        discover = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "server/discover",
            "params": {
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                }
            },
        }
        modern_headers = {
            **headers,
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "server/discover",
        }
        modern = httpx.post(url, json=discover, headers=modern_headers, timeout=10)
        discovered = _first_result(modern)["capabilities"]
    # Each era's capabilities say what it gets: list_changed reaches sessions only.
    for caps, changes in ((capabilities, {"listChanged": True}), (discovered, {})):
        assert caps["filtering"] == {"groups": changes, "tags": changes}
        assert caps["groups"] == changes
        assert caps["experimental"]["groups"] == changes


def _first_result(response: httpx.Response) -> dict[str, Any]:
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = next(d for d in data if d)
    message = json.loads(text)
    assert "result" in message, message
    return dict(message["result"])

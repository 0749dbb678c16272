"""A group the client may not use is named nowhere it can read: not in a tool's own ``_meta``
on a query page or in ``search_tools``, and not in a refusal that quotes the initial groups.

Each test compares what a reader gets where a denied ``admin`` group exists with what it
gets where no such group was ever declared.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastmcp import FastMCP
from fastmcp.server.auth import require_scopes
from fastmcp.tools import Tool
from fastmcp.utilities.tests import asgi_server

from fastmcp_filtering import (
    Group,
    GroupAccessMiddleware,
    SearchMiddleware,
    add_filtering,
    in_group,
    install,
)
from fastmcp_filtering.client import call_method

from ..conftest import ERAS, Connect

STACKS = ("add_filtering without filter", "search and access only")


def named_server(stack: str, *, admin: bool) -> FastMCP:
    """``transfer_repo`` whose own ``_meta`` names ``repos`` and, with ``admin``, the denied
    ``admin`` group too (which then exists, only ``github:admin`` tokens may use)."""
    mcp = FastMCP("own meta")
    named = ["repos", "admin"] if admin else ["repos"]
    mcp.tool(
        lambda name: name,
        name="transfer_repo",
        description="Transfer a repository",
        meta={"io.modelcontextprotocol/groups": named},
    )
    groups = [Group("repos")]
    if admin:
        groups.append(Group("admin", access=require_scopes("github:admin")))
    if stack == STACKS[0]:
        add_filtering(mcp, groups=groups, filter=False)
    else:
        install(mcp, GroupAccessMiddleware(groups=groups), SearchMiddleware(groups=groups))
    return mcp


async def seen(connect: Connect, server: FastMCP) -> list[str]:
    """``transfer_repo`` as the reader gets it: listed, on a query page, from search_tools."""
    async with connect(server) as reader:
        plain = await call_method(reader, "tools/list", {})
        queried = await call_method(reader, "tools/list", {"query": "transfer repository"})
        found = await reader.call_tool("search_tools", {"query": "transfer repository"})
    hits = found.structured_content["tools"] if found.structured_content else []
    return [
        json.dumps(tool, sort_keys=True)
        for tool in (
            *(t for t in plain["tools"] if t["name"] == "transfer_repo"),
            *queried["tools"],
            *hits,
        )
    ]


@pytest.mark.parametrize("stack", STACKS)
async def test_a_denied_group_in_a_tools_own_meta_is_never_shown(
    connect: Connect, stack: str
) -> None:
    denied = await seen(connect, named_server(stack, admin=True))
    absent = await seen(connect, named_server(stack, admin=False))
    assert len(absent) == 3
    assert denied == absent


def initial_server(*, admin: bool) -> FastMCP:
    """Progressive disclosure whose ``initial_groups`` are ``issues`` and, with ``admin``, the
    ``admin`` group only ``github:admin`` tokens may use."""
    mcp = FastMCP("initial")
    mcp.add_tool(in_group("issues")(Tool.from_function(lambda: "ok", name="list_issues")))
    mcp.add_tool(in_group("wiki")(Tool.from_function(lambda: "ok", name="read_page")))
    groups = [Group("issues"), Group("wiki")]
    initial = ["issues"]
    if admin:
        mcp.add_tool(in_group("admin")(Tool.from_function(lambda: "x", name="drop_all")))
        groups.append(Group("admin", access=require_scopes("github:admin")))
        initial.append("admin")
    add_filtering(mcp, groups=groups, progressive={"initial_groups": initial})
    return mcp


async def answers(era: str, server: FastMCP) -> list[Any]:
    """What an anonymous client of a stateless HTTP server (no identity: it keeps no state) is
    told by ``enable_tools`` and ``disable_tools`` (a refusal, or a reply), naming ``wiki``
    and then ``admin``, and its ``groups/list``."""
    told: list[Any] = []
    async with (
        asgi_server(server, stateless_http=True) as running,
        running.client(**ERAS[era]) as client,
    ):
        for tool, group in (("enable_tools", "wiki"), ("disable_tools", "wiki")):
            result = await client.call_tool_mcp(tool, {"groups": [group]})
            told.append(result.model_dump_json(exclude={"meta"}))
        result = await client.call_tool_mcp("enable_tools", {"groups": ["admin"]})
        told.append(result.model_dump_json(exclude={"meta"}))
        told.append(await call_method(client, "groups/list"))
    return told


@pytest.mark.side_effect_lists
async def test_a_refusal_to_a_client_without_state_names_no_denied_initial_group(
    era: str,
) -> None:
    """Lists that change by the client's calls need state the client does not have: refused."""
    denied = await answers(era, initial_server(admin=True))
    absent = await answers(era, initial_server(admin=False))
    assert denied == absent
    assert all('"is_error":true' in told for told in denied[:3])


async def test_a_client_without_state_is_told_no_denied_initial_group(era: str) -> None:
    """By default (2026-07-28 lists no call changes: ``enable_tools`` hands out definitions;
    2025-11-25: the refusal above)."""
    denied = await answers(era, initial_server(admin=True))
    absent = await answers(era, initial_server(admin=False))
    assert denied == absent
    if era == "modern":
        # The denied group is as unknown as one never declared.
        assert "unknown group 'admin'" in denied[2]
    else:
        assert '"is_error":true' in denied[2]

"""A parent's FastMCP ``AuthMiddleware`` is part of what it hides: a server mounted in it does
not reach, list or rank what that middleware denies the client, on any path of its own.

The parent puts ``AuthMiddleware(restrict_tag("admin", scopes=["github:admin"]))`` first, as
``FastMCP(middleware=[...])`` does; the child, mounted as ``c`` with its own stack (search
first, or progressive disclosure with ``call_tool``), has ``drop_table`` tagged ``admin``. The
middleware runs on the parent's own requests only: the child's ``call_tool``,
``search_tools`` and ``enable_tools`` look tools up in the child, where it never ran. A
reader's answers are compared with those of the same tree without ``drop_table``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.server.auth import restrict_tag
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.middleware.authorization import AuthMiddleware
from fastmcp.tools import Tool

from fastmcp_filtering import Group, add_filtering

from .._principals import PrincipalByClientName, as_principal
from ..conftest import ERAS

# Known gaps (docs/known-gaps.md), strict xfails: each fails the day its gap is closed.
OTHER_MIDDLEWARE = (
    "a parent's own middleware that drops tools from its lists (not FastMCP's AuthMiddleware) "
    "does not judge a mounted server's own search_tools, which ranks the dropped tool"
)


def child_server(stack: str, *, secret: bool) -> FastMCP:
    child = FastMCP("child")
    child.tool(lambda: "rows", name="list_rows", description="List table rows")
    if secret:
        child.add_tool(
            Tool.from_function(
                lambda: "dropped", name="drop_table", description="Drop a table", tags={"admin"}
            )
        )
    if stack == "search_first":
        add_filtering(child, progressive="search_first")
    else:
        add_filtering(
            child, groups=[Group("db", tools=["*"])], progressive={"call_tool_name": "call_tool"}
        )
    return child


PARENT_STACKS = ("groups", "progressive", "none")
"""The parent's own stack: groups alone; progressive disclosure with the child's tools in a
group not enabled (its hint must not stand in for the middleware's denial); none."""


def tree(stack: str, *, secret: bool, parent_stack: str, guard: Middleware) -> FastMCP:
    parent = FastMCP("parent", middleware=[PrincipalByClientName(), guard])
    parent.mount(child_server(stack, secret=secret), namespace="c")
    if parent_stack == "groups":
        add_filtering(parent, groups=[Group("ops")])
    elif parent_stack == "progressive":
        groups = [Group("ops"), Group("mounted", tools=["c_*"])]
        add_filtering(parent, groups=groups, progressive={"initial_groups": ["ops"]})
    return parent


def auth_guard() -> Middleware:
    return AuthMiddleware(auth=restrict_tag("admin", scopes=["github:admin"]))


CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "search_tools": ("c_search_tools", {"query": "drop table"}),
    "call_tool": ("c_call_tool", {"name": "drop_table", "arguments": {}}),
    "by its name": ("c_drop_table", {}),
    "enable_tools": ("c_enable_tools", {"groups": ["db"]}),
}


async def answers(era: str, who: str, server: FastMCP, stack: str) -> list[str]:
    """The client's tool list and its answer to each of ``CALLS`` its stack offers."""
    async with Client(server, **ERAS[era], **as_principal(who)) as client:
        got = [json.dumps(sorted(t.name for t in await client.list_tools()))]
        for label, (name, arguments) in CALLS.items():
            if label == "enable_tools" and stack == "search_first":
                continue
            result = await client.call_tool_mcp(name, arguments)
            got.append(result.model_dump_json(exclude={"meta"}))
    return got


@pytest.mark.parametrize("stack", ["search_first", "progressive"])
@pytest.mark.parametrize("parent_stack", PARENT_STACKS)
async def test_the_reader_gets_what_it_would_had_the_child_none(
    era: str, stack: str, parent_stack: str
) -> None:
    hidden, absent = [
        await answers(
            era,
            "reader",
            tree(stack, secret=secret, parent_stack=parent_stack, guard=auth_guard()),
            stack,
        )
        for secret in (True, False)
    ]
    assert hidden == absent
    assert not any("dropped" in answer for answer in hidden)


@pytest.mark.parametrize("stack", ["search_first", "progressive"])
async def test_the_admin_still_runs_it_through_the_childs_call_tool(era: str, stack: str) -> None:
    server = tree(stack, secret=True, parent_stack="groups", guard=auth_guard())
    async with Client(server, **ERAS[era], **as_principal("admin")) as client:
        if stack == "progressive":
            # A session-era client runs the tools of the groups it enabled.
            await client.call_tool_mcp("c_enable_tools", {"groups": ["db"]})
        result = await client.call_tool_mcp("c_call_tool", {"name": "drop_table", "arguments": {}})
    assert not result.is_error
    assert "dropped" in result.model_dump_json()


class DropAdminTools(Middleware):
    """A parent's own middleware that leaves tools tagged ``admin`` out of every list."""

    async def on_list_tools(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Sequence[Tool]]
    ) -> Sequence[Tool]:
        return [t for t in await call_next(context) if "admin" not in t.tags]


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=OTHER_MIDDLEWARE)
async def test_another_middleware_of_the_parent_shapes_the_childs_search(era: str) -> None:
    found = []
    for secret in (True, False):
        server = tree("search_first", secret=secret, parent_stack="groups", guard=DropAdminTools())
        async with Client(server, **ERAS[era], **as_principal("reader")) as client:
            result = await client.call_tool_mcp("c_search_tools", {"query": "drop table"})
        found.append(result.model_dump_json(exclude={"meta"}))
    assert found[0] == found[1]


async def test_a_tool_the_parent_disables_is_not_run_by_the_childs_call_tool(era: str) -> None:
    found = []
    for secret in (True, False):
        parent = FastMCP("parent", middleware=[PrincipalByClientName()])
        parent.mount(child_server("search_first", secret=secret), namespace="c")
        parent.disable(names={"c_drop_table"})
        async with Client(parent, **ERAS[era], **as_principal("reader")) as client:
            result = await client.call_tool_mcp(
                "c_call_tool", {"name": "drop_table", "arguments": {}}
            )
        found.append(result.model_dump_json(exclude={"meta"}))
    assert found[0] == found[1]


async def test_the_parents_later_rule_wins_as_in_its_own_lists(era: str) -> None:
    """``disable()`` everything, then ``enable(names=...)`` one: the order FastMCP applies."""
    parent = FastMCP("parent", middleware=[PrincipalByClientName()])
    parent.mount(child_server("search_first", secret=True), namespace="c")
    parent.disable(names={"c_drop_table", "c_list_rows"})
    parent.enable(names={"c_list_rows", "c_call_tool", "c_search_tools"})
    async with Client(parent, **ERAS[era], **as_principal("reader")) as client:
        rows = await client.call_tool_mcp("c_call_tool", {"name": "list_rows", "arguments": {}})
        drop = await client.call_tool_mcp("c_call_tool", {"name": "drop_table", "arguments": {}})
    assert "rows" in rows.model_dump_json()
    assert drop.is_error

"""A middleware ahead of the stack that drops tools from lists shapes no query page and no
``filter`` check: a reader's answers are the same whether the tools it drops exist or not.

FastMCP's ``AuthMiddleware(restrict_tag(...))``, put first as ``FastMCP(middleware=[...])``
does, leaves the ``admin``-tagged tools out of the reader's ``tools/list``. Each test serves
the same request to a server with 25 such payroll tools and to one with none, and compares
the raw answers (tools, cursors, error codes and data), following every cursor.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from fastmcp import FastMCP
from fastmcp.server.auth import restrict_tag
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.middleware.authorization import AuthMiddleware
from fastmcp.tools import Tool
from mcp.shared.exceptions import MCPError

from fastmcp_filtering import Group, add_filtering
from fastmcp_filtering.client import call_method

from .._principals import PrincipalByClientName
from ..conftest import Connect


def payroll_server(hidden: int, *, filter_: bool = True, outer: bool = True) -> FastMCP:
    """An open ``payroll_report`` and ``hidden`` payroll tools tagged ``admin`` and
    ``payroll-secret``, which FastMCP's ``AuthMiddleware`` leaves out for the reader;
    ``outer``: that middleware comes before the stack (else after it)."""
    guard = AuthMiddleware(auth=restrict_tag("admin", scopes=["github:admin"]))
    mcp = FastMCP("payroll", middleware=[PrincipalByClientName(), *([guard] if outer else [])])
    mcp.tool(lambda: "ok", name="payroll_report", description="Payroll report", tags={"open"})
    for i in range(6):
        mcp.tool(lambda: "x", name=f"misc_{i}", description="misc utility")
    for i in range(hidden):
        mcp.add_tool(
            Tool.from_function(
                lambda: "paid",
                name=f"payroll_run_{i}",
                description="Run payroll for the month",
                tags={"admin", "payroll-secret"},
            )
        )
    add_filtering(mcp, groups=[Group("ops")], filter=filter_, search={"max_results": 10})
    if not outer:
        mcp.add_middleware(guard)
    return mcp


async def answers(connect: Connect, server: FastMCP, params: dict[str, Any]) -> list[str]:
    """Every page ``tools/list`` gives ``params`` (following ``nextCursor``), or its error."""
    pages: list[str] = []
    async with connect(server) as client:
        cursor: str | None = None
        while True:
            sent = {**params, **({"cursor": cursor} if cursor else {})}
            try:
                page = await call_method(client, "tools/list", sent)
            except MCPError as exc:
                pages.append(json.dumps([exc.error.code, exc.error.message, exc.error.data]))
                return pages
            cursor = page.get("nextCursor")
            # Cursors are opaque: what matters is whether one is given.
            pages.append(json.dumps([[t["name"] for t in page["tools"]], cursor is not None]))
            if cursor is None:
                return pages


@pytest.mark.parametrize("outer", [True, False], ids=["before", "after"])
class TestAMiddlewareThatDropsTools:
    async def test_a_query_page_counts_only_what_the_reader_lists(
        self, connect: Connect, outer: bool
    ) -> None:
        hidden = await answers(connect, payroll_server(25, outer=outer), {"query": "payroll"})
        absent = await answers(connect, payroll_server(0, outer=outer), {"query": "payroll"})
        assert hidden == absent
        assert absent == [json.dumps([["payroll_report"], False])]

    @pytest.mark.parametrize("filter_", [True, False], ids=["filter", "no-filter"])
    async def test_a_hidden_tag_is_an_unknown_tag(
        self, connect: Connect, outer: bool, filter_: bool
    ) -> None:
        for params in (
            {"filter": {"tags": ["payroll-secret"]}},
            {"filter": {"tags": ["nowhere"]}},
            {"filter": {"tags": ["payroll-secret"]}, "query": "payroll"},
            {"filter": {"tags": ["nowhere"]}, "query": "payroll"},
        ):
            if not filter_ and "query" not in params:
                continue
            hidden = await answers(
                connect, payroll_server(25, filter_=filter_, outer=outer), params
            )
            absent = await answers(connect, payroll_server(0, filter_=filter_, outer=outer), params)
            assert hidden == absent, params
            assert json.loads(hidden[0])[0] == -32602

    async def test_an_open_tag_still_filters(self, connect: Connect, outer: bool) -> None:
        params = {"filter": {"tags": ["open"]}, "query": "payroll"}
        assert await answers(connect, payroll_server(25, outer=outer), params) == [
            json.dumps([["payroll_report"], False])
        ]


class Stamp(Middleware):
    """A middleware ahead of the stack that changes each listed tool (not only drops some)."""

    async def on_list_tools(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Sequence[Tool]]
    ) -> Sequence[Tool]:
        listed = await call_next(context)
        return [t.model_copy(update={"description": f"{t.description} [seen]"}) for t in listed]


async def test_a_middleware_ahead_shapes_a_query_page_once(connect: Connect) -> None:
    mcp = payroll_server(25)
    mcp.middleware.insert(1, Stamp())
    async with connect(mcp) as client:
        page = await call_method(client, "tools/list", {"query": "payroll"})
        plain = await call_method(client, "tools/list", {})
    [found] = page["tools"]
    assert found == next(t for t in plain["tools"] if t["name"] == "payroll_report")
    assert found["description"] == "Payroll report [seen]"

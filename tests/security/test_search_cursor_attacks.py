"""Attacks on search paging: a mounted server's search, and search cursors a client forges."""

from __future__ import annotations

import pytest
from fastmcp import FastMCP
from fastmcp.tools import Tool
from mcp.shared.exceptions import MCPError

from fastmcp_filtering import FilterMiddleware, Group, SearchMiddleware
from fastmcp_filtering.client import call_method
from fastmcp_filtering.server.wire import _PREFIX, _scope_of

from .._support.search import every_page
from ..conftest import Connect, use

# Every test here runs on servers set up by install and by mcp.add_middleware alone.
pytestmark = pytest.mark.usefixtures("setup_way")


def _report_tools(prefix: str, count: int) -> list[Tool]:
    def report(x: str) -> str:
        return x

    return [
        Tool.from_function(report, name=f"{prefix}{i}", description=f"Build report number {i}")
        for i in range(count)
    ]


def _child() -> FastMCP:
    child = FastMCP("child")
    for tool in _report_tools("report_", 7):
        child.add_tool(tool)
    use(child, SearchMiddleware(max_results=3, search_tool=None))
    return child


class TestMountedSearchWithoutParentSearch:
    """A mounted server's search under a parent that pages with its own cursors."""

    @pytest.mark.parametrize("parent_middleware", ["filter", "none"])
    async def test_pages_hold_every_match_once(
        self, connect: Connect, parent_middleware: str
    ) -> None:
        parent = FastMCP("parent", list_page_size=2)
        parent.add_tool(_report_tools("parent_report_", 1)[0])
        parent.mount(_child(), namespace="c")
        if parent_middleware == "filter":
            use(parent, FilterMiddleware(groups=[Group("x")]))
        async with connect(parent) as client:
            pages = await every_page(client, "build report")
        listed = [name for page in pages for name in page]
        # Before: the child's page of 3 was cut to 2 by the parent and its next cursor
        # replaced FastMCP's (matches lost, the parent's tool repeated), or the child
        # refused the parent's cursor and the provider's error became an empty page.
        assert sorted(listed) == sorted(["parent_report_0", *(f"c_report_{i}" for i in range(7))])
        assert all(len(page) <= 2 for page in pages)


class TestSearchCursorOnAnUnsearchedListing:
    """A search page cursor on a listing no search pages is refused, not silently restarted."""

    @pytest.mark.parametrize("blank", ["", "   ", "\x00\t"])
    async def test_a_blank_query_with_a_search_cursor(self, connect: Connect, blank: str) -> None:
        server = FastMCP("reports", list_page_size=2)
        for tool in _report_tools("report_", 5):
            server.add_tool(tool)
        use(server, SearchMiddleware(max_results=2))
        cursor = f"{_PREFIX}{_scope_of({'query': blank})}.search.2"
        async with connect(server) as client:
            with pytest.raises(MCPError) as refused:
                await call_method(client, "tools/list", {"query": blank, "cursor": cursor})
        assert refused.value.error.code == -32602
        assert (refused.value.error.data or {}).get("field") == "cursor"

    async def test_a_query_on_a_server_without_search(self, connect: Connect) -> None:
        server = FastMCP("reports", list_page_size=2)
        for tool in _report_tools("report_", 5):
            server.add_tool(tool)
        use(server, FilterMiddleware(groups=[Group("x")]))
        cursor = f"{_PREFIX}{_scope_of({'query': 'report'})}.search.2"
        async with connect(server) as client:
            with pytest.raises(MCPError) as refused:
                await call_method(client, "tools/list", {"query": "report", "cursor": cursor})
        assert (refused.value.error.data or {}).get("field") == "cursor"


class TestRobust:
    """Behaviour that held under attack, not covered elsewhere."""

    @pytest.mark.parametrize(
        "digits", ["\uff11", "\u0663", "+1", " 1", "1 ", "0x1", "1e3", "00000000001"]
    )
    async def test_a_search_cursor_takes_ascii_digits_only(
        self, connect: Connect, digits: str
    ) -> None:
        server = FastMCP("reports")
        for tool in _report_tools("report_", 5):
            server.add_tool(tool)
        use(server, SearchMiddleware(max_results=2))
        cursor = f"{_PREFIX}{_scope_of({'query': 'report'})}.search.{digits}"
        async with connect(server) as client:
            with pytest.raises(MCPError) as refused:
                await call_method(client, "tools/list", {"query": "report", "cursor": cursor})
        assert (refused.value.error.data or {}).get("field") == "cursor"

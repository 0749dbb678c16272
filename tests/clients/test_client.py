"""The client helpers: every page of a listing, and servers without the package's methods."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP

from fastmcp_filtering import FilterMiddleware, Group, SearchMiddleware, in_group
from fastmcp_filtering.client import iter_tools, list_concerns, list_tools

from ..conftest import Connect, use


def make_server(*, page_size: int | None = 2) -> FastMCP:
    mcp = FastMCP("client-helpers", list_page_size=page_size)
    for i in range(7):

        @in_group("reports")
        @mcp.tool(name=f"build_report_{i}")
        def build(i: int = i) -> str:
            return str(i)

    @mcp.tool
    def send_email(to: str) -> str:
        return to

    groups = [Group("reports", description="Build reports")]
    use(mcp, FilterMiddleware(groups=groups), SearchMiddleware(groups=groups, max_results=3))
    return mcp


async def collected(client: Any, **kwargs: Any) -> list[str]:
    return [tool.name async for tool in iter_tools(client, **kwargs)]


class TestIterTools:
    async def test_every_page_of_a_filtered_list_once(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            names = await collected(client, groups=["reports"])
            first = await list_tools(client, groups=["reports"])
        assert sorted(names) == [f"build_report_{i}" for i in range(7)]
        assert len(first.tools) == 2

    async def test_every_match_of_a_query(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            names = await collected(client, query="build report")
        assert sorted(names) == [f"build_report_{i}" for i in range(7)]

    async def test_an_unpaged_list(self, connect: Connect) -> None:
        async with connect(make_server(page_size=None)) as client:
            names = await collected(client)
        assert len(names) == 9  # and search_tools


class TestListConcerns:
    async def test_a_server_without_concerns_declares_none(self, connect: Connect) -> None:
        async with connect(make_server()) as client:
            assert await list_concerns(client) == []

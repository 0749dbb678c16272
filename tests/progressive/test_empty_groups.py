"""``enable_tools`` on a group that holds nothing the client may use: an ``errors`` entry, and
nothing enabled. A parent whose tools are in its subgroups, or a group of prompts, still
enables."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP
from inline_snapshot import snapshot

from fastmcp_filtering import Group, in_group
from fastmcp_filtering.middleware.progressive import ProgressiveDisclosureMiddleware

from ..conftest import Connect, use
from .test_progressive import call, names

GROUPS = [
    Group("time", description="Clocks and time zones"),
    Group("clock", description="A group whose tools no server lists", tools=["clock_*"]),
    Group("code", description="Code, in subgroups"),
    Group("repos", description="Repositories", parent="code"),
    Group("reviews", description="Review prompts"),
]


def make_server(**options: Any) -> FastMCP:
    mcp = FastMCP("grouped")

    @in_group("time")
    @mcp.tool
    def now() -> str:
        return "12:00"

    @in_group("repos")
    @mcp.tool
    def fork_repo(name: str) -> str:
        return name

    @in_group("reviews")
    @mcp.prompt
    def review(change: str) -> str:
        return f"Review {change}"

    use(mcp, ProgressiveDisclosureMiddleware(groups=GROUPS, initial_groups=["time"], **options))
    return mcp


async def test_an_empty_group_is_an_error_and_is_not_enabled(connect: Connect) -> None:
    async with connect(make_server()) as client:
        reply = await call(client, "enable_tools", groups=["clock"])
        assert (reply["enabled"], reply["errors"]) == snapshot(
            ([], ["group 'clock' holds no tools right now; nothing was enabled"])
        )
        assert reply["enabled_groups"] == ["time"]
        assert await names(client) == ["disable_tools", "enable_tools", "now"]


async def test_the_others_named_with_it_are_enabled(connect: Connect) -> None:
    async with connect(make_server()) as client:
        reply = await call(client, "enable_tools", groups=["clock", "code", "repos", "reviews"])
        assert reply["enabled"] == ["code", "repos", "reviews"]
        assert reply["errors"] == ["group 'clock' holds no tools right now; nothing was enabled"]
        assert "fork_repo" in await names(client)
        assert [p.name for p in await client.list_prompts()] == ["review"]


async def test_under_max_tools_too(connect: Connect) -> None:
    async with connect(make_server(max_tools=1)) as client:
        reply = await call(client, "enable_tools", groups=["clock"])
        assert reply["errors"] == ["group 'clock' holds no tools right now; nothing was enabled"]

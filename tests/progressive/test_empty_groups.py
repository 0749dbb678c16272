"""``enable_tools`` on a group that holds nothing the client may use: an ``errors`` entry that
says what to do instead, and nothing enabled. A parent whose tools are in its subgroups, or a
group of prompts, still enables. (A group whose members are all hidden from the client answers
the same words: tests/security/test_empty_group_answers.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import FastMCP
from inline_snapshot import snapshot

from fastmcp_filtering import Group, in_group
from fastmcp_filtering.progressive.middleware import ProgressiveDisclosureMiddleware

from .._support.progressive import call, names
from ..conftest import Connect, use

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


EMPTY_CLOCK = (
    "group 'clock' holds nothing you can use right now, so it was not enabled; enable another "
    'group (["code", "reviews"] can be enabled now), or try \'clock\' again later'
)


@pytest.mark.side_effect_lists
async def test_an_empty_group_is_an_error_and_is_not_enabled(connect: Connect) -> None:
    async with connect(make_server()) as client:
        reply = await call(client, "enable_tools", groups=["clock"])
        assert (reply["enabled"], reply["errors"]) == snapshot(
            (
                [],
                [
                    "group 'clock' holds nothing you can use right now, so it was not enabled; "
                    'enable another group (["code", "reviews"] can be enabled now), or try '
                    "'clock' again later"
                ],
            )
        )
        assert reply["enabled_groups"] == ["time"]
        assert await names(client) == ["disable_tools", "enable_tools", "now"]


@pytest.mark.side_effect_lists
async def test_the_others_named_with_it_are_enabled(connect: Connect) -> None:
    async with connect(make_server()) as client:
        reply = await call(client, "enable_tools", groups=["clock", "code", "repos", "reviews"])
        assert reply["enabled"] == ["code", "repos", "reviews"]
        assert reply["errors"] == [EMPTY_CLOCK]
        assert "fork_repo" in await names(client)
        assert [p.name for p in await client.list_prompts()] == ["review"]


async def test_with_no_other_group_to_enable_it_says_come_back_later(connect: Connect) -> None:
    async with connect(make_server()) as client:
        await call(client, "enable_tools", groups=["code", "repos", "reviews"])
        reply = await call(client, "enable_tools", groups=["clock"])
        # Nothing else to enable: the agent can only come back later.
        assert reply["errors"] == snapshot(
            [
                "group 'clock' holds nothing you can use right now, so it was not enabled; "
                "try 'clock' again later"
            ]
        )


async def test_under_max_tools_too(connect: Connect) -> None:
    async with connect(make_server(max_tools=1)) as client:
        reply = await call(client, "enable_tools", groups=["clock"])
        assert reply["errors"] == [EMPTY_CLOCK]


@pytest.mark.side_effect_lists
async def test_its_tools_added_later_enable_it(connect: Connect) -> None:
    mcp = make_server()
    async with connect(mcp) as client:
        assert (await call(client, "enable_tools", groups=["clock"]))["enabled"] == []
        # What the error advises: once the group holds a tool, the same call enables it.
        mcp.tool(name="clock_now")(lambda: "12:00")
        reply = await call(client, "enable_tools", groups=["clock"])
        assert (reply["enabled"], reply["errors"]) == (["clock"], [])
        assert "clock_now" in await names(client)

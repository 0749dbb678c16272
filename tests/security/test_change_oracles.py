"""A change to what a client may not see tells that client nothing (both eras).

A reader (no ``github:admin``) holds a ``groups/list`` cursor while the server declares a
group only admins may use: the cursor still answers, as it would had nothing changed. Tools
and groups added at runtime are announced to the sessions that may see them, and only those.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from fastmcp import Client, FastMCP
from fastmcp.server.auth import require_scopes, restrict_tag
from fastmcp.server.middleware.authorization import AuthMiddleware
from fastmcp.tools import Tool
from mcp.shared.exceptions import MCPError

from fastmcp_filtering import Catalog, FilterMiddleware, Group, add_filtering, in_group, install
from fastmcp_filtering.client import FilteringNotifications, call_method

from .._principals import PrincipalByClientName, as_principal
from .._support.recorder import Recorder
from ..conftest import ERAS


@pytest.fixture(params=list(ERAS), ids=list(ERAS))
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def paged_server() -> tuple[FastMCP, Catalog]:
    """Three open groups, one per ``groups/list`` page."""
    mcp = FastMCP("paged", list_page_size=1)
    mcp.add_middleware(PrincipalByClientName())
    mcp.tool(lambda: "pong", name="ping")
    catalog = Catalog(groups=[Group("a"), Group("b"), Group("c")])
    install(mcp, FilterMiddleware(catalog=catalog))
    return mcp, catalog


def _client(server: FastMCP, era: str, who: str, *, heard: Recorder | None = None) -> Client[Any]:
    """A client authenticated as ``who``; ``heard`` records every notification it receives."""
    kwargs: dict[str, Any] = {}
    if heard is not None:

        def record(method: str) -> Callable[[], Awaitable[None]]:
            async def received() -> None:
                heard.methods.append(method)

            return received

        kwargs["message_handler"] = heard
        kwargs["extensions"] = [
            FilteringNotifications(
                on_groups_changed=record("notifications/groups/list_changed"),
                on_tags_changed=record("notifications/tags/list_changed"),
            )
        ]
    return Client(server, **ERAS[era], **as_principal(who), **kwargs)


class TestGroupsCursor:
    async def test_a_group_the_reader_may_not_use_leaves_its_cursor_alone(self, era: str) -> None:
        mcp, catalog = paged_server()
        async with _client(mcp, era, "reader") as reader:
            first = await call_method(reader, "groups/list")
            await catalog.add_group(Group("vault", access=require_scopes("github:admin")))
            second = await call_method(reader, "groups/list", {"cursor": first["nextCursor"]})
        assert [g["name"] for g in first["groups"]] == ["a"]
        assert [g["name"] for g in second["groups"]] == ["b"]

    async def test_a_group_the_reader_sees_ends_its_cursor(self, era: str) -> None:
        mcp, catalog = paged_server()
        async with _client(mcp, era, "reader") as reader:
            first = await call_method(reader, "groups/list")
            await catalog.add_group(Group("docs"))
            with pytest.raises(MCPError, match="the groups changed"):
                await call_method(reader, "groups/list", {"cursor": first["nextCursor"]})

    async def test_the_admin_learns_of_the_group_it_may_use(self, era: str) -> None:
        mcp, catalog = paged_server()
        async with _client(mcp, era, "admin") as admin:
            first = await call_method(admin, "groups/list")
            await catalog.add_group(Group("vault", access=require_scopes("github:admin")))
            with pytest.raises(MCPError, match="the groups changed"):
                await call_method(admin, "groups/list", {"cursor": first["nextCursor"]})


def guarded_server() -> tuple[FastMCP, Catalog]:
    """An open ``ping``, and an ``admin`` group only ``github:admin`` tokens may use."""
    mcp = FastMCP("guarded")
    mcp.add_middleware(PrincipalByClientName())
    mcp.tool(lambda: "pong", name="ping")
    mcp.tool(lambda: "dropped", name="drop_table")
    catalog = Catalog(
        groups=[Group("admin", tools=["drop_*"], access=require_scopes("github:admin"))]
    )
    install(mcp, FilterMiddleware(catalog=catalog))
    return mcp, catalog


def _drop_database() -> str:
    return "gone"


@asynccontextmanager
async def reader_and_admin(
    mcp: FastMCP, era: str
) -> AsyncIterator[tuple[Client[Any], Client[Any], dict[str, Recorder]]]:
    """A reader and an admin connected, each having listed once, and what each hears."""
    heard = {"reader": Recorder(), "admin": Recorder()}
    async with (
        _client(mcp, era, "reader", heard=heard["reader"]) as reader,
        _client(mcp, era, "admin", heard=heard["admin"]) as admin,
    ):
        await reader.list_tools()
        await admin.list_tools()
        yield reader, admin, heard


def _told(era: str, *methods: str) -> list[str]:
    """What a client of ``era`` is sent: a stateless client is never sent a notification."""
    return list(methods) if era == "legacy" else []


class TestRuntimeChanges:
    """Only a client that may see what changed is told (sessions: 2025-11-25; a stateless
    client is never sent a notification)."""

    async def test_a_tool_added_to_a_denied_group_is_announced_to_the_admin_only(
        self, era: str
    ) -> None:
        mcp, _ = guarded_server()
        async with reader_and_admin(mcp, era) as (reader, admin, heard):
            mcp.add_tool(Tool.from_function(_drop_database, name="drop_database"))
            assert "drop_database" in {t.name for t in await admin.list_tools()}
            assert "drop_database" not in {t.name for t in await reader.list_tools()}
        assert heard["reader"].methods == []
        assert heard["admin"].methods == _told(era, "notifications/tools/list_changed")

    async def test_a_tool_with_its_own_auth_is_announced_to_who_it_admits(self, era: str) -> None:
        mcp, _ = guarded_server()
        async with reader_and_admin(mcp, era) as (reader, admin, heard):
            mcp.add_tool(
                Tool.from_function(
                    _drop_database,
                    name="wipe",
                    tags={"danger"},
                    auth=require_scopes("github:admin"),
                )
            )
            assert "wipe" in {t.name for t in await admin.list_tools()}
            assert "wipe" not in {t.name for t in await reader.list_tools()}
        assert heard["reader"].methods == []
        assert heard["admin"].methods == _told(
            era, "notifications/tags/list_changed", "notifications/tools/list_changed"
        )

    @pytest.mark.parametrize("child_stack", [True, False])
    async def test_a_mounted_servers_hidden_addition_is_announced_to_nobody(
        self, era: str, child_stack: bool
    ) -> None:
        """Its own access control, or its tool's own auth, judges it per request only: no
        change outside a request can ask them, so none is announced through the parent."""
        mcp, _ = guarded_server()
        child = FastMCP("child")
        child.tool(lambda: "r", name="restart")
        if child_stack:
            add_filtering(
                child, groups=[Group("ops", access=require_scopes("github:admin"))], search=False
            )
        mcp.mount(child, namespace="c")
        async with reader_and_admin(mcp, era) as (reader, admin, heard):
            if child_stack:
                child.add_tool(in_group("ops")(Tool.from_function(_drop_database, name="wipe")))
            else:
                child.add_tool(
                    Tool.from_function(
                        _drop_database, name="wipe", auth=require_scopes("github:admin")
                    )
                )
            assert "c_wipe" in {t.name for t in await admin.list_tools()}
            assert "c_wipe" not in {t.name for t in await reader.list_tools()}
        assert heard["reader"].methods == []

    @pytest.mark.parametrize(
        "child_stack",
        [
            pytest.param({"groups": [Group("db")]}, id="filter"),
            pytest.param({"progressive": "search_first"}, id="search_first"),
            pytest.param({"groups": [Group("db", tools=["*"])], "progressive": True}, id="groups"),
        ],
    )
    async def test_an_addition_the_parent_hides_in_a_mounted_server_is_not_announced(
        self, era: str, child_stack: dict[str, Any]
    ) -> None:
        """The mounted server's own stack sees nothing hidden in ``drop_index``; the parent's
        ``Group("admin", tools=["c_drop_*"])`` hides it from the reader, which hears what it
        would had nothing been added."""
        answers = []
        for added in (True, False):
            mcp = FastMCP("parent")
            mcp.add_middleware(PrincipalByClientName())
            child = FastMCP("child")
            child.tool(lambda: "r", name="list_rows")
            add_filtering(child, **child_stack)
            mcp.mount(child, namespace="c")
            admin_only = Group("admin", tools=["c_drop_*"], access=require_scopes("github:admin"))
            add_filtering(mcp, groups=[admin_only])
            async with reader_and_admin(mcp, era) as (reader, admin, heard):
                # The reader's session passes the mounted server's middlewares too.
                await reader.call_tool_mcp("c_search_tools", {"query": "rows"})
                if added:
                    child.add_tool(Tool.from_function(_drop_database, name="drop_index"))
                # The admin's listing reaches the mounted server, which meets the new tool.
                await admin.list_tools()
                listed = sorted(t.name for t in await reader.list_tools())
            answers.append((listed, heard["reader"].methods))
        assert answers[0] == answers[1]
        assert answers[0][1] == []

    async def test_an_addition_fastmcps_auth_middleware_denies_is_not_announced(
        self, era: str
    ) -> None:
        """FastMCP's ``AuthMiddleware`` (here: tag ``secret`` needs ``github:admin``) judges
        each principal as the listing does."""
        mcp = FastMCP("gated")
        mcp.add_middleware(PrincipalByClientName())
        mcp.add_middleware(AuthMiddleware(auth=restrict_tag("secret", scopes=["github:admin"])))
        mcp.tool(lambda: "pong", name="ping")
        add_filtering(mcp, groups=[Group("admin", access=require_scopes("github:admin"))])
        async with reader_and_admin(mcp, era) as (reader, admin, heard):
            mcp.add_tool(Tool.from_function(_drop_database, name="zap", tags={"secret"}))
            assert "zap" in {t.name for t in await admin.list_tools()}
            assert "zap" not in {t.name for t in await reader.list_tools()}
        assert heard["reader"].methods == []
        assert heard["admin"].methods == _told(
            era, "notifications/tags/list_changed", "notifications/tools/list_changed"
        )

    async def test_an_open_tool_added_is_announced_to_both(self, era: str) -> None:
        mcp, _ = guarded_server()
        async with reader_and_admin(mcp, era) as (reader, admin, heard):
            mcp.tool(lambda: "ok", name="status")
            await admin.list_tools()
            await reader.list_tools()
        assert heard["reader"].methods == _told(era, "notifications/tools/list_changed")
        assert heard["admin"].methods == _told(era, "notifications/tools/list_changed")

    async def test_a_group_added_for_admins_only_is_announced_to_the_admin_only(
        self, era: str
    ) -> None:
        mcp, catalog = guarded_server()
        async with reader_and_admin(mcp, era) as (reader, admin, heard):
            await catalog.add_group(Group("vault", access=require_scopes("github:admin")))
            await reader.list_tools()
            await admin.list_tools()
        assert heard["reader"].methods == []
        assert heard["admin"].methods == _told(era, "notifications/groups/list_changed")

    async def test_a_group_that_takes_a_visible_tool_away_is_announced(self, era: str) -> None:
        mcp, catalog = guarded_server()
        heard = Recorder()
        async with _client(mcp, era, "reader", heard=heard) as reader:
            assert "ping" in {t.name for t in await reader.list_tools()}
            await catalog.add_group(
                Group("ops", tools=["ping"], access=require_scopes("github:admin"))
            )
            assert "ping" not in {t.name for t in await reader.list_tools()}
        assert heard.methods == _told(era, "notifications/tools/list_changed")


def ledger_server(*, auth_tools: int) -> FastMCP:
    """Two open tools about ledgers, one taking a ``ledger`` parameter, and ``auth_tools``
    tools only ``github:admin`` tokens pass (FastMCP's own ``auth``) that take one too."""
    mcp = FastMCP("ledgers")
    mcp.add_middleware(PrincipalByClientName())

    def export_rows(ledger: str) -> str:
        """Export rows."""
        return ledger

    mcp.add_tool(Tool.from_function(export_rows))
    mcp.tool(lambda: "b", name="export_report", description="Export ledger totals.")
    for i in range(6):
        mcp.tool(lambda: "x", name=f"misc_{i}", description="misc utility")
    add_ledger_tools(mcp, auth_tools, auth=True)
    add_filtering(mcp, groups=[Group("ops")])
    return mcp


def add_ledger_tools(mcp: FastMCP, count: int, *, auth: bool) -> None:
    """``count`` admin tools that take a ``ledger``, with their own ``auth`` or without."""

    def admin_only(ledger: str) -> str:
        return ledger

    for i in range(count):
        mcp.add_tool(
            Tool.from_function(
                admin_only,
                name=f"adm_{i}",
                description="admin thing",
                auth=require_scopes("github:admin") if auth else None,
            )
        )


def ranked_server(*, admin_tools: int) -> FastMCP:
    """Two open tools that match "weekly report" with short and long descriptions, and
    ``admin_tools`` admin-only tools with very long descriptions."""
    mcp = FastMCP("ranked")
    mcp.add_middleware(PrincipalByClientName())
    mcp.tool(lambda: "a", name="summary", description="Weekly report.")
    mcp.tool(
        lambda: "b",
        name="digest",
        description="Weekly report and report archive, "
        + " ".join(f"filler{i}" for i in range(24)),
    )
    for i in range(admin_tools):
        mcp.tool(
            lambda: "x",
            name=f"drop_{i}",
            description=" ".join(f"word{i}x{j}" for j in range(400)),
        )
    add_filtering(
        mcp, groups=[Group("admin", tools=["drop_*"], access=require_scopes("github:admin"))]
    )
    return mcp


async def _reader_after_admin(mcp: FastMCP, era: str, query: str) -> list[str]:
    """What the reader's ``query`` finds once an admin's search put every tool in the index."""
    async with _client(mcp, era, "admin") as admin:
        await call_method(admin, "tools/list", {"query": query})
    async with _client(mcp, era, "reader") as reader:
        page = await call_method(reader, "tools/list", {"query": query})
    return [t["name"] for t in page["tools"]]


class TestSearchStatistics:
    async def test_tools_the_reader_may_not_see_move_none_of_its_rankings(self, era: str) -> None:
        """The lexical index's statistics (field length averages, boilerplate parameters)
        count only what every client may see: admin tools do not reorder a reader's matches."""
        orders = []
        for admin_tools in (0, 40):
            async with _client(ranked_server(admin_tools=admin_tools), era, "reader") as reader:
                page = await call_method(reader, "tools/list", {"query": "weekly report"})
                orders.append([t["name"] for t in page["tools"]])
        assert orders[0] == orders[1]
        assert set(orders[0]) == {"summary", "digest"}

    async def test_tools_with_their_own_auth_move_none_of_its_matches(self, era: str) -> None:
        """Even after an admin's search put them in the shared index."""
        found = []
        for auth_tools in (0, 30):
            mcp = ledger_server(auth_tools=auth_tools)
            found.append(await _reader_after_admin(mcp, era, "ledger"))
        assert found[0] == found[1]
        assert set(found[0]) == {"export_rows", "export_report"}

    @pytest.mark.parametrize("child_stack", [True, False])
    async def test_a_mounted_servers_hidden_tools_move_none_of_its_matches(
        self, era: str, child_stack: bool
    ) -> None:
        """The mounted server's own policy (or its tools' own auth) judges them per request,
        so they count in no statistics, even once an admin's search indexed them."""
        found = []
        for hidden in (0, 30):
            mcp = ledger_server(auth_tools=0)
            child = FastMCP("child")
            add_ledger_tools(child, hidden, auth=not child_stack)
            if child_stack:
                add_filtering(
                    child,
                    groups=[Group("vault", tools=["adm_*"], access=require_scopes("github:admin"))],
                    search=False,
                )
            mcp.mount(child, namespace="c")
            found.append(await _reader_after_admin(mcp, era, "ledger"))
        assert found[0] == found[1]
        assert set(found[0]) == {"export_rows", "export_report"}


# Known gap (docs/known-gaps.md), a strict xfail: it fails the day the gap is closed.
CONCERN_ADDITION = (
    "a tool added at runtime that a session's own concerns (or hide_ungrouped) exclude is "
    "announced to that session with tools/list_changed, though its list did not change"
)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=CONCERN_ADDITION)
async def test_an_addition_the_sessions_concerns_exclude_is_not_announced() -> None:
    from fastmcp_filtering import Concern, concerns

    mcp = FastMCP("concerned")
    mcp.tool(lambda: "pong", name="ping")
    risk = Concern("risk", values=["safe", "destructive"])
    admin = Group("admin", tools=["admin_*"], access=require_scopes("github:admin"))
    add_filtering(mcp, groups=[Group("issues"), admin], concerns=[risk])
    heard = Recorder()
    async with Client(mcp, mode="legacy", message_handler=heard) as client:
        await call_method(client, "concerns/update", {"concerns": {"risk": "safe"}})
        before = await client.list_tools()
        heard.methods.clear()
        mcp.add_tool(concerns(risk="destructive")(Tool.from_function(_drop_database)))
        # Sent from the change, not in answer to a request: let it arrive.
        await anyio.sleep(0.3)
        assert await client.list_tools() == before
    assert heard.methods == []

"""Search from the catalog snapshot answers exactly what listing through the chain answers.

Each scenario runs twice on fresh servers: once as a client gets it (from the
snapshot) and once with the snapshot turned off (every search lists through
the middleware chain), and the wire replies must be equal, page for page, while
tools are added, replaced, removed and hidden between searches.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
from fastmcp import Context, FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.providers import LocalProvider
from fastmcp.tools import Tool
from pydantic import BaseModel

from fastmcp_filtering import FilterMiddleware, Group, install
from fastmcp_filtering._fastmcp import current_request
from fastmcp_filtering.client import call_method, update_concerns
from fastmcp_filtering.search.middleware import SearchMiddleware
from fastmcp_filtering.search.service import Snapshots
from fastmcp_filtering.server.hooks import Prefilled

from .._full_stack import build_full_stack_server
from .._support import discovery
from .._support.search import GROUPS, make_server, stub
from ..conftest import Connect

Step = Callable[[FastMCP, Any], Awaitable[Any]]


def search(query: str, **params: Any) -> Step:
    """Every page of ``tools/list`` with ``query`` (and ``filter``), as the wire returns them."""

    async def run(server: FastMCP, client: Any) -> Any:
        pages = []
        cursor = None
        while True:
            sent = {"query": query, **params, **({"cursor": cursor} if cursor else {})}
            page = await call_method(client, "tools/list", sent)
            pages.append(page)
            cursor = page.get("nextCursor")
            if cursor is None:
                return pages
            assert len(pages) < 30

    return run


def meta_search(query: str) -> Step:
    """The ``search_tools`` meta-tool's reply."""

    async def run(server: FastMCP, client: Any) -> Any:
        return (await client.call_tool("search_tools", {"query": query})).structured_content

    return run


def change(action: Callable[[FastMCP], Any]) -> Step:
    async def run(server: FastMCP, client: Any) -> None:
        action(server)

    return run


def call(tool: str, arguments: dict[str, Any]) -> Step:
    async def run(server: FastMCP, client: Any) -> Any:
        return (await client.call_tool(tool, arguments, raise_on_error=False)).is_error

    return run


async def replies(
    connect: Connect, build: Callable[[], FastMCP], steps: Sequence[Step]
) -> list[Any]:
    server = build()
    async with connect(server) as client:
        return [await step(server, client) for step in steps]


@pytest.fixture
def listing_only(monkeypatch: pytest.MonkeyPatch) -> Callable[[], Any]:
    """Turns the snapshot off: every search lists through the chain, as before it existed."""

    def off() -> Any:
        async def none(self: Snapshots, server: FastMCP) -> None:
            return None

        monkeypatch.setattr(Snapshots, "current", none)

    return off


async def same_answers(
    connect: Connect, off: Callable[[], Any], build: Callable[[], FastMCP], steps: list[Step]
) -> list[Any]:
    fast = await replies(connect, build, steps)
    off()
    assert await replies(connect, build, steps) == fast
    return fast


QUERIES = ["open a pull request", "list issues", "delete", "show me my repositories", "zzz"]


class TestSameAnswersAsListing:
    async def test_full_stack_while_groups_and_concerns_change(
        self, connect: Connect, listing_only: Callable[[], Any]
    ) -> None:
        steps: list[Step] = [search(q) for q in QUERIES]
        steps += [meta_search(q) for q in QUERIES]
        steps += [
            search("issue", filter={"tags": ["stable"]}),
            search("pull request", filter={"groups": ["code"]}),
            call("enable_tools", {"groups": ["pull_requests", "repos"]}),
            *(search(q) for q in QUERIES),
            search("branch", filter={"groups": ["repos"]}),
        ]

        async def safe(server: FastMCP, client: Any) -> Any:
            return (await update_concerns(client, {"risk": "safe"})).concerns

        steps += [safe, *(search(q) for q in QUERIES)]
        steps += [call("disable_tools", {"groups": ["code"]}), search("merge pull request")]
        fast = await same_answers(
            connect, listing_only, lambda: build_full_stack_server(list_page_size=3), steps
        )
        assert any(page["tools"] for pages in fast if isinstance(pages, list) for page in pages)

    async def test_discovery_with_a_layer_of_ones_own(
        self, connect: Connect, listing_only: Callable[[], Any]
    ) -> None:
        steps = [
            search(q)
            for q in ["save text to a new file", "rocket", "commit history", "file", "destroy"]
        ]
        steps += [search("file", filter={"groups": ["write"]})]
        steps += [meta_search(q) for q in ["save text to a new file", "file", "enable_tools"]]
        await same_answers(
            connect, listing_only, lambda: discovery.make_server(max_results=2), steps
        )

    async def test_tools_added_replaced_removed_and_hidden_between_searches(
        self, connect: Connect, listing_only: Callable[[], Any]
    ) -> None:
        def build() -> FastMCP:
            server = make_server()
            server.local_provider._on_duplicate = "replace"
            return server

        steps: list[Step] = [
            search("weather forecast"),
            change(lambda s: s.add_tool(stub("get_weather", "Weather forecast for a city"))),
            search("weather forecast"),
            change(lambda s: s.add_tool(stub("get_weather", "Tide tables for a harbour"))),
            search("weather forecast"),
            search("tide tables"),
            change(lambda s: s.disable(names={"get_weather"})),
            search("tide tables"),
            change(lambda s: s.enable(names={"get_weather"})),
            search("tide tables"),
            change(lambda s: s.local_provider.remove_tool("get_weather")),
            search("tide tables"),
            search("send email"),
            meta_search("send email"),
            meta_search("search_tools"),
        ]
        fast = await same_answers(connect, listing_only, build, steps)
        found = [
            [t["name"] for page in pages for t in page["tools"]]
            for pages in fast
            if isinstance(pages, list)
        ]
        assert found[:7] == [
            [],
            ["get_weather"],  # added
            ["get_weather"],  # replaced: its name still matches
            ["get_weather"],  # and so does its new text
            [],  # disabled
            ["get_weather"],  # enabled again
            [],  # removed
        ]


class TestTheCatalogIsReadOnce:
    async def test_searches_do_not_list_the_provider_again(
        self, connect: Connect, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        server = make_server()
        listed: list[int] = []
        original = LocalProvider._list_tools

        async def counting(provider: Any) -> Sequence[Tool]:
            listed.append(1)
            return await original(provider)

        # On the class that defines it: a server's provider may be a subclass (FastMCP
        # 4.2's is), and one overriding the reader is listed live, never snapshotted.
        monkeypatch.setattr(LocalProvider, "_list_tools", counting)
        async with connect(server) as client:
            await search("send email")(server, client)
            before = len(listed)
            for query in QUERIES:
                await search(query)(server, client)
            assert len(listed) == before
            server.add_tool(stub("get_weather", "Weather forecast for a city"))
            assert await search("weather")(server, client)
            assert len(listed) == before + 2  # read again once: the snapshot, and the auth check


class TestWhereTheSnapshotIsNotTrusted:
    async def test_a_middleware_added_later_is_respected(self, connect: Connect) -> None:
        class HideEmail(Middleware):
            async def on_list_tools(
                self, context: MiddlewareContext[Any], call_next: CallNext[Any, Sequence[Tool]]
            ) -> Sequence[Tool]:
                return [t for t in await call_next(context) if "email" not in t.name]

        server = make_server()
        async with connect(server) as client:
            assert "send-email" in await names(client, "send email")
            server.add_middleware(HideEmail())
            assert "send-email" not in await names(client, "send email")
            assert isinstance(server.middleware[-1], Prefilled)

    async def test_a_local_provider_listing_beyond_its_storage(self, connect: Connect) -> None:
        server = make_server()
        arrived: list[Tool] = []

        class Live(type(server.local_provider)):  # type: ignore[misc]
            async def _list_tools(self) -> Sequence[Tool]:
                return [*await super()._list_tools(), *arrived]

        server.local_provider.__class__ = Live
        async with connect(server) as client:
            assert await names(client, "weather forecast") == []
            arrived.append(stub("get_weather", "Weather forecast for a city"))
            assert await names(client, "weather forecast") == ["get_weather"]

    async def test_a_server_mounted_later_is_searched(self, connect: Connect) -> None:
        server = make_server()
        child = FastMCP("child")
        child.add_tool(stub("get_weather", "Weather forecast for a city"))
        async with connect(server) as client:
            assert await names(client, "weather forecast") == []
            server.mount(child, namespace="c")
            assert await names(client, "weather forecast") == ["c_get_weather"]

    async def test_a_tools_own_auth_decides_per_request(self, connect: Connect) -> None:
        def clients_only(ctx: Any) -> bool:
            # Admits every client's request, and no listing made outside one.
            return current_request() is not None

        def nobody(ctx: Any) -> bool:
            return False

        server = make_server()
        server.add_tool(stub("get_weather", "Weather forecast for a city", auth=clients_only))
        server.add_tool(stub("get_tides", "Tide forecast for a harbour", auth=nobody))
        async with connect(server) as client:
            assert await names(client, "forecast") == ["get_weather"]

    async def test_a_sessions_own_visibility_rules(self, connect: Connect) -> None:
        server = make_server()

        @server.tool
        async def hide_email(ctx: Context) -> str:
            await ctx.disable_components(names={"send-email"})
            return "hidden"

        async with connect(server) as client:
            assert "send-email" in await names(client, "send email")
            await client.call_tool("hide_email", {})
            assert "send-email" not in await names(client, "send email")

    async def test_a_group_declared_later_is_searched_by_its_title(self, connect: Connect) -> None:
        search_middleware = SearchMiddleware(max_results=3)
        server = FastMCP("groups")
        server.add_tool(stub("get_weather", "Forecast for a city"))
        server.add_tool(stub("get_tides", "Tide tables for a harbour"))
        install(server, search_middleware)
        async with connect(server) as client:
            assert await names(client, "meteorology") == []
            await search_middleware.catalog.add_group(
                Group("weather", title="Meteorology", tools=["get_weather"])
            )
            assert await names(client, "meteorology") == ["get_weather"]


async def names(client: Any, query: str) -> list[str]:
    pages = await search(query)(FastMCP("unused"), client)
    return [t["name"] for page in pages for t in page["tools"]]


class Address(BaseModel):
    city: str


class TestOneWayThrough:
    async def test_search_tools_lists_nothing_and_keeps_every_mark(
        self, connect: Connect, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The meta-tool ranks the snapshot and shows its page as a listing would, marks and
        all, without listing through the middleware chain from inside the call."""
        server = make_server(FilterMiddleware(groups=GROUPS))

        @server.tool
        def ship_parcel(to: Address, back: Address) -> str:
            """Ship a parcel to an address."""
            return to.city

        entered: list[int] = []
        original = FastMCP.list_tools

        async def counting(self: FastMCP, **kw: Any) -> Sequence[Tool]:
            entered.append(1)
            return await original(self, **kw)

        async with connect(server) as client:
            listed = {t.name: t for t in await client.list_tools()}
            await client.call_tool("search_tools", {"query": "open a pull request"})
            monkeypatch.setattr(FastMCP, "list_tools", counting)
            reply = await client.call_tool("search_tools", {"query": "open a pull request"})
            ship = await client.call_tool("search_tools", {"query": "ship a parcel"})
        assert entered == []
        shipped = ship.structured_content["tools"][0]
        found = reply.structured_content["tools"][0]
        assert found["name"] == "create_pull_request"
        assert found["_meta"] == listed["create_pull_request"].meta
        assert found["_meta"]["io.modelcontextprotocol/groups"] == ["code"]
        # As FastMCP lists it: the model's $ref inlined.
        assert shipped["name"] == "ship_parcel"
        assert (
            shipped["inputSchema"] == listed["ship_parcel"].model_dump(by_alias=True)["inputSchema"]
        )
        assert "$defs" not in shipped["inputSchema"]

"""Attacks on discovery through groups not enabled yet: each test asserts the SAFE behaviour.

A failing test is a finding: a tool a client may not learn of is named, counted or
changes a ranking, a score or a ``_meta``; one client's state shows in another's
answer; the ``available_after`` advice does not work; or bad input crashes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.auth import require_scopes
from fastmcp.server.middleware import Middleware
from fastmcp.utilities.tests import asgi_server
from mcp.shared.exceptions import MCPError

from fastmcp_filtering import (
    SEARCH_FIRST,
    ConcernMiddleware,
    FilterMiddleware,
    Group,
    ProgressiveDisclosureMiddleware,
    add_filtering,
    install,
)
from fastmcp_filtering.client import call_method
from fastmcp_filtering.concern.middleware import Concern
from fastmcp_filtering.core.concerns import REQUEST_META_KEY
from fastmcp_filtering.core.declarations import BETTER_BY_NAME_META_KEY, BETTER_MATCHES_META_KEY
from fastmcp_filtering.retrieval.embedders import INSTALL_HINT
from fastmcp_filtering.search.middleware import SearchMiddleware

from .._faults_stores import FaultyStore
from .._support.discovery import GROUPS, brief, search, tool
from .._support.layers import HideSecret
from .._support.search import Stub
from ..conftest import ERAS, Connect, need, use

# Every test here runs on servers set up by install and by mcp.add_middleware alone.
pytestmark = pytest.mark.usefixtures("setup_way")

GROUPS_KEY = "io.modelcontextprotocol/groups"
META_TOOLS = {"search_tools", "enable_tools", "disable_tools"}


# -- servers ---------------------------------------------------------------------------------


def base_tools(*, extra: list[Stub] | None = None) -> list[Stub]:
    return [
        tool("read_text_file", "Read the text of a file", "read"),
        tool("directory_tree", "Show the tree of a directory", "read"),
        tool("write_file", "Save text to a new file, or overwrite a file", "write"),
        tool("edit_file", "Change lines of a text file", "write"),
        tool("git_commit", "Record changes to the repository", "git"),
        tool("git_log", "Show the commit history", "git"),
        *(extra or []),
    ]


def progressive(**kw: Any) -> ProgressiveDisclosureMiddleware:
    kw.setdefault("initial_groups", ["files", "read"])
    return ProgressiveDisclosureMiddleware(groups=GROUPS, **kw)


def server(*before: Any, extra: list[Stub] | None = None, store: Any = None, **kw: Any) -> FastMCP:
    """Progressive disclosure + search over ``base_tools``, with ``before`` middlewares first."""
    mcp = FastMCP("attack", session_state_store=store)
    for stub in base_tools(extra=extra):
        mcp.add_tool(stub)
    use(mcp, *before, progressive(**kw), SearchMiddleware(groups=GROUPS))
    return mcp


async def names(client: Any, query: str, **kw: Any) -> list[str]:
    return [t["name"] for t in await search(client, query, **kw)]


async def listed(client: Any, params: dict[str, Any]) -> dict[str, Any]:
    result = await call_method(client, "tools/list", params)
    return {"tools": [t["name"] for t in result["tools"]], "meta": result.get("_meta") or {}}


ROCKET_QUERIES = ["launch rocket", "rocket", "save the world", "launch"]


# -- another layer's concealment -------------------------------------------------------------


# Known gaps, each a strict xfail: it fails the day the gap is closed.
MOUNTED_META = (
    "known gap (issue 11): mounting wraps a meta-tool in a new object, which the identity "
    "registry does not know"
)
COUNTS_ALL = "by design until issue 14: max_tools counts every member, whoever may see it"


class HideByMiddleware(Middleware):
    """A server's own FastMCP middleware (role check, tenant filter...) hiding one tool."""

    def __init__(self, hidden: str = "launch_rocket") -> None:
        self.hidden = hidden

    async def on_list_tools(self, context: Any, call_next: Any) -> Any:
        return [t for t in await call_next(context) if t.name != self.hidden]

    async def on_list_prompts(self, context: Any, call_next: Any) -> Any:
        return [p for p in await call_next(context) if p.name != self.hidden]

    async def on_call_tool(self, context: Any, call_next: Any) -> Any:
        if context.message.name == self.hidden:
            raise ToolError(f"Unknown tool: {self.hidden!r}")
        return await call_next(context)


ROCKET = ("launch_rocket", "Save the world by launching a rocket", "write")


class TestOtherConcealment:
    async def test_a_fastmcp_middleware_that_hides_a_tool_hides_it_from_search(
        self, connect: Connect
    ) -> None:
        mcp = server(HideByMiddleware(), extra=[tool(*ROCKET)])
        async with connect(mcp) as client:
            assert "launch_rocket" not in {t.name for t in await client.list_tools()}
            for query in ROCKET_QUERIES:
                assert "launch_rocket" not in await names(client, query), query

    async def test_a_fastmcp_middleware_that_hides_a_tool_changes_no_list_meta(
        self, connect: Connect
    ) -> None:
        mcp = server(HideByMiddleware(), extra=[tool(*ROCKET)])
        async with connect(mcp) as client, connect(server()) as reference:
            for query in ROCKET_QUERIES:
                got = await listed(client, {"query": query})
                assert got == await listed(reference, {"query": query}), query

    async def test_a_fastmcp_middleware_that_hides_a_prompt_changes_no_prompt_meta(
        self, connect: Connect
    ) -> None:
        def build(hidden: bool) -> FastMCP:
            mcp = FastMCP("prompts")

            @mcp.prompt(name="summary", meta={GROUPS_KEY: ["read"]})
            def summary() -> str:
                """Summarize a file"""
                return "s"

            if hidden:

                @mcp.prompt(name="launch_rocket", meta={GROUPS_KEY: ["write"]})
                def launch_rocket() -> str:
                    """Launch codes for the rocket"""
                    return "1234"

            use(mcp, HideByMiddleware(), progressive(), SearchMiddleware(groups=GROUPS))
            return mcp

        async with connect(build(True)) as client, connect(build(False)) as reference:
            for query in ["rocket launch codes", "launch"]:
                got = await call_method(client, "prompts/list", {"query": query})
                want = await call_method(reference, "prompts/list", {"query": query})
                assert got.get("_meta") == want.get("_meta"), query

    async def test_a_layer_on_a_mounted_server_hides_from_the_parents_search(
        self, connect: Connect
    ) -> None:
        child = FastMCP("child")
        child.add_tool(
            Stub(
                name="launch_rocket",
                description="Save the world by launching a rocket",
                parameters={"type": "object", "properties": {}},
                tags={"secret"},
                meta={GROUPS_KEY: ["write"]},
            )
        )
        install(child, HideSecret())
        mcp = server()
        mcp.mount(child, namespace="child")
        async with connect(mcp) as client:
            assert "child_launch_rocket" not in {t.name for t in await client.list_tools()}
            for query in ROCKET_QUERIES:
                assert "child_launch_rocket" not in await names(client, query), query
                got = await listed(client, {"query": query})
                assert "child_launch_rocket" not in str(got), query

    async def test_a_mounted_servers_search_tools_does_not_name_what_the_parent_conceals(
        self, connect: Connect
    ) -> None:
        child = FastMCP("child")
        for stub in base_tools(extra=[tool(*ROCKET, tags={"secret"})]):
            child.add_tool(stub)
        use(child, progressive(), SearchMiddleware(groups=GROUPS))
        parent = FastMCP("parent")
        parent.mount(child, namespace="child")
        install(parent, HideSecret())
        async with connect(parent) as client:
            tools = {t.name for t in await client.list_tools()}
            assert "child_launch_rocket" not in tools
            assert "child_search_tools" in tools
            for query in ROCKET_QUERIES:
                reply = await client.call_tool("child_search_tools", {"query": query})
                found = [t["name"] for t in reply.structured_content["tools"]]
                assert not {"launch_rocket", "child_launch_rocket"} & set(found), query

    async def test_a_mounted_servers_search_adds_no_hint_to_the_parents_list(
        self, connect: Connect
    ) -> None:
        # The child ranks with its own policy; the parent conceals the rocket.
        child = FastMCP("child")
        for stub in base_tools(extra=[tool(*ROCKET, tags={"secret"})]):
            child.add_tool(stub)
        use(child, progressive(), SearchMiddleware(groups=GROUPS))
        parent = FastMCP("parent")
        parent.mount(child, namespace="child")
        use(parent, HideSecret(), SearchMiddleware(groups=GROUPS))
        async with connect(parent) as client:
            for query in ["launch rocket", "save the world"]:
                got = await listed(client, {"query": query})
                assert "write" not in got["meta"].get(BETTER_MATCHES_META_KEY, []), query

    async def test_a_layer_concealing_a_tool_changes_no_answer(self, connect: Connect) -> None:
        mcp = server(HideSecret(), extra=[tool(*ROCKET, tags={"secret"})])
        async with connect(mcp) as client, connect(server()) as reference:
            for query in [*ROCKET_QUERIES, "save text file", "world"]:
                assert await search(client, query) == await search(reference, query), query
                got = await listed(client, {"query": query})
                assert got == await listed(reference, {"query": query}), query

    async def test_hide_ungrouped_and_undeclared_groups_change_no_answer(
        self, connect: Connect
    ) -> None:
        stray = [
            tool("shred_file", "Destroy a file for good"),
            tool("nuke_file", "Destroy a file with fire", "undeclared_group"),
        ]
        mcp = server(extra=stray, hide_ungrouped=True)
        async with connect(mcp) as client, connect(server(hide_ungrouped=True)) as reference:
            for query in ["destroy a file", "shred", "nuke fire"]:
                assert await search(client, query) == await search(reference, query), query
                got = await listed(client, {"query": query})
                assert got == await listed(reference, {"query": query}), query


# -- concerns ----------------------------------------------------------------------------------

CONCERNS = [Concern("security", values=["high", "medium", "low"])]
MAPPING = {"launch_rocket": {"security": "low"}}


def concern_server(*, rocket: bool = True) -> FastMCP:
    mcp = FastMCP("concerns")
    for stub in base_tools(extra=[tool(*ROCKET)] if rocket else []):
        mcp.add_tool(stub)
    use(
        mcp,
        ConcernMiddleware(concerns=CONCERNS, mapping=MAPPING),
        progressive(),
        SearchMiddleware(groups=GROUPS),
    )
    return mcp


@pytest.mark.side_effect_lists
class TestConcerns:
    async def test_concerns_update_hides_from_search_and_list_meta(self, connect: Connect) -> None:
        async with (
            connect(concern_server()) as client,
            connect(concern_server(rocket=False)) as reference,
        ):
            for each in (client, reference):
                await call_method(each, "concerns/update", {"concerns": {"security": "high"}})
            for query in ROCKET_QUERIES:
                assert await search(client, query) == await search(reference, query), query
                got = await listed(client, {"query": query})
                assert got == await listed(reference, {"query": query}), query

    async def test_a_request_meta_override_hides_from_search_and_list_meta(
        self, connect: Connect
    ) -> None:
        meta = {REQUEST_META_KEY: {"security": "high"}}
        async with (
            connect(concern_server()) as client,
            connect(concern_server(rocket=False)) as reference,
        ):
            for query in ROCKET_QUERIES:
                got = await client.call_tool("search_tools", {"query": query}, meta=meta)
                want = await reference.call_tool("search_tools", {"query": query}, meta=meta)
                assert got.structured_content == want.structured_content, query
                params = {"query": query, "_meta": meta}
                assert await listed(client, params) == await listed(reference, params), query

    async def test_without_concerns_the_tool_is_offered(self, connect: Connect) -> None:
        # Control: the attacks above test something (the tool is discoverable otherwise).
        async with connect(concern_server()) as client:
            assert "launch_rocket" in await names(client, "launch rocket")


# -- FastMCP's own authorization and per-session visibility ------------------------------------


class TestFastMCPHides:
    async def test_component_auth_hides_from_search(self, connect: Connect) -> None:
        rocket = tool(*ROCKET, auth=require_scopes("admin"))
        async with connect(server(extra=[rocket])) as client, connect(server()) as reference:
            assert "launch_rocket" not in {t.name for t in await client.list_tools()}
            for query in ROCKET_QUERIES:
                assert await search(client, query) == await search(reference, query), query
                got = await listed(client, {"query": query})
                assert got == await listed(reference, {"query": query}), query

    async def test_per_session_visibility_hides_from_search(self, connect: Connect) -> None:
        async def hide(ctx: Context) -> str:
            await ctx.disable_components(names={"launch_rocket"})
            return "hidden"

        def build(rocket: bool) -> FastMCP:
            mcp = server(extra=[tool(*ROCKET)] if rocket else [])
            mcp.tool(hide)
            return mcp

        async with connect(build(True)) as client, connect(build(False)) as reference:
            assert "launch_rocket" in await names(client, "launch rocket")  # control
            await client.call_tool("hide", {})
            await reference.call_tool("hide", {})
            for query in ROCKET_QUERIES:
                assert await search(client, query) == await search(reference, query), query
                got = await listed(client, {"query": query})
                assert got == await listed(reference, {"query": query}), query


# -- clients that cannot enable groups ---------------------------------------------------------


def no_offers(found: list[dict[str, Any]]) -> bool:
    return all("available_after" not in t for t in found)


class TestCannotEnable:
    @pytest.mark.parametrize("era", list(ERAS))
    async def test_anonymous_stateless_http_is_offered_calls_by_name(self, era: str) -> None:
        """It cannot enable groups, so it is offered nothing to enable: what it could have
        enabled comes with its definition, to call by name; its lists stay as they are."""
        async with (
            asgi_server(server(), stateless_http=True) as running,
            running.client(**ERAS[era]) as client,
        ):
            for query in ["save text to a new file", "record changes commit", "write"]:
                found = await search(client, query)
                assert no_offers(found), (query, brief(found))
                assert all("inputSchema" in t for t in found), (query, brief(found))
                got = await listed(client, {"query": query})
                assert BETTER_MATCHES_META_KEY not in got["meta"], query
                assert "write_file" not in got["tools"], query
            assert "write_file" in [t["name"] for t in await search(client, "write")]

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_a_client_chosen_session_id_is_offered_nothing(self, era: str) -> None:
        async with (
            asgi_server(server(), stateless_http=True) as running,
            running.client(**ERAS[era], headers={"mcp-session-id": "victim"}) as client,
        ):
            found = await search(client, "save text to a new file")
            assert no_offers(found), brief(found)

    async def test_a_failing_state_store_offers_nothing(self, connect: Connect) -> None:
        store = FaultyStore()
        store.set("raise")
        async with connect(server(store=store)) as client:
            for query in ["save text to a new file", "record changes commit"]:
                found = await search(client, query)
                assert no_offers(found), (query, brief(found))
                got = await listed(client, {"query": query})
                assert BETTER_MATCHES_META_KEY not in got["meta"], query

    async def test_a_store_failing_only_for_the_remedy_offers_nothing_wrong(
        self, connect: Connect
    ) -> None:
        # The store works for the policy, then fails when max_tools advice reloads it.
        store = FaultyStore()
        async with connect(server(store=store, max_tools=4)) as client:
            found = await search(client, "save text to a new file")
            assert found
            assert found[0]["name"] == "write_file"
            store.set("raise")
            found = await search(client, "save text to a new file")
            assert no_offers(found), brief(found)


# -- filters, versions, meta-tool names ---------------------------------------------------------


@pytest.mark.side_effect_lists
class TestFilterAndVersions:
    async def test_a_filter_bounds_the_better_matches(self, connect: Connect) -> None:
        async with connect(server()) as client:
            for query in ["record changes commit", "save text to a new file"]:
                got = await listed(client, {"query": query, "filter": {"groups": ["read"]}})
                assert not got["meta"].get(BETTER_MATCHES_META_KEY), (query, got)

    async def test_a_filter_by_tag_bounds_the_better_matches(self, connect: Connect) -> None:
        tagged = [tool("read_aloud", "Read a file aloud", "read", tags={"audio"})]
        tagged.append(tool("record_audio", "Record audio to a new file", "write"))
        async with connect(server(extra=tagged)) as client:
            got = await listed(client, {"query": "record audio", "filter": {"tags": ["audio"]}})
            assert not got["meta"].get(BETTER_MATCHES_META_KEY), got

    @pytest.mark.parametrize(
        ("hidden_version", "group_version"), [("2", "1"), ("1", "2")], ids=["v2-hid", "v1-hid"]
    )
    async def test_a_concealed_version_changes_no_answer(
        self, connect: Connect, hidden_version: str, group_version: str
    ) -> None:
        def build(concealed: bool) -> FastMCP:
            extra = [tool("deploy", "Deploy the site", "write", version=group_version)]
            if concealed:
                extra.append(
                    tool(
                        "deploy",
                        "Deploy the zeppelin fleet",
                        "write",
                        version=hidden_version,
                        tags={"secret"},
                    )
                )
            return server(HideSecret(), extra=extra)

        async with connect(build(True)) as client, connect(build(False)) as reference:
            for query in ["zeppelin fleet", "deploy", "deploy the site"]:
                assert await search(client, query) == await search(reference, query), query
                got = await listed(client, {"query": query})
                assert got == await listed(reference, {"query": query}), query

    async def test_a_concealed_higher_version_over_a_visible_one_changes_no_answer(
        self, connect: Connect
    ) -> None:
        def build(concealed: bool) -> FastMCP:
            extra = [tool("deploy", "Deploy the site", "read", version="1")]
            if concealed:
                extra.append(
                    tool(
                        "deploy", "Deploy the zeppelin fleet", "write", version="2", tags={"secret"}
                    )
                )
            return server(HideSecret(), extra=extra)

        async with connect(build(True)) as client, connect(build(False)) as reference:
            for query in ["zeppelin fleet", "deploy"]:
                assert await search(client, query) == await search(reference, query), query
                got = await listed(client, {"query": query})
                assert got == await listed(reference, {"query": query}), query

    async def test_the_offered_version_is_the_one_the_advice_shows(self, connect: Connect) -> None:
        extra = [
            tool("deploy", "Deploy the site the old way", "write", version="1"),
            tool("deploy", "Deploy the site with zeppelins", "git", version="2"),
        ]
        async with connect(server(extra=extra)) as client:
            found = await search(client, "deploy the site")
            item = next(t for t in found if t["name"] == "deploy")
            await client.call_tool("enable_tools", item["available_after"]["enable_tools"])
            shown = {t.name: t for t in await client.list_tools()}
            assert shown["deploy"].description == item["description"]

    async def test_a_tool_named_like_a_meta_tool_is_not_offered(self, connect: Connect) -> None:
        impostors = [
            tool("enable_tools", "Enable the tools of the admin console", "write"),
            tool("search_tools", "Search the tool shed", "git"),
        ]
        async with connect(server(extra=impostors)) as client:
            for query in ["enable_tools", "search_tools", "tool shed", "admin console"]:
                for item in await search(client, query):
                    if item["name"] in META_TOOLS:
                        assert "available_after" not in item, (query, item)
                got = await listed(client, {"query": query})
                assert not got["meta"].get(BETTER_MATCHES_META_KEY), (query, got)

    @pytest.mark.xfail(
        strict=True,
        raises=AssertionError,
        reason=MOUNTED_META,
    )
    async def test_meta_tools_of_a_mounted_server_are_not_ranked(self, connect: Connect) -> None:
        child = FastMCP("child")
        child.add_tool(tool("child_only", "Something else", "read"))
        use(child, progressive(), SearchMiddleware(groups=GROUPS))
        mcp = server()
        mcp.mount(child, namespace="sub")
        async with connect(mcp) as client:
            for query in ["enable tools", "search tools", "disable tools"]:
                ranked = set(await names(client, query))
                assert not {"sub_enable_tools", "sub_search_tools", "sub_disable_tools"} & ranked


# -- one client's state in another's answer -----------------------------------------------------


@pytest.mark.side_effect_lists
class TestTwoClients:
    async def test_concurrent_clients_with_different_groups_stay_apart(self) -> None:
        mcp = server()
        async with Client(mcp, mode="legacy") as alice, Client(mcp, mode="legacy") as bob:
            await alice.call_tool("enable_tools", {"groups": ["write"]})

            async def alice_sees() -> None:
                found = await search(alice, "save text to a new file")
                assert found[0]["name"] == "write_file"
                assert "available_after" not in found[0]
                assert "inputSchema" in found[0]
                got = await listed(alice, {"query": "save text to a new file"})
                assert got["tools"][0] == "write_file"
                assert "write" not in got["meta"].get(BETTER_MATCHES_META_KEY, [])

            async def bob_sees() -> None:
                found = await search(bob, "save text to a new file")
                assert found[0]["available_after"] == {"enable_tools": {"groups": ["write"]}}
                assert "inputSchema" not in found[0]
                got = await listed(bob, {"query": "save text to a new file"})
                assert "write_file" not in got["tools"]
                assert got["meta"][BETTER_MATCHES_META_KEY] == ["write"]

            await asyncio.gather(*(f() for _ in range(15) for f in (alice_sees, bob_sees)))

    async def test_concurrent_clients_with_different_concerns_stay_apart(self) -> None:
        mcp = concern_server()
        async with Client(mcp, mode="legacy") as alice, Client(mcp, mode="legacy") as bob:
            await call_method(alice, "concerns/update", {"concerns": {"security": "high"}})

            async def alice_sees() -> None:
                assert "launch_rocket" not in await names(alice, "launch rocket")

            async def bob_sees() -> None:
                assert "launch_rocket" in await names(bob, "launch rocket")

            await asyncio.gather(*(f() for _ in range(15) for f in (alice_sees, bob_sees)))

    async def test_two_principals_on_stateless_http_stay_apart(self) -> None:
        from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

        tokens = {
            "alice-token": {"client_id": "agent", "sub": "alice", "scopes": []},
            "bob-token": {"client_id": "agent", "sub": "bob", "scopes": []},
        }
        mcp = server()
        mcp.auth = StaticTokenVerifier(tokens=tokens)
        async with (
            asgi_server(mcp, stateless_http=True) as running,
            running.client(auth="alice-token") as alice,
            running.client(auth="bob-token") as bob,
        ):
            await alice.call_tool("enable_tools", {"groups": ["write"]})
            a, b = await asyncio.gather(
                search(alice, "save text to a new file"), search(bob, "save text to a new file")
            )
            assert "available_after" not in a[0]
            assert b[0]["available_after"] == {"enable_tools": {"groups": ["write"]}}


# -- the advice works ---------------------------------------------------------------------------


async def follow(client: Any, calls: dict[str, Any]) -> None:
    for name, arguments in calls.items():
        reply = await client.call_tool(name, arguments)
        assert reply.structured_content["errors"] == [], (name, reply.structured_content)


DEEP = [
    Group("root"),
    Group("a", parent="root"),
    Group("b", parent="root"),
    Group("ab", parent=["a", "b"]),
    Group("leaf", parent="ab"),
    Group("other"),
]


def deep_server(*, max_tools: int | None = None, initial: tuple[str, ...] = ()) -> FastMCP:
    mcp = FastMCP("deep")
    for stub in [
        tool("root_tool", "Root level thing", "root"),
        tool("a_tool", "Alpha thing", "a"),
        tool("a_tool2", "Alpha other", "a"),
        tool("a_tool3", "Alpha third", "a"),
        tool("b_tool", "Beta thing", "b"),
        tool("ab_tool", "Shared thing", "ab"),
        tool("leaf_tool", "Turn the zeppelin around", "leaf"),
        tool("other_tool", "Other thing", "other"),
        tool("other_tool2", "Other thing two", "other"),
    ]:
        mcp.add_tool(stub)
    use(
        mcp,
        ProgressiveDisclosureMiddleware(groups=DEEP, initial_groups=initial, max_tools=max_tools),
        SearchMiddleware(groups=DEEP),
    )
    return mcp


@pytest.mark.side_effect_lists
class TestAdviceWorks:
    @pytest.mark.parametrize(
        ("max_tools", "initial"),
        [
            (None, ()),
            (None, ("root", "b")),
            (6, ()),
            (6, ("other",)),
            (7, ("root", "a", "other")),
            (6, ("other", "root", "a")),
            (5, ("root", "b", "other")),
        ],
    )
    async def test_following_available_after_makes_the_tool_callable(
        self, connect: Connect, max_tools: int | None, initial: tuple[str, ...]
    ) -> None:
        async with connect(deep_server(max_tools=max_tools, initial=initial)) as client:
            found = await search(client, "turn the zeppelin around")
            assert found, brief(found)
            assert found[0]["name"] == "leaf_tool", brief(found)
            await follow(client, found[0]["available_after"])
            assert "leaf_tool" in {t.name for t in await client.list_tools()}
            again = await search(client, "turn the zeppelin around")
            assert "available_after" not in again[0]

    async def test_a_tool_is_offered_when_another_parent_path_fits(self, connect: Connect) -> None:
        # ab hangs on a (3 tools) or b (1 tool); with max_tools=4 only root+b+ab+leaf fits.
        async with connect(deep_server(max_tools=4)) as client:
            found = await search(client, "turn the zeppelin around")
            assert found, brief(found)
            assert found[0]["name"] == "leaf_tool", brief(found)
            await follow(client, found[0]["available_after"])

    async def test_a_tool_is_offered_when_a_sibling_parent_can_replace_the_enabled_one(
        self, connect: Connect
    ) -> None:
        # root+a enabled (4 tools); max_tools=5: disable a, enable b, ab, leaf gives 4.
        async with connect(deep_server(max_tools=5, initial=("root", "a"))) as client:
            found = await search(client, "turn the zeppelin around")
            assert found, brief(found)
            assert found[0]["name"] == "leaf_tool", brief(found)
            await follow(client, found[0]["available_after"])

    async def test_renamed_meta_tools_are_named_in_the_advice(self, connect: Connect) -> None:
        mcp = server(max_tools=3, enable_tool_name="open_groups", disable_tool_name="close_groups")
        async with connect(mcp) as client:
            found = await search(client, "save text to a new file")
            assert set(found[0]["available_after"]) == {"close_groups", "open_groups"}
            await follow(client, found[0]["available_after"])
            assert "write_file" in {t.name for t in await client.list_tools()}

    async def test_advice_for_every_offered_tool_works(self, connect: Connect) -> None:
        for query in ["save text to a new file", "record changes commit", "change lines"]:
            async with connect(server(max_tools=3)) as client:
                for item in await search(client, query):
                    if "available_after" in item:
                        await follow(client, item["available_after"])
                        assert item["name"] in {t.name for t in await client.list_tools()}
                        break


# -- counting what the client may not learn of --------------------------------------------------


@pytest.mark.side_effect_lists
class TestCounts:
    @pytest.mark.xfail(
        strict=True,
        raises=AssertionError,
        reason=COUNTS_ALL,
    )
    @pytest.mark.parametrize("max_tools", [2, 4])
    async def test_a_concealed_member_does_not_change_the_max_tools_advice(
        self, connect: Connect, max_tools: int
    ) -> None:
        rocket = tool(*ROCKET, tags={"secret"})
        async with (
            connect(server(HideSecret(), extra=[rocket], max_tools=max_tools)) as client,
            connect(server(HideSecret(), max_tools=max_tools)) as reference,
        ):
            for query in ["save text to a new file", "change lines"]:
                assert brief(await search(client, query)) == brief(
                    await search(reference, query)
                ), query


# -- bad input -----------------------------------------------------------------------------------


class TestBadInput:
    @pytest.mark.parametrize("query", [5, ["a"], {"a": 1}, True, "x" * 1001])
    async def test_tools_list_rejects_a_bad_query(self, connect: Connect, query: Any) -> None:
        async with connect(server()) as client:
            with pytest.raises(MCPError) as refused:
                await call_method(client, "tools/list", {"query": query})
            assert refused.value.error.code == mt.INVALID_PARAMS
            assert await client.list_tools()  # still serving

    @pytest.mark.parametrize(
        "method", ["prompts/list", "resources/list", "resources/templates/list"]
    )
    async def test_other_lists_reject_a_bad_query(self, connect: Connect, method: str) -> None:
        async with connect(server()) as client:
            with pytest.raises(MCPError) as refused:
                await call_method(client, method, {"query": 7})
            assert refused.value.error.code == mt.INVALID_PARAMS

    @pytest.mark.parametrize("query", [5, ["a"], None, "x" * 1001])
    async def test_search_tools_rejects_a_bad_query(self, connect: Connect, query: Any) -> None:
        async with connect(server()) as client:
            code: int | None = None
            try:
                result = await client.call_tool_mcp("search_tools", {"query": query})
            except MCPError as refused:
                code = refused.error.code
            else:
                code = None if result.is_error else 0
            # Either the arguments are refused (-32602) or the tool reports an error.
            assert code in (None, mt.INVALID_PARAMS)
            assert await client.list_tools()

    @pytest.mark.parametrize(
        "query", ["\x00\x01\x02", "\ud7ff\ufffe", " \t\n ", "🚀" * 300, "ab" * 500]
    )
    async def test_odd_queries_answer(self, connect: Connect, query: str) -> None:
        async with connect(server()) as client:
            await search(client, query)
            await call_method(client, "tools/list", {"query": query})

    async def test_the_longest_query_on_a_large_catalog_answers_quickly(
        self, connect: Connect
    ) -> None:
        extra = [
            tool(
                f"tool_{i}",
                f"Does thing number {i} with widget{i % 37} and gadget{i % 53}",
                ("read", "write", "git")[i % 3],
            )
            for i in range(600)
        ]
        words = " ".join(f"widgt{i} gadgt{i} thng" for i in range(60))[:1000]
        async with connect(server(extra=extra)) as client:
            # Typo-laden words against a large vocabulary: an answer, bounded in size.
            assert len(await search(client, words)) <= 10
            listed = await call_method(client, "tools/list", {"query": words})
            assert len(listed["tools"]) <= 10


# -- other stacks: FilterMiddleware in either order, a semantic ranking ---------------------------


def toy_embed(texts: Any) -> list[list[float]]:
    """A deterministic bag-of-words embedder: enough to blend a semantic ranking in."""
    import hashlib

    vectors = []
    for text in texts:
        vector = [0.0] * 64
        for word in str(text).lower().split():
            vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 64] += 1.0
        norm = sum(v * v for v in vector) ** 0.5 or 1.0
        vectors.append([v / norm for v in vector])
    return vectors


class TestOtherStacks:
    @pytest.mark.parametrize("order", ["filter-first", "search-first"])
    async def test_filter_middleware_in_either_order_changes_no_answer(
        self, connect: Connect, order: str
    ) -> None:
        def build(rocket: bool) -> FastMCP:
            mcp = FastMCP("stack")
            for stub in base_tools(extra=[tool(*ROCKET, tags={"secret"})] if rocket else []):
                mcp.add_tool(stub)
            search_mw = SearchMiddleware(groups=GROUPS)
            filter_mw = FilterMiddleware(groups=GROUPS)
            pair = [filter_mw, search_mw] if order == "filter-first" else [search_mw, filter_mw]
            use(mcp, HideSecret(), progressive(), *pair)
            return mcp

        async with connect(build(True)) as client, connect(build(False)) as reference:
            for query in [*ROCKET_QUERIES, "save text file"]:
                assert await search(client, query) == await search(reference, query), query
                for params in ({"query": query}, {"query": query, "filter": {"groups": ["files"]}}):
                    assert await listed(client, params) == await listed(reference, params)

    async def test_a_semantic_ranking_changes_no_answer(self, connect: Connect) -> None:
        need("a semantic ranking", "numpy", hint=INSTALL_HINT)

        def build(rocket: bool) -> FastMCP:
            mcp = FastMCP("semantic")
            for stub in base_tools(extra=[tool(*ROCKET, tags={"secret"})] if rocket else []):
                mcp.add_tool(stub)
            use(
                mcp,
                HideSecret(),
                progressive(),
                SearchMiddleware(groups=GROUPS, semantic=toy_embed),
            )
            return mcp

        async with connect(build(True)) as client, connect(build(False)) as reference:
            for query in [*ROCKET_QUERIES, "save text file", "world"]:
                assert await search(client, query) == await search(reference, query), query
                got = await listed(client, {"query": query})
                assert got == await listed(reference, {"query": query}), query


# -- the better-matches-by-name key ---------------------------------------------------------


def _search_first(*before: Any, extra: list[Stub] | None = None) -> FastMCP:
    """Search first over ``base_tools`` (only the meta-tools listed), ``before`` first."""
    mcp = FastMCP("search-first")
    for stub in base_tools(extra=extra):
        mcp.add_tool(stub)
    use(mcp, *before)
    add_filtering(mcp, groups=GROUPS, progressive=SEARCH_FIRST)
    return mcp


class TestBetterByName:
    async def test_the_key_names_the_rocket_where_nothing_hides_it(self, connect: Connect) -> None:
        # The reference the attacks below are judged against: the key is there to leak.
        async with connect(_search_first(extra=[tool(*ROCKET)])) as client:
            got = await listed(client, {"query": "launch rocket"})
        assert "launch_rocket" in got["meta"].get(BETTER_BY_NAME_META_KEY, [])

    async def test_a_fastmcp_middleware_ahead_hides_it_from_the_key(self, connect: Connect) -> None:
        mcp = _search_first(HideByMiddleware(), extra=[tool(*ROCKET)])
        async with connect(mcp) as client:
            for query in ROCKET_QUERIES:
                got = await listed(client, {"query": query})
                assert "launch_rocket" not in str(got), query

    async def test_a_mounted_search_first_server_names_nothing_its_parent_conceals(
        self, connect: Connect
    ) -> None:
        child = _search_first(extra=[tool(*ROCKET, tags={"secret"})])
        parent = FastMCP("parent")
        parent.mount(child, namespace="child")
        install(parent, HideSecret())
        async with connect(parent) as client:
            for query in ROCKET_QUERIES:
                got = await listed(client, {"query": query})
                assert "launch_rocket" not in str(got), query
                reply = await client.call_tool("child_search_tools", {"query": query})
                assert "launch_rocket" not in str(reply.structured_content["tools"]), query

    async def test_a_parent_search_first_names_nothing_a_mounted_layer_conceals(
        self, connect: Connect
    ) -> None:
        child = FastMCP("child")
        for stub in base_tools(extra=[tool(*ROCKET, tags={"secret"})]):
            child.add_tool(stub)
        install(child, HideSecret())
        parent = _search_first()
        parent.mount(child, namespace="child")
        async with connect(parent) as client:
            for query in ROCKET_QUERIES:
                got = await listed(client, {"query": query})
                assert "launch_rocket" not in str(got), query

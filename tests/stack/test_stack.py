"""Composition: every pair of middlewares and the full stack, in every order, give one answer."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.auth import require_scopes
from fastmcp.server.middleware import Middleware

from fastmcp_filtering import (
    Catalog,
    Concern,
    ConcernMiddleware,
    ConcernsFromToken,
    FilterMiddleware,
    Group,
    GroupAccessMiddleware,
    ProgressiveDisclosureMiddleware,
    SearchMiddleware,
    Tag,
    add_filtering,
    filtering_stack,
    in_group,
)
from fastmcp_filtering.client import call_method, list_tools

from .._principals import PrincipalByClientName, as_principal, guarded_server
from ..conftest import ERAS, use

GROUPS = [
    Group("code", title="Code", description="Source code"),
    Group(
        "repos", title="Repositories", description="Create and delete repositories", parent="code"
    ),
    Group("issues", title="Issues", description="Create and triage issues"),
    # Access control: only tokens with github:admin may use what deletes, whatever its
    # other groups (restrictive).
    Group(
        "admin",
        title="Administration",
        tools=["delete_*"],
        access=require_scopes("github:admin"),
        restrictive=True,
    ),
]
TAGS = [Tag("destructive", "Deletes data")]
CONCERNS = [Concern("risk", values=["safe", "destructive"], default="safe")]
MAPPING = {"delete_repo": {"risk": "destructive"}, "delete_issue": {"risk": "destructive"}}
TOOLS: dict[str, tuple[str | None, set[str], str]] = {
    "create_issue": ("issues", set(), "Open a new issue"),
    "list_issues": ("issues", set(), "List the issues of a repository"),
    "delete_issue": ("issues", {"destructive"}, "Delete an issue for good"),
    "create_repo": ("repos", set(), "Create a repository"),
    "delete_repo": ("repos", {"destructive"}, "Delete a repository for good"),
    "browse_code": ("code", set(), "Browse the code of a repository"),
    "ping": (None, set(), "Check the server answers"),
}
KINDS = ("filter", "search", "concerns", "progressive", "access")
PRINCIPAL = {"modern": "admin", "legacy": "reader"}
"""Who runs the full stack in each era: one principal the admin group admits, one it does not."""


def build(kinds: tuple[str, ...]) -> FastMCP:
    """A server with the middlewares ``kinds``, added in that order, on one catalog."""
    mcp = FastMCP("stack")
    # Outermost: authenticates each client as a token verifier would (tests/_principals.py).
    mcp.add_middleware(PrincipalByClientName())
    for name, (group, tags, description) in TOOLS.items():

        def run(name: str = name) -> str:
            return f"ran {name}"

        tool = mcp.tool(run, name=name, description=description, tags=tags)
        if group:
            in_group(group)(tool)
    catalog = Catalog(groups=GROUPS, tags=TAGS)
    made: dict[str, Middleware] = {
        "filter": FilterMiddleware(catalog=catalog),
        "search": SearchMiddleware(catalog=catalog, max_results=3),
        # Defaults for every client, so the default concern is part of every answer.
        "concerns": ConcernMiddleware(concerns=CONCERNS, mapping=MAPPING, apply_defaults="all"),
        "progressive": ProgressiveDisclosureMiddleware(
            catalog=catalog, initial_groups=["issues"], call_tool_name="call_tool"
        ),
        "access": GroupAccessMiddleware(catalog=catalog),
    }
    for kind in kinds:
        use(mcp, made[kind])
    return mcp


async def allowed_calls(client: Client[Any]) -> list[str]:
    allowed = []
    for name in TOOLS:
        try:
            await client.call_tool(name, {})
        except ToolError:
            continue
        allowed.append(name)
    return allowed


async def transcript(client: Client[Any], kinds: tuple[str, ...]) -> list[tuple[str, Any]]:
    """What a client sees along a scripted session; checks list/call agreement at each step."""
    out: list[tuple[str, Any]] = []

    async def snapshot(step: str) -> None:
        listed = sorted(t.name for t in await client.list_tools())
        callable_ = await allowed_calls(client)
        # Hidden means hidden, shown means usable: the two views agree.
        assert sorted(callable_) == sorted(n for n in listed if n in TOOLS), step
        out.append((f"{step}: list", listed))
        if "search" in kinds:
            found = [t.name for t in (await list_tools(client, query="delete repository")).tools]
            out.append((f"{step}: query", found))
            meta = await client.call_tool("search_tools", {"query": "delete repository"})
            tools = meta.structured_content["tools"]
            out.append((f"{step}: search_tools", [t["name"] for t in tools]))
            # The callable ones rank as the list query does; the rest are groups to enable.
            callable_found = [t["name"] for t in tools if "available_after" not in t]
            assert callable_found == found[: len(callable_found)], step
        if "filter" in kinds:
            filtered = await list_tools(client, groups=["code"])
            out.append((f"{step}: filter code", sorted(t.name for t in filtered.tools)))
        if "filter" in kinds and "search" in kinds:
            both = await list_tools(client, query="create", groups=["issues"])
            out.append((f"{step}: query+filter", [t.name for t in both.tools]))

    await snapshot("start")
    if "progressive" in kinds:
        reply = await client.call_tool("enable_tools", {"groups": ["code", "repos"]})
        out.append(("enable", reply.structured_content))
        await snapshot("enabled code+repos")
        proxied = await client.call_tool(
            "call_tool", {"name": "delete_repo", "arguments": {}}, raise_on_error=False
        )
        out.append(("proxy delete_repo refused", proxied.is_error))
    if "concerns" in kinds:
        update = await call_method(client, "concerns/update", {"concerns": {"risk": "destructive"}})
        out.append(("concerns/update", update["concerns"]))
        await snapshot("risk destructive")
    return out


def orders(kinds: tuple[str, ...]) -> list[tuple[str, ...]]:
    return list(itertools.permutations(kinds))


PAIRS = list(itertools.combinations(KINDS, 2))


@pytest.mark.side_effect_lists
class TestOrderDoesNotChangeAnswers:
    @pytest.mark.parametrize("era", list(ERAS))
    @pytest.mark.parametrize("pair", PAIRS, ids=["+".join(p) for p in PAIRS])
    async def test_every_pair_both_orders(self, pair: tuple[str, str], era: str) -> None:
        results = []
        for order in orders(pair):
            async with Client(build(order), **ERAS[era], **as_principal("admin")) as client:
                results.append(await transcript(client, pair))
        assert results[0] == results[1]

    @pytest.mark.slow
    @pytest.mark.parametrize("era", list(ERAS))
    async def test_full_stack_in_every_order(self, era: str) -> None:
        results = {}
        for order in orders(KINDS):
            async with Client(build(order), **ERAS[era], **as_principal(PRINCIPAL[era])) as client:
                results[order] = await transcript(client, KINDS)
        first = results[next(iter(results))]
        for order, result in results.items():
            assert result == first, order

    async def test_the_full_stack_answers(self) -> None:
        async with Client(build(KINDS), mode="legacy", **as_principal("admin")) as client:
            result = dict(await transcript(client, KINDS))
        # Initially: issues enabled, destructive tools excluded by the default concern.
        assert result["start: list"] == [
            "call_tool",
            "create_issue",
            "disable_tools",
            "enable_tools",
            "list_issues",
            "ping",
            "search_tools",
        ]
        assert "delete_repo" not in result["start: query"]
        assert result["enabled code+repos: filter code"] == ["browse_code", "create_repo"]
        assert result["proxy delete_repo refused"] is True
        assert result["risk destructive: query"][0] == "delete_repo"
        assert "delete_issue" in result["risk destructive: list"]

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_access_control_holds_whatever_the_client_enables(self, era: str) -> None:
        async with Client(build(KINDS), **ERAS[era], **as_principal("reader")) as client:
            result = dict(await transcript(client, KINDS))
        destructive = {"delete_repo", "delete_issue"}
        for step, seen in result.items():
            if isinstance(seen, list):
                assert destructive.isdisjoint(seen), step
        assert result["risk destructive: list"] == [
            "browse_code",
            "call_tool",
            "create_issue",
            "create_repo",
            "disable_tools",
            "enable_tools",
            "list_issues",
            "ping",
            "search_tools",
        ]


class TestAddFiltering:
    async def test_builds_the_stack_on_one_catalog(self) -> None:
        mcp = FastMCP("helper")
        stack = add_filtering(
            mcp,
            groups=GROUPS,
            tags=TAGS,
            concerns=CONCERNS,
            concern_mapping=MAPPING,
            search={"max_results": 5},
            progressive={"initial_groups": ["issues"]},
        )
        added = list(stack)
        assert [type(m) for m in added] == [
            FilterMiddleware,
            SearchMiddleware,
            ConcernMiddleware,
            ProgressiveDisclosureMiddleware,
        ]
        # In the server's chain in that order, each followed by what setting it up added.
        assert [m for m in mcp.middleware if m in added] == added
        assert stack.filter is not None
        assert stack.filter.catalog is stack.catalog
        assert stack.search is not None
        assert stack.search.catalog is stack.catalog
        assert stack.progressive is not None
        assert stack.progressive.catalog is stack.catalog
        assert stack.search.max_results == 5

    async def test_a_runtime_group_reaches_every_layer(self) -> None:
        mcp = build(())
        stack = add_filtering(mcp, groups=GROUPS, progressive={"initial_groups": ["issues"]})
        await stack.catalog.add_group(Group("misc", tools=["ping"]))
        async with Client(mcp, mode="legacy") as client:
            # ping joined a group that is not enabled: progressive disclosure now hides it.
            before = await list_tools(client, groups=["misc"])
            reply = await client.call_tool("enable_tools", {"groups": ["misc"]})
            after = await list_tools(client, groups=["misc"])
        assert before.tools == []
        assert reply.structured_content["enabled"] == ["misc"]
        assert [t.name for t in after.tools] == ["ping"]

    @pytest.mark.parametrize(
        "layers",
        [
            {"filter": False, "search": False},
            {"filter": False, "search": False, "concerns": [Concern("risk", values=["low"])]},
        ],
        ids=["no layer", "concerns only"],
    )
    @pytest.mark.parametrize("era", list(ERAS))
    @pytest.mark.usefixtures("setup_way")
    async def test_access_checks_hold_whatever_the_stack_holds(
        self, layers: dict[str, Any], era: str
    ) -> None:
        mcp, admin = guarded_server("guarded")
        add_filtering(mcp, groups=[admin], **layers)
        async with Client(mcp, **ERAS[era], **as_principal("reader")) as reader:
            assert [t.name for t in await reader.list_tools()] == ["ping"]
            with pytest.raises(ToolError, match="Unknown tool"):
                await reader.call_tool("drop_table", {})
        async with Client(mcp, **ERAS[era], **as_principal("admin")) as admin_client:
            assert sorted(t.name for t in await admin_client.list_tools()) == [
                "drop_table",
                "ping",
            ]

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_a_stack_given_to_the_constructor_holds_from_the_first_request(
        self, era: str
    ) -> None:
        admin = Group("admin", tools=["drop_*"], access=require_scopes("github:admin"))
        stack = filtering_stack(groups=[admin], progressive=True)
        mcp = FastMCP("ctor", middleware=[PrincipalByClientName(), *stack])
        mcp.tool(lambda: "pong", name="ping")
        mcp.tool(lambda: "dropped", name="drop_table")
        async with Client(mcp, **ERAS[era], **as_principal("reader")) as reader:
            with pytest.raises(ToolError, match="Unknown tool"):
                await reader.call_tool("drop_table", {})
            assert "drop_table" not in [t.name for t in await reader.list_tools()]
        async with Client(mcp, **ERAS[era], **as_principal("admin")) as admin_client:
            await admin_client.call_tool("enable_tools", {"groups": ["admin"]})
            dropped = await admin_client.call_tool("drop_table", {})
            assert dropped.content[0].text == "dropped"  # type: ignore[union-attr]

    def test_filtering_stack_adds_nothing_and_add_filtering_adds_it(self) -> None:
        assert list(filtering_stack(groups=GROUPS)) != []
        mcp = FastMCP("d")
        before = list(mcp.middleware)
        stack = add_filtering(mcp, groups=GROUPS)
        assert [m for m in mcp.middleware if m not in before][: len(list(stack))] == list(stack)

    def test_defaults_add_filter_and_search_only(self) -> None:
        stack = add_filtering(FastMCP("d"), groups=GROUPS)
        assert stack.filter is not None
        assert stack.search is not None
        assert stack.concerns is None
        assert stack.progressive is None

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"catalog": Catalog(), "groups": GROUPS}, "either catalog= or groups="),
            ({"concern_mapping": MAPPING}, "concern_mapping needs concerns="),
            (
                {"concern_authorization": ConcernsFromToken(claim="concerns")},
                "concern_authorization needs concerns=",
            ),
            ({"search": "yes"}, "search must be True, False or a dict"),
            ({"progressive": {"groups": GROUPS}}, "must not repeat groups or catalog"),
        ],
    )
    def test_bad_options(self, kwargs: dict[str, Any], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            add_filtering(FastMCP("bad"), **kwargs)


class TestMetaToolsBelongToNoGroup:
    async def test_a_group_pattern_never_catches_the_stacks_meta_tools(self) -> None:
        mcp = build(())
        add_filtering(
            mcp,
            groups=[Group("search", tools=["search_*", "*_tools"]), *GROUPS],
            progressive={"initial_groups": ["issues"], "hide_ungrouped": True},
        )
        async with Client(mcp, mode="legacy") as client:
            names = [t.name for t in await client.list_tools()]
            found = await client.call_tool("search_tools", {"query": "issue"})
            in_search = await list_tools(client, groups=["search"])
        assert {"search_tools", "enable_tools", "disable_tools"} <= set(names)
        assert found.structured_content["tools"]
        assert in_search.tools == []

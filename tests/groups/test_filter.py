from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from inline_snapshot import snapshot
from mcp.shared.exceptions import MCPError

from fastmcp_filtering import FilterMiddleware, Group, Tag, add_filtering, in_group
from fastmcp_filtering.client import (
    FilteringNotifications,
    call_method,
    groups_of,
    list_groups,
    list_tags,
    list_tools,
)
from fastmcp_filtering.core.declarations import WARNINGS_META_KEY

from ..conftest import Connect, use

GROUPS = [
    Group("code", title="Code", description="Code management"),
    Group("repos", description="Repositories", parent="code"),
    Group("issues", title="Issue Tracking", description="Create and triage issues"),
    Group("admin", description="Destructive administration", tools=["delete_*", "transfer_repo"]),
]
TAGS = [Tag("stable", "Production-ready")]


def make_server(*, page_size: int | None = None) -> tuple[FastMCP, FilterMiddleware]:
    mcp = FastMCP("github", list_page_size=page_size)

    @in_group("issues")
    @mcp.tool(tags={"stable"})
    def create_issue(title: str) -> str:
        return f"created {title}"

    @mcp.tool(tags={"stable", "read-only"})
    @in_group("issues")
    def list_issues() -> str:
        return "[]"

    @in_group("repos")
    @mcp.tool(tags={"stable"})
    def create_repo(name: str) -> str:
        return name

    @mcp.tool(tags={"beta"}, meta={"io.modelcontextprotocol/groups": ["repos"]})
    def fork_repo(name: str) -> str:
        return name

    @mcp.tool(tags={"stable", "destructive"})
    def delete_repo(name: str) -> str:
        return name

    @mcp.tool(tags={"destructive"})
    def transfer_repo(name: str) -> str:
        return name

    @mcp.tool
    def ping() -> str:
        return "pong"

    @in_group("issues")
    @mcp.prompt
    def triage(issue: int) -> str:
        return f"Triage issue {issue}"

    @mcp.prompt
    def hello() -> str:
        return "hi"

    @in_group("repos")
    @mcp.resource("repo://readme")
    def readme() -> str:
        return "# readme"

    @mcp.resource("misc://notes")
    def notes() -> str:
        return "notes"

    @in_group("repos")
    @mcp.resource("repo://{name}/license")
    def license_of(name: str) -> str:
        return "MIT"

    middleware = FilterMiddleware(groups=GROUPS, tags=TAGS)
    use(mcp, middleware)
    return mcp, middleware


def names(items: Any) -> list[str]:
    return sorted(item.name for item in items)


class TestCapabilities:
    async def test_declared_in_both_eras_under_experimental(
        self, connect: Connect, era: str
    ) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            capabilities = client.server_capabilities
            assert capabilities is not None
            if era == "legacy":
                assert capabilities.experimental == snapshot(
                    {
                        "filtering": {
                            "groups": {"listChanged": True},
                            "tags": {"listChanged": True},
                        },
                        "groups": {"listChanged": True},
                        "io.modelcontextprotocol/grouping": {"listChanged": True},
                    }
                )
            else:
                # A stateless client is never sent list_changed: none is promised.
                assert capabilities.experimental == snapshot(
                    {
                        "filtering": {"groups": {}, "tags": {}},
                        "groups": {},
                        "io.modelcontextprotocol/grouping": {},
                    }
                )

    async def test_the_grouping_extension_in_the_extensions_capability(self) -> None:
        # SEP-2133: FastMCP's 2026-07-28 client reads capabilities.extensions.
        server, _ = make_server()
        async with Client(server) as client:
            capabilities = client.server_capabilities
            assert capabilities is not None
            extensions = capabilities.model_dump(by_alias=True)["extensions"]
            assert extensions["io.modelcontextprotocol/grouping"] == {}


class TestGroupsList:
    async def test_lists_declared_groups_with_parents(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            raw = await call_method(client, "groups/list")
            groups = await list_groups(client)
        assert raw["groups"] == snapshot(
            [
                {"name": "code", "title": "Code", "description": "Code management"},
                {
                    "name": "repos",
                    "description": "Repositories",
                    "_meta": {"io.modelcontextprotocol/groups": ["code"]},
                },
                {
                    "name": "issues",
                    "title": "Issue Tracking",
                    "description": "Create and triage issues",
                },
                {"name": "admin", "description": "Destructive administration"},
            ]
        )
        assert [g.parents for g in groups] == [[], ["code"], [], []]


class TestGroupsListPages:
    async def test_pages_like_the_other_lists(self, connect: Connect) -> None:
        server, _ = make_server(page_size=3)
        async with connect(server) as client:
            first = await call_method(client, "groups/list")
            assert [g["name"] for g in first["groups"]] == ["code", "repos", "issues"]
            second = await call_method(client, "groups/list", {"cursor": first["nextCursor"]})
            assert [g["name"] for g in second["groups"]] == ["admin"]
            assert "nextCursor" not in second

    async def test_without_a_page_size_one_page(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            listed = await call_method(client, "groups/list")
        assert len(listed["groups"]) == 4
        assert "nextCursor" not in listed

    async def test_a_cursor_from_elsewhere_is_invalid_params(self, connect: Connect) -> None:
        server, middleware = make_server(page_size=3)
        async with connect(server) as client:
            tools_page = await call_method(client, "tools/list")
            first = await call_method(client, "groups/list")
            for cursor in ["nope", 7, tools_page.get("nextCursor") or "eyJvIjogMn0="]:
                with pytest.raises(MCPError) as refused:
                    await call_method(client, "groups/list", {"cursor": cursor})
                assert refused.value.error.code == -32602
                assert refused.value.error.data["field"] == "cursor"
            # The groups changed since the cursor was issued: start again.
            await middleware.catalog.add_group(Group("ops"))
            with pytest.raises(MCPError, match="list them from the start"):
                await call_method(client, "groups/list", {"cursor": first["nextCursor"]})


class TestTagsList:
    async def test_declared_tags_then_tags_found_on_components(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            tags = await list_tags(client)
        assert [t.model_dump(exclude_none=True) for t in tags] == snapshot(
            [
                {"name": "stable", "description": "Production-ready"},
                {"name": "beta"},
                {"name": "destructive"},
                {"name": "read-only"},
            ]
        )


class TestToolsFilter:
    async def test_no_filter_lists_everything_with_group_meta(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            tools = await client.list_tools()
        assert {t.name: groups_of(t) for t in tools} == snapshot(
            {
                "create_issue": ["issues"],
                "list_issues": ["issues"],
                "create_repo": ["repos"],
                "fork_repo": ["repos"],
                "delete_repo": ["admin"],
                "transfer_repo": ["admin"],
                "ping": [],
            }
        )

    async def test_groups_match_any_and_include_descendants(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            code = await list_tools(client, groups=["code"])
            issues_or_admin = await list_tools(client, groups=["issues", "admin"])
        assert names(code.tools) == snapshot(["create_repo", "fork_repo"])
        assert names(issues_or_admin.tools) == snapshot(
            ["create_issue", "delete_repo", "list_issues", "transfer_repo"]
        )

    async def test_tags_match_all(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            stable = await list_tools(client, tags=["stable"])
            both = await list_tools(client, tags=["stable", "destructive"])
            grouped = await list_tools(client, groups=["issues"], tags=["read-only"])
        assert names(stable.tools) == snapshot(
            ["create_issue", "create_repo", "delete_repo", "list_issues"]
        )
        assert names(both.tools) == ["delete_repo"]
        assert names(grouped.tools) == ["list_issues"]

    async def test_empty_groups_list_matches_nothing(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            result = await list_tools(client, groups=[])
        assert result.tools == []

    async def test_filtered_tools_carry_group_meta(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            result = await list_tools(client, groups=["admin"])
        assert [t.meta for t in result.tools] == snapshot(
            [
                {
                    "fastmcp": {"tags": ["destructive", "stable"]},
                    "io.modelcontextprotocol/groups": ["admin"],
                },
                {
                    "fastmcp": {"tags": ["destructive"]},
                    "io.modelcontextprotocol/groups": ["admin"],
                },
            ]
        )

    async def test_filter_is_a_view_not_access_control(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            listed = await list_tools(client, groups=["issues"])
            assert "create_repo" not in names(listed.tools)
            result = await client.call_tool("create_repo", {"name": "x"})
        assert result.data == "x"


class TestOtherLists:
    async def test_prompts_resources_templates_filtered_and_marked(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            prompts = await call_method(client, "prompts/list", {"filter": {"groups": ["issues"]}})
            resources = await call_method(
                client, "resources/list", {"filter": {"groups": ["code"]}}
            )
            templates = await call_method(
                client, "resources/templates/list", {"filter": {"groups": ["repos"]}}
            )
            all_prompts = await client.list_prompts()
        assert [(p["name"], p["_meta"][GROUPS_KEY]) for p in prompts["prompts"]] == [
            ("triage", ["issues"])
        ]
        assert [(r["uri"], r["_meta"][GROUPS_KEY]) for r in resources["resources"]] == [
            ("repo://readme", ["repos"])
        ]
        assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == [
            "repo://{name}/license"
        ]
        assert {p.name: groups_of(p) for p in all_prompts} == {"triage": ["issues"], "hello": []}


GROUPS_KEY = "io.modelcontextprotocol/groups"


class TestPagination:
    async def test_pages_through_a_filtered_list(self, connect: Connect) -> None:
        server, _ = make_server(page_size=2)
        async with connect(server) as client:
            seen: list[str] = []
            cursor = None
            while True:
                page = await list_tools(client, tags=["stable"], cursor=cursor)
                seen += [t.name for t in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    break
        assert sorted(seen) == ["create_issue", "create_repo", "delete_repo", "list_issues"]

    async def test_cursor_from_another_filter_is_invalid_params(self, connect: Connect) -> None:
        server, _ = make_server(page_size=1)
        async with connect(server) as client:
            page = await list_tools(client, tags=["stable"])
            assert page.next_cursor is not None
            with pytest.raises(MCPError) as other_filter:
                await list_tools(client, tags=["destructive"], cursor=page.next_cursor)
            with pytest.raises(MCPError) as no_filter:
                await list_tools(client, cursor=page.next_cursor)
            unfiltered = await client.session.list_tools()
            assert unfiltered.next_cursor is not None
            with pytest.raises(MCPError) as bare:
                await list_tools(client, tags=["stable"], cursor=unfiltered.next_cursor)
        for error in (other_filter, no_filter, bare):
            assert error.value.code == -32602
            assert error.value.data == {"field": "cursor"}

    async def test_same_filter_in_another_order_keeps_the_cursor(self, connect: Connect) -> None:
        server, _ = make_server(page_size=1)
        async with connect(server) as client:
            page = await list_tools(client, groups=["issues", "admin"])
            assert page.next_cursor is not None
            again = await list_tools(client, groups=["issues", "admin"], cursor=page.next_cursor)
        assert len(again.tools) == 1


class TestBadInput:
    @pytest.mark.parametrize(
        ("params", "field"),
        [
            ({"filter": 3}, "filter"),
            ({"filter": "issues"}, "filter"),
            ({"filter": ["issues"]}, "filter"),
            ({"filter": {"groups": "issues"}}, "filter.groups"),
            ({"filter": {"groups": [1]}}, "filter.groups"),
            ({"filter": {"groups": [None]}}, "filter.groups"),
            ({"filter": {"tags": {"a": 1}}}, "filter.tags"),
            ({"filter": {"tags": ["nope"]}}, "filter.tags"),
            ({"filter": {"groups": ["issues"] * 101}}, "filter.groups"),
            ({"filter": {"tags": ["x" * 257]}}, "filter.tags"),
            ({"filter": {"groups": ["x" * 1_000_000]}}, "filter.groups"),
            ({"filter": {"concerns": ["x"]}}, "filter"),
        ],
    )
    async def test_invalid_params_names_the_field(
        self, connect: Connect, params: dict[str, Any], field: str
    ) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            with pytest.raises(MCPError) as error:
                await call_method(client, "tools/list", params)
            assert error.value.code == -32602
            assert error.value.data["field"] == field
            # The server is still answering correctly afterwards.
            assert len(await client.list_tools()) == 7

    async def test_an_unknown_tag_error_lists_the_valid_ones(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            with pytest.raises(MCPError) as tags_error:
                await list_tools(client, tags=["stabel"])
        assert tags_error.value.data == snapshot(
            {
                "field": "filter.tags",
                "unknown": ["stabel"],
                "valid": ["beta", "destructive", "read-only", "stable"],
            }
        )

    async def test_unknown_group_names_match_nothing_and_are_warned_of(
        self, connect: Connect
    ) -> None:
        """SEP-1300: ANY of the named groups. The known ones answer; the result's ``_meta``
        says which names are not groups; with none known, the list is empty."""
        server, _ = make_server()
        async with connect(server) as client:

            async def listed(*names: str) -> dict[str, Any]:
                return await call_method(client, "tools/list", {"filter": {"groups": list(names)}})

            both, known, none = (
                await listed("issues", "isues"),
                await listed("issues"),
                await listed("isues"),
            )
        assert both["tools"] == known["tools"] != []
        assert both["_meta"][WARNINGS_META_KEY] == [
            "filter.groups: 'isues' is not a group, so it matches nothing "
            "(groups/list gives the names)"
        ]
        assert WARNINGS_META_KEY not in (known.get("_meta") or {})
        assert none["tools"] == []
        assert none["_meta"][WARNINGS_META_KEY] == both["_meta"][WARNINGS_META_KEY]

    async def test_null_filter_is_no_filter(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            result = await call_method(client, "tools/list", {"filter": None})
        assert len(result["tools"]) == 7


class TestRuntimeChanges:
    async def test_add_group_is_listed_and_announced(self) -> None:
        server, middleware = make_server()
        received: list[str] = []

        async def groups_changed() -> None:
            received.append("groups")

        async def handler(message: Any) -> None:
            received.append(type(message).__name__)

        from fastmcp import Client

        async with Client(
            server,
            mode="legacy",
            message_handler=handler,
            extensions=[FilteringNotifications(on_groups_changed=groups_changed)],
        ) as client:
            await client.list_tools()
            await middleware.add_group(Group("pings", tools=["ping"]))
            for _ in range(50):
                if "groups" in received and "ToolListChangedNotification" in received:
                    break
                await asyncio.sleep(0.01)
            assert "groups" in received
            assert "ToolListChangedNotification" in received
            assert "pings" in [g.name for g in await list_groups(client)]
            result = await list_tools(client, groups=["pings"])
            assert names(result.tools) == ["ping"]
            await middleware.remove_group("pings")
            assert (await list_tools(client, groups=["pings"])).tools == []

    async def test_runtime_add_tool_announces_new_tag(self) -> None:
        server, _ = make_server()
        received: list[str] = []

        async def tags_changed() -> None:
            received.append("tags")

        from fastmcp import Client

        async with Client(
            server, mode="legacy", extensions=[FilteringNotifications(on_tags_changed=tags_changed)]
        ) as client:
            await client.list_tools()
            server.tool(lambda: "x", name="fresh", tags={"brand-new"})
            await client.list_tools()
            for _ in range(50):
                if received:
                    break
                await asyncio.sleep(0.01)
            assert received == ["tags"]
            assert "brand-new" in [t.name for t in await list_tags(client)]

    async def test_tool_added_while_serving_is_announced_to_other_clients(self) -> None:
        server, _ = make_server()
        seen_by_b: list[str] = []

        async def b_handler(message: Any) -> None:
            seen_by_b.append(type(message).__name__)

        from fastmcp import Client

        async with (
            Client(server, mode="legacy") as a,
            Client(server, mode="legacy", message_handler=b_handler) as b,
        ):
            await a.list_tools()
            await b.list_tools()
            in_group("issues")(server.tool(lambda: "x", name="close_issue"))
            listed = await list_tools(a, groups=["issues"])
            assert "close_issue" in names(listed.tools)
            for _ in range(50):
                if "ToolListChangedNotification" in seen_by_b:
                    break
                await asyncio.sleep(0.01)
        assert "ToolListChangedNotification" in seen_by_b

    async def test_add_tag_is_announced(self) -> None:
        server, middleware = make_server()
        received: list[str] = []

        async def tags_changed() -> None:
            received.append("tags")

        from fastmcp import Client

        async with Client(
            server, mode="legacy", extensions=[FilteringNotifications(on_tags_changed=tags_changed)]
        ) as client:
            await client.list_tools()
            await middleware.catalog.add_tag(Tag("deprecated", "Going away"))
            for _ in range(50):
                if received:
                    break
                await asyncio.sleep(0.01)
            tags = await list_tags(client)
        assert received == ["tags"]
        assert tags[1].model_dump(exclude_none=True) == {
            "name": "deprecated",
            "description": "Going away",
        }


class TestCursor:
    async def test_the_same_filter_in_another_order_keeps_its_cursor(
        self, connect: Connect
    ) -> None:
        mcp = FastMCP("order", list_page_size=1)
        for name, group in (("create_issue", "issues"), ("delete_repo", "admin")):
            in_group(group)(mcp.tool(lambda: "x", name=name))
        add_filtering(mcp, groups=[Group("issues"), Group("admin")], search=False)
        async with connect(mcp) as client:
            first = await list_tools(client, groups=["issues", "admin"])
            assert first.next_cursor is not None
            second = await list_tools(client, groups=["admin", "issues"], cursor=first.next_cursor)
        assert len(second.tools) == 1

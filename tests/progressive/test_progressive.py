"""Progressive disclosure in memory, both eras: meta-tools, hierarchy, max_tools, hints, state."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, SupportsFloat

import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.utilities.components import FastMCPComponent
from inline_snapshot import snapshot
from key_value.aio.stores.memory import MemoryStore
from mcp.shared.exceptions import MCPError

from fastmcp_filtering import Catalog, Group, in_group, install, unrestricted
from fastmcp_filtering.progressive.middleware import ProgressiveDisclosureMiddleware

from .._faults_stores import FaultyStore, outage_log
from .._support.layers import HideLayer
from .._support.progressive import GROUPS, call, make_server, names
from .._support.recorder import Recorder
from ..conftest import Connect


class TestConstruction:
    def test_unknown_initial_group(self) -> None:
        with pytest.raises(ValueError, match=r"initial_groups names unknown group 'isues'"):
            ProgressiveDisclosureMiddleware(groups=GROUPS, initial_groups=["isues"])

    def test_initial_child_needs_its_parents(self) -> None:
        with pytest.raises(ValueError, match=r"use initial_groups=\['code', 'repos', 'branches'\]"):
            ProgressiveDisclosureMiddleware(groups=GROUPS, initial_groups=["branches"])
        middleware = ProgressiveDisclosureMiddleware(
            groups=GROUPS, initial_groups=["branches", "repos", "code"]
        )
        assert middleware.options.initial_groups == ("branches", "repos", "code")

    def test_initial_string_is_refused(self) -> None:
        with pytest.raises(ValueError, match=r"pass a list: initial_groups=\['issues'\]"):
            ProgressiveDisclosureMiddleware(groups=GROUPS, initial_groups="issues")

    def test_initial_over_max_tools_by_declared_names(self) -> None:
        groups = [Group("admin", tools=["delete_repo", "delete_branch", "delete_org", "wipe_*"])]
        with pytest.raises(ValueError, match=r"hold at least 3 tools, over max_tools=2"):
            ProgressiveDisclosureMiddleware(groups=groups, initial_groups=["admin"], max_tools=2)

    async def test_check_counts_members_on_the_server(self) -> None:
        mcp, middleware = make_server(initial_groups=["issues"], max_tools=2)
        with pytest.raises(ValueError, match=r"hold 3 tools, over max_tools=2"):
            await middleware.check(mcp)
        _, roomy = make_server(initial_groups=["issues"], max_tools=3)
        await roomy.check(mcp)

    @pytest.mark.parametrize("value", [0, -1, True, 2.5, "10"])
    def test_bad_max_tools(self, value: Any) -> None:
        with pytest.raises(ValueError, match=r"max_tools must be a positive int"):
            ProgressiveDisclosureMiddleware(groups=GROUPS, max_tools=value)

    def test_bad_meta_tool_names(self) -> None:
        with pytest.raises(ValueError, match=r"enable_tool_name='enable tools' is not a valid"):
            ProgressiveDisclosureMiddleware(groups=GROUPS, enable_tool_name="enable tools")
        with pytest.raises(ValueError, match=r"meta-tool names must differ"):
            ProgressiveDisclosureMiddleware(groups=GROUPS, call_tool_name="enable_tools")

    def test_groups_or_catalog(self) -> None:
        catalog = Catalog(groups=GROUPS)
        assert ProgressiveDisclosureMiddleware(catalog=catalog).catalog is catalog
        with pytest.raises(ValueError, match=r"pass either catalog= or groups="):
            ProgressiveDisclosureMiddleware(catalog=catalog, groups=GROUPS)
        with pytest.raises(ValueError, match=r"catalog must be a Catalog"):
            ProgressiveDisclosureMiddleware(catalog=GROUPS)  # type: ignore[arg-type]

    def test_repr(self) -> None:
        middleware = ProgressiveDisclosureMiddleware(
            groups=GROUPS[:2], initial_groups=["issues"], max_tools=5, call_tool_name="call_tool"
        )
        assert repr(middleware) == snapshot(
            "ProgressiveDisclosureMiddleware(catalog=Catalog(groups=['issues', 'code'], tags=[]), "
            "initial_groups=['issues'], max_tools=5, hide_ungrouped=False, call_unlisted=False, "
            "offer_enable=True, side_effect_lists=False, "
            "meta_tools=['call_tool', 'disable_tools', 'enable_tools'])"
        )


@pytest.mark.side_effect_lists
class TestListing:
    async def test_initial_view(self, connect: Connect) -> None:
        mcp, _ = make_server()
        async with connect(mcp) as client:
            assert await names(client) == [
                "create_issue",
                "disable_tools",
                "enable_tools",
                "link_issue",
                "list_issues",
                "ping",
            ]
            assert sorted(p.name for p in await client.list_prompts()) == ["hello", "triage"]
            assert await client.list_resources() == []
            assert await client.list_resource_templates() == []

    async def test_meta_tool_definitions(self, connect: Connect) -> None:
        mcp, _ = make_server(max_tools=6)
        async with connect(mcp) as client:
            tools = {t.name: t for t in await client.list_tools()}
            assert tools["enable_tools"].description.splitlines() == snapshot(
                [
                    'Make a group\'s tools available: enable_tools(groups=["<group>"]). The '
                    "reply lists them, and in available_groups the groups to enable next.",
                    "At most 6 grouped tools at once: disable_tools makes room.",
                    "(+): holds more groups, offered once it is enabled (or name parent and "
                    "child together).",
                    "Groups:",
                    "- issues: Create and triage issues",
                    "- code (+): Code management",
                    "- admin: Destructive administration",
                ]
            )
            assert tools["disable_tools"].description == snapshot(
                "Give back groups you no longer need (and the groups below them) to keep your "
                'tool list short: disable_tools(groups=["<group>"]).'
            )
            assert tools["enable_tools"].input_schema == snapshot(
                {
                    "type": "object",
                    "properties": {
                        "groups": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": 'Group names, e.g. ["issues"].',
                        }
                    },
                    "required": ["groups"],
                }
            )
            assert tools["enable_tools"].output_schema is not None
            assert sorted(tools["enable_tools"].output_schema["properties"]) == [
                "available_groups",
                "available_tools",
                "enabled",
                "enabled_groups",
                "errors",
            ]

    async def test_reply_schemas_carry_no_python_docstrings(self, connect: Connect) -> None:
        # Every listed schema costs the agent context; the model docstrings are for Python readers.
        mcp, _ = make_server()
        async with connect(mcp) as client:
            tools = {t.name: t for t in await client.list_tools()}
            for name in ("enable_tools", "disable_tools"):
                schema = tools[name].output_schema
                assert schema is not None
                assert "description" not in schema
                assert "``" not in str(schema)

    async def test_definitions_are_byte_identical_until_groups_change(
        self, connect: Connect
    ) -> None:
        mcp, middleware = make_server()
        async with connect(mcp) as client:
            first = [t.model_dump_json() for t in await client.list_tools() if "able" in t.name]
            await call(client, "enable_tools", groups=["code"])
            second = [t.model_dump_json() for t in await client.list_tools() if "able" in t.name]
            assert first == second
            with unrestricted():
                assert await mcp.get_tool("enable_tools") is middleware.get_injected_tool(
                    "enable_tools"
                )
            await middleware.catalog.add_group(Group("wiki", description="Project wiki"))
            third = [t.model_dump_json() for t in await client.list_tools() if "able" in t.name]
            assert third[0] != first[0]
            assert "- wiki: Project wiki" in third[0]
            assert third[1] == first[1]

    async def test_configurable_names(self, connect: Connect) -> None:
        mcp, _ = make_server(
            enable_tool_name="open_groups",
            disable_tool_name="close_groups",
            call_tool_name="run_tool",
        )
        async with connect(mcp) as client:
            listed = await names(client)
            assert {"open_groups", "close_groups", "run_tool"} <= set(listed)
            assert "enable_tools" not in listed
            with pytest.raises(
                ToolError, match=r"Call open_groups\(groups=\[\"code\", \"repos\"\]"
            ):
                await client.call_tool("create_repo", {"name": "x"})

    async def test_hide_ungrouped(self, connect: Connect) -> None:
        mcp, _ = make_server(hide_ungrouped=True)
        async with connect(mcp) as client:
            assert "ping" not in await names(client)
            assert [p.name for p in await client.list_prompts()] == ["triage"]
            # Concealed: nothing the client could do shows it, so it does not exist for it.
            with pytest.raises(ToolError, match=r"^Unknown tool: 'ping'$"):
                await client.call_tool("ping", {})

    async def test_undeclared_group_is_hidden(self, connect: Connect) -> None:
        mcp, _ = make_server()
        async with connect(mcp) as client:
            assert "typo" not in await names(client)
            with pytest.raises(ToolError, match=r"^Unknown tool: 'typo'$"):
                await client.call_tool("typo", {})


@pytest.mark.side_effect_lists
class TestEnable:
    async def test_enable_reply_and_listing(self, connect: Connect) -> None:
        mcp, _ = make_server()
        async with connect(mcp) as client:
            assert await call(client, "enable_tools", groups=["code"]) == snapshot(
                {
                    "enabled": ["code"],
                    "enabled_groups": ["issues", "code"],
                    "available_tools": ["create_issue", "link_issue", "list_issues"],
                    "available_groups": ["repos"],
                    "errors": [],
                }
            )
            assert await call(client, "enable_tools", groups=["repos"]) == snapshot(
                {
                    "enabled": ["repos"],
                    "enabled_groups": ["issues", "code", "repos"],
                    "available_tools": [
                        "create_issue",
                        "create_repo",
                        "fork_repo",
                        "link_issue",
                        "list_issues",
                    ],
                    "available_groups": ["branches"],
                    "errors": [],
                }
            )
            assert {"create_repo", "fork_repo"} <= set(await names(client))
            assert "create_branch" not in await names(client)
            assert (await client.call_tool("create_repo", {"name": "x"})).data == "repo x"
            assert [str(r.uri) for r in await client.list_resources()] == ["repo://readme"]
            assert len(await client.list_resource_templates()) == 1

    async def test_parent_and_child_in_one_call_any_order(self, connect: Connect) -> None:
        mcp, _ = make_server(initial_groups=[])
        async with connect(mcp) as client:
            reply = await call(client, "enable_tools", groups=["branches", "code", "repos"])
            assert reply["enabled"] == ["code", "repos", "branches"]
            assert reply["errors"] == []
            assert "create_branch" in await names(client)

    async def test_child_before_parent_is_an_error(self, connect: Connect) -> None:
        mcp, _ = make_server()
        async with connect(mcp) as client:
            reply = await call(client, "enable_tools", groups=["branches"])
            assert reply["enabled"] == []
            assert reply["errors"] == snapshot(
                [
                    (
                        "group 'branches' needs its parent 'repos' enabled first: call "
                        'enable_tools(groups=["code", "repos", "branches"])'
                    )
                ]
            )
            # The roots are in the enable_tools description; no child opened up.
            assert reply["available_groups"] == []

    async def test_available_groups_all_adds_the_roots_not_enabled(self, connect: Connect) -> None:
        mcp, _ = make_server(available_groups="all")
        async with connect(mcp) as client:
            first = await call(client, "enable_tools", groups=["branches"])
            second = await call(client, "enable_tools", groups=["code"])
            third = await call(client, "disable_tools", groups=["code"])
        assert first["available_groups"] == ["code", "admin"]
        assert second["available_groups"] == ["repos", "admin"]
        assert third["available_groups"] == ["code", "admin"]

    def test_available_groups_is_validated(self) -> None:
        with pytest.raises(ValueError, match=r"available_groups='roots' is not an option"):
            ProgressiveDisclosureMiddleware(available_groups="roots")  # type: ignore[arg-type]

    async def test_errors_never_crash(self, connect: Connect) -> None:
        mcp, _ = make_server()
        async with connect(mcp) as client:
            reply = await call(
                client, "enable_tools", groups=["issues", "nope", 3, "admin", "admin"]
            )
            assert reply["enabled"] == ["admin"]
            assert reply["errors"] == snapshot(
                [
                    "group names are strings, got 3",
                    "group 'admin' is named more than once; handled once",
                    'unknown group \'nope\'; groups you can enable now: ["code", "admin"]',
                    "group 'issues' is already enabled",
                ]
            )
            assert (await call(client, "enable_tools", groups="code"))["errors"] == snapshot(
                [
                    (
                        "groups must be a list of group names, got str: call "
                        'enable_tools(groups=["code"])'
                    )
                ]
            )
            assert (await call(client, "enable_tools"))["errors"] == snapshot(
                [
                    (
                        "groups must be a list of group names, got NoneType: call "
                        'enable_tools(groups=["<group>"])'
                    )
                ]
            )
            reply = await call(client, "disable_tools", groups=["code", "nope", "issues", "issues"])
            assert reply == snapshot(
                {
                    "disabled": ["issues"],
                    "enabled_groups": ["admin"],
                    "available_tools": ["delete_branch", "delete_repo"],
                    "available_groups": [],
                    "errors": [
                        "group 'issues' is named more than once; handled once",
                        "group 'code' is not enabled",
                        'unknown group \'nope\'; enabled groups: ["issues", "admin"]',
                    ],
                }
            )
            assert (await call(client, "disable_tools", groups={"a": 1}))["errors"] == [
                (
                    "groups must be a list of group names, got dict: call "
                    'disable_tools(groups=["<group>"])'
                )
            ]

    async def test_disable_cascades(self, connect: Connect) -> None:
        mcp, _ = make_server()
        async with connect(mcp) as client:
            await call(client, "enable_tools", groups=["code", "repos", "branches"])
            reply = await call(client, "disable_tools", groups=["code", "branches"])
            assert reply == snapshot(
                {
                    "disabled": ["code", "repos", "branches"],
                    "enabled_groups": ["issues"],
                    "available_tools": ["create_issue", "link_issue", "list_issues"],
                    "available_groups": [],
                    "errors": [],
                }
            )
            assert not {"create_repo", "create_branch"} & set(await names(client))
            reply = await call(client, "enable_tools", groups=["repos"])
            assert reply["errors"] == [
                (
                    "group 'repos' needs its parent 'code' enabled first: call "
                    'enable_tools(groups=["code", "repos"])'
                )
            ]

    async def test_include_schemas(self, connect: Connect) -> None:
        mcp, _ = make_server(include_schemas=True)
        async with connect(mcp) as client:
            reply = await call(client, "enable_tools", groups=["admin"])
            assert reply["available_tools"] == [
                "create_issue",
                "delete_branch",
                "delete_repo",
                "link_issue",
                "list_issues",
            ]
            assert [t["name"] for t in reply["tools"]] == ["delete_branch", "delete_repo"]
            assert reply["tools"][1]["inputSchema"]["required"] == ["name"]
            tools = {t.name: t for t in await client.list_tools()}
            assert tools["enable_tools"].output_schema is not None
            assert "tools" in tools["enable_tools"].output_schema["properties"]


@pytest.mark.side_effect_lists
class TestMaxTools:
    async def test_refused_whole_with_what_to_disable(self, connect: Connect) -> None:
        mcp, _ = make_server(max_tools=5)
        async with connect(mcp) as client:
            reply = await call(client, "enable_tools", groups=["code", "repos", "admin"])
            assert reply["enabled"] == ["code", "repos"]
            assert reply["errors"] == snapshot(
                [
                    (
                        "cannot enable 'admin': it adds 2 tools and 5 of max_tools=5 are "
                        "in use; disable groups that free at least 2 first: "
                        'disable_tools(groups=["code"]) frees 2, '
                        'disable_tools(groups=["issues"]) frees 2, '
                        'disable_tools(groups=["repos"]) frees 2'
                    )
                ]
            )
            listed = await names(client)
            assert "delete_repo" not in listed
            grouped = [n for n in listed if n not in {"enable_tools", "disable_tools", "ping"}]
            assert len(grouped) == 5
            await call(client, "disable_tools", groups=["issues"])
            assert (await call(client, "enable_tools", groups=["admin"]))["enabled"] == ["admin"]

    async def test_group_larger_than_the_cap(self, connect: Connect) -> None:
        mcp, _ = make_server(initial_groups=[], max_tools=1)
        async with connect(mcp) as client:
            reply = await call(client, "enable_tools", groups=["admin"])
            assert reply["errors"] == [
                "cannot enable 'admin': it adds 2 tools and 0 of max_tools=1 are in use; "
                "this group alone is larger than max_tools"
            ]
            assert reply["enabled_groups"] == []

    async def test_meta_tools_and_ungrouped_do_not_count(self, connect: Connect) -> None:
        mcp, _ = make_server(max_tools=3, call_tool_name="call_tool")
        async with connect(mcp) as client:
            # issues shows 3 grouped tools; ping and the three meta-tools are not counted.
            assert len(await names(client)) == 7
            reply = await call(client, "enable_tools", groups=["code"])
            assert reply["enabled"] == ["code"]


@pytest.mark.side_effect_lists
class TestHints:
    async def test_call_before_any_listing_names_the_path(self, connect: Connect) -> None:
        mcp, _ = make_server()
        async with connect(mcp) as client:
            with pytest.raises(ToolError) as refused:
                await client.call_tool("create_branch", {"name": "main"})
            assert str(refused.value) == snapshot(
                "Tool 'create_branch' is in group 'branches', which is not enabled. "
                'Call enable_tools(groups=["code", "repos", "branches"]) first. Enabled '
                'now: ["issues"].'
            )
            with pytest.raises(ToolError, match=r'enable_tools\(groups=\["admin"\]\)'):
                await client.call_tool("delete_repo", {"name": "x"})

    async def test_tool_in_several_groups(self, connect: Connect) -> None:
        mcp, _ = make_server(initial_groups=[])
        async with connect(mcp) as client:
            with pytest.raises(ToolError) as refused:
                await client.call_tool("link_issue", {"number": 1})
            assert str(refused.value) == snapshot(
                "Tool 'link_issue' is in groups 'issues', 'repos', none of which is "
                'enabled. Call enable_tools(groups=["issues"]) or '
                'enable_tools(groups=["code", "repos"]) first. Enabled now: [].'
            )

    async def test_prompts_and_resources_follow(self, connect: Connect) -> None:
        mcp, _ = make_server(initial_groups=[])
        async with connect(mcp) as client:
            with pytest.raises(MCPError, match=r"Prompt 'triage' is in group 'issues'"):
                await client.get_prompt("triage", {"issue": 1})
            with pytest.raises(MCPError, match=r"Resource 'readme' is in group 'repos'"):
                await client.read_resource("repo://readme")
            with pytest.raises(MCPError, match=r"Resource template 'license_of'"):
                await client.read_resource("repo://x/license")
            await call(client, "enable_tools", groups=["issues", "code", "repos"])
            assert (await client.get_prompt("triage", {"issue": 1})).messages
            assert (await client.read_resource("repo://x/license"))[0].text == "MIT x"  # type: ignore[union-attr]

    async def test_a_servers_own_proxy_is_refused_too(self, connect: Connect) -> None:
        mcp, _ = make_server()

        @mcp.tool
        async def run(name: str, ctx: Context) -> str:
            result = await ctx.fastmcp.call_tool(name, {"name": "x"})
            return str((result.structured_content or {}).get("result"))

        async with connect(mcp) as client:
            with pytest.raises(ToolError, match=r'Call enable_tools\(groups=\["admin"\]\) first'):
                await client.call_tool("run", {"name": "delete_repo"})
            await call(client, "enable_tools", groups=["admin"])
            assert (await client.call_tool("run", {"name": "delete_repo"})).data == "deleted x"

    async def test_call_tool_proxy(self, connect: Connect) -> None:
        mcp, _ = make_server(call_tool_name="call_tool")
        async with connect(mcp) as client:
            with pytest.raises(ToolError, match=r'Call enable_tools\(groups=\["admin"\]\) first'):
                await client.call_tool(
                    "call_tool", {"name": "delete_repo", "arguments": {"name": "x"}}
                )
            with pytest.raises(ToolError, match=r"unknown tool 'nope'"):
                await client.call_tool("call_tool", {"name": "nope"})
            with pytest.raises(ToolError, match=r"cannot call itself"):
                await client.call_tool("call_tool", {"name": "call_tool"})
            await call(client, "enable_tools", groups=["admin"])
            result = await client.call_tool(
                "call_tool", {"name": "delete_repo", "arguments": {"name": "x"}}
            )
            assert result.data == "deleted x"

    async def test_call_tool_arguments_are_a_plain_object(self, connect: Connect) -> None:
        mcp, _ = make_server(call_tool_name="call_tool", initial_groups=["issues", "code", "repos"])
        async with connect(mcp) as client:
            proxy = next(t for t in await client.list_tools() if t.name == "call_tool")
            as_text = await client.call_tool(
                "call_tool", {"name": "create_repo", "arguments": '{"name": "x"}'}
            )
            without = await client.call_tool("call_tool", {"name": "list_issues"})
            with pytest.raises(ToolError, match="arguments must be an object"):
                await client.call_tool("call_tool", {"name": "create_repo", "arguments": [1]})
            with pytest.raises(ToolError, match="arguments must be an object"):
                await client.call_tool(
                    "call_tool", {"name": "create_repo", "arguments": "[" * 100_000}
                )
        # Not anyOf[object, null], which some clients send as a string.
        assert proxy.input_schema["properties"]["arguments"] == snapshot(
            {
                "type": "object",
                "description": "The tool's arguments.",
                "default": {},
                "additionalProperties": True,
            }
        )
        assert proxy.input_schema["required"] == ["name"]
        assert as_text.data == "repo x"
        assert without.data == "[]"


@pytest.mark.side_effect_lists
class TestNotifications:
    async def test_sent_to_the_caller_when_lists_change(self, connect: Connect) -> None:
        mcp, _ = make_server(initial_groups=[])
        recorder = Recorder()
        async with connect(mcp, message_handler=recorder) as client:
            await call(client, "enable_tools", groups=["code"])
            # code shows no component of its own, but the enabled groups changed (wags).
            assert recorder.methods == ["notifications/tools/list_changed"]
            recorder.methods.clear()
            await call(client, "enable_tools", groups=["issues"])
            assert recorder.methods == [
                "notifications/tools/list_changed",
                "notifications/prompts/list_changed",
            ]
            recorder.methods.clear()
            await call(client, "enable_tools", groups=["repos"])
            assert recorder.methods == [
                "notifications/tools/list_changed",
                "notifications/resources/list_changed",
            ]
            recorder.methods.clear()
            await call(client, "enable_tools", groups=["repos", "nope"])
            await call(client, "disable_tools", groups=["admin"])
            assert recorder.methods == []
            await call(client, "disable_tools", groups=["code"])
            assert recorder.methods == [
                "notifications/tools/list_changed",
                "notifications/resources/list_changed",
            ]

    async def test_not_sent_to_other_sessions(self) -> None:
        mcp, _ = make_server()
        first, second = Recorder(), Recorder()
        async with (
            Client(mcp, mode="legacy", message_handler=first) as a,
            Client(mcp, mode="legacy", message_handler=second) as b,
        ):
            await call(a, "enable_tools", groups=["admin"])
            await b.list_tools()
            assert first.methods == ["notifications/tools/list_changed"]
            assert second.methods == []


@pytest.mark.side_effect_lists
class TestState:
    async def test_two_sessions_never_share(self) -> None:
        """2025-11-25: state per session, even with requests interleaved."""
        mcp, _ = make_server()
        async with Client(mcp, mode="legacy") as a, Client(mcp, mode="legacy") as b:
            await asyncio.gather(
                call(a, "enable_tools", groups=["admin"]),
                call(b, "enable_tools", groups=["code", "repos"]),
            )
            assert "delete_repo" in await names(a)
            assert "create_repo" not in await names(a)
            assert "create_repo" in await names(b)
            assert "delete_repo" not in await names(b)
            with pytest.raises(
                ToolError, match=r"Enabled now: \[\"issues\", \"code\", \"repos\"\]"
            ):
                await b.call_tool("delete_repo", {"name": "x"})

    async def test_concurrent_changes_of_one_client_are_not_lost(self, connect: Connect) -> None:
        mcp, _ = make_server(initial_groups=[])
        async with connect(mcp) as client:
            await asyncio.gather(
                call(client, "enable_tools", groups=["admin"]),
                call(client, "enable_tools", groups=["issues"]),
                call(client, "enable_tools", groups=["code"]),
            )
            reply = await call(client, "enable_tools", groups=[])
            assert reply["enabled_groups"] == ["issues", "code", "admin"]

    async def test_stateless_in_memory_is_per_process(self) -> None:
        """2026-07-28 without auth on stdio/in-memory: one client per process, one state."""
        mcp, _ = make_server()
        async with Client(mcp) as a:
            await call(a, "enable_tools", groups=["admin"])
        async with Client(mcp) as b:
            assert "delete_repo" in await names(b)
        async with Client(mcp, mode="legacy") as legacy:
            assert "delete_repo" not in await names(legacy)

    async def test_state_lives_in_the_session_state_store(self, connect: Connect) -> None:
        store = MemoryStore()
        mcp, _ = make_server(store=store)
        async with connect(mcp) as client:
            await call(client, "enable_tools", groups=["admin"])
        keys = await store.keys(collection="fastmcp_state")
        assert len(keys) == 1
        assert keys[0].startswith("fastmcp-filtering:progressive:")
        stored = await store.get(keys[0], collection="fastmcp_state")
        assert stored == {"value": {"enabled": ["issues", "admin"]}}

    async def test_state_outlives_a_removed_group(self, connect: Connect) -> None:
        mcp, middleware = make_server()
        async with connect(mcp) as client:
            await call(client, "enable_tools", groups=["code", "repos", "admin"])
            await middleware.catalog.remove_group("admin")
            reply = await call(client, "disable_tools", groups=["repos"])
            assert reply["enabled_groups"] == ["issues", "code"]


class BrokenStore(MemoryStore):
    """A store that fails for this package's keys: reads and writes, or writes only.

    FastMCP reads the same store for its own per-session visibility rules, so only
    our keys fail; a store that is down for everyone fails FastMCP before us.
    """

    def __init__(self, *, reads: bool = True) -> None:
        super().__init__()
        self.reads = reads

    async def get(self, key: str, *, collection: str | None = None) -> dict[str, Any] | None:
        if self.reads and key.startswith("fastmcp-filtering:"):
            raise ConnectionError("store is down")
        return await super().get(key, collection=collection)

    async def put(
        self,
        key: str,
        value: Mapping[str, Any],
        *,
        collection: str | None = None,
        ttl: SupportsFloat | None = None,
    ) -> None:
        if key.startswith("fastmcp-filtering:"):
            raise ConnectionError("store is down")
        await super().put(key, value, collection=collection, ttl=ttl)


@pytest.mark.side_effect_lists
class TestFailClosed:
    async def test_an_outage_is_logged_once_and_its_end_once(
        self, connect: Connect, caplog: pytest.LogCaptureFixture
    ) -> None:
        store = FaultyStore()
        store.set("raise")
        mcp, _ = make_server(store=store)
        caplog.set_level(logging.DEBUG, logger="fastmcp_filtering")
        async with connect(mcp) as client:
            for _ in range(3):
                assert "delete_repo" not in await names(client)
            store.set("up")
            await call(client, "enable_tools", groups=["admin"])
            assert "delete_repo" in await names(client)
            store.set("raise")
            assert "delete_repo" not in await names(client)
        down = (
            "WARNING",
            "progressive disclosure: the session state store failed: StoreDown; serving "
            "the initial groups (logged once until the store answers again)",
        )
        back = ("INFO", "progressive disclosure: the session state store answers again")
        assert outage_log(caplog, "progressive disclosure") == [down, back, down]

    async def test_failed_writes_are_logged_once_while_reads_answer(
        self, connect: Connect, caplog: pytest.LogCaptureFixture
    ) -> None:
        mcp, _ = make_server(store=BrokenStore(reads=False))
        caplog.set_level(logging.DEBUG, logger="fastmcp_filtering")
        async with connect(mcp) as client:
            for _ in range(3):
                with pytest.raises(ToolError, match=r"groups were not changed"):
                    await client.call_tool("enable_tools", {"groups": ["admin"]})
        assert outage_log(caplog, "progressive disclosure") == [
            (
                "WARNING",
                "progressive disclosure: the session state store failed: ConnectionError; "
                "groups not changed (logged once until the store answers again)",
            )
        ]

    async def test_read_failure_serves_the_initial_set(self, connect: Connect) -> None:
        mcp, _ = make_server(store=BrokenStore())
        async with connect(mcp) as client:
            assert "create_issue" in await names(client)
            with pytest.raises(ToolError) as refused:
                await client.call_tool("enable_tools", {"groups": ["admin"]})
            assert str(refused.value) == snapshot(
                "groups cannot be changed right now: the server could not read its "
                'session state store, so only the initial groups apply (["issues"]); try '
                "again later"
            )
            with pytest.raises(ToolError, match=r"cannot read its session state store"):
                await client.call_tool("delete_repo", {"name": "x"})
            assert "delete_repo" not in await names(client)

    async def test_write_failure_changes_nothing(self, connect: Connect) -> None:
        mcp, _ = make_server(store=BrokenStore(reads=False))
        async with connect(mcp) as client:
            with pytest.raises(ToolError, match=r"groups were not changed: .* could not write"):
                await client.call_tool("enable_tools", {"groups": ["admin"]})
            assert "delete_repo" not in await names(client)

    async def test_unreadable_state_is_the_initial_set(self, connect: Connect) -> None:
        store = MemoryStore()
        mcp, _ = make_server(store=store)
        async with connect(mcp) as client:
            await call(client, "enable_tools", groups=["admin"])
            key = (await store.keys(collection="fastmcp_state"))[0]
            await store.put(key, {"value": {"enabled": "admin"}}, collection="fastmcp_state")
            assert "delete_repo" not in await names(client)
            with pytest.raises(ToolError, match=r"could not read its session state store"):
                await client.call_tool("enable_tools", {"groups": ["code"]})


def _hide_delete_branch(component: FastMCPComponent) -> str | None:
    return "delete_branch needs approval" if component.name == "delete_branch" else None


class TestOtherLayers:
    async def test_other_layers_govern_replies_and_the_proxy_not_counts(
        self, connect: Connect
    ) -> None:
        mcp, _ = make_server(max_tools=5, call_tool_name="call_tool")
        install(mcp, HideLayer(_hide_delete_branch))
        async with connect(mcp) as client:
            reply = await call(client, "enable_tools", groups=["admin"])
            # delete_branch is hidden by the other layer: not listed, but max_tools counts
            # it, so no other layer's per-request view can let more tools be enabled.
            assert reply["enabled"] == ["admin"]
            assert reply["available_tools"] == [
                "create_issue",
                "delete_repo",
                "link_issue",
                "list_issues",
            ]
            assert "delete_branch" not in await names(client)
            with pytest.raises(ToolError, match=r"delete_branch needs approval"):
                await client.call_tool("call_tool", {"name": "delete_branch"})


@pytest.mark.side_effect_lists
class TestTheProposalsExample:
    """wags' documented example, replayed: the reply is the one its documentation shows."""

    async def test_enable_issues_replies_as_documented(self, connect: Connect) -> None:
        mcp = FastMCP("github")

        @in_group("issues")
        @mcp.tool
        def create_issue(title: str) -> str:
            return title

        @in_group("issues")
        @mcp.tool
        def list_issues() -> str:
            return "[]"

        @in_group("repos")
        @mcp.tool
        def create_repo(name: str) -> str:
            return name

        install(
            mcp,
            ProgressiveDisclosureMiddleware(
                groups=[
                    Group("issues", description="Issue tracking"),
                    Group("repos", description="Repository management"),
                ],
                max_tools=10,
            ),
        )
        async with connect(mcp) as client:
            reply = await call(client, "enable_tools", groups=["issues"])
        assert reply == {
            "enabled": ["issues"],
            "enabled_groups": ["issues"],
            "available_tools": ["create_issue", "list_issues"],
            "available_groups": [],
            "errors": [],
        }

    async def test_the_hierarchy_offers_each_child_as_its_parent_is_enabled(
        self, connect: Connect
    ) -> None:
        mcp = FastMCP("github")

        @in_group("branches")
        @mcp.tool
        def create_branch(name: str) -> str:
            return name

        install(
            mcp,
            ProgressiveDisclosureMiddleware(
                groups=[
                    Group("code", description="Code management"),
                    Group("repos", description="Repositories", parent="code"),
                    Group("branches", description="Branches", parent="repos"),
                ]
            ),
        )
        async with connect(mcp) as client:
            description = next(
                t.description for t in await client.list_tools() if t.name == "enable_tools"
            )
            code = await call(client, "enable_tools", groups=["code"])
            repos = await call(client, "enable_tools", groups=["repos"])
            branches = await call(client, "enable_tools", groups=["branches"])
            disabled = await call(client, "disable_tools", groups=["code"])
        # "Only code is visible initially (root group)".
        assert description is not None
        assert "- code (+): Code management" in description
        assert "repos" not in description
        assert "branches" not in description
        assert [code, repos, branches, disabled] == snapshot(
            [
                {
                    "enabled": ["code"],
                    "enabled_groups": ["code"],
                    "available_tools": [],
                    "available_groups": ["repos"],
                    "errors": [],
                },
                {
                    "enabled": ["repos"],
                    "enabled_groups": ["code", "repos"],
                    "available_tools": [],
                    "available_groups": ["branches"],
                    "errors": [],
                },
                {
                    "enabled": ["branches"],
                    "enabled_groups": ["code", "repos", "branches"],
                    "available_tools": ["create_branch"],
                    "available_groups": [],
                    "errors": [],
                },
                {
                    "disabled": ["code", "repos", "branches"],
                    "enabled_groups": [],
                    "available_tools": [],
                    "available_groups": [],
                    "errors": [],
                },
            ]
        )

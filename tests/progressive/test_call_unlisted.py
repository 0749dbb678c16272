"""``call_unlisted``: what a client has not enabled is left out of lists only; a call, read
or get by its exact name runs it, and search offers it with its definition (search first).
Access control and concerns still hide what they hide, on every path."""

from __future__ import annotations

from typing import Any

import mcp_types as mt
import pytest
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.auth import require_scopes

from fastmcp_filtering import (
    Catalog,
    Concern,
    Group,
    ProgressiveDisclosureMiddleware,
    add_filtering,
    filtering_stack,
    in_group,
    install,
)
from fastmcp_filtering.client import call_method

from .._principals import PrincipalByClientName, as_principal
from .._support.repos_and_vault import add_repos_and_vault
from ..conftest import Connect


def unlisted_server(**progressive: Any) -> FastMCP:
    """Notes (initial), repos, a vault only ``github:admin`` may use, and a risky repo tool."""
    mcp = FastMCP("unlisted")
    mcp.add_middleware(PrincipalByClientName())

    @in_group("notes")
    @mcp.tool
    def read_notes() -> str:
        """Read my notes."""
        return "notes"

    add_repos_and_vault(mcp)
    add_filtering(
        mcp,
        groups=[
            Group("notes"),
            Group("repos"),
            Group("vault", access=require_scopes("github:admin")),
        ],
        concerns=[Concern("risk", values=["safe", "destructive"])],
        progressive={"initial_groups": ["notes"], "call_tool_name": "call_tool", **progressive},
    )
    return mcp


async def listed(client: Any) -> list[str]:
    return sorted(t.name for t in await client.list_tools())


async def error_of(client: Any, name: str) -> str:
    with pytest.raises(ToolError) as refused:
        await client.call_tool(name, {})
    return str(refused.value).replace(name, "NAME")


@pytest.mark.side_effect_lists
class TestCallUnlisted:
    async def test_a_tool_not_enabled_runs_by_name_and_stays_unlisted(
        self, connect: Connect
    ) -> None:
        async with connect(unlisted_server(call_unlisted=True)) as client:
            before = await listed(client)
            assert "create_repo" not in before
            assert (await client.call_tool("create_repo", {"name": "x"})).data == "repo x"
            proxied = await client.call_tool(
                "call_tool", {"name": "create_repo", "arguments": {"name": "y"}}
            )
            assert proxied.content[0].text == "repo y"  # type: ignore[union-attr]
            assert await listed(client) == before

    async def test_search_offers_it_with_its_definition(self, connect: Connect) -> None:
        async with connect(unlisted_server(call_unlisted=True)) as client:
            found = await client.call_tool("search_tools", {"query": "create a new repository"})
            page = await call_method(client, "tools/list", {})
        hit = found.structured_content["tools"][0]
        assert hit["name"] == "create_repo"
        assert hit["inputSchema"]["required"] == ["name"]
        assert "available_after" not in hit
        assert "create_repo" not in [t["name"] for t in page["tools"]]

    async def test_without_it_a_call_still_needs_the_group(self, connect: Connect) -> None:
        async with connect(unlisted_server()) as client:
            assert "enable_tools" in await error_of(client, "create_repo")
            found = await client.call_tool("search_tools", {"query": "create a new repository"})
            assert found.structured_content["tools"][0]["available_after"] == {
                "enable_tools": {"groups": ["repos"]}
            }

    async def test_enabling_still_shapes_the_list(self, connect: Connect) -> None:
        async with connect(unlisted_server(call_unlisted=True)) as client:
            await client.call_tool("enable_tools", {"groups": ["repos"]})
            assert "create_repo" in await listed(client)

    @pytest.mark.parametrize("who", ["reader", "anonymous"])
    async def test_access_control_still_hides(self, connect: Connect, who: str) -> None:
        """No reach for a group the principal may not use: absent on every path."""
        async with connect(unlisted_server(call_unlisted=True), **as_principal(who)) as client:
            assert await error_of(client, "wipe_vault") == await error_of(client, "never_was")
            found = await client.call_tool("search_tools", {"query": "wipe the secret vault"})
            assert "wipe_vault" not in [t["name"] for t in found.structured_content["tools"]]
            with pytest.raises(ToolError) as proxied:
                await client.call_tool("call_tool", {"name": "wipe_vault", "arguments": {}})
            assert "wipe_vault" in str(proxied.value)
            assert "not enabled" not in str(proxied.value)

    async def test_an_admin_reaches_the_vault_by_name(self, connect: Connect) -> None:
        async with connect(unlisted_server(call_unlisted=True), **as_principal("admin")) as admin:
            assert (await admin.call_tool("wipe_vault", {})).data == "wiped"
            assert "wipe_vault" not in await listed(admin)

    async def test_concerns_still_refuse(self, connect: Connect) -> None:
        """A client that stated it takes no destructive risk cannot run one by name."""
        async with connect(unlisted_server(call_unlisted=True)) as client:
            await call_method(client, "concerns/update", {"concerns": {"risk": "safe"}})
            with pytest.raises(ToolError, match="risk"):
                await client.call_tool("delete_repo", {"name": "x"})
            found = await client.call_tool("search_tools", {"query": "delete a repository"})
            assert "delete_repo" not in [t["name"] for t in found.structured_content["tools"]]


class TestValidation:
    def test_call_unlisted_must_be_a_bool(self) -> None:
        with pytest.raises(ValueError, match="call_unlisted must be True or False"):
            ProgressiveDisclosureMiddleware(call_unlisted="yes")  # type: ignore[arg-type]


@pytest.mark.side_effect_lists
class TestReachEdges:
    async def test_a_call_by_name_runs_the_highest_version_it_may_reach(
        self, connect: Connect
    ) -> None:
        """v2 is access-denied, v1 only not enabled: search offers v1 and a call runs it."""
        mcp = FastMCP("versions")
        mcp.add_middleware(PrincipalByClientName())
        in_group("repos")(mcp.tool(lambda: "v1", name="deploy", version="1", description="Deploy"))
        in_group("vault")(mcp.tool(lambda: "v2", name="deploy", version="2", description="Deploy"))
        add_filtering(
            mcp,
            groups=[Group("repos"), Group("vault", access=require_scopes("github:admin"))],
            progressive={"call_unlisted": True},
        )
        async with connect(mcp, **as_principal("reader")) as reader:
            found = await reader.call_tool("search_tools", {"query": "deploy"})
            assert [t["name"] for t in found.structured_content["tools"]] == ["deploy"]
            assert found.structured_content["tools"][0]["_meta"]["fastmcp"]["versions"] == ["1"]
            ran = await reader.call_tool("deploy", {})
            assert ran.content[0].text == "v1"  # type: ignore[union-attr]

    async def test_a_template_reached_by_uri_completes(self, connect: Connect) -> None:
        mcp = FastMCP("complete")
        in_group("repos")(mcp.resource("repo://{name}", name="repo")(lambda name: f"repo {name}"))
        mcp.completion(lambda ref, argument, context: ["api", "web"])
        add_filtering(mcp, groups=[Group("repos")], progressive={"call_unlisted": True})
        async with connect(mcp) as client:
            ref = mt.ResourceTemplateReference(type="ref/resource", uri="repo://{name}")
            done = await client.complete(ref, {"name": "name", "value": ""})
        assert done.values == ["api", "web"]

    async def test_every_layer_that_hides_must_leave_it_to_lists_only(
        self, connect: Connect
    ) -> None:
        """Two progressive layers: the one without call_unlisted still refuses, in any order."""
        for loose_first in (True, False):
            mcp = FastMCP("two")
            in_group("b")(mcp.tool(lambda: "ran", name="in_b"))
            catalog = Catalog(groups=[Group("a"), Group("b")])
            loose = ProgressiveDisclosureMiddleware(
                catalog=catalog,
                call_unlisted=True,
                enable_tool_name="enable_loose",
                disable_tool_name="disable_loose",
                state_namespace="loose",
            )
            strict = ProgressiveDisclosureMiddleware(
                catalog=catalog,
                enable_tool_name="enable_strict",
                disable_tool_name="disable_strict",
                state_namespace="strict",
            )
            install(mcp, *((loose, strict) if loose_first else (strict, loose)))
            async with connect(mcp) as client:
                with pytest.raises(ToolError, match="not enabled"):
                    await client.call_tool("in_b", {})

    def test_an_empty_dict_of_options_turns_the_layer_on(self) -> None:
        stack = filtering_stack(groups=[Group("a")], progressive={}, search={})
        assert stack.progressive is not None
        assert stack.search is not None

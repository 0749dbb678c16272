"""``call_unlisted``: what a client has not enabled is left out of lists only; a call, read
or get by its exact name runs it, and search offers it with its definition (search first).
Access control and concerns still hide what they hide, on every path."""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.auth import require_scopes

from fastmcp_filtering import (
    Concern,
    Group,
    ProgressiveDisclosureMiddleware,
    add_filtering,
    in_group,
)
from fastmcp_filtering import concerns as with_concerns
from fastmcp_filtering.client import call_method

from .._principals import PrincipalByClientName, as_principal
from ..conftest import Connect


def add_repos_and_vault(mcp: FastMCP) -> None:
    """``create_repo`` and a destructive ``delete_repo`` in ``repos``; ``wipe_vault`` in
    ``vault``."""

    @in_group("repos")
    @mcp.tool
    def create_repo(name: str) -> str:
        """Create a new repository."""
        return f"repo {name}"

    @in_group("repos")
    @with_concerns(risk="destructive")
    @mcp.tool
    def delete_repo(name: str) -> str:
        """Delete a repository for good."""
        return f"deleted {name}"

    @in_group("vault")
    @mcp.tool
    def wipe_vault() -> str:
        """Wipe the secret vault."""
        return "wiped"


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

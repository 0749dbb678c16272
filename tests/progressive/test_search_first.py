"""``progressive="search_first"``: only ``search_tools`` and ``call_tool`` are listed; a search
hit comes with its input schema and runs on the next call, by its name or through
``call_tool``. Access control and concerns hold on every path."""

from __future__ import annotations

import pytest
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.auth import require_scopes
from fastmcp.utilities.tests import asgi_server

from fastmcp_filtering import (
    Concern,
    Group,
    ProgressiveDisclosureMiddleware,
    add_filtering,
    in_group,
)
from fastmcp_filtering.client import call_method, concerns_meta

from .._principals import PrincipalByClientName, as_principal
from .._support.repos_and_vault import add_repos_and_vault
from ..conftest import ERAS, Connect


def search_first_server() -> FastMCP:
    """Repos (grouped), a vault only ``github:admin`` may use, an ungrouped ``ping`` and a
    tool claiming a group no one declared (a typo)."""
    mcp = FastMCP("search-first")
    mcp.add_middleware(PrincipalByClientName())

    add_repos_and_vault(mcp)

    @mcp.tool
    def ping() -> str:
        """Check that the server answers."""
        return "pong"

    @in_group("repoz")
    @mcp.tool
    def rename_repo(name: str) -> str:
        """Rename a repository."""
        return name

    add_filtering(
        mcp,
        groups=[Group("repos"), Group("vault", access=require_scopes("github:admin"))],
        concerns=[Concern("risk", values=["safe", "destructive"])],
        progressive="search_first",
        search={"max_results": 5},
    )
    return mcp


async def found(client: object, query: str) -> dict[str, object]:
    result = await client.call_tool("search_tools", {"query": query})  # type: ignore[attr-defined]
    return dict(result.structured_content)


class TestSearchFirst:
    async def test_only_search_and_call_are_listed(self, connect: Connect) -> None:
        async with connect(search_first_server()) as client:
            assert sorted(t.name for t in await client.list_tools()) == [
                "call_tool",
                "search_tools",
            ]

    async def test_a_hit_runs_on_the_next_call(self, connect: Connect) -> None:
        async with connect(search_first_server()) as client:
            result = await found(client, "create a new repository")
            hit = result["tools"][0]  # type: ignore[index]
            assert hit == {
                "name": "create_repo",
                "description": "Create a new repository.",
                "inputSchema": hit["inputSchema"],
            }
            assert hit["inputSchema"]["required"] == ["name"]
            assert "call_tool" in str(result["next"])
            assert (await client.call_tool("create_repo", {"name": "x"})).data == "repo x"
            proxied = await client.call_tool(
                "call_tool", {"name": "create_repo", "arguments": {"name": "y"}}
            )
            assert proxied.content[0].text == "repo y"  # type: ignore[union-attr]

    async def test_a_tool_in_no_group_is_found_and_runs(self, connect: Connect) -> None:
        async with connect(search_first_server()) as client:
            assert "ping" in [t["name"] for t in (await found(client, "ping"))["tools"]]  # type: ignore[attr-defined]
            assert (await client.call_tool("ping", {})).data == "pong"

    async def test_a_typo_group_and_a_denied_group_do_not_exist(self, connect: Connect) -> None:
        async with connect(search_first_server(), **as_principal("reader")) as reader:
            errors = []
            for name in ("rename_repo", "wipe_vault", "never_was"):
                with pytest.raises(ToolError) as refused:
                    await reader.call_tool(name, {"name": "x"})
                errors.append(str(refused.value).replace(name, "X"))
            assert errors[0] == errors[1] == errors[2]
            hits = await found(reader, "wipe the secret vault rename repository")
            names = [t["name"] for t in hits["tools"]]  # type: ignore[attr-defined]
            assert "wipe_vault" not in names
            assert "rename_repo" not in names

    async def test_an_admin_runs_the_vault_by_name(self, connect: Connect) -> None:
        async with connect(search_first_server(), **as_principal("admin")) as admin:
            assert (await admin.call_tool("wipe_vault", {})).data == "wiped"

    async def test_concerns_still_refuse(self, connect: Connect, era: str) -> None:
        async with connect(search_first_server()) as client:
            if era == "legacy":
                await call_method(client, "concerns/update", {"concerns": {"risk": "safe"}})
                meta = None
            else:
                # 2026-07-28: concerns travel with the request; nothing is stored.
                meta = concerns_meta({"risk": "safe"})
            with pytest.raises(ToolError, match="risk"):
                await client.call_tool("delete_repo", {"name": "x"}, meta=meta)

    async def test_no_enable_tools(self, connect: Connect) -> None:
        async with connect(search_first_server()) as client:
            with pytest.raises(ToolError, match="Unknown tool"):
                await client.call_tool("enable_tools", {"groups": ["repos"]})

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_a_client_without_identity_gets_the_same(self, era: str) -> None:
        async with (
            asgi_server(search_first_server(), stateless_http=True) as running,
            running.client(**ERAS[era]) as client,
        ):
            assert sorted(t.name for t in await client.list_tools()) == [
                "call_tool",
                "search_tools",
            ]
            assert "authenticate" not in (client.instructions or "")
            assert (await client.call_tool("create_repo", {"name": "x"})).data == "repo x"


class TestValidation:
    def test_no_enable_needs_calls_by_name(self) -> None:
        with pytest.raises(ValueError, match="offer_enable=False needs call_unlisted=True"):
            ProgressiveDisclosureMiddleware(offer_enable=False)

    def test_search_first_needs_search(self) -> None:
        with pytest.raises(ValueError, match=r"search_first.*needs search"):
            add_filtering(FastMCP("x"), progressive="search_first", search=False)

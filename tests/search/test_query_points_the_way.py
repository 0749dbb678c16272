"""A ``query`` whose best matches the list cannot hold names them in the result's ``_meta``."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP
from inline_snapshot import snapshot

from fastmcp_filtering import (
    AccessPolicy,
    Group,
    add_filtering,
    in_group,
    install,
)
from fastmcp_filtering.client import better_by_name, better_matches, list_tools

from .._support.layers import HideSecret
from ..conftest import Connect


def _shop(**progressive: Any) -> FastMCP:
    mcp = FastMCP("shop")

    @mcp.tool
    @in_group("payments")
    def refund_payment(payment_id: str) -> str:
        """Refund a payment: give the customer's money back."""
        return f"refunded {payment_id}"

    @mcp.tool
    @in_group("payments")
    def charge_card(card: str) -> str:
        """Charge a card."""
        return "charged"

    @mcp.tool
    @in_group("orders")
    def list_orders() -> str:
        """List the shop's orders."""
        return "orders"

    @mcp.tool(tags={"secret"})
    @in_group("payments")
    def refund_everything() -> str:
        """Refund every payment: all the money back."""
        return "gone"

    groups = [Group("payments"), Group("orders")]
    add_filtering(mcp, groups=groups, progressive=progressive or "search_first")
    return mcp


class TestSearchFirst:
    async def test_an_empty_page_names_what_search_tools_finds(self, connect: Connect) -> None:
        async with connect(_shop()) as client:
            page = await list_tools(client, query="refund money")
            found = await client.call_tool("search_tools", {"query": "refund money"})
            called = await client.call_tool("refund_payment", {"payment_id": "p1"})
        assert [t.name for t in page.tools] == []
        assert better_by_name(page) == snapshot(["refund_everything", "refund_payment"])
        assert better_matches(page) == []
        assert "refund_payment" in str(found.structured_content)
        assert called.structured_content == {"result": "refunded p1"}

    async def test_no_key_when_nothing_matches(self, connect: Connect) -> None:
        async with connect(_shop()) as client:
            page = await list_tools(client, query="weather in paris")
        assert page.tools == []
        assert better_by_name(page) == []

    async def test_hidden_means_hidden(self, connect: Connect) -> None:
        mcp = _shop()
        install(mcp, HideSecret())
        async with connect(mcp) as client:
            page = await list_tools(client, query="refund money")
        assert better_by_name(page) == ["refund_payment"]


class TestGroupsNotListed:
    async def test_each_era_is_told_how_to_reach_them(self, connect: Connect, era: str) -> None:
        async with connect(_shop(initial_groups=["orders"])) as client:
            page = await list_tools(client, query="refund money")
            plain = await client.list_tools()
        assert [t.name for t in page.tools] == []
        if era == "modern":
            # 2026-07-28: lists hold the initial groups; the rest is called by its name.
            assert better_by_name(page) == snapshot(["refund_everything", "refund_payment"])
            assert better_matches(page) == []
        else:
            # 2025-11-25: the group to enable, as before.
            assert better_matches(page) == ["payments"]
            assert better_by_name(page) == []
        assert "refund_payment" not in {t.name for t in plain}

    async def test_a_denied_group_is_never_named(self, connect: Connect) -> None:
        mcp = FastMCP("shop")

        @mcp.tool
        @in_group("vault")
        def refund_from_vault() -> str:
            """Refund money from the vault."""
            return "vault"

        @mcp.tool
        @in_group("orders")
        def list_orders() -> str:
            """List the shop's orders."""
            return "orders"

        # No token here: the vault's check fails, so its tools do not exist for this client.
        groups = [
            Group("vault", access=AccessPolicy(claim="roles", value="vault")),
            Group("orders"),
        ]
        add_filtering(mcp, groups=groups, progressive="search_first")
        async with connect(mcp) as client:
            page = await list_tools(client, query="refund money")
        assert better_by_name(page) == []
        assert better_matches(page) == []

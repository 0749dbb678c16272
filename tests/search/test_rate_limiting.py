"""Rate limiting searches (SEP-1821: servers SHOULD rate-limit search) with FastMCP's limiters.

Every limiter here refills at 0 requests a second, so only counts decide what is
refused: no test depends on how long anything takes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.server.middleware.rate_limiting import (
    RateLimitingMiddleware,
    SlidingWindowRateLimitingMiddleware,
)
from fastmcp.utilities.tests import asgi_server
from mcp.shared.exceptions import MCPError

from fastmcp_filtering import (
    FilterMiddleware,
    Group,
    ProgressiveDisclosureMiddleware,
    SearchMiddleware,
    add_filtering,
    in_group,
    install,
    rate_limit_key,
)
from fastmcp_filtering.client import call_method, list_tools

from ..conftest import ERAS, Connect, use

BURST = 3
GROUPS = [Group("code", title="Source code"), Group("mail", title="Mail")]


def limiter(
    get_client_id: Callable[[MiddlewareContext[Any]], str] | None = rate_limit_key,
) -> RateLimitingMiddleware:
    """``BURST`` requests per client, never refilled."""
    return RateLimitingMiddleware(
        max_requests_per_second=0, burst_capacity=BURST, get_client_id=get_client_id
    )


def make_server(*middlewares: Middleware) -> FastMCP:
    mcp = FastMCP("rate")

    @in_group("code")
    @mcp.tool
    def create_issue(title: str) -> str:
        """Open a new issue in a repository."""
        return f"opened {title}"

    @in_group("mail")
    @mcp.tool
    def send_email(to: str) -> str:
        """Send an email message to a recipient."""
        return f"sent to {to}"

    @mcp.prompt
    def review_issue() -> str:
        """Review an issue."""
        return "review"

    use(mcp, *middlewares)
    return mcp


def limited(**search: Any) -> FastMCP:
    return make_server(SearchMiddleware(groups=GROUPS, rate_limit=limiter(), **search))


async def queried(client: Any, query: str = "issue") -> list[str]:
    return [t.name for t in (await list_tools(client, query=query)).tools]


async def searched(client: Any, query: str = "email") -> list[str]:
    result = await client.call_tool("search_tools", {"query": query})
    return [t["name"] for t in result.structured_content["tools"]]


def assert_rate_limited(refused: pytest.ExceptionInfo[MCPError]) -> None:
    """A JSON-RPC error with FastMCP's rate-limit code, not a tool result."""
    assert refused.type is MCPError
    assert refused.value.error.code == -32000
    assert refused.value.error.message.startswith("Rate limit exceeded for client: ")


class TestAFloodIsLimited:
    async def test_queried_lists_past_the_burst_are_refused(self, connect: Connect) -> None:
        async with connect(limited()) as client:
            for _ in range(BURST):
                assert await queried(client) == ["create_issue"]
            for _ in range(5):
                with pytest.raises(MCPError) as refused:
                    await queried(client)
                assert_rate_limited(refused)

    async def test_search_tools_calls_past_the_burst_are_refused(self, connect: Connect) -> None:
        async with connect(limited()) as client:
            for _ in range(BURST):
                assert await searched(client) == ["send_email"]
            with pytest.raises(MCPError) as refused:
                await searched(client)
            assert_rate_limited(refused)

    async def test_both_ways_of_searching_share_one_budget(self, connect: Connect) -> None:
        async with connect(limited()) as client:
            assert await queried(client) == ["create_issue"]
            assert await searched(client) == ["send_email"]
            prompts = await call_method(client, "prompts/list", {"query": "review"})
            assert [p["name"] for p in prompts["prompts"]] == ["review_issue"]
            with pytest.raises(MCPError) as refused:
                await searched(client)
            assert_rate_limited(refused)
            with pytest.raises(MCPError) as refused:
                await queried(client)
            assert_rate_limited(refused)

    async def test_requests_that_are_not_searches_are_not_counted(self, connect: Connect) -> None:
        async with connect(limited()) as client:
            for _ in range(2 * BURST):
                assert len(await client.list_tools()) == 3
                plain = ["create_issue", "search_tools", "send_email"]
                assert sorted(await queried(client, "   ")) == plain
                assert (await client.call_tool("create_issue", {"title": "t"})).data == "opened t"
                assert len(await client.list_prompts()) == 1
            for _ in range(BURST):
                assert await searched(client) == ["send_email"]
            with pytest.raises(MCPError):
                await queried(client)
            # Refused searches leave everything else alone.
            assert len(await client.list_tools()) == 3
            assert (await client.call_tool("send_email", {"to": "a"})).data == "sent to a"

    async def test_queries_that_are_not_strings_count_as_searches(self, connect: Connect) -> None:
        async with connect(limited()) as client:
            for _ in range(BURST):
                with pytest.raises(MCPError) as invalid:
                    await call_method(client, "tools/list", {"query": 42})
                assert invalid.value.error.code == mt.INVALID_PARAMS
            with pytest.raises(MCPError) as refused:
                await queried(client)
            assert_rate_limited(refused)


class TestReadmeRecipe:
    async def test_thirty_searches_a_minute_per_client(self, connect: Connect) -> None:
        mcp = make_server()
        # As in the README.
        install(
            mcp,
            SearchMiddleware(
                groups=GROUPS,
                rate_limit=SlidingWindowRateLimitingMiddleware(
                    max_requests=30, window_minutes=1, get_client_id=rate_limit_key
                ),
            ),
        )
        async with connect(mcp) as client:
            for n in range(30):
                if n % 2:
                    assert await searched(client) == ["send_email"]
                else:
                    assert await queried(client) == ["create_issue"]
            with pytest.raises(MCPError) as refused:
                await searched(client)
            assert refused.value.error.code == -32000
            assert refused.value.error.message.startswith(
                "Rate limit exceeded: 30 requests per 1 minutes for client: "
            )
            assert len(await client.list_tools()) == 3


class TestEachSearchCountsOnce:
    """A search lists tools inside itself; only the search counts, however deep."""

    def progressive(self, *, search_first: bool, limit: bool = True) -> FastMCP:
        search = SearchMiddleware(groups=GROUPS, rate_limit=limiter() if limit else None)
        progressive = ProgressiveDisclosureMiddleware(
            groups=GROUPS, initial_groups=["code"], call_tool_name="call_tool"
        )
        filtering = FilterMiddleware(groups=GROUPS)
        if search_first:
            return make_server(search, progressive, filtering)
        return make_server(filtering, progressive, search)

    @pytest.mark.parametrize("search_first", [True, False], ids=["search-first", "search-last"])
    async def test_with_progressive_disclosure(self, connect: Connect, search_first: bool) -> None:
        async with connect(self.progressive(search_first=search_first)) as client:
            # Lists what enabling groups would show, too.
            assert await queried(client, "issue") == ["create_issue"]
            # Offers send_email, of a group not enabled yet, with the call that enables it.
            assert await searched(client) == ["send_email"]
            proxied = await client.call_tool(
                "call_tool", {"name": "search_tools", "arguments": {"query": "email"}}
            )
            assert proxied.structured_content["tools"][0]["name"] == "send_email"
            with pytest.raises(MCPError) as refused:
                await queried(client)
            assert_rate_limited(refused)
            # call_tool reports the failure of the tool it called as its own tool error.
            with pytest.raises(ToolError, match="Rate limit exceeded for client: "):
                await client.call_tool(
                    "call_tool", {"name": "search_tools", "arguments": {"query": "email"}}
                )
            assert (await client.call_tool("create_issue", {"title": "t"})).data == "opened t"

    async def test_a_stray_query_on_another_request_is_no_search(self, connect: Connect) -> None:
        """``enable_tools`` lists tools inside itself; a ``query`` beside its call is ignored."""
        async with connect(self.progressive(search_first=True)) as client:
            for _ in range(2 * BURST):
                params = {"name": "enable_tools", "arguments": {"groups": ["mail"]}, "query": "x"}
                reply = await call_method(client, "tools/call", params)
                assert reply["isError"] is False
            assert await queried(client) == ["create_issue"]

    @pytest.mark.parametrize("limiter_first", [True, False], ids=["limiter-first", "limiter-last"])
    @pytest.mark.parametrize(
        ("request_kind", "cost"),
        [("queried", 2), ("search_tools", 2), ("call_tool", 3)],
    )
    async def test_a_limiter_on_every_request_counts_the_listings_inside(
        self, connect: Connect, request_kind: str, cost: int, limiter_first: bool
    ) -> None:
        """Why the option: FastMCP's limiter alone counts each listing a search makes inside."""
        requests: dict[str, Callable[[Any], Any]] = {
            "listed": lambda client: client.list_tools(),
            "queried": queried,
            "search_tools": searched,
            "call_tool": lambda client: client.call_tool(
                "call_tool", {"name": "search_tools", "arguments": {"query": "email"}}
            ),
        }

        async def served(kind: str) -> int:
            budget = RateLimitingMiddleware(max_requests_per_second=0, burst_capacity=24)
            mcp = self.progressive(search_first=True, limit=False)
            if limiter_first:
                mcp.middleware.insert(0, budget)
            else:
                mcp.add_middleware(budget)
            async with connect(mcp) as client:
                for count in range(24):
                    try:
                        await requests[kind](client)
                    except (MCPError, ToolError):
                        return count
            raise AssertionError("never limited")

        lists = await served("listed")
        assert lists > 2 * cost
        assert await served(request_kind) == lists // cost


class TestWhoseBudget:
    async def test_per_session_in_2025_11_25_per_process_in_memory_in_2026_07_28(
        self, connect: Connect, era: str
    ) -> None:
        mcp = limited()
        async with connect(mcp) as alice, connect(mcp) as bob:
            for _ in range(BURST):
                await queried(alice)
            with pytest.raises(MCPError):
                await queried(alice)
            if era == "legacy":
                assert await queried(bob) == ["create_issue"]
            else:
                # One in-memory process serves one client: there is no one else to tell apart.
                with pytest.raises(MCPError) as refused:
                    await queried(bob)
                assert refused.value.error.message == "Rate limit exceeded for client: process"

    async def test_stateless_http_without_auth_per_address(self, era: str) -> None:
        """No session the server issued (stateless_http) and no principal: the peer address."""
        options: dict[str, Any] = dict(ERAS[era])
        async with (
            asgi_server(limited(), stateless_http=True) as running,
            running.client(**options) as client,
            running.client(**options) as other,
        ):
            for _ in range(BURST):
                await searched(client)
            with pytest.raises(MCPError) as refused:
                await searched(client)
            assert refused.value.error.message == (
                "Rate limit exceeded for client: address:127.0.0.1"
            )
            # Nothing else tells the two apart: the same address has the same budget.
            with pytest.raises(MCPError):
                await queried(other)

    async def test_stateless_http_with_auth_per_principal(self) -> None:
        mcp = limited()
        mcp.auth = StaticTokenVerifier(
            tokens={
                "alice-token": {"client_id": "agent", "sub": "alice", "scopes": []},
                "bob-token": {"client_id": "agent", "sub": "bob", "scopes": []},
            }
        )
        async with (
            asgi_server(mcp, stateless_http=True) as running,
            running.client(auth="alice-token") as alice,
            running.client(auth="bob-token") as bob,
        ):
            for _ in range(BURST):
                await queried(alice)
            with pytest.raises(MCPError) as refused:
                await searched(alice)
            assert_rate_limited(refused)
            for _ in range(BURST):
                assert await searched(bob) == ["send_email"]
        # A new connection of the same user has the same (spent) budget.
        async with (
            asgi_server(mcp, stateless_http=True) as running,
            running.client(auth="alice-token") as again,
        ):
            with pytest.raises(MCPError):
                await queried(again)

    async def test_2025_11_25_over_http_per_session(self) -> None:
        async with (
            asgi_server(limited()) as running,
            running.client(mode="legacy") as alice,
            running.client(mode="legacy") as bob,
        ):
            for _ in range(BURST):
                await queried(alice)
            with pytest.raises(MCPError):
                await queried(alice)
            assert await queried(bob) == ["create_issue"]

    async def test_session_id_is_no_key_in_2026_07_28(self, connect: Connect, era: str) -> None:
        """Why ``rate_limit_key``: FastMCP's ``session_id`` is new for every stateless request."""

        def session(context: MiddlewareContext[Any]) -> str:
            assert context.fastmcp_context is not None
            return context.fastmcp_context.session_id

        mcp = make_server(SearchMiddleware(groups=GROUPS, rate_limit=limiter(session)))
        async with connect(mcp) as client:
            outcomes = []
            for _ in range(2 * BURST):
                try:
                    await queried(client)
                    outcomes.append("ok")
                except MCPError:
                    outcomes.append("refused")
        if era == "legacy":
            assert outcomes == ["ok"] * BURST + ["refused"] * BURST
        else:
            assert outcomes == ["ok"] * (2 * BURST)


class TestSetUp:
    async def test_through_add_filtering(self, connect: Connect) -> None:
        mcp = make_server()
        add_filtering(mcp, groups=GROUPS, search={"rate_limit": limiter()})
        async with connect(mcp) as client:
            for _ in range(BURST):
                await searched(client)
            with pytest.raises(MCPError) as refused:
                await searched(client)
            assert_rate_limited(refused)

    def test_rate_limit_must_be_a_middleware(self) -> None:
        with pytest.raises(ValueError, match="rate_limit must be a FastMCP middleware"):
            SearchMiddleware(rate_limit=10)  # type: ignore[arg-type]

"""What ``enable_tools`` lists to tell what a group holds, and what that costs (both eras).

It lists through the server's middleware chain, with only what enabling groups would show
added: a prompts (resources, templates) listing the server's middleware refuses counts as
holding nothing (the call goes on, the refusal's words stay in the log); a refused tools
listing, which the reply needs, refuses the call before anything is saved; a tool added
meanwhile is counted under ``max_tools``; the chain runs once per kind it needs, and never
carries what access control denies the client.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fastmcp import FastMCP
from fastmcp.exceptions import AuthorizationError
from fastmcp.prompts.base import Prompt
from fastmcp.server.auth import require_scopes
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.middleware.authorization import AuthMiddleware
from fastmcp.server.middleware.rate_limiting import RateLimitingMiddleware
from fastmcp.tools.base import Tool
from typing_extensions import override

from fastmcp_filtering import Group, ProgressiveDisclosureMiddleware, in_group, install

from .._principals import PrincipalByClientName, as_principal
from ..conftest import Connect

GROUPS = [
    Group("time"),
    Group("clock"),
    Group("code"),
    Group("vault", access=require_scopes("vault:open"), restrictive=True),
]


def grouped(name: str, *groups: str) -> Tool:
    """A tool ``name`` in ``groups``."""
    return in_group(*groups)(Tool.from_function(lambda: name, name=name))


def server(*middlewares: Middleware, clock: bool = False, **options: Any) -> FastMCP:
    """``now`` (group ``time``, enabled), ``fork_repo`` (``code``), and with ``clock`` a
    ``clock_now`` (``clock``); the server's own ``middlewares`` outermost."""
    mcp = FastMCP("clocks")
    mcp.add_middleware(PrincipalByClientName())
    for middleware in middlewares:
        mcp.add_middleware(middleware)
    mcp.add_tool(grouped("now", "time"))
    mcp.add_tool(grouped("fork_repo", "code"))
    if clock:
        mcp.add_tool(grouped("clock_now", "clock"))
    progressive = ProgressiveDisclosureMiddleware(groups=GROUPS, initial_groups=["time"], **options)
    install(mcp, progressive)
    return mcp


async def enable(connect: Connect, mcp: FastMCP, *groups: str) -> dict[str, Any]:
    """The whole reply to ``enable_tools(groups)``, and the tools listed after."""
    async with connect(mcp, **as_principal("reader")) as client:
        reply = await client.call_tool_mcp("enable_tools", {"groups": list(groups)})
        listed = sorted(t.name for t in await client.list_tools())
    return {"reply": reply.model_dump(), "listed": listed}


class NoPromptsForAgents(Middleware):
    """The server's own role gate: ``prompts/list`` is for human operators only."""

    @override
    async def on_list_prompts(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        raise AuthorizationError("prompts are for human operators only")


@pytest.mark.side_effect_lists
class TestARefusedListing:
    async def test_counts_as_holding_nothing_and_says_nothing_of_the_refusal(
        self, connect: Connect
    ) -> None:
        refused = await enable(connect, server(NoPromptsForAgents()), "clock")
        reference = await enable(connect, server(), "clock")
        assert refused == reference
        assert refused["reply"]["is_error"] is False
        assert "operators" not in str(refused)

    async def test_the_other_groups_named_are_enabled(self, connect: Connect) -> None:
        got = await enable(connect, server(NoPromptsForAgents()), "code", "clock")
        content = got["reply"]["structured_content"]
        assert content["enabled"] == ["code"]
        assert [e.split(" holds ")[0] for e in content["errors"]] == ["group 'clock'"]
        assert "fork_repo" in got["listed"]

    async def test_a_prompt_behind_the_refusal_answers_as_no_member(self, connect: Connect) -> None:
        hidden = server(NoPromptsForAgents())
        hidden.add_prompt(in_group("clock")(Prompt.from_function(lambda: "12:00", name="time")))
        assert await enable(connect, hidden, "clock") == await enable(
            connect, server(NoPromptsForAgents()), "clock"
        )

    async def test_is_logged_once_then_at_debug_level(
        self, connect: Connect, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.DEBUG, logger="fastmcp_filtering")
        mcp = server(NoPromptsForAgents())
        for _ in range(3):
            await enable(connect, mcp, "clock")
        logged = [
            (r.levelname, r.getMessage())
            for r in caplog.records
            if "could not list prompts" in r.getMessage()
        ]
        assert [level for level, _ in logged] == ["WARNING", "DEBUG", "DEBUG"]
        assert "operators" in logged[0][1]


class AddsClockTools(Middleware):
    """The server adds three ``clock`` tools (an upstream coming back) while ``enable_tools``
    lists, before the chain lists or once it has."""

    def __init__(self, mcp: FastMCP, when: str) -> None:
        self.mcp = mcp
        self.when = when
        self.armed = False

    def add(self) -> None:
        self.armed = False
        for i in range(3):
            self.mcp.add_tool(grouped(f"clock_{i}", "clock"))

    @override
    async def on_list_tools(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if self.armed and self.when == "before":
            self.add()
        listed = await call_next(context)
        if self.armed and self.when == "after":
            self.add()
        return listed


class TestAToolAddedWhileEnabling:
    @pytest.mark.parametrize("when", ["before", "after"])
    async def test_is_counted_or_its_group_is_not_enabled(
        self, connect: Connect, when: str
    ) -> None:
        mcp = server(max_tools=2)
        adds = AddsClockTools(mcp, when)
        mcp.add_middleware(adds)
        async with connect(mcp, **as_principal("reader")) as client:
            adds.armed = True
            reply = await client.call_tool_mcp("enable_tools", {"groups": ["clock"]})
            listed = {t.name for t in await client.list_tools()}
        assert not adds.armed
        content = reply.structured_content
        assert content is not None
        assert content["enabled"] == []
        expected = "it adds 3 tools" if when == "before" else "holds nothing you can use"
        assert expected in content["errors"][0]
        assert listed.isdisjoint({"clock_0", "clock_1", "clock_2"})


class Seen(Middleware):
    """The server's own audit middleware: each request the chain runs, and what lists hold."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.listed: set[str] = set()

    @override
    async def on_request(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        self.methods.append(context.method or "")
        result = await call_next(context)
        if (context.method or "").endswith("/list"):
            self.listed.update(str(getattr(c, "name", "")) for c in result)
        return result


KINDS = ["tools/list", "prompts/list", "resources/list", "resources/templates/list"]


class TestWhatEnablingCosts:
    @pytest.mark.parametrize(
        ("group", "runs"),
        [("code", ["tools/call", "tools/list"]), ("clock", ["tools/call", *KINDS])],
    )
    async def test_one_run_of_the_chain_per_kind_it_needs(
        self, connect: Connect, group: str, runs: list[str]
    ) -> None:
        seen = Seen()
        async with connect(server(seen), **as_principal("reader")) as client:
            await client.list_tools()
            seen.methods.clear()
            await client.call_tool_mcp("enable_tools", {"groups": [group]})
        assert seen.methods == runs

    async def test_as_many_runs_for_a_hidden_member_as_for_none(self, connect: Connect) -> None:
        counts = []
        for clock in (True, False):
            seen = Seen()
            hide = AuthMiddleware(auth=lambda ctx: ctx.component.name != "clock_now")
            async with connect(server(seen, hide, clock=clock), **as_principal("reader")) as c:
                # The client lists first, so the call's own listings are all that is counted.
                await c.list_tools()
                seen.methods.clear()
                await c.call_tool_mcp("enable_tools", {"groups": ["clock"]})
            counts.append(seen.methods)
        assert counts[0] == counts[1] == ["tools/call", *KINDS]

    async def test_no_listing_carries_what_access_control_denies(self, connect: Connect) -> None:
        seen = Seen()
        mcp = server(seen, clock=True)
        mcp.add_tool(grouped("vault_master_key", "vault"))
        mcp.add_tool(grouped("clock_vault", "clock", "vault"))
        async with connect(mcp, **as_principal("reader")) as client:
            seen.listed.clear()
            reply = await client.call_tool_mcp("enable_tools", {"groups": ["clock", "code"]})
        assert reply.structured_content is not None
        assert reply.structured_content["enabled"] == ["clock", "code"]
        assert "clock_now" in seen.listed
        assert seen.listed.isdisjoint({"vault_master_key", "clock_vault"})


# Known gap (docs/known-gaps.md), a strict xfail: it fails the day the gap is closed.
COUNTS_MIDDLEWARE_HIDDEN = (
    "known gap: max_tools counts the members FastMCP's lookup finds, before the server's own "
    "middleware (FastMCP's AuthMiddleware, a role check) hides any from the client"
)


class TestMaxToolsAndTheServersOwnMiddleware:
    @pytest.mark.xfail(strict=True, raises=AssertionError, reason=COUNTS_MIDDLEWARE_HIDDEN)
    async def test_a_member_it_hides_is_not_counted(self, connect: Connect) -> None:
        answers = []
        for secret in (True, False):
            hide = AuthMiddleware(auth=lambda ctx: ctx.component.name != "clock_secret")
            mcp = server(hide, clock=True, max_tools=2)
            if secret:
                mcp.add_tool(grouped("clock_secret", "clock"))
            answers.append(await enable(connect, mcp, "clock"))
        assert answers[0] == answers[1]


NOT_LISTED = (
    "groups were not changed: the server could not list your tools right now, and this "
    "call's reply needs them; try again later"
)


class NoToolListings(Middleware):
    """The server's own role gate on ``tools/list``, while ``refusing``."""

    def __init__(self) -> None:
        self.refusing = False

    @override
    async def on_list_tools(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if self.refusing:
            raise AuthorizationError("tool listings are for operators only")
        return await call_next(context)


def with_a_clock_prompt(*middlewares: Middleware) -> FastMCP:
    """``server(middlewares)`` whose group ``clock`` holds only a prompt."""
    mcp = server(*middlewares)
    mcp.add_prompt(in_group("clock")(Prompt.from_function(lambda: "12:00", name="clock_face")))
    return mcp


def unlogged(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The records that carry a traceback: none is expected for a refusal."""
    return [r.getMessage() for r in caplog.records if r.exc_info]


@pytest.mark.side_effect_lists
class TestARefusedToolsListing:
    @pytest.mark.parametrize("groups", [["clock"], ["code"], ["code", "clock"], []])
    async def test_refuses_the_call_and_changes_nothing(
        self, connect: Connect, caplog: pytest.LogCaptureFixture, groups: list[str]
    ) -> None:
        gate = NoToolListings()
        async with connect(with_a_clock_prompt(gate), **as_principal("reader")) as client:
            gate.refusing = True
            reply = await client.call_tool_mcp("enable_tools", {"groups": groups})
            prompts = [p.name for p in await client.list_prompts()]
            gate.refusing = False
            listed = {t.name for t in await client.list_tools()}
        assert reply.is_error is True
        assert [getattr(c, "text", None) for c in reply.content] == [NOT_LISTED]
        assert prompts == []
        assert listed == {"now", "enable_tools", "disable_tools"}
        assert not unlogged(caplog)

    async def test_disable_tools_changes_nothing_either(self, connect: Connect) -> None:
        gate = NoToolListings()
        async with connect(with_a_clock_prompt(gate), **as_principal("reader")) as client:
            await client.call_tool_mcp("enable_tools", {"groups": ["code"]})
            gate.refusing = True
            reply = await client.call_tool_mcp("disable_tools", {"groups": ["code"]})
            gate.refusing = False
            listed = {t.name for t in await client.list_tools()}
        assert reply.is_error is True
        assert [getattr(c, "text", None) for c in reply.content] == [NOT_LISTED]
        assert "fork_repo" in listed


class Buckets:
    """Rate limit keys: one shared bucket while ``limited``, else a fresh one per request."""

    def __init__(self) -> None:
        self.limited = False
        self.fresh = 0

    def key(self, context: MiddlewareContext[Any]) -> str:
        if self.limited:
            return "limited"
        self.fresh += 1
        return f"fresh-{self.fresh}"


class TestARateLimitReached:
    @pytest.mark.parametrize("group", ["clock", "code"])
    async def test_refuses_the_call_after_one_listing_and_changes_nothing(
        self, connect: Connect, caplog: pytest.LogCaptureFixture, group: str
    ) -> None:
        buckets = Buckets()
        # A burst of one: the tools/call itself, then every listing it runs is refused.
        limit = RateLimitingMiddleware(
            max_requests_per_second=0, burst_capacity=1, get_client_id=buckets.key
        )
        seen = Seen()
        mcp = with_a_clock_prompt(seen, limit)
        async with connect(mcp, **as_principal("reader")) as client:
            await client.list_tools()
            seen.methods.clear()
            buckets.limited = True
            reply = await client.call_tool_mcp("enable_tools", {"groups": [group]})
            buckets.limited = False
            prompts = [p.name for p in await client.list_prompts()]
            listed = {t.name for t in await client.list_tools()}
        assert reply.is_error is True
        assert [getattr(c, "text", None) for c in reply.content] == [NOT_LISTED]
        assert seen.methods[:2] == ["tools/call", "tools/list"]
        assert seen.methods.count("tools/list") == 2  # the refused one, then the check's
        assert prompts == []
        assert "fork_repo" not in listed
        assert not unlogged(caplog)

"""``enable_tools`` on a group whose members are all hidden from the client answers exactly as on
a group with no member at all (both eras): same reply, same errors, same notifications, same
list after. Whatever hides the member (access control, FastMCP's own ``auth``, a mounted
server's policy, the server's own middleware, another layer, the session's visibility, the
client's concerns), the client learns nothing of it from the answer.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import Context, FastMCP
from fastmcp.server.auth import require_scopes
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import Tool
from inline_snapshot import snapshot
from typing_extensions import override

from fastmcp_filtering import (
    Concern,
    ConcernMiddleware,
    Group,
    ProgressiveDisclosureMiddleware,
    in_group,
    install,
)
from fastmcp_filtering.core.concerns import REQUEST_META_KEY

from .._principals import PrincipalByClientName, as_principal
from .._support.layers import HideLayer, hide_secret
from .._support.recorder import Recorder
from ..conftest import Connect, use

# Every test here runs on servers set up by install and by mcp.add_middleware alone.
pytestmark = pytest.mark.usefixtures("setup_way")

GROUPS = [
    Group("time", description="Clocks"),
    Group("clock", description="A clock the reader may not see, or none at all"),
    Group("code", description="Code"),
    Group("vault", access=require_scopes("vault:open"), restrictive=True),
]

HIDES = [
    "access",
    "fastmcp_auth",
    "mounted_policy",
    "own_middleware",
    "another_layer",
    "session_visibility",
    "concerns",
]
"""Each way a member can be hidden from the reader."""


class HideClock(Middleware):
    """The server's own FastMCP middleware (a role check) hiding ``clock_now`` from everyone."""

    @override
    async def on_list_tools(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        return [t for t in await call_next(context) if t.name != "clock_now"]


def clock_now(*groups: str, **options: Any) -> Tool:
    """A new ``clock_now`` in ``groups``: its own function, since ``in_group`` marks it."""
    return in_group(*groups)(Tool.from_function(lambda: "12:00", name="clock_now", **options))


def add_clock(mcp: FastMCP, hide: str) -> None:
    """``clock_now``, in group ``clock``, hidden from the reader by ``hide``."""
    if hide == "access":
        mcp.add_tool(clock_now("clock", "vault"))
    elif hide == "fastmcp_auth":
        mcp.add_tool(clock_now("clock", auth=require_scopes("x")))
    elif hide == "mounted_policy":
        child = FastMCP("child")
        child.add_tool(clock_now("clock", tags={"secret"}))
        install(child, HideLayer(hide_secret))
        mcp.mount(child, namespace="child")
    elif hide == "another_layer":
        mcp.add_tool(clock_now("clock", tags={"secret"}))
    else:
        mcp.add_tool(clock_now("clock"))


def server(hide: str, *, member: bool) -> FastMCP:
    """Groups ``time`` (enabled), ``clock`` and ``code``; ``clock`` holds ``clock_now``, hidden
    from the reader by ``hide``, or (``member=False``) nothing. All else is the same."""
    mcp = FastMCP("clocks")
    mcp.add_middleware(PrincipalByClientName())
    mcp.add_tool(in_group("time")(Tool.from_function(lambda: "noon", name="now")))
    mcp.add_tool(in_group("code")(Tool.from_function(lambda: "forked", name="fork_repo")))
    if member:
        add_clock(mcp, hide)
    if hide == "own_middleware":
        mcp.add_middleware(HideClock())
    if hide == "another_layer":
        use(mcp, HideLayer(hide_secret))
    if hide == "session_visibility":

        async def hide_clock(ctx: Context) -> str:
            await ctx.disable_components(names={"clock_now"})
            return "hidden"

        mcp.tool(hide_clock)
    if hide == "concerns":
        concerns = [Concern("security", values=["high", "medium", "low"])]
        mapping = {"clock_now": {"security": "low"}}
        use(mcp, ConcernMiddleware(concerns=concerns, mapping=mapping))
    use(mcp, ProgressiveDisclosureMiddleware(groups=GROUPS, initial_groups=["time"]))
    return mcp


async def answer(connect: Connect, mcp: FastMCP, hide: str, who: str) -> dict[str, Any]:
    """Everything ``who`` gets from ``enable_tools(groups=["clock"])``, and its list after."""
    heard = Recorder()
    # The client's own concerns hide the clock (per request: the same in both eras).
    meta = {REQUEST_META_KEY: {"security": "high"}} if hide == "concerns" else None
    async with connect(mcp, message_handler=heard, **as_principal(who)) as client:
        if hide == "session_visibility":
            await client.call_tool("hide_clock", {})
        heard.methods.clear()
        reply = await client.call_tool_mcp("enable_tools", {"groups": ["clock"]}, meta=meta)
        listed = sorted(t.name for t in await client.list_tools())
    return {"reply": reply.model_dump(), "notified": heard.methods, "listed": listed}


@pytest.mark.side_effect_lists
class TestHiddenMembersAnswerAsNone:
    @pytest.mark.parametrize("hide", HIDES)
    async def test_the_same_answer_as_a_group_with_no_member(
        self, connect: Connect, hide: str
    ) -> None:
        hidden = await answer(connect, server(hide, member=True), hide, "reader")
        empty = await answer(connect, server(hide, member=False), hide, "reader")
        assert hidden == empty
        assert hidden["reply"]["structured_content"]["enabled"] == []

    async def test_access_denied_members_word_for_word(self, connect: Connect) -> None:
        hidden = await answer(connect, server("access", member=True), "access", "reader")
        empty = await answer(connect, server("access", member=False), "access", "reader")
        assert hidden["reply"] == empty["reply"]
        assert hidden["reply"]["structured_content"] == snapshot(
            {
                "enabled": [],
                "enabled_groups": ["time"],
                "available_tools": ["now"],
                "available_groups": [],
                "errors": [
                    "group 'clock' holds nothing you can use right now, so it was not enabled; "
                    "enable another group ([\"code\"] can be enabled now), or try 'clock' "
                    "again later"
                ],
            }
        )

    async def test_who_may_use_the_member_enables_the_group(self, connect: Connect) -> None:
        # Control: the member is real; the keeper's token opens the vault.
        got = await answer(connect, server("access", member=True), "access", "keeper")
        assert got["reply"]["structured_content"]["enabled"] == ["clock"]
        assert "clock_now" in got["listed"]

"""What a client's own change (enable_tools, disable_tools) lists, and the list_changed it is owed.

The change is worked out from the client's policy before and after, over one read of
what FastMCP's lookup shows it: the reply lists the tools once, through the middleware
chain, and nothing another layer hides (a mounted server's own policy) shapes the
notifications. Enabling lists them once too, with what enabling groups would show added:
that listing tells what the groups to enable hold (what the server's own middleware hides
counts as nothing), and the policy after the change narrows it to the reply's list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from fastmcp import FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from typing_extensions import override

from fastmcp_filtering import FilterMiddleware, Group, in_group
from fastmcp_filtering.progressive.middleware import ProgressiveDisclosureMiddleware

from .._support.layers import HideLayer, hide_secret
from .._support.progressive import call, make_server
from .._support.recorder import Recorder
from ..conftest import Connect, use


class ListSpy(Middleware):
    """Counts the listings that pass through the middleware chain, by method."""

    def __init__(self) -> None:
        self.listed: list[str] = []

    @override
    async def on_list_tools(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Sequence[Any]]
    ) -> Sequence[Any]:
        self.listed.append("tools")
        return await call_next(context)

    @override
    async def on_list_prompts(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Sequence[Any]]
    ) -> Sequence[Any]:
        self.listed.append("prompts")
        return await call_next(context)


@pytest.mark.side_effect_lists
class TestOneListing:
    async def test_enable_and_disable_list_the_tools_once(self, connect: Connect) -> None:
        mcp, _ = make_server(initial_groups=[])
        spy = ListSpy()
        mcp.add_middleware(spy)
        async with connect(mcp) as client:
            await client.list_tools()
            spy.listed.clear()
            enabled = await call(client, "enable_tools", groups=["issues"])
            assert spy.listed == ["tools"]
            spy.listed.clear()
            disabled = await call(client, "disable_tools", groups=["issues"])
            assert spy.listed == ["tools"]
        assert enabled["available_tools"] == ["create_issue", "link_issue", "list_issues"]
        assert disabled["available_tools"] == []

    async def test_schemas_are_listed_once_as_the_client_sees_them(self, connect: Connect) -> None:
        mcp, _ = make_server(initial_groups=[], include_schemas=True)
        spy = ListSpy()
        mcp.add_middleware(spy)
        async with connect(mcp) as client:
            listed = {t.name: t for t in await client.list_tools()}
            spy.listed.clear()
            enabled = await call(client, "enable_tools", groups=["issues"])
            assert spy.listed == ["tools"]
            spy.listed.clear()
            # Enabled already: nothing to enable, so nothing listed to see what it holds.
            again = await call(client, "enable_tools", groups=["issues"])
            assert spy.listed == ["tools"]
            listed = {t.name: t for t in await client.list_tools()}
        expected = ["create_issue", "link_issue", "list_issues"]
        assert [t["name"] for t in enabled["tools"]] == expected
        assert (
            enabled["tools"][0]["inputSchema"]
            == listed["create_issue"].model_dump(by_alias=True)["inputSchema"]
        )
        assert again["tools"] == []


def make_parent() -> FastMCP:
    """A parent with progressive disclosure over a mounted server that hides its own secret."""
    child = FastMCP("ops")

    @in_group("ops")
    @child.tool
    def restart() -> str:
        return "restarted"

    @in_group("ops")
    @child.prompt(tags={"secret"})
    def launch_codes() -> str:
        return "0000"

    use(child, HideLayer(hide_secret), FilterMiddleware(groups=[Group("ops")]))
    parent = FastMCP("parent")
    parent.mount(child, namespace="ops")
    use(parent, ProgressiveDisclosureMiddleware(groups=[Group("ops")], initial_groups=[]))
    return parent


@pytest.mark.side_effect_lists
class TestNotificationsFollowWhatTheClientSees:
    async def test_a_mounted_servers_hidden_prompt_announces_nothing(
        self, connect: Connect
    ) -> None:
        recorder = Recorder()
        async with connect(make_parent(), message_handler=recorder) as client:
            enabled = await call(client, "enable_tools", groups=["ops"])
            assert enabled["available_tools"] == ["ops_restart"]
            assert await client.list_prompts() == []
            # The tools changed; the prompts this client can see did not.
            assert recorder.methods == ["notifications/tools/list_changed"]
            recorder.methods.clear()
            await call(client, "disable_tools", groups=["ops"])
            assert recorder.methods == ["notifications/tools/list_changed"]

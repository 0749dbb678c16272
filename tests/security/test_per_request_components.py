"""Components a provider lists per caller shape nothing another client gets (both eras).

A provider may list by who asks (a proxy forwarding each client's token does). Marked with
``Catalog(per_request=...)``, such components count in no search statistics and are
announced to nobody, as a mounted server's: a client's search ranks its own tools the same
whatever another client's token lists, and another client's first listing sends it no
``list_changed``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.server.dependencies import get_access_token
from fastmcp.server.providers import Provider
from fastmcp.tools import Tool

from fastmcp_filtering import Catalog, add_filtering
from fastmcp_filtering.client import list_tools

from .._principals import PrincipalByClientName, as_principal
from .._support.recorder import Recorder
from ..conftest import ERAS


def _tool(name: str, description: str, params: dict[str, str]) -> Tool:
    schema = {
        "type": "object",
        "properties": {p: {"type": "string", "description": d} for p, d in params.items()},
    }
    return Tool.from_function(lambda: "ok", name=name, description=description).model_copy(
        update={"parameters": schema}
    )


# The reader's two tools match "region", one by its parameter; the admin's dozen all have a
# "region" parameter: counted, it would be boilerplate and count for nothing in the reader's.
LISTED = {
    "reader": [
        _tool("alpha", "Look things up", {"region": "the region to forecast"}),
        _tool("beta", "Forecast region data quickly", {}),
    ],
    "admin": [
        _tool(f"admin_tool_{i}", f"Admin tool {i}", {"region": "a region"}) for i in range(12)
    ],
}


class PerCaller(Provider):
    """Lists the tools of the caller's token (``LISTED``), nothing to anyone else."""

    async def _list_tools(self) -> Sequence[Tool]:
        token = get_access_token()
        return LISTED.get(token.client_id if token is not None else "", [])


def per_caller_server(per_request: Any = lambda c: c.name != "weather") -> FastMCP:
    mcp = FastMCP("per-caller")
    mcp.add_middleware(PrincipalByClientName())
    mcp.tool(lambda: "sunny", name="weather")
    mcp.add_provider(PerCaller())
    add_filtering(mcp, catalog=Catalog(per_request=per_request))
    return mcp


async def found(client: Client[Any]) -> tuple[list[str], list[str]]:
    """What ``search_tools`` and a ``query`` listing rank for "region", best first."""
    searched = await client.call_tool("search_tools", {"query": "region"})
    assert searched.structured_content is not None
    queried = await list_tools(client, query="region")
    return [t["name"] for t in searched.structured_content["tools"]], [
        t.name for t in queried.tools
    ]


class TestSearch:
    async def test_another_callers_tools_move_no_score(self, era: str) -> None:
        mcp = per_caller_server()
        async with (
            Client(mcp, **ERAS[era], **as_principal("reader")) as reader,
            Client(mcp, **ERAS[era], **as_principal("admin")) as admin,
        ):
            before = await found(reader)
            await admin.call_tool("search_tools", {"query": "tool"})
            await list_tools(admin, query="region")
            after = await found(reader)
        assert sorted(before[0]) == ["alpha", "beta"]
        assert after == before

    async def test_unmarked_they_would_have_moved_it(self, era: str) -> None:
        """The same server without ``per_request``: the admin's parameters change the
        reader's results (what the mark prevents)."""
        mcp = per_caller_server(per_request=None)
        async with (
            Client(mcp, **ERAS[era], **as_principal("reader")) as reader,
            Client(mcp, **ERAS[era], **as_principal("admin")) as admin,
        ):
            before = await found(reader)
            await admin.call_tool("search_tools", {"query": "tool"})
            after = await found(reader)
        assert after != before


class TestNotifications:
    @pytest.mark.parametrize(
        "per_request",
        [lambda c: c.name != "weather", lambda c: 1 / 0],
        ids=["marked", "a failing mark counts as marked"],
    )
    async def test_another_callers_first_listing_is_announced_to_nobody(
        self, per_request: Any
    ) -> None:
        mcp = per_caller_server(per_request)
        heard = Recorder()
        async with (
            Client(mcp, **ERAS["legacy"], **as_principal("reader"), message_handler=heard) as r,
            Client(mcp, **ERAS["legacy"], **as_principal("admin")) as admin,
        ):
            before = sorted(t.name for t in await r.list_tools())
            await asyncio.sleep(0.05)
            heard.methods.clear()
            await admin.list_tools()
            await asyncio.sleep(0.05)
            after = sorted(t.name for t in await r.list_tools())
        assert before == after
        assert heard.methods == []


class TestConstruction:
    @pytest.mark.parametrize(
        "marks",
        [pytest.param("mine_*", id="a pattern"), pytest.param(Tool, id="a class, for isinstance")],
    )
    def test_per_request_must_be_a_plain_function(self, marks: Any) -> None:
        with pytest.raises(ValueError, match=r"per_request must be a plain function of a"):
            Catalog(per_request=marks)

    def test_an_async_mark_is_refused_it_would_mark_everything(self) -> None:
        async def marks(component: Any) -> bool:
            return False

        class Marks:
            async def __call__(self, component: Any) -> bool:
                return False

        for asynchronous in (marks, Marks()):
            with pytest.raises(ValueError, match=r"such as lambda c: isinstance\(c, TenantTool\)"):
                Catalog(per_request=asynchronous)

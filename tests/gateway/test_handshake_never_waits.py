"""A silent upstream holds no handshake, and no listing that can do without it.

With ``on_upstream_error = "warn"``, an upstream that never answers (or answers late) costs a
client's handshake and its listings ``SHORT_WAIT`` at most, not its ``connect_timeout`` (30 s
by default): the others are served meanwhile, and the late upstream's listing and
instructions, still on their way, are kept when they come.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import FastMCPTransport
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.gateway import proxy as proxy_module
from fastmcp_filtering.gateway.cli import check
from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.proxy import _build, build_proxy
from fastmcp_filtering.gateway.upstreams import provider as upstreams_module
from fastmcp_filtering.gateway.upstreams.failures import Garbled
from fastmcp_filtering.gateway.upstreams.listings import BackingOff, Listings

from ..conftest import ERAS

MISBEHAVING = Path(__file__).parent / "misbehaving.py"
WELL_UNDER = 15.0
"""Seconds a session may take here: half the 30 s ``connect_timeout`` it must not wait."""


class _Late(FastMCPTransport):
    """An in-memory upstream that does not answer until ``opened`` is set."""

    opened: asyncio.Event

    @asynccontextmanager
    async def connect_session(self, **session_kwargs: Any) -> AsyncIterator[ClientSession]:
        await self.opened.wait()
        async with super().connect_session(**session_kwargs) as session:
            yield session


def servers() -> dict[str, FastMCP]:
    late = FastMCP("late", instructions="Ask me late.")
    late.tool(lambda: "here", name="echo")
    steady = FastMCP("steady", instructions="Ask me now.")
    steady.tool(lambda: "pong", name="ping")
    return {"late": late, "steady": steady}


def gateway(monkeypatch: pytest.MonkeyPatch, opened: asyncio.Event) -> FastMCP:
    """A gateway of "late" (namespace l; answers once ``opened``) and "steady" (s), warn."""
    reached = servers()

    def transport(upstream: Any, **_: Any) -> Any:
        if upstream.label == "late":
            late = _Late(reached["late"])
            late.opened = opened
            return late
        return FastMCPTransport(reached[upstream.label])

    monkeypatch.setattr(proxy_module, "upstream_transport", transport)
    config = {
        "on_upstream_error": "warn",
        "upstreams": [
            {"name": "late", "namespace": "l", "command": "x"},
            {"name": "steady", "namespace": "s", "command": "x"},
        ],
        "search": {"enabled": False},
    }
    return build_proxy(FilteringConfig.model_validate(config))


class TestASilentUpstream:
    async def test_the_handshake_and_listings_go_on_without_it(
        self, era: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # 1.5 s: at 0.2 s a loaded machine's steady (in-memory) upstream missed it too.
        monkeypatch.setattr(upstreams_module, "SHORT_WAIT", 1.5)
        opened = asyncio.Event()
        async with (
            asyncio.timeout(WELL_UNDER),
            Client(gateway(monkeypatch, opened), **ERAS[era]) as client,
        ):
            assert "Ask me now." in (client.instructions or "")
            assert "Ask me late." not in (client.instructions or "")
            assert {t.name for t in await client.list_tools()} == {"s_ping"}
            assert (await client.call_tool("s_ping", {})).content[0].text == "pong"  # type: ignore[union-attr]

    async def test_its_late_listing_is_kept_when_it_comes(
        self, era: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # 1.5 s: at 0.2 s a loaded machine's steady (in-memory) upstream missed it too.
        monkeypatch.setattr(upstreams_module, "SHORT_WAIT", 1.5)
        opened = asyncio.Event()
        proxy = gateway(monkeypatch, opened)
        async with asyncio.timeout(WELL_UNDER), Client(proxy, **ERAS[era]) as client:
            assert {t.name for t in await client.list_tools()} == {"s_ping"}
            opened.set()
            # The listing begun before goes on, shared: waited for now, it is what comes.
            monkeypatch.setattr(upstreams_module, "SHORT_WAIT", WELL_UNDER)
            assert {t.name for t in await client.list_tools()} == {"s_ping", "l_echo"}
            assert (await client.call_tool("l_echo", {})).content[0].text == "here"  # type: ignore[union-attr]
        async with asyncio.timeout(WELL_UNDER), Client(proxy, **ERAS[era]) as later:
            assert "Ask me late." in (later.instructions or "")

    async def test_with_raise_a_listing_still_waits_for_it(
        self, era: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without it the listing cannot be answered: it waits its whole bound, then says so
        (an empty listing would tell the client the upstream has no tools)."""
        monkeypatch.setattr(upstreams_module, "SHORT_WAIT", 0.0)
        reached = servers()

        def transport(upstream: Any, **_: Any) -> Any:
            late = _Late(reached["late"])
            late.opened = asyncio.Event()  # never set
            return late

        monkeypatch.setattr(proxy_module, "upstream_transport", transport)
        bounds = {"connect_timeout": 0.5, "list_timeout": 0.5}
        upstream = {"name": "late", "command": "x", **bounds}
        config = {"upstreams": [upstream], "search": {"enabled": False}}
        proxy = build_proxy(FilteringConfig.model_validate(config))
        async with asyncio.timeout(WELL_UNDER), Client(proxy, **ERAS[era]) as client:
            with pytest.raises(MCPError, match=r"^upstream 'late' is unavailable: did not answer"):
                await client.list_tools()


@pytest.mark.slow
class TestASilentProcess:
    """``misbehaving.py --hang initialize`` beside a healthy one, the default timeouts."""

    async def test_the_first_session_is_served_well_within_connect_timeout(self, era: str) -> None:
        def upstream(*args: str, **options: Any) -> dict[str, Any]:
            return {"command": sys.executable, "args": [str(MISBEHAVING), *args], **options}

        config = FilteringConfig.model_validate(
            {
                "on_upstream_error": "warn",
                "upstreams": [
                    upstream("--hang", "initialize", name="silent", namespace="s"),
                    upstream(name="healthy", namespace="ok"),
                ],
                "search": {"enabled": False},
            }
        )
        proxy = _build(config)
        try:
            async with asyncio.timeout(WELL_UNDER), Client(proxy.server, **ERAS[era]) as client:
                assert {t.name for t in await client.list_tools()} == {"ok_echo"}
        finally:
            await proxy.close()


class TestAParseFailureIsAnAnswer:
    async def test_a_listing_on_its_way_fails_at_once(self) -> None:
        """The SDK hands the transport what it could not parse; the request it answered
        would never complete: the listing waiting for it fails then, not at its bound."""
        listings = Listings(seconds=60.0)
        never: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        waiting = asyncio.ensure_future(
            listings.get("tool", lambda: never, give_up_after=WELL_UNDER)
        )
        await asyncio.sleep(0.05)
        listings.garbled.heard(ValueError("Invalid JSON: recursion limit exceeded"))
        async with asyncio.timeout(1):
            with pytest.raises(Garbled, match=r"cannot parse \(Invalid JSON: recursion limit"):
                await waiting
        assert never.cancelled()
        # Broken, not slow: backed off as a silent upstream is.
        with pytest.raises(BackingOff):
            await listings.get("tool", lambda: never, give_up_after=WELL_UNDER)


@pytest.mark.slow
class TestAParseFailingProcess:
    async def test_a_lone_upstream_fails_the_listing_at_once(self, era: str) -> None:
        """``misbehaving.py --deep 110`` lists a schema its SDK cannot parse; default timeouts
        (the listing waited 61 s for it)."""
        deep = {
            "name": "deep",
            "command": sys.executable,
            "args": [str(MISBEHAVING), "--deep", "110"],
        }
        proxy = _build(FilteringConfig.model_validate({"upstreams": [deep]}))
        told = r"^upstream 'deep' is unavailable: sent a message its MCP SDK cannot parse \(Invalid"
        try:
            async with asyncio.timeout(WELL_UNDER), Client(proxy.server, **ERAS[era]) as client:
                with pytest.raises(MCPError, match=told):
                    await client.list_tools()
        finally:
            await proxy.close()


class TestCheckHearsEveryUpstream:
    async def test_check_waits_for_a_slow_upstream_its_whole_bound(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``check`` (and ``init``, and the audit at startup) must hear every upstream: one
        still starting is not an upstream without tools."""
        monkeypatch.setattr(upstreams_module, "SHORT_WAIT", 0.0)
        opened = asyncio.Event()
        config = FilteringConfig.model_validate(
            {
                "on_upstream_error": "warn",
                "upstreams": [
                    {"name": "late", "namespace": "l", "command": "x"},
                    {"name": "steady", "namespace": "s", "command": "x"},
                ],
            }
        )
        gateway(monkeypatch, opened)  # reaches the upstreams in memory
        asyncio.get_running_loop().call_later(0.3, opened.set)
        async with asyncio.timeout(WELL_UNDER):
            report = await check(config)
        assert report.tools == ["l_echo", "s_ping"]

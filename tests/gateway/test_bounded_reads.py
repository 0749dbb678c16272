"""``call_timeout`` bounds a proxied prompt's get and resource's read, as it bounds a tool call.

In-memory upstreams whose prompt, resource and template never answer; clients of both eras.
A read that times out is a JSON-RPC internal error naming the upstream (to a client that may
see it, and to nobody else), and the gateway answers the next request. Nothing is timed: the
error says the bound; ``BOUND`` only turns a hang into a failure.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client, FastMCP
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.proxy import build_proxy

from .._principals import PrincipalByClientName, as_principal
from .._support.backoff import gateway_logs, in_memory
from .._support.reads import READS
from ..conftest import ERAS

BOUND = 20.0
"""Seconds a whole session may take: without a bound on reads, it would wait forever."""


async def never() -> str:
    """What a hung upstream answers: nothing, ever."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def closed() -> str:
    """What the MCP SDK raises when the upstream's connection closes before its answer."""
    raise MCPError(code=mt.CONNECTION_CLOSED, message="Connection closed")


def hung_upstream(*, prompt: bool = True, closes: bool = False) -> FastMCP:
    """An upstream with ``admin_echo``, and a resource, a template and (``prompt``) a prompt
    that never answer (``closes``: whose connection closes before they answer)."""
    server = FastMCP("slow")
    server.tool(lambda: "ok", name="admin_echo")
    answer = closed if closes else never

    async def notes(key: str) -> str:
        return await answer()

    server.resource("memo://note")(answer)
    server.resource("memo://notes/{key}")(notes)
    if prompt:
        server.prompt(name="greet")(answer)
    return server


def gateway(monkeypatch: pytest.MonkeyPatch, *, call_timeout: float = 0.2, **extra: Any) -> FastMCP:
    """A gateway in front of ``hung_upstream`` ("slow", ``call_timeout`` 0.2 s) and "steady"."""
    steady = FastMCP("steady")

    @steady.tool
    def ping() -> str:
        return "pong"

    upstreams = {"slow": hung_upstream(**extra.pop("upstream", {})), "steady": steady}
    in_memory(monkeypatch, upstreams)
    config = FilteringConfig.model_validate(
        {
            "upstreams": [
                {"name": "slow", "namespace": "s", "command": "x", "call_timeout": call_timeout},
                {"name": "steady", "namespace": "ok", "command": "x"},
            ],
            "search": {"enabled": False},
            **extra,
        }
    )
    return build_proxy(config)


class TestReadTimeouts:
    @pytest.mark.parametrize("read", list(READS))
    async def test_a_hung_read_fails_naming_the_upstream_and_the_next_is_answered(
        self,
        era: str,
        read: str,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        method, subject, request = READS[read]
        caplog.set_level(logging.WARNING, logger="fastmcp_filtering")
        async with (
            asyncio.timeout(BOUND),
            Client(gateway(monkeypatch), **ERAS[era]) as client,
        ):
            with pytest.raises(MCPError) as caught:
                await request(client)
            told = f"upstream 'slow' did not answer {method} within 0.2 s (call_timeout)"
            assert caught.value.error.code == mt.INTERNAL_ERROR
            assert caught.value.error.message == told
            # The gateway answers the next request: another upstream's call, this one's listings.
            assert (await client.call_tool("ok_ping", {})).data == "pong"
            assert {"s_admin_echo", "ok_ping"} <= {t.name for t in await client.list_tools()}
            assert [str(r.uri) for r in await client.list_resources()] == ["memo://s/note"]
        assert [line for line in gateway_logs(caplog) if "did not answer" in line] == [
            f"{told} ({subject}); the client got an error"
        ]


class TestHiddenMeansHidden:
    """The upstream's tools are all in a group only ``github:admin`` tokens may use."""

    @pytest.mark.parametrize("read", ["resource", "template"])
    @pytest.mark.parametrize(
        ("closes", "admin_told", "reader_told"),
        [
            pytest.param(
                False,
                "did not answer resources/read within 0.2 s (call_timeout)",
                "did not answer resources/read in time",
                id="timed out",
            ),
            pytest.param(
                True,
                "failed resources/read (its connection closed before an answer)",
                "failed resources/read",
                id="connection closed",
            ),
        ],
    )
    async def test_only_a_client_that_may_see_the_upstream_is_told_its_name(
        self,
        era: str,
        read: str,
        closes: bool,
        admin_told: str,
        reader_told: str,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        *_, request = READS[read]
        admin_only = {"name": "admin", "tools": ["s_*"], "access": {"scopes": ["github:admin"]}}
        # No prompt: a prompt is in no group, so every client would see the upstream.
        upstream = {"prompt": False, "closes": closes}
        # A connection that closes fails at once: a long bound keeps a loaded machine's slow
        # read from timing out first (the timed-out case needs the short one).
        bound = 10.0 if closes else 0.2
        proxy = gateway(monkeypatch, groups=[admin_only], upstream=upstream, call_timeout=bound)
        # Outermost, before the filtering stack: stands in for the verifier [auth] configures.
        proxy.middleware.insert(0, PrincipalByClientName())
        async with (
            asyncio.timeout(BOUND),
            Client(proxy, **ERAS[era], **as_principal("admin")) as admin,
            Client(proxy, **ERAS[era], **as_principal("reader")) as reader,
        ):
            assert "s_admin_echo" in {t.name for t in await admin.list_tools()}
            assert "s_admin_echo" not in {t.name for t in await reader.list_tools()}
            with pytest.raises(MCPError) as caught:
                await request(admin)
            assert caught.value.error.message == f"upstream 'slow' {admin_told}"
            with pytest.raises(MCPError) as caught:
                await request(reader)
            assert caught.value.error.code == mt.INTERNAL_ERROR
            assert caught.value.error.message == (
                f"a server behind this gateway {reader_told}; try again later"
            )
            assert (await reader.call_tool("ok_ping", {})).data == "pong"

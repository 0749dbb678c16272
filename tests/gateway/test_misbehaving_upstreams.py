"""The proxy against upstreams that misbehave on purpose: nothing hangs, grows or leaks.

Each upstream is ``misbehaving.py`` run as a real stdio subprocess, told what to do
wrong: never answer a method, answer under the wrong id, list a schema nested past
what a JSON parser reads, rename its tools on every listing, return an invalid
result. Timeouts are set to 1 s; every bound asserted is 20 s or more, so a busy
machine never fails a test.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.proxy import ConfigAnnotations, _build, build_proxy

from .._support.reads import READS
from .._support.upstream_scripts import MISBEHAVING
from ..conftest import ERAS

QUICK = {"connect_timeout": 1, "list_timeout": 1, "call_timeout": 1}
BOUND = 20.0
"""Seconds any request may take against an upstream configured with 1 s timeouts."""


def upstream(*args: str, **options: Any) -> dict[str, Any]:
    """``misbehaving.py`` as a stdio upstream, with 1 s timeouts unless ``options`` say."""
    return {"command": sys.executable, "args": [str(MISBEHAVING), *args], **QUICK, **options}


def config(*upstreams: dict[str, Any], **extra: Any) -> FilteringConfig:
    return FilteringConfig.model_validate({"upstreams": list(upstreams), **extra})


@asynccontextmanager
async def bounded_client(cfg: FilteringConfig, era: str) -> AsyncIterator[Client[Any]]:
    """A client of a proxy of ``cfg``; the whole session must end within ``BOUND`` seconds."""
    async with asyncio.timeout(BOUND), Client(build_proxy(cfg), **ERAS[era]) as client:
        yield client


async def listed(cfg: FilteringConfig, era: str) -> set[str]:
    """The tool names a client of a proxy of ``cfg`` is listed."""
    async with bounded_client(cfg, era) as client:
        return {t.name for t in await client.list_tools()}


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


HEALTHY = upstream(name="healthy", namespace="ok")


@pytest.mark.slow
class TestTimeouts:
    """An upstream that never answers costs each request its configured time, no more."""

    @pytest.mark.parametrize("method", ["initialize", "tools/list"])
    async def test_a_silent_upstream_leaves_the_others_served(
        self, era: str, method: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        silent = upstream("--hang", method, name="silent", namespace="s")
        async with bounded_client(config(silent, HEALTHY), era) as client:
            names = {t.name for t in await client.list_tools()}
            assert "ok_echo" in names
            assert not [n for n in names if n.startswith("s_")]
            result = await client.call_tool("ok_echo", {})
            assert "echo" in result.content[0].text  # type: ignore[union-attr]
        assert any(
            "upstream 'silent' is unavailable: did not answer" in w for w in warnings_of(caplog)
        )

    @pytest.mark.parametrize("fault", ["--hang", "--wrong-id"])
    async def test_an_unanswered_call_fails_naming_the_upstream(self, era: str, fault: str) -> None:
        slow = upstream(fault, "tools/call", name="slowpoke", namespace="s")
        async with bounded_client(config(slow, HEALTHY), era) as client:
            started = time.monotonic()
            with pytest.raises(ToolError, match=r"upstream 'slowpoke' did not answer tools/call"):
                await client.call_tool("s_echo", {})
            assert time.monotonic() - started < BOUND
            # The session is still usable, for this upstream too.
            assert {"s_echo", "ok_echo"} <= {t.name for t in await client.list_tools()}

    @pytest.mark.parametrize("read", list(READS))
    async def test_an_unanswered_read_fails_naming_the_upstream(self, era: str, read: str) -> None:
        method, _, request = READS[read]
        hangs = ("--hang", "prompts/get", "--hang", "resources/read")
        slow = upstream("--readable", *hangs, name="slowpoke", namespace="s", call_timeout=0.2)
        async with bounded_client(config(slow, HEALTHY), era) as client:
            with pytest.raises(MCPError) as caught:
                await request(client)
            assert caught.value.error.code == mt.INTERNAL_ERROR
            told = f"upstream 'slowpoke' did not answer {method} within 0.2 s (call_timeout)"
            assert caught.value.error.message == told
            # The gateway still answers: the other upstream's call, this upstream's listings.
            assert not (await client.call_tool("ok_echo", {})).is_error
            assert [p.name for p in await client.list_prompts()] == ["s_greet"]
            assert [str(r.uri) for r in await client.list_resources()] == ["memo://s/note"]

    async def test_a_lone_silent_upstream_fails_listings_naming_it(self, era: str) -> None:
        silent = upstream("--hang", "tools/list", name="silent")
        async with bounded_client(config(silent), era) as client:
            with pytest.raises(Exception, match=r"upstream 'silent' is unavailable: did not"):
                await client.list_tools()

    async def test_an_invalid_result_is_the_upstreams_error_not_the_clients(self, era: str) -> None:
        broken = upstream("--bad-result", name="broken", namespace="b")
        async with bounded_client(config(broken), era) as client:
            with pytest.raises(ToolError, match=r"upstream 'broken' failed the call") as caught:
                await client.call_tool("b_echo", {})
            assert "-32602" not in str(caught.value)
            assert "Invalid" not in str(caught.value)


@pytest.mark.slow
class TestUnservableTools:
    """A tool a client could not read or name is left out, naming its upstream."""

    async def test_a_schema_too_deep_to_parse_cannot_hang_anyone(
        self, era: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        deep = upstream("--deep", "110", name="deep", namespace="d")
        async with bounded_client(config(deep, HEALTHY), era) as client:
            for _ in range(2):
                names = {t.name for t in await client.list_tools()}
                assert "ok_echo" in names
                assert not [n for n in names if n.startswith("d_")]
            found = await client.call_tool("search_tools", {"query": "echo"})
            assert "ok_echo" in found.content[0].text  # type: ignore[union-attr]
        assert any("upstream 'deep' is unavailable" in w for w in warnings_of(caplog))

    async def test_a_deep_schema_that_parses_is_left_out(
        self, era: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        deep = upstream("--deep", "70", name="deep", namespace="d")
        assert await listed(config(deep), era) == {"d_echo", "search_tools"}
        assert any(
            "upstream 'deep' lists a tool the proxy does not serve: its schema nests deeper" in w
            for w in warnings_of(caplog)
        )

    async def test_names_breaking_mcp_rules_are_left_out(
        self, era: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        odd = upstream("--tools", "fine,has space,é", name="odd", namespace="o")
        assert await listed(config(odd), era) == {"o_fine", "search_tools"}
        assert len([w for w in warnings_of(caplog) if "naming rules" in w]) == 2

    async def test_an_upstream_cannot_take_names_in_anothers_namespace(self, era: str) -> None:
        evil = upstream("--tools", "search_x_open,mine", name="evil")
        victim = upstream("--tools", "open", name="victim", namespace="search_x")
        async with bounded_client(config(evil, victim), era) as client:
            names = {t.name for t in await client.list_tools()}
            assert {"mine", "search_x_open"} <= names
            result = await client.call_tool("search_x_open", {})
        assert '"tool": "open"' in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.slow
class TestBoundedMemory:
    """An upstream that renames every tool on every listing grows nothing in the proxy."""

    async def test_renaming_churn_keeps_the_annotation_cache_bounded(self) -> None:
        tools = ",".join(f"t{i}" for i in range(50))
        churn = upstream("--tools", tools, "--rename", name="churn", list_ttl=0)
        proxy = _build(config(churn))
        annotations = next(t for t in proxy.server.transforms if isinstance(t, ConfigAnnotations))
        async with asyncio.timeout(60), Client(proxy.server) as client:
            for _ in range(20):
                assert len(await client.list_tools()) == 51
                assert len(annotations._last) <= 51 + 2  # this listing's tools (+ lookups)


class TestCacheBound:
    """The same bound, in memory: a listing forgets the names the previous one had."""

    async def test_a_listing_forgets_names_no_longer_listed(self) -> None:
        from fastmcp.tools.base import Tool

        annotations = ConfigAnnotations(tags={"t": ["*"]})
        for round_ in range(30):
            listed = [Tool(name=f"n{round_}_{i}", parameters={}) for i in range(10)]
            await annotations.list_tools(listed)
        assert len(annotations._last) == 10


@pytest.mark.slow
class TestNoSecretsInErrors:
    """An unnamed upstream with a key in its arguments: no client error or log line shows it."""

    SECRET = "KEY-0123456789-SECRET"

    async def test_client_errors_and_logs_name_the_command_only(
        self, era: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        keyed = upstream("--api-key", self.SECRET, "--hang", "tools/list")
        async with bounded_client(config(keyed), era) as client:
            named = r"upstream 'python[\d.]*' is unavailable"
            with pytest.raises(Exception, match=named) as caught:
                await client.list_tools()
        shown = [str(caught.value), *(r.getMessage() for r in caplog.records)]
        assert not [line for line in shown if self.SECRET in line or str(MISBEHAVING) in line]

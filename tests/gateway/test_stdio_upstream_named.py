"""A stdio upstream the operator can follow: the exit of one that was serving is logged once,
by name, with its restart; its stderr reaches the log prefixed by its name, and an upstream
that floods it is cut to ``LINES_PER_SECOND`` after a burst, saying how many were left out.

Each upstream is ``misbehaving.py`` run as a real subprocess.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.proxy import build_proxy
from fastmcp_filtering.gateway.upstreams import stdio as stdio_upstream

from ..conftest import ERAS

MISBEHAVING = Path(__file__).parent / "misbehaving.py"
BOUND = 30.0


def upstream(*args: str, **options: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(MISBEHAVING), *args], **options}


def config(*upstreams: dict[str, Any]) -> FilteringConfig:
    return FilteringConfig.model_validate(
        {"on_upstream_error": "warn", "upstreams": list(upstreams), "search": {"enabled": False}}
    )


@pytest.mark.slow
class TestExitAndRestart:
    async def test_each_is_logged_once_by_name(
        self, era: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        crashy = upstream("--crash-on-call", name="crashy", namespace="c")
        healthy = upstream(name="healthy", namespace="ok")
        caplog.set_level(logging.WARNING, logger="fastmcp_filtering")
        async with (
            asyncio.timeout(BOUND),
            Client(build_proxy(config(crashy, healthy)), **ERAS[era]) as client,
        ):
            assert "c_echo" in {t.name for t in await client.list_tools()}
            with pytest.raises(ToolError):
                await client.call_tool("c_echo", {})
            # The next requests that need it start it again: said once, not per request.
            for _ in range(3):
                await client.list_prompts()
                await client.list_tools()
            await client.call_tool("ok_echo", {})
            with pytest.raises(ToolError):
                await client.call_tool("c_echo", {})
        lines = [r.getMessage() for r in caplog.records]
        # The first exit, found by the next request; the second found by none (the session
        # ended first).
        exited = "upstream 'crashy' exited (its process ended); starting it again"
        assert lines.count(exited) == 1
        assert not [line for line in lines if "'healthy' exited" in line]

    async def test_a_process_that_never_served_is_not_a_line_per_start(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Each start exits at once: the failure is logged once, as any upstream's is."""
        caplog.set_level(logging.WARNING, logger="fastmcp_filtering")
        gone = upstream("--exit", name="gone", namespace="g", backoff=0)
        healthy = upstream(name="healthy", namespace="ok")
        async with asyncio.timeout(BOUND), Client(build_proxy(config(gone, healthy))) as client:
            for _ in range(3):
                assert {t.name for t in await client.list_tools()} == {"ok_echo"}
        lines = [r.getMessage() for r in caplog.records if "'gone'" in r.getMessage()]
        assert not [line for line in lines if "exited" in line]
        assert len(lines) == 1
        assert lines[0].startswith("upstream 'gone' is unavailable: ")


@pytest.mark.slow
class TestStderr:
    async def test_each_line_is_prefixed_by_its_upstream(self, tmp_path: Path) -> None:
        log = tmp_path / "upstreams.log"
        first = upstream("--stderr", "2", name="first", namespace="a")
        second = upstream("--stderr", "1", name="second", namespace="b")
        async with (
            asyncio.timeout(BOUND),
            Client(build_proxy(config(first, second), upstream_log=log)) as client,
        ):
            await client.list_tools()
        # Drained when the gateway closed its upstreams: init reads its log just then.
        text = log.read_text(encoding="utf-8")
        assert sorted(text.splitlines()) == [
            "[first] noise 0",
            "[first] noise 1",
            "[second] noise 0",
        ]

    async def test_a_flood_is_cut_saying_how_much(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(stdio_upstream, "_BURST", 10.0)
        monkeypatch.setattr(stdio_upstream, "LINES_PER_SECOND", 0.001)
        log = tmp_path / "upstreams.log"
        flood = upstream("--stderr", "500", name="flood")
        async with (
            asyncio.timeout(BOUND),
            Client(build_proxy(config(flood), upstream_log=log)) as client,
        ):
            await client.list_tools()
        text = log.read_text(encoding="utf-8")
        lines = text.splitlines()
        assert lines[:10] == [f"[flood] noise {n}" for n in range(10)]
        assert lines[10:] == ["[flood] ... 490 more lines left out"]

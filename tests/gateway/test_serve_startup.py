"""What ``serve`` says at startup about what its configuration cannot serve as written.

Over HTTP without ``[auth]`` a 2026-07-28 client has no identity, so progressive disclosure
and concerns keep nothing for it between requests: ``serve --http`` logs that once. A group
naming what no upstream lists is logged once the upstreams have been listed, and an agent that
enables such a group is told it holds nothing.
"""

from __future__ import annotations

import asyncio
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP

from fastmcp_filtering.gateway.audit import audit_groups, logged_audit
from fastmcp_filtering.gateway.cli import _unmet_needs
from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.proxy import _build

from .._support.cli import CLI, SRC, serve_http
from .._support.standin import EXAMPLE_CONFIG
from .._support.upstream_scripts import MISBEHAVING
from ..conftest import ERAS

AUTH = {"type": "static", "tokens": [{"token": "t", "client_id": "a"}]}


def config(**extra: Any) -> FilteringConfig:
    upstreams = [{"command": sys.executable}]
    groups = [{"name": "g", "tools": ["*"]}]
    return FilteringConfig.model_validate({"upstreams": upstreams, "groups": groups, **extra})


class TestUnmetNeeds:
    def test_progressive_over_http_without_auth_is_told(self) -> None:
        line = _unmet_needs(config(progressive={}), http=True)
        assert line == (
            "over HTTP without [auth], 2026-07-28 (stateless) clients keep no enabled groups "
            "(each request starts from the initial ones, and reach other groups' tools through "
            "search_tools and by exact name); 2025-11-25 clients keep them per session. "
            "Add [auth] to keep them per client"
        )

    def test_concerns_too(self) -> None:
        concerns = [{"name": "risk", "values": ["low", "high"]}]
        line = _unmet_needs(config(progressive={}, concerns=concerns), http=True)
        assert line is not None
        assert "keep no enabled groups and no stated concerns" in line

    @pytest.mark.parametrize(
        ("extra", "http"),
        [({"progressive": {}}, False), ({"progressive": {}, "auth": AUTH}, True), ({}, True)],
        ids=["stdio", "auth", "nothing-stateful"],
    )
    def test_nothing_is_said_when_everything_works(self, extra: dict[str, Any], http: bool) -> None:
        assert _unmet_needs(config(**extra), http=http) is None


@pytest.mark.slow
def test_serve_http_logs_it_once() -> None:
    with serve_http(EXAMPLE_CONFIG, "--quiet") as (_url, process):
        pass
    assert process.stderr is not None
    log = process.stderr.read().decode()
    assert log.count("over HTTP without [auth], 2026-07-28 (stateless) clients keep no") == 1


def audited(*, clock: bool, **extra: Any) -> FilteringConfig:
    groups = [{"name": "tools", "tools": ["echo", "clock_now" if clock else "ping"]}]
    if clock:
        groups.append({"name": "clock", "tools": ["clock"]})
    upstream = {"command": sys.executable, "args": [str(MISBEHAVING), "--tools", "echo,ping"]}
    return FilteringConfig.model_validate(
        {"upstreams": [upstream], "groups": groups, "search": {"enabled": False}, **extra}
    )


async def audit_lines(caplog: pytest.LogCaptureFixture, count: int) -> list[str]:
    """The audit's warnings (``group ...``) once ``count`` of them are logged (10 s at most)."""
    said: list[str] = []
    for _ in range(200):
        said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("group ")]
        if len(said) >= count:
            return said
        await asyncio.sleep(0.05)
    return said


class TestGroupsAudit:
    """Groups naming what no upstream lists: ``check`` fails, ``serve`` logs, the same words."""

    async def test_findings_name_the_empty_group_and_the_dead_pattern(self) -> None:
        server = FastMCP("upstream")
        server.tool(name="echo")(lambda: "echo")
        found = await audit_groups(server, audited(clock=True).catalog(), {})
        assert found.errors == [
            "group 'clock' matches no tool, prompt, resource or template ('clock'): its members "
            "cannot be listed or enabled; fix its tools patterns against the names "
            "`fastmcp-filtering check` lists, or remove the group"
        ]
        assert found.warnings == [
            "group 'tools' pattern 'clock_now' matches no tool, prompt, resource or template; "
            "fix or remove it"
        ]

    async def test_nothing_to_say_about_a_sound_configuration(self) -> None:
        server = FastMCP("upstream")
        for name in ("echo", "ping"):
            server.tool(name=name)(lambda: "ok")
        found = await audit_groups(server, audited(clock=False).catalog(), {})
        assert (found.errors, found.warnings) == ([], [])

    @pytest.mark.slow
    def test_serve_logs_them_once_it_has_listed(self, tmp_path: Path) -> None:
        path = tmp_path / "proxy.json"
        path.write_text(audited(clock=True).model_dump_json(exclude_defaults=True))
        process = subprocess.Popen(
            [*CLI, "serve", str(path), "--quiet"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, **SRC},
        )
        assert process.stderr is not None
        assert process.stdin is not None
        said = b""
        deadline = time.monotonic() + 60
        # Raw reads: a buffered readline could hold the second line where select cannot see it.
        while said.count(b"\n") < 2 and time.monotonic() < deadline:
            ready, _, _ = select.select([process.stderr], [], [], 1)
            if ready:
                said += os.read(process.stderr.fileno(), 65536)
        process.stdin.close()
        process.wait(timeout=30)
        lines = said.decode().splitlines(keepends=True)
        assert lines == [
            "WARNING fastmcp-filtering: group 'clock' matches no tool, prompt, resource or "
            "template ('clock'): its members cannot be listed or enabled; fix its tools patterns "
            "against the names `fastmcp-filtering check` lists, or remove the group\n",
            "WARNING fastmcp-filtering: group 'tools' pattern 'clock_now' matches no tool, "
            "prompt, resource or template; fix or remove it\n",
        ]

    @pytest.mark.slow
    @pytest.mark.parametrize("era", list(ERAS))
    async def test_a_served_proxy_logs_once_and_tells_the_agent(
        self, era: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        # The proxy as serve builds it; two clients in turn start its lifespan twice.
        proxy = _build(audited(clock=True, progressive={"initial_groups": ["tools"]}), audit=True)
        replies: list[dict[str, Any] | None] = []
        with caplog.at_level("WARNING", logger="fastmcp_filtering"):
            for _ in range(2):
                async with Client(proxy.server, **ERAS[era]) as client:
                    for _ in range(3):
                        assert "echo" in {t.name for t in await client.list_tools()}
                    reply = await client.call_tool("enable_tools", {"groups": ["clock"]})
                    replies.append(reply.structured_content)
                    await audit_lines(caplog, 2)
                    # Time for an audit of this client's own (there must be none) to say it.
                    await asyncio.sleep(0.5)
            said = await audit_lines(caplog, 2)
        # Once the upstreams were listed, not once per request or per client.
        assert [line[:26] for line in said] == [
            "group 'clock' matches no t",
            "group 'tools' pattern 'clo",
        ]
        assert replies[0] == replies[1]
        assert replies[0] is not None
        assert (replies[0]["enabled"], replies[0]["errors"]) == (
            [],
            [
                "group 'clock' holds nothing you can use right now, so it was not enabled; "
                "try 'clock' again later"
            ],
        )

    async def test_not_while_an_upstream_is_down(self, caplog: pytest.LogCaptureFixture) -> None:
        server = FastMCP("upstream")
        server.tool(name="echo")(lambda: "echo")
        with caplog.at_level("WARNING", logger="fastmcp_filtering"):
            async with logged_audit(server, audited(clock=True).catalog(), {"weather": "down"}):
                await asyncio.sleep(0.5)
            assert [r.getMessage() for r in caplog.records] == []
            async with logged_audit(server, audited(clock=True).catalog(), {}):
                for _ in range(100):
                    await asyncio.sleep(0.05)
                    if len(caplog.records) == 2:
                        break
            assert [r.getMessage()[:16] for r in caplog.records] == [
                "group 'clock' ma",
                "group 'tools' pa",
            ]

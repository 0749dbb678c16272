"""Fifty concurrent sessions on the full-stack server: each sees exactly what its own state allows.

Every client (2025-11-25 era, so each has a session over streamable HTTP) enables
its own groups, states its own concern, filters and searches, and checks every
list and call against ``Expected``, computed from the server's declarations. A tool
another client enabled, or a concern another client set, showing up in a list or
being callable is a leak. The server's RSS is sampled throughout. The run is
bounded in time (``FASTMCP_FILTERING_LOAD_SECONDS``, 20 s by default); the larger
measurements live in ``bench/load.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastmcp import Client

from fastmcp_filtering.client import list_tools, update_concerns

from .._full_stack import (
    CATALOG_TOOLS,
    DESCRIPTIONS,
    GROUP_NAMES,
    MAX_RESULTS,
    PARENT,
    Expected,
    arguments,
    build_full_stack_server,
    full_stack_http_server,
    rss_kib,
)

# Fifty sessions over streamable HTTP for seconds on end.
pytestmark = pytest.mark.slow


CLIENTS = 50
# 40 s: at 20 s the "warm" third still held the caches filling for 50 clients in ~40 distinct
# states (2 to 4.6 KiB per request measured; 0.2 over 60 s, 0.6 to 0.7 over 40 s).
DURATION = float(os.environ.get("FASTMCP_FILTERING_LOAD_SECONDS", "40"))
RISKS: tuple[str | None, ...] = ("safe", "destructive", None)

MAX_GROWTH_PER_REQUEST_KIB = 4.0
"""Bound on the slope of the server's RSS per request served, once warm.

Measured on 2 cores: a correct server grows 0.2 to 1.7 KiB per request over such a run
(session state and caches still filling, allocator noise) and flattens out over longer
runs (RSS fell back below its warm level in a 90 s run). A server that keeps only the
JSON text of each tools/list reply grows ~15 KiB per request in this mix, one that keeps
the listed tools ~90 KiB. 4 KiB sits between the two with room on both sides.
"""


@dataclass
class Tally:
    """What all clients observed; every list is empty in a correct run."""

    requests: list[float] = field(default_factory=list)
    """Completion time of every request, to relate memory samples to the load."""
    errors: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    views: set[frozenset[str]] = field(default_factory=set)
    """Distinct visible sets clients had: proof the clients' states really differed."""


class Agent:
    """One client with a session; it knows what its own state lets it see."""

    def __init__(self, index: int, client: Client[Any], tally: Tally) -> None:
        self.index = index
        self.client = client
        self.tally = tally
        self.rng = random.Random(index)
        self.expected = Expected()
        # Each client prefers its own groups and its own concern.
        self.favourites = [GROUP_NAMES[(index + k) % len(GROUP_NAMES)] for k in range(3)]

    def compare(self, what: str, got: set[str], want: set[str]) -> None:
        if leaked := got - want:
            self.tally.leaks.append(f"client {self.index} {what}: {sorted(leaked)}")
        if lost := want - got:
            self.tally.missing.append(f"client {self.index} {what}: {sorted(lost)}")

    def done(self) -> None:
        self.tally.requests.append(time.monotonic())

    async def step(self) -> None:
        action = self.rng.choice(
            ["list", "list", "filter", "query", "search", "enable", "disable", "risk", "call"]
        )
        await getattr(self, f"do_{action}")()

    async def do_list(self) -> None:
        got = {t.name for t in await self.client.list_tools()}
        self.done()
        want = self.expected.visible()
        self.tally.views.add(frozenset(want))
        self.compare("tools/list", got, want)

    async def do_filter(self) -> None:
        groups = self.rng.sample(GROUP_NAMES, self.rng.randint(1, 3))
        tags = self.rng.choice([[], [], ["read-only"], ["stable"], ["destructive"]])
        page = await list_tools(self.client, groups=groups, tags=tags)
        self.done()
        what = f"tools/list filter groups={groups} tags={tags}"
        self.compare(
            what, {t.name for t in page.tools}, self.expected.visible(groups=groups, tags=tags)
        )

    def _target(self) -> str | None:
        visible = sorted(self.expected.visible() & CATALOG_TOOLS)
        return self.rng.choice(visible) if visible else None

    async def do_query(self) -> None:
        target = self._target()
        if target is None:
            return
        # Its description, as an agent would put the need in words; a leak shows in any query.
        query = DESCRIPTIONS[target]
        page = await list_tools(self.client, query=query)
        self.done()
        got = [t.name for t in page.tools]
        if leaked := set(got) - self.expected.visible():
            self.tally.leaks.append(f"client {self.index} query {query!r}: {sorted(leaked)}")
        if target not in got or len(got) > MAX_RESULTS:
            self.tally.missing.append(f"client {self.index} query {query!r}: {got}")

    async def do_search(self) -> None:
        target = self._target()
        if target is None:
            return
        result = await self.client.call_tool(
            "search_tools", {"query": target.replace("_", " ")}, raise_on_error=False
        )
        self.done()
        if result.is_error or result.structured_content is None:
            self.tally.errors.append(f"client {self.index} search_tools: {result.content}")
            return
        tools = result.structured_content["tools"]
        # Tools of groups not enabled yet may be offered, without their schema, with the call
        # that enables them; a tool it may call comes whole.
        got = {t["name"] for t in tools if "available_after" not in t}
        if leaked := got - self.expected.visible():
            self.tally.leaks.append(f"client {self.index} search_tools {target}: {sorted(leaked)}")
        for tool in tools:
            if "available_after" in tool and (
                "inputSchema" in tool
                or tool["name"] in self.expected.visible()
                or "enable_tools" not in tool["available_after"]
            ):
                self.tally.leaks.append(f"client {self.index} search_tools offered {tool}")

    async def do_enable(self) -> None:
        candidates = [g for g in self.favourites if g not in self.expected.enabled]
        if not candidates:
            return
        group = self.rng.choice(candidates)
        # A child is enabled together with its parent when the parent is not enabled yet.
        groups = [g for g in [PARENT[group], group] if g and g not in self.expected.enabled]
        result = await self.client.call_tool(
            "enable_tools", {"groups": groups}, raise_on_error=False
        )
        self.done()
        self.expected.enable(groups)
        self._check_groups("enable_tools", result)

    async def do_disable(self) -> None:
        enabled = sorted(self.expected.enabled)
        if not enabled:
            return
        group = self.rng.choice(enabled)
        result = await self.client.call_tool(
            "disable_tools", {"groups": [group]}, raise_on_error=False
        )
        self.done()
        self.expected.disable([group])
        self._check_groups("disable_tools", result)

    def _check_groups(self, tool: str, result: Any) -> None:
        content = result.structured_content
        if result.is_error or content is None or content["errors"]:
            self.tally.errors.append(f"client {self.index} {tool}: {result.content}")
        elif content["enabled_groups"] != self.expected.enabled_in_order():
            self.tally.leaks.append(
                f"client {self.index} {tool}: enabled_groups {content['enabled_groups']}, "
                f"expected {self.expected.enabled_in_order()}"
            )

    async def do_risk(self) -> None:
        risk = self.rng.choice(RISKS)
        update = await update_concerns(self.client, {"risk": risk} if risk else {})
        self.done()
        self.expected.risk = risk
        if update.concerns != ({"risk": risk} if risk else {}):
            self.tally.leaks.append(f"client {self.index} concerns/update: {update.concerns}")

    async def do_call(self) -> None:
        tool = self.rng.choice(sorted(CATALOG_TOOLS))
        result = await self.client.call_tool(tool, arguments(tool), raise_on_error=False)
        self.done()
        allowed = self.expected.allows(tool)
        if allowed and result.is_error:
            self.tally.missing.append(f"client {self.index} call {tool}: {result.content}")
        if not allowed and not result.is_error:
            self.tally.leaks.append(f"client {self.index} called hidden {tool}")
        if not self.expected.disclosed(tool) and self.expected.suits(tool):
            # The hint describes this client's own groups, not another client's.
            enabled_now = f"Enabled now: {json.dumps(self.expected.enabled_in_order())}."
            text = " ".join(getattr(c, "text", "") for c in result.content)
            if "enable_tools(groups=" not in text or enabled_now not in text:
                self.tally.leaks.append(f"client {self.index} hint for {tool}: {text!r}")


async def _run_agent(index: int, url: str, deadline: float, tally: Tally) -> None:
    try:
        async with Client(url, mode="legacy", timeout=60) as client:
            agent = Agent(index, client, tally)
            risk = RISKS[index % len(RISKS)]
            if risk is not None:
                await update_concerns(client, {"risk": risk})
                agent.done()
                agent.expected.risk = risk
            while time.monotonic() < deadline:
                await agent.step()
    except Exception as exc:
        tally.errors.append(f"client {index}: {exc!r}")


async def _sample_rss(pid: int, stop: asyncio.Event, samples: list[tuple[float, int]]) -> None:
    while not stop.is_set():
        samples.append((time.monotonic(), rss_kib(pid)))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=0.5)
    samples.append((time.monotonic(), rss_kib(pid)))


class TestConcurrentSessions:
    async def test_fifty_clients_see_only_their_own_state(self) -> None:
        tally = Tally()
        samples: list[tuple[float, int]] = []
        with full_stack_http_server() as server:
            stop = asyncio.Event()
            sampler = asyncio.create_task(_sample_rss(server.pid, stop, samples))
            start = time.monotonic()
            deadline = start + DURATION
            await asyncio.gather(
                *(_run_agent(i, server.url, deadline, tally) for i in range(CLIENTS))
            )
            stop.set()
            await sampler

        # Memory: the slope of RSS against requests served, once warm (sessions open, caches
        # filled: after the first third of the requests, as connecting 50 clients takes a while on
        # a busy machine). A least-squares slope over every sample is steadier than two end points.
        served_at = [sum(1 for done in tally.requests if done <= t) for t, _ in samples]
        warm = [
            (count, rss)
            for count, (_, rss) in zip(served_at, samples, strict=True)
            if count >= len(tally.requests) / 3
        ]
        served = [count for count, _ in warm]
        slope = statistics.linear_regression(served, [rss for _, rss in warm]).slope
        memory = (
            f"{len(tally.requests)} requests; server RSS {samples[0][1]} KiB at start, "
            f"{warm[0][1]} KiB warm, {warm[-1][1]} KiB at the end, "
            f"{slope:.3f} KiB per request once warm"
        )
        print(f"load: {memory}; {len(tally.views)} distinct views")

        assert tally.errors == []
        assert tally.leaks == []
        assert tally.missing == []
        # The clients really were in different states at once, or isolation was never tested.
        assert len(tally.views) >= 10
        assert served[-1] - served[0] >= CLIENTS * 5, memory
        assert slope < MAX_GROWTH_PER_REQUEST_KIB, memory


class TestSearchByName:
    """What the load test's agents rely on: a visible tool is found by its own name."""

    async def test_every_visible_tool_is_found_by_its_name(self) -> None:
        # Fails on get_me: "get" and "me" are both query stopwords, so a query made of them
        # finds nothing, although names are indexed with their stopwords (see the report).
        async with Client(build_full_stack_server(), mode="legacy") as client:
            await client.call_tool("enable_tools", {"groups": list(GROUP_NAMES)})
            not_found = {}
            for tool in sorted(CATALOG_TOOLS):
                for query in (tool, tool.replace("_", " ")):
                    page = await list_tools(client, query=query)
                    if tool not in [t.name for t in page.tools]:
                        not_found[query] = [t.name for t in page.tools]
        assert not_found == {}

"""What FilterMiddleware costs on tools/list, against FastMCP's own features, in one run.

For each catalog size it times tools/list through an in-memory ``Client`` (2026-07-28 era):

- ``bare``: FastMCP alone, full list;
- ``ours, no filter``: with ``FilterMiddleware`` (every tool gets its ``_meta`` groups);
- ``fastmcp enable(only)``: FastMCP's own server-wide allowlist by tag, showing one tenth;
- ``ours, filter``: ``FilterMiddleware`` with ``filter.groups`` selecting the same tenth;
- ``full stack``: filter, search, concerns and progressive disclosure on one catalog, every
  group enabled and no concern excluding anything, so it lists what ``bare`` lists;

and ``tools/call`` of one tool on ``bare`` and on ``full stack``; it prints medians, the
ratios, and the memory a listing allocates at its peak (tracemalloc).

``--clock process`` times each request by the process's CPU time instead of the wall
clock: on a machine other jobs share, waiting for a core then counts for nobody, so the
ratios hold where wall-clock ones swing (a no-op middleware measured 0.97x to 1.16x there).

Usage: ``python bench/list_overhead.py [--sizes 100 1000 10000] [--repeat 30]
[--clock wall|process] [--markdown PATH]`` (``--markdown`` writes the table as markdown too,
for the docs)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _markdown import Table, write  # bench/ is the script's directory
from fastmcp import Client, FastMCP
from fastmcp.server.middleware import Middleware
from fastmcp.tools import Tool

from fastmcp_filtering import Concern, FilterMiddleware, Group, add_filtering, install
from fastmcp_filtering.client import list_tools

GROUPS = 10


def build(
    size: int, *, ours: bool, allowlist: bool = False, full: bool = False, noop: bool = False
) -> FastMCP:
    mcp = FastMCP(f"bench-{size}")
    for i in range(size):
        group = f"g{i % GROUPS}"
        mcp.add_tool(
            Tool(
                name=f"tool_{i}",
                description=f"Synthetic tool number {i} in {group}",
                parameters={
                    "type": "object",
                    "properties": {"owner": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["owner"],
                },
                tags={group},
                meta={"io.modelcontextprotocol/groups": [group]},
            )
        )
    echo = Tool.from_function(lambda owner: owner, name="echo", tags={"g3"})
    echo.meta = {"io.modelcontextprotocol/groups": ["g3"]}
    mcp.add_tool(echo)
    if allowlist:
        mcp.enable(tags={"g3"}, only=True)
    if noop:
        # The floor: what any middleware costs in FastMCP's chain.
        mcp.add_middleware(Middleware())
    if ours:
        install(mcp, FilterMiddleware(groups=[Group(f"g{i}") for i in range(GROUPS)]))
    if full:
        groups = [f"g{i}" for i in range(GROUPS)]
        add_filtering(
            mcp,
            groups=[Group(g) for g in groups],
            concerns=[Concern("risk", values=["safe", "destructive"], ordered=True)],
            concern_mapping={"tool_*": {"risk": "safe"}},
            progressive={"initial_groups": groups},
        )
    return mcp


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "process": time.process_time}


async def _timed(
    call: Callable[[], Awaitable[Any]], clock: Callable[[], float] = time.perf_counter
) -> float:
    # Collect before each call so one variant does not pay for another's garbage.
    gc.collect()
    gc.disable()
    start = clock()
    try:
        await call()
    finally:
        gc.enable()
    return (clock() - start) * 1000


async def _peak(call: Callable[[], Awaitable[Any]]) -> int:
    tracemalloc.start()
    await call()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def _variants(size: int) -> list[tuple[str, FastMCP, dict[str, Any] | None, str]]:
    """(label, server, request, baseline label): what is timed against what."""
    return [
        ("bare", build(size, ours=False), None, "bare"),
        ("fastmcp, no-op middleware", build(size, ours=False, noop=True), None, "bare"),
        ("ours, no filter", build(size, ours=True), None, "bare"),
        (
            "fastmcp enable(only)",
            build(size, ours=False, allowlist=True),
            None,
            "fastmcp enable(only)",
        ),
        ("ours, filter", build(size, ours=True), {"groups": ["g3"]}, "fastmcp enable(only)"),
        ("full stack", build(size, ours=False, full=True), None, "bare"),
        ("call: bare", build(size, ours=False), {"call": True}, "call: bare"),
        ("call: full stack", build(size, ours=False, full=True), {"call": True}, "call: bare"),
    ]


NOTE = (
    "ratio: best time against FastMCP's own way to the same list (bare, or enable(only)), "
    "as timeit does: on a shared machine the best of many runs is the least noisy estimate; "
    "variants run interleaved, round by round, in one process."
)


async def run(
    sizes: list[int], repeat: int, markdown: Path | None = None, clock: str = "wall"
) -> None:
    tick = CLOCKS[clock]
    table = Table(
        "",
        ["tools", "variant", "listed", "first ms", "median ms", "best ms", "peak KiB", "ratio"],
        right={"tools", "listed", "first ms", "median ms", "best ms", "peak KiB", "ratio"},
    )
    header = (
        f"{'tools':>6} {'variant':<26} {'listed':>6} {'first ms':>9} {'median ms':>10} "
        f"{'best ms':>8} {'peak KiB':>9} {'ratio':>7}"
    )
    print(header)
    print("-" * len(header))
    for size in sizes:
        variants = _variants(size)
        async with contextlib.AsyncExitStack() as stack:
            calls: dict[str, Callable[[], Awaitable[Any]]] = {}
            for label, server, request, _ in variants:
                client = await stack.enter_async_context(Client(server))

                async def call(
                    client: Client[Any] = client, request: dict[str, Any] | None = request
                ) -> Any:
                    if request is None:
                        return await client.session.list_tools()
                    if request.get("call"):
                        return await client.session.call_tool("echo", {"owner": "o"})
                    return await list_tools(client, **request)

                calls[label] = call
            firsts = {label: await _timed(call, tick) for label, call in calls.items()}
            listed = {
                label: len(getattr(await call(), "tools", [None])) for label, call in calls.items()
            }
            times: dict[str, list[float]] = {label: [] for label in calls}
            # Interleaved rounds: the machine's drift falls on every variant alike.
            for _ in range(repeat):
                for label, call in calls.items():
                    times[label].append(await _timed(call, tick))
            peaks = {label: await _peak(call) for label, call in calls.items()}
        medians = {label: statistics.median(values) for label, values in times.items()}
        bests = {label: min(values) for label, values in times.items()}
        for label, _, _, baseline in variants:
            print(
                f"{size:>6} {label:<26} {listed[label]:>6} {firsts[label]:>9.2f} "
                f"{medians[label]:>10.2f} {bests[label]:>8.2f} {peaks[label] / 1024:>9.0f} "
                f"{bests[label] / bests[baseline]:>6.2f}x"
            )
            table.add(
                f"{size:,}",
                label,
                listed[label],
                f"{firsts[label]:.2f}",
                f"{medians[label]:.2f}",
                f"{bests[label]:.2f}",
                f"{peaks[label] / 1024:.0f}",
                f"{bests[label] / bests[baseline]:.2f}x",
            )
        print()
    print(f"clock: {clock}")
    print("ratio: best time against FastMCP's own way to the same list (bare, or enable(only)),")
    print("as timeit does: on a shared machine the best of many runs is the least noisy estimate;")
    print("variants run interleaved, round by round, in one process.")
    if markdown:
        write(markdown, [table], [f"{NOTE} Clock: {clock}."])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--markdown", type=Path, metavar="PATH", help="also write the table here")
    parser.add_argument(
        "--clock", choices=sorted(CLOCKS), default="wall", help="wall clock or process CPU time"
    )
    args = parser.parse_args()
    asyncio.run(run(args.sizes, args.repeat, args.markdown, args.clock))


if __name__ == "__main__":
    main()

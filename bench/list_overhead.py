"""What FilterMiddleware costs on tools/list, against FastMCP's own features, in one run.

For each catalog size it times tools/list through an in-memory ``Client`` (2026-07-28 era):

- ``bare``: FastMCP alone, full list;
- ``ours, no filter``: with ``FilterMiddleware`` (every tool gets its ``_meta`` groups);
- ``fastmcp enable(only)``: FastMCP's own server-wide allowlist by tag, showing one tenth;
- ``ours, filter``: ``FilterMiddleware`` with ``filter.groups`` selecting the same tenth;

and prints medians, the ratios, and the memory a listing allocates at its peak (tracemalloc).

Usage: ``python bench/list_overhead.py [--sizes 100 1000 10000] [--repeat 30]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

from fastmcp import Client, FastMCP
from fastmcp.tools import Tool

from fastmcp_filtering import FilterMiddleware, Group, install
from fastmcp_filtering.client import list_tools

GROUPS = 10


def build(size: int, *, ours: bool, allowlist: bool = False) -> FastMCP:
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
    if allowlist:
        mcp.enable(tags={"g3"}, only=True)
    if ours:
        install(mcp, FilterMiddleware(groups=[Group(f"g{i}") for i in range(GROUPS)]))
    return mcp


async def measure(call: Callable[[], Awaitable[Any]], repeat: int) -> tuple[float, float, int]:
    """Median and first-call milliseconds, and peak bytes allocated by one call."""
    start = time.perf_counter()
    result = await call()
    first = (time.perf_counter() - start) * 1000
    times = []
    for _ in range(repeat):
        # Collect between calls so one variant does not pay for another's garbage.
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        await call()
        times.append((time.perf_counter() - start) * 1000)
        gc.enable()
    tracemalloc.start()
    await call()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return statistics.median(times), first, peak


async def run(sizes: list[int], repeat: int) -> None:
    header = (
        f"{'tools':>6} {'variant':<22} {'listed':>6} {'first ms':>9} {'median ms':>10} "
        f"{'peak KiB':>9} {'ratio':>7}"
    )
    print(header)
    print("-" * len(header))
    for size in sizes:
        rows: dict[str, tuple[int, float, float, int]] = {}
        variants: list[tuple[str, FastMCP, dict[str, Any] | None]] = [
            ("bare", build(size, ours=False), None),
            ("ours, no filter", build(size, ours=True), None),
            ("fastmcp enable(only)", build(size, ours=False, allowlist=True), None),
            ("ours, filter", build(size, ours=True), {"groups": ["g3"]}),
        ]
        for label, server, list_filter in variants:
            async with Client(server) as client:

                async def call(
                    client: Client[Any] = client, list_filter: dict[str, Any] | None = list_filter
                ) -> Any:
                    if list_filter is None:
                        return await client.session.list_tools()
                    return await list_tools(client, **list_filter)

                listed = len((await call()).tools)
                median, first, peak = await measure(call, repeat)
            rows[label] = (listed, first, median, peak)
        baselines = {
            "bare": "bare",
            "ours, no filter": "bare",
            "fastmcp enable(only)": "fastmcp enable(only)",
            "ours, filter": "fastmcp enable(only)",
        }
        for label, (listed, first, median, peak) in rows.items():
            ratio = median / rows[baselines[label]][2]
            print(
                f"{size:>6} {label:<22} {listed:>6} {first:>9.2f} {median:>10.2f} "
                f"{peak / 1024:>9.0f} {ratio:>6.2f}x"
            )
        print()
    print("ratio: median against FastMCP's own way to the same list (bare, or enable(only)).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(run(args.sizes, args.repeat))


if __name__ == "__main__":
    main()

"""How fast a search answers through a real client, against FastMCP's BM25 search, in one run.

For 100, 1,000 and 10,000 synthetic tools, each variant gets its own server, reached
in memory and over stdio (the server in a subprocess), and answers the same queries:

- ``ours, query``: ``tools/list`` with ``query`` (SearchMiddleware);
- ``ours, search_tools``: SearchMiddleware's meta-tool;
- ``fastmcp bm25``: FastMCP's ``BM25SearchTransform`` through its ``search_tools`` tool.

"first" is the first search on a fresh server after the client's own one-time
``tools/list`` (FastMCP's client lists the tools before its first call anyway);
"cold" is the first search sent right after connecting, nothing listed before;
"steady" is the median of the following searches; "floor" the median of as many
``prompts/list`` requests (an empty list) to the same server over the same transport:
what any request costs there, search or not. Ratios are FastMCP's time over
ours (higher: ours faster). The last lines check issue 11's targets at the largest
size over stdio: steady at most 3 ms, and a first search no slower than FastMCP's.

Usage: ``python bench/search_speed.py [--sizes 100 1000 10000] [--repeat 30]
[--transports memory stdio]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import jsonschema  # noqa: F401 - imported by the client on first use; keep it out of "first"
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport
from fastmcp.server.transforms.search import BM25SearchTransform
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult

from fastmcp_filtering import install
from fastmcp_filtering.client import list_tools
from fastmcp_filtering.search import SearchMiddleware

VERBS = [
    "create",
    "get",
    "list",
    "update",
    "delete",
    "search",
    "archive",
    "export",
    "import",
    "sync",
    "merge",
    "close",
    "open",
]
NOUNS = [
    "issue",
    "pull_request",
    "repository",
    "branch",
    "commit",
    "release",
    "workflow",
    "user",
    "team",
    "invoice",
    "customer",
    "order",
    "payment",
    "subscription",
    "ticket",
    "document",
    "folder",
    "file",
    "calendar_event",
    "email",
    "message",
    "channel",
    "report",
    "dashboard",
    "alert",
    "incident",
    "deployment",
    "secret",
]
DOMAINS = [
    "github",
    "billing",
    "crm",
    "helpdesk",
    "drive",
    "calendar",
    "mail",
    "chat",
    "analytics",
    "ops",
]
QUERIES = [
    "open a pull request",
    "delete a customer",
    "export invoices",
    "search tickets",
    "send an email message",
    "list deployments of a service",
    "archive old documents",
    "close an incident alert",
    "sync calendar events",
    "merge a branch",
]


VARIANTS = ("ours, query", "ours, search_tools", "fastmcp bm25")


class StubTool(Tool):
    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(content="ok")


def synthetic_tools(count: int) -> list[Tool]:
    rng = random.Random(count)
    tools = []
    for i in range(count):
        verb, noun, domain = rng.choice(VERBS), rng.choice(NOUNS), rng.choice(DOMAINS)
        name = f"{domain}_{verb}_{noun}_{i}"
        words = noun.replace("_", " ")
        tools.append(
            StubTool(
                name=name,
                description=f"{verb.capitalize()} a {words} in {domain}. Variant {i}.",
                parameters={
                    "type": "object",
                    "properties": {
                        "tenant_id": {"type": "string", "description": "Tenant to act for"},
                        f"{noun}_id": {"type": "string", "description": f"The {words} id"},
                        "limit": {"type": "integer", "description": "Most results to return"},
                    },
                    "required": [f"{noun}_id"],
                },
            )
        )
    return tools


def build(tools: list[Tool], variant: str) -> FastMCP:
    mcp = FastMCP("speed")
    for tool in tools:
        mcp.add_tool(tool.model_copy())
    if variant == "fastmcp bm25":
        mcp.add_transform(BM25SearchTransform(max_results=10))
    else:
        install(mcp, SearchMiddleware(max_results=10))
    return mcp


async def timed(call: Callable[[str], Awaitable[Any]], repeat: int) -> tuple[float, float]:
    """The first search's time and the median of ``repeat`` more, in ms."""
    first = await once(call, QUERIES[0])
    times = []
    for i in range(repeat):
        gc.collect()
        times.append(await once(call, QUERIES[(i + 1) % len(QUERIES)]))
    return first, statistics.median(times)


async def once(call: Callable[[str], Awaitable[Any]], query: str) -> float:
    started = time.perf_counter()
    await call(query)
    return (time.perf_counter() - started) * 1000


def searcher(client: Client[Any], variant: str) -> Callable[[str], Awaitable[Any]]:
    if variant == "ours, query":

        async def by_query(query: str) -> Any:
            return await list_tools(client, query=query)

        return by_query

    async def by_tool(query: str) -> Any:
        return await client.call_tool("search_tools", {"query": query})

    return by_tool


def open_client(transport: str, size: int, variant: str) -> Client[Any]:
    if transport == "memory":
        return Client(build(synthetic_tools(size), variant))
    # The server in its own process, as an agent's host starts it; it imports this
    # checkout (PYTHONPATH) like the client does.
    command = StdioTransport(
        command=sys.executable,
        args=[__file__, "--serve", str(size), variant],
        env=dict(os.environ),
    )
    return Client(command, init_timeout=600, timeout=600)


async def measure(transport: str, size: int, variant: str, repeat: int) -> Row:
    async with open_client(transport, size, variant) as client:
        # FastMCP's client lists the tools once before its first call, to learn their
        # output schemas: that is the client's cost, not the search's.
        await client.list_tools()
        first, steady = await timed(searcher(client, variant), repeat)
        _, floor = await timed(lambda _query: client.list_prompts(), repeat)
    async with open_client(transport, size, variant) as client:
        cold = await once(searcher(client, variant), QUERIES[0])
    return Row(size, transport, variant, first, cold, steady, floor)


@dataclass(frozen=True)
class Row:
    size: int
    transport: str
    variant: str
    first: float
    cold: float
    steady: float
    floor: float


async def run(sizes: list[int], repeat: int, transports: list[str]) -> None:
    header = (
        f"{'tools':>6} {'transport':<9} {'variant':<20} {'first ms':>9} {'cold ms':>9} "
        f"{'steady ms':>10} {'floor ms':>9}  fastmcp/ours: steady, first, cold"
    )
    print(header)
    print("-" * len(header))
    rows: list[Row] = []
    for size in sizes:
        for transport in transports:
            measured = {v: await measure(transport, size, v, repeat) for v in VARIANTS}
            base = measured["fastmcp bm25"]
            for variant, row in measured.items():
                ratios = (
                    ""
                    if variant == "fastmcp bm25"
                    else f"  {base.steady / row.steady:.1f}x, {base.first / row.first:.1f}x, "
                    f"{base.cold / row.cold:.1f}x"
                )
                print(
                    f"{size:>6} {transport:<9} {variant:<20} {row.first:>9.2f} {row.cold:>9.2f} "
                    f"{row.steady:>10.2f} {row.floor:>9.2f}{ratios}"
                )
            rows.extend(measured.values())
            print()
    targets(rows)


def targets(rows: list[Row]) -> None:
    """Issue 11's speed targets, at the largest size measured over stdio (else in memory)."""
    transport = "stdio" if any(r.transport == "stdio" for r in rows) else "memory"
    size = max(r.size for r in rows)
    at = {r.variant: r for r in rows if r.size == size and r.transport == transport}
    ours, theirs = at["ours, query"], at["fastmcp bm25"]
    checks = [
        (
            f"steady <= 3 ms ({ours.steady:.2f} ms; an empty prompts/list to the same server: "
            f"{ours.floor:.2f} ms)",
            ours.steady <= 3.0,
        ),
        (
            f"first no slower than FastMCP's ({ours.first:.0f} vs {theirs.first:.0f} ms)",
            ours.first <= theirs.first,
        ),
        (
            f"cold first no slower than FastMCP's ({ours.cold:.0f} vs {theirs.cold:.0f} ms)",
            ours.cold <= theirs.cold,
        ),
    ]
    print(f"Targets, {size} tools over {transport}, tools/list with query:")
    for text, met in checks:
        print(f"  {'met    ' if met else 'NOT MET'} {text}")


def serve(size: int, variant: str) -> None:
    build(synthetic_tools(size), variant).run(transport="stdio", show_banner=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument(
        "--transports", nargs="+", choices=["memory", "stdio"], default=["memory", "stdio"]
    )
    parser.add_argument("--serve", nargs=2, metavar=("SIZE", "VARIANT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), args.serve[1])
        return
    asyncio.run(run(args.sizes, args.repeat, args.transports))


if __name__ == "__main__":
    main()

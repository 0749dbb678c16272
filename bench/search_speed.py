"""How fast a search answers through a real client, against FastMCP's BM25 search, in one run.

For 100, 1,000 and 10,000 synthetic tools, each variant gets its own server and an
in-memory ``Client`` (2026-07-28 era) and answers the same queries:

- ``ours, query``: ``tools/list`` with ``query`` (SearchMiddleware);
- ``ours, search_tools``: SearchMiddleware's meta-tool;
- ``fastmcp bm25``: FastMCP's ``BM25SearchTransform`` through its ``search_tools`` tool.

"first" is the first search on a fresh server (index built on demand; the client's own
one-time tools/list before its first call is done beforehand); "steady" is the median of
the following searches. Ratios are FastMCP's time over ours (higher: ours faster).

Usage: ``python bench/search_speed.py [--sizes 100 1000 10000] [--repeat 30]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import jsonschema  # noqa: F401 - imported by the client on first use; keep it out of "first"
from fastmcp import Client, FastMCP
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
    started = time.perf_counter()
    await call(QUERIES[0])
    first = (time.perf_counter() - started) * 1000
    times = []
    for i in range(repeat):
        gc.collect()
        started = time.perf_counter()
        await call(QUERIES[(i + 1) % len(QUERIES)])
        times.append((time.perf_counter() - started) * 1000)
    return first, statistics.median(times)


async def run(sizes: list[int], repeat: int) -> None:
    header = f"{'tools':>6} {'variant':<22} {'first ms':>9} {'steady ms':>10} {'fastmcp/ours':>13}"
    print(header)
    print("-" * len(header))
    for size in sizes:
        tools = synthetic_tools(size)
        rows: dict[str, tuple[float, float]] = {}
        for variant in ("ours, query", "ours, search_tools", "fastmcp bm25"):
            server = build(tools, variant)
            async with Client(server) as client:
                # FastMCP's client lists the tools once before its first call, to learn their
                # output schemas: that is the client's cost, not the search's.
                await client.list_tools()
                if variant == "ours, query":

                    async def call(query: str, client: Client[Any] = client) -> Any:
                        return await list_tools(client, query=query)

                else:

                    async def call(query: str, client: Client[Any] = client) -> Any:
                        return await client.call_tool("search_tools", {"query": query})

                rows[variant] = await timed(call, repeat)
        base_first, base_steady = rows["fastmcp bm25"]
        for variant, (first, steady) in rows.items():
            ratio = "" if variant == "fastmcp bm25" else f"{base_steady / steady:.1f}x"
            ratio_first = "" if variant == "fastmcp bm25" else f" (first {base_first / first:.1f}x)"
            print(f"{size:>6} {variant:<22} {first:>9.2f} {steady:>10.2f} {ratio:>13}{ratio_first}")
        print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    asyncio.run(run(args.sizes, args.repeat))


if __name__ == "__main__":
    main()

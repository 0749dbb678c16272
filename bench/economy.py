"""Context economy, search first: what an agent holds per turn and per search, and whether the
right tool runs on the call after the search, beside FastMCP's ``BM25SearchTransform``.

Each catalog is served by a FastMCP server three ways, through an in-memory ``Client``:

- ``full catalog``: the plain server, every tool listed;
- ``fastmcp bm25``: FastMCP's ``BM25SearchTransform(max_results=5)``: ``search_tools`` and
  ``call_tool`` listed; the agent runs a hit with ``call_tool``;
- ``ours, search first``: ``add_filtering(progressive="search_first", search={"max_results":
  5})`` with one group per upstream server: ``search_tools`` and ``call_tool`` listed; the agent
  runs a hit by its own name.
- ``ours, enable_tools``: progressive disclosure on 2026-07-28 (no initial group, one group per
  upstream server, all tools in one group for a single-server catalog): the list holds the
  meta-tools; the agent enables the group that holds the right tool, and the reply hands out its
  definitions; the tool runs by its name on the next call. No list changes.
- ``wags flow``: the same server on 2025-11-25: ``enable_tools`` enables the group, the next list
  holds its tools (the bytes per turn are that list's), then the tool runs.

For the two ``enable_tools`` variants the group is the right tool's (an agent that reads the
groups in the ``enable_tools`` description and picks right: an upper bound), so they report no
top-1; their "bytes/search" are one ``enable_tools`` reply.

For every labelled request of a public set (``../shared/datasets/tool-retrieval/`` and
``bench/datasets/``; single-tool sets, sampled), the agent searches, then calls the first hit
the way its listing allows: **top-1** counts a first hit that answers the request, **runs next**
one that then ran (the call succeeded). **Bytes per turn** are the JSON of the ``tools/list``
result's tools; **bytes per search** the JSON of one search result (its structured content,
which the text content repeats). The demo catalog (``examples/github_server.py``) has no
labelled requests: its search is "open a pull request". Nothing here is tuned: the ranking's
weights were chosen leave-one-set-out (``bench/search_quality.py``), the preset by hand.

Also printed: the bytes of each meta-tool definition of both listings.

Usage: ``python bench/economy.py [--sample N] [--sets demo arcade ...] [--markdown PATH]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _markdown import Table, write  # bench/ is the script's directory
from fastmcp import Client, FastMCP
from fastmcp.server.transforms.search import BM25SearchTransform
from search_quality import (
    DEFAULT_DATA,
    LOCAL_DATA,
    StubTool,
    _safe,
    load_set,
    sampled,
    served,
)

from fastmcp_filtering import Group, add_filtering

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from github_server import GROUPS, TAGS, build_catalog

HITS = 5
VARIANTS = (
    "full catalog",
    "fastmcp bm25",
    "ours, search first",
    "ours, enable_tools",
    "wags flow",
)
ENABLING = ("ours, enable_tools", "wags flow")
"""Variants whose agent enables the right tool's group instead of searching."""
SETS = {
    "demo": None,
    "arcade": (LOCAL_DATA / "arcade", "queries.jsonl"),
    "etom": (LOCAL_DATA / "etom", "queries.jsonl"),
    "metatool": (DEFAULT_DATA / "metatool", "queries.jsonl"),
    "livemcpbench": (DEFAULT_DATA / "livemcpbench", "queries.jsonl"),
}
DEMO_QUERY = "open a pull request"


def size(payload: Any) -> int:
    """Bytes of ``payload`` as compact JSON: what an agent's context holds of it."""
    return len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())


@dataclass
class Figures:
    """One variant on one catalog."""

    turn: int = 0
    searches: list[int] = field(default_factory=list)
    top1: int = 0
    ran: int = 0
    asked: int = 0
    meta: dict[str, int] = field(default_factory=dict)
    turns: list[int] = field(default_factory=list)


def catalog_server(tools: list[dict[str, Any]], variant: str) -> tuple[FastMCP, dict[str, str]]:
    """A server with the catalog served as ``variant``; and listed name -> the set's name."""
    mcp = FastMCP("catalog")
    servers = sorted({t["server"] for t in tools})
    prefixed = len(servers) > 1
    names: dict[str, str] = {}
    for listed, t in served(tools).items():
        names[listed] = t["name"]
        schema = t.get("inputSchema") or {"type": "object", "properties": {}}
        description = t.get("description") or ""
        mcp.add_tool(StubTool(name=listed, description=description, parameters=schema))
    if variant == "fastmcp bm25":
        mcp.add_transform(BM25SearchTransform(max_results=HITS))
    elif variant in ENABLING:
        groups = (
            [Group(_safe(s), tools=[f"{_safe(s)}__*"]) for s in servers]
            if prefixed
            else [Group("tools", tools=["*"])]
        )
        add_filtering(mcp, groups=groups, progressive=ENABLE_OPTIONS)
    elif variant != "full catalog":
        groups = [Group(_safe(s), tools=[f"{_safe(s)}__*"]) for s in servers] if prefixed else []
        add_filtering(mcp, groups=groups, progressive="search_first", search={"max_results": HITS})
    return mcp, names


ENABLE_OPTIONS = {"initial_groups": [], "hide_ungrouped": True}
"""Progressive disclosure as the ``enable_tools`` variants serve it: only meta-tools listed."""


async def default_meta_tools() -> dict[str, int]:
    """Bytes of each meta-tool of the default stack with progressive disclosure, on the demo
    catalog: what agents that prefer listings hold besides the tools they enable."""
    mcp = build_catalog()
    add_filtering(
        mcp, groups=GROUPS, tags=TAGS, progressive={"initial_groups": [], "hide_ungrouped": True}
    )
    async with Client(mcp) as client:
        listed = [
            t.model_dump(by_alias=True, mode="json", exclude_none=True)
            for t in await client.list_tools()
        ]
    return {t["name"]: size(t) for t in listed}


def demo_server(variant: str) -> FastMCP:
    mcp = build_catalog()
    if variant == "fastmcp bm25":
        mcp.add_transform(BM25SearchTransform(max_results=HITS))
    elif variant in ENABLING:
        add_filtering(mcp, groups=GROUPS, tags=TAGS, progressive=ENABLE_OPTIONS)
    elif variant != "full catalog":
        add_filtering(
            mcp, groups=GROUPS, tags=TAGS, progressive="search_first", search={"max_results": HITS}
        )
    return mcp


async def search(client: Client[Any], query: str) -> tuple[list[str], int]:
    """The hits' names, best first, and the result's bytes."""
    result = await client.call_tool("search_tools", {"query": query[:1000]})
    found = result.structured_content or {}
    hits = found.get("result", found.get("tools", [])) if isinstance(found, dict) else found
    return [h["name"] for h in hits], size(found)


async def run_next(client: Client[Any], variant: str, name: str) -> bool:
    """Whether the agent's next call runs ``name`` as its listing allows."""
    if variant == "fastmcp bm25":
        call = client.call_tool_mcp("call_tool", {"name": name, "arguments": {}})
    else:
        call = client.call_tool_mcp(name, {})
    return not (await call).is_error


def listed_bytes(tools: list[Any]) -> int:
    """Bytes of a ``tools/list`` result's tools."""
    return size([t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools])


async def enabling(
    client: Client[Any], variant: str, query: dict[str, Any], figures: Figures
) -> None:
    """One request the ``enable_tools`` way: enable the right tool's group, then run it."""
    gold = query["gold_listed"]
    groups = query["gold_groups"]
    reply = await client.call_tool_mcp("enable_tools", {"groups": groups})
    figures.searches.append(size(reply.structured_content or {}))
    figures.asked += 1
    if variant == "wags flow":
        # The steady turn once the group is on: the list the agent now holds.
        figures.turns.append(listed_bytes(await client.list_tools()))
    figures.ran += await run_next(client, variant, gold)
    await client.call_tool_mcp("disable_tools", {"groups": groups})


async def measure(
    server: FastMCP, variant: str, queries: list[dict[str, Any]], names: dict[str, str]
) -> Figures:
    figures = Figures()
    era = {"mode": "legacy"} if variant == "wags flow" else {}
    async with Client(server, **era) as client:
        listed = [
            t.model_dump(by_alias=True, mode="json", exclude_none=True)
            for t in await client.list_tools()
        ]
        figures.turn = size(listed)
        if variant == "full catalog":
            return figures
        figures.meta = {t["name"]: size(t) for t in listed}
        if variant in ENABLING:
            for query in queries:
                if query.get("gold_listed") is not None:
                    await enabling(client, variant, query, figures)
            if figures.turns:
                figures.turn = sum(figures.turns) // len(figures.turns)
            return figures
        for query in queries:
            hits, spent = await search(client, query["query"])
            figures.searches.append(spent)
            figures.asked += 1
            if hits and names.get(hits[0], hits[0]) in query["gold"]:
                figures.top1 += 1
                figures.ran += await run_next(client, variant, hits[0])
    return figures


async def catalog(name: str, sample: int) -> dict[str, Figures]:
    """Every variant's figures on catalog ``name``."""
    results: dict[str, Figures] = {}
    for variant in VARIANTS:
        if SETS[name] is None:
            server, names = demo_server(variant), {}
            queries = [{"query": DEMO_QUERY, "gold": [], **DEMO_GOLD}]
        else:
            folder, file = SETS[name]  # type: ignore[misc]
            tools, every = load_set(folder, file)
            # Single-tool requests; LiveMCPBench's are all multi-step (a first hit among them).
            single = [q for q in every if len(q["gold"]) == 1 or name == "livemcpbench"]
            queries = sampled(single, sample)
            server, names = catalog_server(tools, variant)
            if variant in ENABLING:
                queries = [with_group(q, names, tools) for q in queries]
        results[variant] = await measure(server, variant, queries, names)
    return results


DEMO_GOLD = {"gold_listed": "create_pull_request", "gold_groups": ["code", "pull_requests"]}
"""The demo request's tool and the groups to enable for it (its group and its parent)."""


def with_group(
    query: dict[str, Any], names: dict[str, str], tools: list[dict[str, Any]]
) -> dict[str, Any]:
    """``query`` with the listed name of its (first) right tool and the group holding it."""
    gold = query["gold"][0]
    listed = next((n for n, original in names.items() if original == gold), None)
    if listed is None:
        return query
    prefixed = len({t["server"] for t in tools}) > 1
    group = listed.split("__", 1)[0] if prefixed else "tools"
    return {**query, "gold_listed": listed, "gold_groups": [group]}


def rows(name: str, results: dict[str, Figures], table: Table) -> None:
    full = results["full catalog"].turn
    bm25 = results["fastmcp bm25"]
    for variant, f in results.items():
        labelled = name != "demo" and variant not in ENABLING
        if variant == "full catalog":
            table.add(name, variant, f"{full:,}", "100%", "", "", "", "", "")
            continue
        per_search = sum(f.searches) // max(len(f.searches), 1)
        table.add(
            name,
            variant,
            f"{f.turn:,}",
            f"{f.turn / full:.1%}",
            f"{f.turn / bm25.turn:.2f}x",
            f"{per_search:,}",
            f"{per_search / max(sum(bm25.searches) // max(len(bm25.searches), 1), 1):.2f}x",
            f"{100 * f.top1 / f.asked:.1f}" if labelled else "",
            f"{100 * f.ran / f.asked:.1f}" if name != "demo" else "",
        )


async def main_async(names: list[str], sample: int, markdown: Path | None) -> None:
    table = Table(
        f"Context economy, {HITS} hits per search (bytes of JSON; ratios to FastMCP's BM25)",
        [
            "catalog",
            "variant",
            "bytes/turn",
            "of full",
            "vs bm25",
            "bytes/search",
            "vs bm25",
            "top-1 %",
            "runs next %",
        ],
        right={"bytes/turn", "of full", "vs bm25", "bytes/search", "top-1 %", "runs next %"},
    )
    meta = Table(
        "Meta-tool definitions (bytes, demo catalog)", ["variant", "tool", "bytes"], {"bytes"}
    )
    for name in names:
        results = await catalog(name, sample)
        rows(name, results, table)
        if name == "demo":
            for variant in VARIANTS[1:]:
                for tool, spent in results[variant].meta.items():
                    meta.add(variant, tool, spent)
            for tool, spent in (await default_meta_tools()).items():
                meta.add("ours, progressive (no initial group)", tool, spent)
    for each in (table, meta):
        print(f"\n{each.title}\n")
        print(each.markdown())
    if markdown is not None:
        write(markdown, [table, meta], [__doc__.split("\n\n")[1]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=300, help="requests per set (default 300)")
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--markdown", type=Path, metavar="PATH", help="also write the tables here")
    args = parser.parse_args()
    # The client warns that it cannot validate a tool it was not listed: search first calls them.
    logging.getLogger("client").setLevel(logging.ERROR)
    logging.getLogger("fastmcp").setLevel(logging.ERROR)
    asyncio.run(main_async(args.sets, args.sample, args.markdown))


if __name__ == "__main__":
    main()

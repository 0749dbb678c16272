"""Search quality on public tool-retrieval sets, through a real FastMCP server and client.

Each catalog of ``../shared/datasets/tool-retrieval/`` is loaded into a FastMCP server
(tools with their names, descriptions and input schemas; a multi-server catalog is
served as one proxy would serve it, ``server__tool``, with one group per upstream
server). Every labelled request is sent through an in-memory ``Client``:

- ``ours``: ``tools/list`` with ``query`` (SearchMiddleware, lexical default);
- ``ours + semantic``: the same with ``semantic=True`` (the ``[semantic]`` extra, if installed);
- ``ours, no groups``: the same without the per-server groups (names, descriptions,
  parameters only: the same text FastMCP's BM25 sees);
- ``fastmcp bm25``: FastMCP's ``BM25SearchTransform`` through its ``search_tools`` tool;

and scored by Recall@1, Recall@5, nDCG@10 and MRR (Recall@k = |gold in top k| / |gold|).

Usage: ``python bench/search_quality.py [--data DIR] [--sample N] [--sets livemcpbench ...]``
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import math
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from fastmcp import Client, FastMCP
from fastmcp.server.transforms.search import BM25SearchTransform
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult

from fastmcp_filtering import Group, in_group, install
from fastmcp_filtering.client import list_tools
from fastmcp_filtering.search import SearchMiddleware

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "tool-retrieval"
K = 10
VARIANTS = ["ours", "ours, no groups", "fastmcp bm25"]
if importlib.util.find_spec("onnxruntime") is not None:
    VARIANTS.insert(1, "ours + semantic")

# The figures the data set's README gives for standard methods (R@1, R@5, nDCG@10).
REFERENCE = {
    "livemcpbench": [
        ("BM25", 14.1, 33.1, 31.9),
        ("MiniLM", 15.2, 34.6, 35.2),
        ("BM25+MiniLM fusion", 15.4, 39.3, 40.1),
    ],
    "metatool single": [("BM25", 38.6, 59.0, 51.8), ("MiniLM", 54.1, 76.2, 68.3)],
    "metatool multi": [("BM25+MiniLM fusion", 25.4, 67.5, 62.9)],
}


class StubTool(Tool):
    """A catalog entry: listed and searched, never run."""

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(content="stub")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:60] or "server"


def load_set(folder: Path, queries_file: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    tools = [json.loads(line) for line in (folder / "tools.jsonl").read_text().splitlines()]
    queries = [json.loads(line) for line in (folder / queries_file).read_text().splitlines()]
    return tools, queries


def build_server(tools: list[dict[str, Any]], variant: str) -> tuple[FastMCP, dict[str, str]]:
    """A server with the catalog; returns it and a map from listed name to the data set's name."""
    mcp = FastMCP("catalog")
    servers = sorted({t["server"] for t in tools})
    prefixed = len(servers) > 1
    names: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    for t in tools:
        listed = f"{_safe(t['server'])}__{t['name']}" if prefixed else t["name"]
        listed = re.sub(r"[^A-Za-z0-9_.-]", "_", listed)[:128]
        if listed in names:
            continue
        names[listed] = t["name"]
        descriptions.setdefault(t["server"], t.get("server_description") or "")
        schema = t.get("inputSchema") or {"type": "object", "properties": {}}
        tool = StubTool(name=listed, description=t.get("description") or "", parameters=schema)
        if variant == "ours" and prefixed:
            in_group(_safe(t["server"]))(tool)
        mcp.add_tool(tool)
    if variant.startswith("ours"):
        groups = (
            [
                Group(_safe(s), title=s.replace("_", " "), description=descriptions.get(s) or None)
                for s in servers
            ]
            if variant == "ours" and prefixed
            else []
        )
        search = SearchMiddleware(
            groups=groups, max_results=K, search_tool=None, semantic=variant.endswith("semantic")
        )
        install(mcp, search)
    else:
        mcp.add_transform(BM25SearchTransform(max_results=K))
    return mcp, names


def score(ranked: list[str], gold: list[str]) -> tuple[float, float, float, float]:
    """Recall@1, Recall@5, nDCG@10 and reciprocal rank of one query."""
    seen: list[str] = []
    for name in ranked:
        if name not in seen:
            seen.append(name)
    top = seen[:K]
    gold_set = set(gold)
    recall = [len(gold_set & set(top[:k])) / len(gold_set) for k in (1, 5)]
    dcg = sum(1 / math.log2(i + 2) for i, name in enumerate(top) if name in gold_set)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold_set), K)))
    rr = next((1 / (i + 1) for i, name in enumerate(top) if name in gold_set), 0.0)
    return recall[0], recall[1], dcg / ideal, rr


async def evaluate(
    tools: list[dict[str, Any]], queries: list[dict[str, Any]], variant: str
) -> tuple[list[float], float]:
    server, names = build_server(tools, variant)
    for middleware in server.middleware:
        if isinstance(middleware, SearchMiddleware):
            await middleware.prepare(server)  # embedding the catalog is not a query's cost
    totals = [0.0, 0.0, 0.0, 0.0]
    started = time.perf_counter()
    async with Client(server) as client:
        search: Callable[[str], Awaitable[list[str]]]
        if variant.startswith("ours"):

            async def search(query: str) -> list[str]:
                result = await list_tools(client, query=query[:1000])
                return [names[t.name] for t in result.tools]

        else:

            async def search(query: str) -> list[str]:
                result = await client.call_tool("search_tools", {"query": query})
                found = result.structured_content or {}
                items = found.get("result", found) if isinstance(found, dict) else found
                return [names[t["name"]] for t in items if t["name"] in names]

        for q in queries:
            for i, value in enumerate(score(await search(q["query"]), q["gold"])):
                totals[i] += value
    elapsed = time.perf_counter() - started
    return [100 * t / len(queries) for t in totals], elapsed


async def run(data: Path, sample: int | None, sets: list[str]) -> None:
    plan = {
        "livemcpbench": (data / "livemcpbench", "queries.jsonl"),
        "metatool single": (data / "metatool", "queries.jsonl"),
        "metatool multi": (data / "metatool", "multi_queries.jsonl"),
    }
    header = (
        f"{'set':<16} {'method':<22} {'R@1':>6} {'R@5':>6} {'nDCG@10':>8} {'MRR':>6} {'secs':>6}"
    )
    print(header)
    print("-" * len(header))
    for name in sets:
        folder, queries_file = plan[name]
        tools, queries = load_set(folder, queries_file)
        if sample and len(queries) > sample:
            step = len(queries) / sample
            queries = [queries[int(i * step)] for i in range(sample)]
        results = {}
        for variant in VARIANTS:
            results[variant] = await evaluate(tools, queries, variant)
            metrics, secs = results[variant]
            print(
                f"{name:<16} {variant:<22} {metrics[0]:>6.1f} {metrics[1]:>6.1f} "
                f"{metrics[2]:>8.1f} {metrics[3]:>6.1f} {secs:>6.1f}"
            )
        for ref_method, r1, r5, ndcg in REFERENCE[name]:
            print(f"{name:<16} {'README: ' + ref_method:<22} {r1:>6.1f} {r5:>6.1f} {ndcg:>8.1f}")
        ours, bm25 = results["ours"][0], results["fastmcp bm25"][0]
        print(
            f"{name:<16} {'ours - fastmcp bm25':<22} {ours[0] - bm25[0]:>+6.1f} "
            f"{ours[1] - bm25[1]:>+6.1f} {ours[2] - bm25[2]:>+8.1f} {ours[3] - bm25[3]:>+6.1f}"
        )
        print(f"  ({len(queries)} queries, {len(tools)} tools)\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sample", type=int, default=2000, help="queries per set at most (0: all)")
    parser.add_argument(
        "--sets",
        nargs="+",
        default=["livemcpbench", "metatool single", "metatool multi"],
        choices=["livemcpbench", "metatool single", "metatool multi"],
    )
    args = parser.parse_args()
    asyncio.run(run(args.data, args.sample or None, args.sets))


if __name__ == "__main__":
    main()

"""Semantic search's costs over stdio, beside lexical search and FastMCP's BM25, in one run.

A server with N tools (``SearchMiddleware(semantic=True)``: the shipped tool-retrieval
model) runs in a subprocess; FastMCP's ``Client`` talks to it over stdio, as an agent's
host would. Measured:

- **background embedding**: the first search starts embedding the whole catalog in a
  worker thread; lexical results answer meanwhile. The wall time from that first search
  to the vectors being ready (the server's embedder writes it to a file, which the bench
  polls), and the median and slowest of the searches answered meanwhile (sent back to
  back: the worst case for the server's two cores);
- **steady**: the median ``tools/list`` with ``query`` once the vectors are ready;
- the same search on servers with lexical search only (``ours, query``) and with
  FastMCP's ``BM25SearchTransform`` (``search_tools``), as ``bench/search_speed.py``
  measures them, at the same size: ratios are their steady time over semantic's.

Tools: ``synthetic`` (``bench/search_speed.py``'s catalog: short texts) or ``real`` (the
tools of every catalog in ``bench/search_quality.py``'s sets, names, descriptions and
schemas, cycled to N with a numbered suffix so no text repeats; real texts are about
three times as long). Issue 28's targets, checked at the end: steady at most 15 ms, and
10,000 tools embedded in at most 60 s on 2 cores while lexical answers.

Usage: ``python bench/semantic_speed.py [--size 10000] [--tools synthetic real]
[--repeat 30] [--markdown PATH]``
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import search_quality as sq
import search_speed as ss
from _markdown import Table, write  # bench/ is the script's directory
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport
from fastmcp.tools import Tool

from fastmcp_filtering import SearchMiddleware, install
from fastmcp_filtering.client import list_tools
from fastmcp_filtering.retrieval.embedders import MiniLMEmbedder

STEADY_MS = 15.0
EMBED_S = 60.0
# EmbeddingIndex embeds a whole new catalog in one call; a few texts are a query or an update.
CATALOG_CALL = 100


class ReportingEmbedder:
    """The shipped embedder; writes how long each catalog-sized call took to ``report``."""

    def __init__(self, report: Path) -> None:
        self.inner = MiniLMEmbedder()
        self.report = report

    def __call__(self, texts: Sequence[str], /) -> Any:
        started = time.perf_counter()
        vectors = self.inner(texts)
        if len(texts) >= CATALOG_CALL:
            seconds = time.perf_counter() - started
            self.report.write_text(json.dumps({"texts": len(texts), "seconds": seconds}))
        return vectors

    def embed_query(self, texts: Sequence[str], /) -> Any:
        return self.inner.embed_query(texts)


def real_tools(count: int) -> list[Tool]:
    """The bench's real catalogs' tools, cycled to ``count`` with numbered names."""
    entries: list[dict[str, Any]] = []
    for folder in dict.fromkeys(folder for folder, _ in sq.plan(sq.DEFAULT_DATA).values()):
        tools, _ = sq.load_set(folder, "queries.jsonl")
        entries.extend(sq.served(tools).values())
    out: list[Tool] = []
    for i, entry in zip(range(count), itertools.cycle(entries), strict=False):
        schema = entry.get("inputSchema") or {"type": "object", "properties": {}}
        name = sq.listed_name(entry, prefixed=False)[:100] + f"_{i}"
        description = f"{entry.get('description') or ''} (copy {i})"
        out.append(ss.StubTool(name=name, description=description, parameters=schema))
    return out


def catalog(kind: str, size: int) -> list[Tool]:
    return ss.synthetic_tools(size) if kind == "synthetic" else real_tools(size)


def serve(size: int, kind: str, report: Path) -> None:
    mcp = FastMCP("semantic-speed")
    for tool in catalog(kind, size):
        mcp.add_tool(tool)
    install(mcp, SearchMiddleware(max_results=10, semantic=ReportingEmbedder(report)))
    mcp.run(transport="stdio", show_banner=False)


@dataclass(frozen=True)
class Result:
    kind: str
    size: int
    texts: int
    embed_s: float
    wall_s: float
    during_median: float
    during_max: float
    during_count: int
    steady: float


async def measure(kind: str, size: int, repeat: int) -> Result:
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "embedded.json"
        args = [__file__, "--serve", str(size), kind, str(report)]
        command = StdioTransport(command=sys.executable, args=args, env=dict(os.environ))
        async with Client(command, init_timeout=600, timeout=600) as client:
            await client.list_tools()  # the client's own listing, as in search_speed.py
            started = time.perf_counter()
            during: list[float] = []
            for query in itertools.cycle(ss.QUERIES):
                if report.exists():
                    break
                during.append(await ss.once(lambda q: list_tools(client, query=q), query))
            wall = time.perf_counter() - started
            embedded = json.loads(report.read_text())
            _, steady = await ss.timed(lambda q: list_tools(client, query=q), repeat, ss.QUERIES)
    return Result(
        kind,
        size,
        embedded["texts"],
        embedded["seconds"],
        wall,
        # A catalog embedded before the first search leaves nothing to say of searches meanwhile.
        statistics.median(during) if during else math.nan,
        max(during, default=math.nan),
        len(during),
        steady,
    )


async def run(size: int, kinds: list[str], repeat: int, markdown: Path | None) -> None:
    baseline = {
        v: await ss.measure("stdio", size, v, repeat, ss.QUERIES)
        for v in ("ours, query", "fastmcp bm25")
    }
    results = [await measure(kind, size, repeat) for kind in kinds]
    numbers = ["embed s", "wall s", "searches meanwhile", "median ms", "max ms", "steady ms"]
    table = Table(
        f"Semantic search over stdio, {size:,} tools (FastMCP's client; the server's 2 cores):",
        ["tools", *numbers, "lexical / semantic", "BM25 / semantic"],
        {*numbers, "lexical / semantic", "BM25 / semantic"},
    )
    lexical, bm25 = baseline["ours, query"].steady, baseline["fastmcp bm25"].steady
    for r in results:
        table.add(
            r.kind,
            f"{r.embed_s:.1f}",
            f"{r.wall_s:.1f}",
            str(r.during_count),
            f"{r.during_median:.1f}",
            f"{r.during_max:.1f}",
            f"{r.steady:.2f}",
            f"{lexical / r.steady:.2f}",
            f"{bm25 / r.steady:.2f}",
        )
    notes = [
        f"Steady search on the same {size:,} synthetic tools: lexical (`ours, query`) "
        f"{lexical:.2f} ms, FastMCP's BM25 (`search_tools`) {bm25:.2f} ms.",
        "\n".join(targets(results)),
    ]
    print(table.title)
    print(table.markdown())
    for note in notes:
        print(note)
    if markdown:
        write(markdown, [table], notes)


def targets(results: list[Result]) -> list[str]:
    """Issue 28's speed targets."""
    lines = []
    for r in results:
        checks = [
            (f"{r.kind}: steady <= {STEADY_MS:.0f} ms ({r.steady:.2f} ms)", r.steady <= STEADY_MS),
            (
                f"{r.kind}: {r.texts:,} tools embedded in <= {EMBED_S:.0f} s while lexical "
                f"answers ({r.embed_s:.1f} s)",
                r.embed_s <= EMBED_S,
            ),
        ]
        lines += [f"- {'met' if met else '**not met**'}: {text}" for text, met in checks]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument(
        "--tools", nargs="+", choices=["synthetic", "real"], default=["synthetic", "real"]
    )
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument(
        "--serve", nargs=3, metavar=("SIZE", "KIND", "REPORT"), help=argparse.SUPPRESS
    )
    parser.add_argument("--markdown", type=Path, metavar="PATH", help="also write the table here")
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), args.serve[1], Path(args.serve[2]))
        return
    asyncio.run(run(args.size, args.tools, args.repeat, args.markdown))


if __name__ == "__main__":
    main()

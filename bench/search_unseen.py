"""Lexical search on the training sources' catalogs, beside FastMCP's BM25.

``bench/search_quality.py --grid-also train/data`` chooses the lexical ranking's rules and
weights (1,152 configurations) on its seven request files and the training sources of
``train/`` (``train/data/<source>/``, made by ``train/build_data.sh``: Seal-Tools, BFCL,
API-Bank, ToolAlpaca, BFCL's multi-turn requests, StableToolBench, NESTFUL), each held out in
turn there; here the shipped defaults, which these catalogs helped choose (so not held out),
are served. Each is served through a real
FastMCP server and client as ``search_quality.py`` serves a catalog, with the shipped
defaults (``ours``) and FastMCP's ``BM25SearchTransform`` (``fastmcp bm25``), and the two are
compared request by request: how many requests each ranks better on R@1, R@5 and nDCG@10
and the two-sided sign test's p.
A source where some of the requests (not nearly all) need several tools is scored on those
alone too. The semantic blend is left out: the shipped tool model was trained on these
requests.

A second table sets the shipped rules beside three alternatives on the same requests (bare
``SearchIndex``, as ``search_quality.py``'s grid scores): steps off (what these catalogs
chose against), a word's own form counted beside its best near match (``own_and_best``, the
default until the fourteen-catalog grid chose ``best``), and the name coverage of earlier
defaults (0.5); the mean of R@1, R@5 and nDCG@10 of each, and the requests each ranks better
than the shipped rules on nDCG@10. Since the defaults are chosen with these catalogs too
(``search_quality.py --grid-also train/data``), the held-out view of them is that grid's.

These catalogs, not the bench's request files, are where rules are designed from: their
requests and the lexical ranking's errors against FastMCP's BM25 may be read (the request
files' only through leave-one-set-out scores). On 2026-12-07, BM25's R@1 wins here (reading
``apibank``, ``bfcl`` and ``bfclturns`` requests of up to ten words) were mostly a tool whose
name says the request's object words outranking the one whose description says its action
(``place_order`` over ``get_order_details``), which suggested a lighter ``name`` weight
(``search_quality.py``'s ``LATER``); the request files chose the shipped 4 on every fold.

Usage: ``python bench/search_unseen.py [--data train/data] [--sample N] [--markdown PATH]``
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from _markdown import Table, write  # bench/ is the script's directory
from search_quality import (
    BESIDE_BM25,
    BESIDE_BM25_RIGHT,
    evaluate_each,
    index_each,
    load_set,
    means,
    objective,
    paired,
    sampled,
    shipped,
)

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "train" / "data"
Scores = list[tuple[float, ...]]
ALTERNATIVES = {
    "steps off": {"steps": 0.0},
    "near: own and best": {"near matches": "own_and_best"},
    "name coverage 0.5": {"name coverage": 0.5},
}
"""Changes to the shipped rules, each tried against them here."""


def sources(data: Path) -> list[Path]:
    """Every folder of ``data`` with a catalog and its requests, by name."""
    found = sorted(
        p
        for p in data.iterdir()
        if (p / "tools.jsonl").is_file() and (p / "queries.jsonl").is_file()
    )
    if not found:
        raise SystemExit(f"no catalogs in {data}: run `sh train/build_data.sh DIR` first")
    return found


def several(queries: list[dict[str, Any]]) -> list[int]:
    """The requests that need more than one tool."""
    return [i for i, q in enumerate(queries) if len(set(q["gold"])) > 1]


def row(label: str, ours: Scores, bm25: Scores) -> list[str]:
    """One table row: both rankings' means and the requests each ranks better."""
    mine, theirs = means(ours), means(bm25)
    return [
        label,
        *(f"{v:.1f}" for v in (*mine[:3], *theirs[:3])),
        f"{mine[0] - theirs[0]:+.1f}",
        "; ".join(paired(ours, bm25, i) for i in range(3)),
    ]


def alternatives(
    label: str, tools: list[dict[str, Any]], queries: list[dict[str, Any]]
) -> list[str]:
    """One row of the rules table: the shipped rules' mean, then each alternative's."""
    base = index_each(tools, queries, shipped())
    cells = [label, f"{objective(means(base)):.2f}"]
    for change in ALTERNATIVES.values():
        each = index_each(tools, queries, {**shipped(), **change})
        cells.append(f"{objective(means(each)):.2f}, {paired(each, base, 2)}")
    return cells


async def run(data: Path, sample: int | None, markdown: Path | None) -> None:
    table = Table(
        "The shipped lexical defaults (`ours`) and FastMCP's BM25 on the training sources "
        "(which took part in choosing the defaults: held out, they are in the fourteen-catalog "
        "grid); the requests each ranks better (ours / BM25, on R@1, R@5 and nDCG@10) and the "
        "two-sided sign test's p over them:",
        ["catalog (requests, tools)", *BESIDE_BM25],
        right=BESIDE_BM25_RIGHT,
    )
    rules = Table(
        "The shipped rules and three alternatives on the same requests (bare `SearchIndex`): the "
        "mean of R@1, R@5 and nDCG@10, and the requests each alternative ranks better / worse "
        "than the shipped rules on nDCG@10 (sign test's p):",
        ["catalog", "shipped", *ALTERNATIVES],
        right={"shipped"},
    )
    for folder in sources(data):
        tools, queries = load_set(folder, "queries.jsonl")
        queries = sampled(queries, sample)
        ours, _ = await evaluate_each(tools, queries, "ours")
        bm25, _ = await evaluate_each(tools, queries, "fastmcp bm25")
        label = f"{folder.name} ({len(queries):,}, {len(tools):,})"
        table.add(*row(label, ours, bm25))
        print(" | ".join(table.rows[-1]), flush=True)
        multi = several(queries)
        # Only where they are a part of the file, not nearly all of it.
        if 10 <= len(multi) <= 0.9 * len(queries):
            label = f"{folder.name}, several tools ({len(multi):,})"
            table.add(*row(label, [ours[i] for i in multi], [bm25[i] for i in multi]))
            print(" | ".join(table.rows[-1]), flush=True)
        rules.add(*alternatives(folder.name, tools, queries))
        print(" | ".join(rules.rows[-1]), flush=True)
    if markdown:
        write(markdown, [table, rules])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--sample", type=int, default=1000, help="requests per source at most (0: all)"
    )
    parser.add_argument("--markdown", type=Path, metavar="PATH", help="also write the table here")
    args = parser.parse_args()
    asyncio.run(run(args.data, args.sample or None, args.markdown))


if __name__ == "__main__":
    main()

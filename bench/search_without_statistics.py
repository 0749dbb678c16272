"""Lexical search on a catalog whose documents count in no statistics, against one whose do.

A component only some clients may see (a member of a group under an access check, one with
its own ``auth``, a mounted server's, one a provider lists by the caller's token) counts in
no field length average and no boilerplate parameter, so it moves no other client's scores.
A catalog made only of such components (a gateway in front of one upstream that lists by
each client's token) then has no statistics of its own: ``ranking`` ranks it with a typical
catalog's field lengths (``_TYPICAL_AVERAGES``, from the training sources, never these
sets). This prints, per request set, R@1, R@5 and nDCG@10 of the same catalog three ways:
its own statistics (every document counted), none with the typical averages (what ships),
and none with every average one word (what shipped before).

Usage: ``python bench/search_without_statistics.py [--sample N] [--markdown PATH]``
(a few minutes on one core).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import search_quality

from fastmcp_filtering.retrieval import ranking
from fastmcp_filtering.retrieval.ranking import SearchIndex

WAYS = {
    "own statistics": (True, None),
    "none: typical averages": (False, None),
    "none: one-word averages": (False, (1.0,) * len(ranking.FIELDS)),
}
"""Each way to rank: whether documents count in the statistics, and the averages used when
none do (None: what ships)."""


def ranked(
    tools: list[dict[str, Any]], queries: list[dict[str, Any]], counted: bool
) -> list[float]:
    """R@1, R@5, nDCG@10 (and the rest of ``search_quality.means``) of the default ranking,
    on the documents the bench indexes, counted in the statistics or not."""
    described, names = search_quality.index_for(tools, search_quality.configurations()[0])
    index = SearchIndex()
    for key, entry in described._store.entries.items():
        index.upsert(key, replace(entry.document, in_statistics=counted))
    return search_quality.means(search_quality._each(index, names, queries))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=300, help="requests per set at most")
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    options = parser.parse_args()
    header = "| set | " + " | ".join(f"{way}: R@1 / R@5 / nDCG@10" for way in WAYS) + " |"
    lines = [header, "|---|" + "---:|" * len(WAYS)]
    shipped = ranking._TYPICAL_AVERAGES
    for name, (folder, queries_file) in search_quality.plan(search_quality.DEFAULT_DATA).items():
        tools, queries = search_quality.load_set(folder, queries_file)
        queries = search_quality.sampled(queries, options.sample)
        cells = []
        for counted, averages in WAYS.values():
            ranking._TYPICAL_AVERAGES = averages or shipped
            scores = ranked(tools, queries, counted)
            cells.append(" / ".join(f"{x:.1f}" for x in scores[:3]))
        ranking._TYPICAL_AVERAGES = shipped
        lines.append(
            f"| {name} ({len(queries)} requests, {len(tools)} tools) | " + " | ".join(cells) + " |"
        )
        print(lines[-1], flush=True)
    if options.markdown is not None:
        options.markdown.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

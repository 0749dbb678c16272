"""The catalogs the training and the leave-one-set-out evaluation use, in one shape.

A catalog is one ``tools.jsonl`` with its query files: the evaluation sets
(``../shared/datasets/tool-retrieval/``, ``bench/datasets/``) and the converted training
sources (``train/data/*/``). Each catalog is seen two ways:

- as the bench sees it (``bench/semantic_options.py``'s ``catalog()``, the same text
  ``SearchMiddleware`` embeds, and ``bench/search_quality.py``'s ``index_for()`` lexical
  index, both keyed by the name a proxy would list): requests are ranked and scored so;
- for training, every tool by its ``id`` (BFCL repeats names): a request's positives are
  the tools its gold ``ids`` (or, without them, gold names) pick.

Which catalogs may train which fold: ``TRAINABLE`` (the benchmark sets and the converted
sources); ``arcade`` is evaluation only (its requests come from the toolkits' own eval suites).
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import _markdown as markdown  # noqa: E402  (bench/ scripts import their neighbours so)
import search_quality as sq  # noqa: E402
import semantic_options as so  # noqa: E402

from fastmcp_filtering.retrieval.ranking import (  # noqa: E402
    Document,
)
from fastmcp_filtering.retrieval.semantic_index import document_text  # noqa: E402

__all__ = ["Catalog", "load", "load_all", "markdown", "so", "sq", "training_requests"]

SHARED = sq.DEFAULT_DATA
TRAIN_DATA = Path(__file__).resolve().parent / "data"
# Evaluation catalogs, their query files (the bench's set names) and whether a fold may
# train on them. ``arcade``: requests its servers' own authors wrote, never trained on.
EVAL_FILES: dict[str, list[tuple[str, str]]] = {
    "livemcpbench": [("livemcpbench", "queries.jsonl")],
    "metatool": [("metatool single", "queries.jsonl"), ("metatool multi", "multi_queries.jsonl")],
    "arcade": [("arcade", "queries.jsonl")],
    "etom": [
        ("etom", "queries.jsonl"),
        ("etom equiv", "equiv_queries.jsonl"),
        ("etom multi", "multi_queries.jsonl"),
    ],
}
EVAL_ONLY = frozenset({"arcade"})
SOURCES = ["sealtools", "bfcl", "apibank", "toolalpaca"]
# Converted later (2026-11-27) and trained on only by the ``d`` variant (``finetune.py pairs
# --more``): the shipped recipe's data stays ``SOURCES``.
MORE_SOURCES = ["bfclturns", "stabletoolbench", "nestful"]
# At most this many requests of one catalog train a model (MetaTool has 20,614).
TRAIN_CAP = 3000
SEED = 28


def folder_of(name: str) -> Path:
    if name in SOURCES or name in MORE_SOURCES:
        return TRAIN_DATA / name
    shared = SHARED / name
    return shared if shared.is_dir() else sq.LOCAL_DATA / name


@dataclass
class Catalog:
    """One catalog: its tools, its requests per query file, and its two views."""

    name: str
    folder: Path
    tools: list[dict[str, Any]]
    files: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    # -- the bench's view -----------------------------------------------------------------

    @cached_property
    def bench_view(self) -> tuple[list[str], list[str], dict[str, str]]:
        """Listed names, their embedded texts, and each listed name's data set name."""
        documents, names = so.catalog(self.folder)
        keys = list(documents)
        return keys, [document_text(documents[k]) for k in keys], {k: names[k][0] for k in keys}

    @cached_property
    def lexical(self) -> tuple[Any, dict[str, str]]:
        """The lexical index as the server variant ``ours`` builds it, shipped defaults."""
        return sq.index_for(self.tools, sq.shipped())

    # -- the training view ----------------------------------------------------------------

    @cached_property
    def train_view(self) -> tuple[list[str], list[str]]:
        """Tool ids and the text each is embedded from (as ``SearchMiddleware`` writes it)."""
        prefixed = len({t["server"] for t in self.tools}) > 1
        ids, texts, seen = [], [], set()
        for tool in self.tools:
            key = tool.get("id", tool["name"])
            if key in seen:
                continue
            seen.add(key)
            ids.append(key)
            texts.append(document_text(_document(tool, prefixed)))
        return ids, texts

    def positives(self, query: dict[str, Any]) -> list[int]:
        """Rows of ``train_view`` that answer ``query``."""
        row = self._row
        if query.get("gold_ids"):
            return sorted({row[g] for g in query["gold_ids"] if g in row})
        gold = set(query["gold"])
        return [i for i, tool in enumerate(self._by_row) if tool["name"] in gold]

    @cached_property
    def _row(self) -> dict[str, int]:
        return {key: i for i, key in enumerate(self.train_view[0])}

    @cached_property
    def _by_row(self) -> list[dict[str, Any]]:
        first: dict[str, dict[str, Any]] = {}
        for tool in self.tools:
            first.setdefault(tool.get("id", tool["name"]), tool)
        return list(first.values())


def _document(tool: dict[str, Any], prefixed: bool) -> Document:
    """The tool as ``SearchMiddleware`` describes it (as ``semantic_options.catalog``)."""
    properties = (tool.get("inputSchema") or {}).get("properties") or {}
    params = tuple(
        (str(n), str(s.get("description", "")) if isinstance(s, dict) else "")
        for n, s in properties.items()
    )
    name, groups = tool["name"], tuple[str, ...]()
    if prefixed:
        server = tool["server"]
        name = sq.listed_name(tool, True)
        described = (so._safe(server), server.replace("_", " "), tool.get("server_description"))
        groups = tuple(text for text in described if text)
    return Document(
        name=name, description=tool.get("description") or "", groups=groups, params=params
    )


def load(name: str) -> Catalog:
    folder = folder_of(name)
    tools = [json.loads(line) for line in (folder / "tools.jsonl").read_text().splitlines()]
    catalog = Catalog(name, folder, tools)
    files = EVAL_FILES.get(name, [(name, "queries.jsonl")])
    for set_name, file in files:
        rows = [json.loads(line) for line in (folder / file).read_text().splitlines()]
        for row in rows:
            row["_key"] = f"{file}:{row['qid']}"
        catalog.files[set_name] = rows
    return catalog


def load_all(*, more: bool = False) -> dict[str, Catalog]:
    """Every catalog: the evaluation sets and the sources (``more``: ``MORE_SOURCES`` too)."""
    return {name: load(name) for name in [*EVAL_FILES, *SOURCES, *(MORE_SOURCES if more else [])]}


def cross_overlaps() -> dict[str, dict[str, list[str]]]:
    """``train/data/eval_overlaps.json``: requests of one catalog that repeat another's."""
    path = TRAIN_DATA / "eval_overlaps.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def training_requests(catalog: Catalog, held_out: str | None) -> list[dict[str, Any]]:
    """The requests of ``catalog`` a model may train on while ``held_out`` is evaluated.

    None of them repeats a request of ``held_out`` (``eval_overlaps.json``); at most
    ``TRAIN_CAP``, chosen with a fixed seed.
    """
    if catalog.name in EVAL_ONLY or catalog.name == held_out:
        return []
    banned = set(cross_overlaps().get(held_out or "", {}).get(catalog.name, []))
    return [r for r in capped(catalog) if r["_key"] not in banned]


def capped(catalog: Catalog) -> list[dict[str, Any]]:
    """Every request of the catalog, or ``TRAIN_CAP`` of them (fixed seed), in file order."""
    rows = [r for rows in catalog.files.values() for r in rows]
    if len(rows) <= TRAIN_CAP:
        return rows
    chosen = set(random.Random(f"{SEED}:{catalog.name}").sample(range(len(rows)), TRAIN_CAP))
    return [r for i, r in enumerate(rows) if i in chosen]


def evaluation_requests(
    catalog: Catalog, set_name: str, sample: int | None
) -> list[dict[str, Any]]:
    """A set's requests as the bench samples them (``--sample``: evenly spaced)."""
    return sq.sampled(catalog.files[set_name], sample)

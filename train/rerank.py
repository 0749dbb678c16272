"""A learned reranker over the served blend's top 20, chosen leave-one-set-out (issue 28).

The blend ``SearchMiddleware`` serves adds two scores with one weight. A reranker can also
weigh how the two rankings agree, how much of a tool's name the request says, and whether a
candidate's server has other good candidates. Here it is a linear score over ``FEATURES`` of
each of the blend's first ``DEPTH`` candidates (all free of the catalog's size), trained with
a softmax over a request's candidates towards its gold ones (L2 ``DECAY``, Adam, features
standardised on the training requests, each training catalog weighted alike). Every choice
above was fixed before any result below was seen.

Features are only honest on requests the embedding model never trained on, so a catalog's
requests are ranked by its own fold model (trained without it), and only the three trainable
evaluation catalogs can train a reranker (the converted sources trained every fold model).
For a reported catalog X, the reranker is trained on the trainable catalogs other than X.
Whether X is served reranked is decided without X: by the mean merit gain (R@1, R@5, nDCG@10
alike) on each other trainable catalog c of a reranker trained without c and X; it must reach
``variant_probe.MARGIN``. For arcade (never trained on) that choice is the shipped model's.

Usage: ``.venv/bin/python train/rerank.py [--sample 500]``
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

import numpy as np
from catalogs import EVAL_FILES, EVAL_ONLY
from evaluate import merit
from fusion_weight import fold_runs
from ranking import SHIPPED_WEIGHT, Prepared
from variant_probe import MARGIN

DEPTH = 20
DECAY = 1e-3
STEPS = 400
RATE = 0.05
FEATURES = (
    "blend - best blend",
    "cosine",
    "cosine - best cosine",
    "lexical / best lexical",
    "lexical match",
    "log(1 + blend rank)",
    "log(1 + cosine rank)",
    "log(1 + lexical rank)",
    "name words in the request",
    "server's share of the top 10",
    "log(1 + server's best rank)",
)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


@dataclass
class Ranked:
    """One set's candidates (rows of the catalog, -1 past the end) and their features."""

    prepared: Prepared
    rows: np.ndarray  # requests x DEPTH
    features: np.ndarray  # requests x DEPTH x len(FEATURES)
    gold: np.ndarray  # requests x DEPTH: 1 where the candidate is a gold tool


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) > 1}


def _ranks(values: np.ndarray) -> np.ndarray:
    """Per row, each column's place when sorted by value, best first (0-based)."""
    order = np.argsort(-values, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(values.shape[1])[None, :], axis=1)
    return ranks


def ranked(p: Prepared, keys: list[str]) -> Ranked:
    """The blend's first ``DEPTH`` candidates of every request of ``p`` and their features."""
    rows = p.top(p.queries, SHIPPED_WEIGHT, k=DEPTH)
    valid = rows >= 0
    safe = np.where(valid, rows, 0)
    take = np.arange(len(rows))[:, None]
    cosine = np.einsum("rd,rkd->rk", p.queries, p.documents[safe])
    lexical = p.lexical[take, safe]
    # The served blend, except that a candidate found by lexical match alone keeps its cosine
    # here (served: 0): a feature, while the blend's own order is ``rows``.
    blend = SHIPPED_WEIGHT * lexical + (1 - SHIPPED_WEIGHT) * cosine
    low = -1e9
    blend, cosine_v = np.where(valid, blend, low), np.where(valid, cosine, low)
    lexical_rank = np.where(lexical > 0, _ranks(np.where(valid, lexical, low)), DEPTH)
    servers = np.array([k.split("__")[0] for k in keys])
    server = np.where(valid, servers[safe], "")
    top10 = server[:, :10]
    share = (server[:, :, None] == top10[:, None, :]).sum(axis=2) / 10
    first = np.array(
        [
            [next(j for j in range(DEPTH) if server[i, j] == s) for s in server[i]]
            for i in range(len(rows))
        ]
    )
    queries = [words(r["query"]) for r in p.requests]
    names = [words(p.names[r]) for r in range(len(p.names))]
    cover = np.array(
        [
            [len(names[c] & q) / max(1, len(names[c])) if c >= 0 else 0 for c in row]
            for row, q in zip(rows.tolist(), queries, strict=True)
        ]
    )
    features = np.stack(
        [
            blend - blend[:, :1],
            cosine,
            cosine - cosine_v.max(axis=1, keepdims=True),
            lexical,
            (lexical > 0).astype(float),
            np.log1p(np.arange(DEPTH))[None, :].repeat(len(rows), axis=0),
            np.log1p(_ranks(cosine_v)),
            np.log1p(lexical_rank),
            cover,
            share,
            np.log1p(first),
        ],
        axis=2,
    )
    features = np.where(valid[:, :, None], features, 0.0)
    gold = np.array(
        [
            [float(c >= 0 and p.names[c] in set(r["gold"])) for c in row]
            for row, r in zip(rows.tolist(), p.requests, strict=True)
        ]
    )
    return Ranked(p, rows, features, gold)


@dataclass(frozen=True)
class Reranker:
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray

    def scores(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.scale) @ self.weights


def fit(groups: list[list[Ranked]]) -> Reranker:
    """A linear reranker trained on each group (catalog) of sets, catalogs weighted alike."""
    xs, targets, masks, weights = [], [], [], []
    for group in groups:
        kept = [
            (r.features[i], r.gold[i], r.rows[i] >= 0)
            for r in group
            for i in range(len(r.rows))
            if r.gold[i].any()
        ]
        for x, g, m in kept:
            xs.append(x)
            targets.append(g / g.sum())
            masks.append(m)
            weights.append(1.0 / len(kept))
    x = np.array(xs)
    target, mask = np.array(targets), np.array(masks)
    w_request = np.array(weights) / len(groups)
    flat = x[mask]
    mean, scale = flat.mean(axis=0), flat.std(axis=0) + 1e-6
    z = (x - mean) / scale
    theta = np.zeros(len(FEATURES))
    theta[0] = 1.0  # start from the blend's own order
    m1, m2 = np.zeros_like(theta), np.zeros_like(theta)
    for step in range(1, STEPS + 1):
        logits = np.where(mask, z @ theta, -np.inf)
        logits -= logits.max(axis=1, keepdims=True)
        prob = np.exp(logits)
        prob /= prob.sum(axis=1, keepdims=True)
        grad = np.einsum("r,rk,rkf->f", w_request, prob - target, np.where(mask[:, :, None], z, 0))
        grad += DECAY * theta
        m1 = 0.9 * m1 + 0.1 * grad
        m2 = 0.999 * m2 + 0.001 * grad**2
        theta -= RATE * (m1 / (1 - 0.9**step)) / (np.sqrt(m2 / (1 - 0.999**step)) + 1e-8)
    return Reranker(mean, scale, theta)


def reranked(r: Ranked, model: Reranker | None) -> np.ndarray:
    """The set's top 10 rows, reranked by ``model`` (None: the blend's own order)."""
    if model is None:
        return r.rows[:, :10]
    scores = np.where(r.rows >= 0, model.scores(r.features), -np.inf)
    order = np.lexsort((np.arange(DEPTH)[None, :].repeat(len(scores), axis=0), -scores), axis=1)
    return np.take_along_axis(r.rows, order, axis=1)[:, :10]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=500)
    args = parser.parse_args()
    runs = fold_runs(args.sample)
    sets = {
        c: [ranked(p, run.catalogs[c].bench_view[0]) for p in run.sets(c)]
        for c, run in runs.items()
    }
    trainable = [c for c in EVAL_FILES if c not in EVAL_ONLY]

    def merits(c: str, model: Reranker | None) -> list[list[float]]:
        return [r.prepared.metrics(reranked(r, model)) for r in sets[c]]

    def gain(c: str, without: set[str]) -> float:
        model = fit([sets[t] for t in trainable if t not in without | {c}])
        after, before = merits(c, model), merits(c, None)
        return float(np.mean([merit(a) - merit(b) for a, b in zip(after, before, strict=True)]))

    print("set | served (R@1 / Hit@1 / R@5 / nDCG@10) | reranked | chosen without it")
    for held_out in EVAL_FILES:
        others = [c for c in trainable if c != held_out]
        inner = float(np.mean([gain(c, {held_out}) for c in others]))
        model = fit([sets[t] for t in others])
        chosen = "reranked" if inner >= MARGIN else "served"
        for before, after, r in zip(
            merits(held_out, None), merits(held_out, model), sets[held_out], strict=True
        ):
            cells = [" / ".join(f"{x:.1f}" for x in m) for m in (before, after)]
            print(
                f"{r.prepared.name} | {cells[0]} | {cells[1]} | {chosen} ({inner:+.2f})", flush=True
            )
        print(
            "  weights: "
            + ", ".join(f"{n} {w:+.2f}" for n, w in zip(FEATURES, model.weights, strict=True))
        )


if __name__ == "__main__":
    main()

"""The blend's lexical weight (and cosine scale) for the fine-tuned models, leave-one-set-out.

The shipped weight (0.2) was chosen for the original MiniLM. Choosing it for a fine-tuned
model needs, per candidate catalog, a model trained without that catalog: the fold models
are exactly that (each held out its catalog, and none trained on arcade). So for each
reported catalog the weight is chosen from ``WEIGHTS`` (fixed beforehand) by the mean merit
(R@1, R@5, nDCG@10 alike) of the other trainable catalogs, each ranked by its own fold's
model; the reported catalog is then ranked by its fold's model with that weight. For arcade
(the shipped model's held-out catalog) the choice uses all three trainable catalogs.

``--scales raw best minmax`` lets the choice also scale the candidates' cosines per request
before the blend, as lexical scores are (``ranking.Prepared.top``): divided by the best, or
stretched between the worst and the best of the nearest; ``raw`` is what is served.

Usage: ``.venv/bin/python train/fusion_weight.py [--sample 500] [--scales raw best minmax]``
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from catalogs import EVAL_FILES, EVAL_ONLY
from embed import finetuned
from evaluate import Run, merit
from ranking import SHIPPED_WEIGHT, Prepared

WEIGHTS = [0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4]
FILE = "model_dynamic_int8.onnx"
SHIPPED = ("raw", SHIPPED_WEIGHT)
G = TypeVar("G")


def scored(p: Prepared, choice: tuple[str, float]) -> list[float]:
    """R@1, Hit@1, R@5, nDCG@10 of one set with a (cosine scale, lexical weight) choice."""
    return p.metrics(p.top(p.queries, choice[1], cosine_scale=choice[0]))


def fold_runs(sample: int) -> dict[str, Run]:
    """Every evaluation catalog's run, ranked by its own fold's model (trained without it)."""
    return {c: Run(sample, "fine-tuned", finetuned(c, FILE)) for c in EVAL_FILES}


def inner_merits(
    sample: int, grid: list[G], score: Callable[[Prepared, G], list[float]]
) -> tuple[dict[str, Run], dict[str, dict[G, float]]]:
    """Each fold's run, and per held-out catalog each choice's mean merit on the others.

    Every trainable catalog is ranked by its own fold's model (trained without it) with
    each choice in ``grid``; a held-out catalog's merit of a choice is the mean over the
    trainable catalogs other than it.
    """
    runs = fold_runs(sample)
    means = {
        c: {g: float(np.mean([merit(score(p, g)) for p in run.sets(c)])) for g in grid}
        for c, run in runs.items()
        if c not in EVAL_ONLY
    }
    merit_of = {
        held_out: {g: float(np.mean([means[c][g] for c in means if c != held_out])) for g in grid}
        for held_out in runs
    }
    return runs, merit_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=500)
    parser.add_argument("--scales", nargs="+", default=["raw"], choices=["raw", "best", "minmax"])
    args = parser.parse_args()
    grid = [(scale, w) for scale in args.scales for w in WEIGHTS]
    runs, merits = inner_merits(args.sample, grid, scored)
    print("set | chosen | R@1 / Hit@1 / R@5 / nDCG@10 as served -> with the choice")
    for held_out, run in runs.items():
        merit_of = merits[held_out]
        chosen = max(grid, key=lambda g: (merit_of[g], g == SHIPPED))
        best = sorted(grid, key=lambda g: -merit_of[g])[:3]
        print(f"{held_out}: inner merit " + ", ".join(f"{g}: {merit_of[g]:.2f}" for g in best))
        for p in run.sets(held_out):
            before, after = scored(p, SHIPPED), scored(p, chosen)
            cells = " ".join(f"{x:.1f}" for x in before), " ".join(f"{x:.1f}" for x in after)
            print(f"{p.name} | {chosen[0]} {chosen[1]:g} | {cells[0]} -> {cells[1]}", flush=True)


if __name__ == "__main__":
    main()

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

``--rules blended default steps`` lets it choose the lexical share's rules too: the blend's
own (``BLENDED_RULES``, as served), the lexical ranking's (``DEFAULT_RULES``), or the blend's
own with the lexical ranking's steps (``Rules.step_weight``).

Usage: ``.venv/bin/python train/fusion_weight.py [--sample 500] [--scales raw best minmax]
[--rules blended default steps]``
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from catalogs import EVAL_FILES, EVAL_ONLY, sq
from embed import finetuned
from evaluate import Run, merit
from ranking import SHIPPED_WEIGHT, Prepared

from fastmcp_filtering.retrieval.ranking import BLENDED_RULES, DEFAULT_RULES, Rules

WEIGHTS = [0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4]
TIE = sq.TIE  # a share of the best merit within which choices count as tied
# The blend's lexical rules to choose from: as served, the lexical ranking's own, or as served
# with the lexical ranking's steps.
RULES = {
    "blended": BLENDED_RULES,
    "default": DEFAULT_RULES,
    "steps": dataclasses.replace(BLENDED_RULES, step_weight=DEFAULT_RULES.step_weight),
}
FILE = "model_dynamic_int8.onnx"
SHIPPED = ("raw", SHIPPED_WEIGHT)
G = TypeVar("G")


def scored(p: Prepared, choice: tuple[str, float]) -> list[float]:
    """R@1, Hit@1, R@5, nDCG@10 of one set with a (cosine scale, lexical weight) choice."""
    return p.metrics(p.top(p.queries, choice[1], cosine_scale=choice[0]))


def fold_runs(sample: int, rules: Rules = BLENDED_RULES) -> dict[str, Run]:
    """Every evaluation catalog's run, ranked by its own fold's model (trained without it),
    the blend's lexical share matched by ``rules``."""
    return {c: Run(sample, "fine-tuned", finetuned(c, FILE), rules) for c in EVAL_FILES}


def inner_merits(
    sample: int, grid: list[G], score: Callable[[Prepared, G], list[float]]
) -> tuple[dict[str, Run], dict[str, dict[G, float]]]:
    """Each fold's run, and per held-out catalog each choice's mean merit on the others.

    Every trainable catalog is ranked by its own fold's model (trained without it) with
    each choice in ``grid``; a held-out catalog's merit of a choice is the mean over the
    trainable catalogs other than it.
    """
    runs = fold_runs(sample)
    return runs, held_out_merits(grid, lambda c, g: [score(p, g) for p in runs[c].sets(c)])


def held_out_merits(
    grid: list[G], scores: Callable[[str, G], list[list[float]]]
) -> dict[str, dict[G, float]]:
    """Per held-out catalog, each choice's mean merit on the trainable catalogs but it;
    ``scores(catalog, choice)``: the metrics of each of the catalog's request files."""
    means = {
        c: {g: float(np.mean([merit(m) for m in scores(c, g)])) for g in grid}
        for c in EVAL_FILES
        if c not in EVAL_ONLY
    }
    return {
        held_out: {g: float(np.mean([means[c][g] for c in means if c != held_out])) for g in grid}
        for held_out in EVAL_FILES
    }


def choose(grid: list[G], merit_of: dict[G, float], served: G) -> G:
    """The best choice; within ``TIE`` of the best, what is served (as the lexical grid of
    ``bench/search_quality.py`` keeps the designed rules: data that cannot tell two choices
    apart does not change what ships)."""
    best = max(grid, key=lambda g: merit_of[g])
    if served in merit_of and merit_of[served] >= merit_of[best] * (1 - TIE):
        return served
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=500)
    parser.add_argument("--scales", nargs="+", default=["raw"], choices=["raw", "best", "minmax"])
    parser.add_argument(
        "--rules",
        nargs="+",
        default=["blended"],
        choices=list(RULES),
        help="the blend's lexical rules to choose from (blended: BLENDED_RULES, as served)",
    )
    args = parser.parse_args()
    # The blend as served is the baseline, whichever rules are offered.
    runs = {r: fold_runs(args.sample, RULES[r]) for r in dict.fromkeys(["blended", *args.rules])}
    grid = [(r, scale, w) for r in args.rules for scale in args.scales for w in WEIGHTS]
    served = ("blended", *SHIPPED)
    merits = held_out_merits(grid, lambda c, g: [scored(p, g[1:]) for p in runs[g[0]][c].sets(c)])
    print("set | chosen | R@1 / Hit@1 / R@5 / nDCG@10 as served -> with the choice")
    for held_out in EVAL_FILES:
        merit_of = merits[held_out]
        chosen = choose(grid, merit_of, served)
        best = sorted(grid, key=lambda g: -merit_of[g])[:3]
        print(f"{held_out}: inner merit " + ", ".join(f"{g}: {merit_of[g]:.2f}" for g in best))
        for i, p in enumerate(runs[chosen[0]][held_out].sets(held_out)):
            base = runs["blended"][held_out].sets(held_out)[i]
            before, after = scored(base, SHIPPED), scored(p, chosen[1:])
            cells = " ".join(f"{x:.1f}" for x in before), " ".join(f"{x:.1f}" for x in after)
            print(f"{p.name} | {' '.join(map(str, chosen))} | {cells[0]} -> {cells[1]}", flush=True)


if __name__ == "__main__":
    main()

"""A lexical weight per request, from how well the request's best lexical match covers it.

The blend's lexical share is one number (0.2), but catalogs pull it apart: requests that
paraphrase (metatool single) rank best with less, requests that say the tool's words (arcade)
with more. A request's best lexical score as a share of its ceiling (``ranking._ceiling``:
what a tool named and described by the request's words would score) says which kind it is,
whatever the catalog's size. The variant: weight ``low`` when that share is under
``threshold``, ``high`` otherwise; ``(threshold, low, high)`` from ``GRID`` (fixed
beforehand), chosen per reported catalog by the mean merit (R@1, R@5, nDCG@10 alike) of the
other trainable catalogs, each ranked by its own fold's fine-tuned model, as
``fusion_weight.py`` chooses; the shipped single weight stays unless the choice gains at
least ``MARGIN`` there.

Usage: ``.venv/bin/python train/fusion_adaptive.py [--sample 500]``
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
from fusion_weight import inner_merits
from ranking import SHIPPED_WEIGHT, Prepared
from variant_probe import MARGIN

THRESHOLDS = [0.1, 0.2, 0.3, 0.4, 0.5]
LOWS = [0.05, 0.1, 0.15, 0.2]
HIGHS = [0.2, 0.3, 0.4]
SHIPPED = (0.0, SHIPPED_WEIGHT, SHIPPED_WEIGHT)
GRID = [SHIPPED, *((t, lo, hi) for t, lo, hi in itertools.product(THRESHOLDS, LOWS, HIGHS))]


def scored(p: Prepared, choice: tuple[float, float, float]) -> list[float]:
    """R@1, Hit@1, R@5, nDCG@10 of one set with a (threshold, low, high) choice."""
    threshold, low, high = choice
    share = p.best_lexical / np.maximum(p.ceiling, 1e-9)
    weight = np.where(share < threshold, low, high)
    return p.metrics(p.top(p.queries, weight))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=500)
    args = parser.parse_args()
    runs, merits = inner_merits(args.sample, GRID, scored)
    print("set | chosen (threshold, low, high) | R@1 / Hit@1 / R@5 / nDCG@10 shipped -> chosen")
    for held_out, run in runs.items():
        merit_of = merits[held_out]
        best = max(GRID, key=lambda g: merit_of[g])
        gain = merit_of[best] - merit_of[SHIPPED]
        chosen = best if gain >= MARGIN else SHIPPED
        print(f"{held_out}: inner best {best} gains {gain:+.2f}")
        for p in run.sets(held_out):
            cells = [" ".join(f"{x:.1f}" for x in scored(p, g)) for g in (SHIPPED, chosen, best)]
            print(f"{p.name} | {chosen} | {cells[0]} -> {cells[1]} (best inner: {cells[2]})")
            single = {w: scored(p, (0.0, w, w))[0] for w in (0.1, 0.2, 0.3, 0.4, 0.5)}
            print("  R@1 at one weight: " + ", ".join(f"{w:g}: {r:.1f}" for w, r in single.items()))


if __name__ == "__main__":
    main()

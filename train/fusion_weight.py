"""The blend's lexical weight for the fine-tuned models, chosen leave-one-set-out.

The shipped weight (0.2) was chosen for the original MiniLM. Choosing it for a fine-tuned
model needs, per candidate catalog, a model trained without that catalog: the fold models
are exactly that (each held out its catalog, and none trained on arcade). So for each
reported catalog the weight is chosen from ``WEIGHTS`` (fixed beforehand) by the mean merit
(R@1, R@5, nDCG@10 alike) of the other trainable catalogs, each ranked by its own fold's
model; the reported catalog is then ranked by its fold's model with that weight. For arcade
(the shipped model's held-out catalog) the choice uses all three trainable catalogs.

Usage: ``.venv/bin/python train/fusion_weight.py [--sample 500]``
"""

from __future__ import annotations

import argparse

import numpy as np
from catalogs import EVAL_FILES, EVAL_ONLY
from embed import finetuned
from evaluate import Run, merit
from ranking import SHIPPED_WEIGHT

WEIGHTS = [0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4]
FILE = "model_dynamic_int8.onnx"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=500)
    args = parser.parse_args()
    runs = {c: Run(args.sample, "fine-tuned", finetuned(c, FILE)) for c in EVAL_FILES}
    means = {
        c: {
            w: float(np.mean([merit(p.metrics(p.top(p.queries, w))) for p in run.sets(c)]))
            for w in WEIGHTS
        }
        for c, run in runs.items()
        if c not in EVAL_ONLY
    }
    print("set | chosen weight | R@1 / Hit@1 / R@5 / nDCG@10 at 0.2 -> at the chosen weight")
    for held_out, run in runs.items():
        inner = [c for c in means if c != held_out]
        chosen = max(WEIGHTS, key=lambda w: (np.mean([means[c][w] for c in inner]), w == 0.2))
        inner_text = ", ".join(
            f"{w:g}: {np.mean([means[c][w] for c in inner]):.2f}" for w in WEIGHTS
        )
        print(f"{held_out}: inner merit {inner_text}")
        for p in run.sets(held_out):
            before = p.metrics(p.top(p.queries, SHIPPED_WEIGHT))
            after = p.metrics(p.top(p.queries, chosen))
            cells = " ".join(f"{x:.1f}" for x in before), " ".join(f"{x:.1f}" for x in after)
            print(f"{p.name} | {chosen:g} | {cells[0]} -> {cells[1]}", flush=True)


if __name__ == "__main__":
    main()

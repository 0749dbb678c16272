"""Does a floor under the blend's lexical normaliser help? Chosen leave-one-set-out.

``fusion.blend`` divides lexical scores by the best one, so a request whose only lexical
match is weak and accidental gives that tool the whole lexical share (0.2). The variant:
divide by ``max(best, floor)``, a floor in the index's score units. For each held-out
catalog the floor is chosen from ``FLOORS`` on the other trainable catalogs (the converted
sources included, arcade never), by the mean merit (R@1, R@5, nDCG@10 alike) of the
original MiniLM's blend, which no catalog trained; then the held-out catalog is scored with
the chosen floor and with none, by the original MiniLM and by the fold's fine-tuned model.

Usage: ``.venv/bin/python train/fusion_floor.py [--sample 500]``
"""

from __future__ import annotations

import argparse

import numpy as np
from catalogs import EVAL_FILES, EVAL_ONLY, SOURCES
from embed import finetuned
from evaluate import Run, merit
from ranking import SHIPPED_WEIGHT, Prepared

FLOORS = [0.0, 1.0, 2.0, 3.0, 5.0, 8.0]


def scored(prepared: Prepared, floor: float) -> list[float]:
    return prepared.metrics(prepared.top(prepared.queries, SHIPPED_WEIGHT, floor=floor))


def choose(run: Run, held_out: str) -> float:
    """The floor with the best mean merit over the catalogs a fold may train on."""
    inner = [c for c in [*EVAL_FILES, *SOURCES] if c != held_out and c not in EVAL_ONLY]
    means = {}
    for floor in FLOORS:
        per_catalog = [np.mean([merit(scored(p, floor)) for p in run.sets(c)]) for c in inner]
        means[floor] = float(np.mean(per_catalog))
    print(f"{held_out}: inner merit " + ", ".join(f"{f:g}: {m:.2f}" for f, m in means.items()))
    return max(FLOORS, key=lambda f: (means[f], -f))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=500)
    args = parser.parse_args()
    base = Run(args.sample, "minilm")
    print("set | floor | MiniLM R@1/Hit@1/R@5/nDCG, floor 0 -> chosen | fine-tuned, the same")
    for held_out in EVAL_FILES:
        floor = choose(base, held_out)
        tuned = Run(args.sample, "fine-tuned", finetuned(held_out, "model_dynamic_int8.onnx"))
        for plain, mine in zip(base.sets(held_out), tuned.sets(held_out), strict=True):
            cells = []
            for prepared in (plain, mine):
                before, after = scored(prepared, 0.0), scored(prepared, floor)
                cells.append(
                    " ".join(f"{x:.1f}" for x in before)
                    + " -> "
                    + " ".join(f"{x:.1f}" for x in after)
                )
            print(f"{plain.name} | {floor:g} | {cells[0]} | {cells[1]}", flush=True)


if __name__ == "__main__":
    main()

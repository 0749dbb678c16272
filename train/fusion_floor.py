"""Does a floor under the blend's lexical normaliser help? Chosen leave-one-set-out.

``fusion.blend`` divides lexical scores by the best one, so a request whose only lexical
match is weak and accidental gives that tool the whole lexical share (0.2). The variant:
divide by ``max(best, floor)``, a floor in the index's score units. For each held-out
catalog the floor is chosen from ``FLOORS`` on the other trainable catalogs (the converted
sources included, arcade never), by the mean merit (R@1, R@5, nDCG@10 alike) of the
original MiniLM's blend, which no catalog trained; then the held-out catalog is scored with
the chosen floor and with none, by the original MiniLM and by the fold's fine-tuned model.

``--relative``: the floor is a share (``SHARES``) of the request's own ceiling, the score a
tool named and described by the request's words would get (``ranking._ceiling``): free of
the catalog's size, where a floor in score units is not.

Usage: ``.venv/bin/python train/fusion_floor.py [--sample 500] [--relative]``
"""

from __future__ import annotations

import argparse

import numpy as np
from catalogs import EVAL_FILES, EVAL_ONLY, SOURCES
from embed import finetuned
from evaluate import Run, merit
from ranking import SHIPPED_WEIGHT, Prepared

FLOORS = [0.0, 1.0, 2.0, 3.0, 5.0, 8.0]
SHARES = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]


def scored(prepared: Prepared, floor: float, relative: bool = False) -> list[float]:
    """R@1, Hit@1, R@5, nDCG@10 of the blend with ``floor`` (a share of the ceiling if
    ``relative``)."""
    units, share = (0.0, floor) if relative else (floor, 0.0)
    top = prepared.top(prepared.queries, SHIPPED_WEIGHT, floor=units, relative_floor=share)
    return prepared.metrics(top)


def choose(run: Run, held_out: str, relative: bool) -> float:
    """The floor with the best mean merit over the catalogs a fold may train on."""
    inner = [c for c in [*EVAL_FILES, *SOURCES] if c != held_out and c not in EVAL_ONLY]
    means = {}
    for floor in SHARES if relative else FLOORS:
        per_catalog = [
            np.mean([merit(scored(p, floor, relative)) for p in run.sets(c)]) for c in inner
        ]
        means[floor] = float(np.mean(per_catalog))
    print(f"{held_out}: inner merit " + ", ".join(f"{f:g}: {m:.2f}" for f, m in means.items()))
    return max(means, key=lambda f: (means[f], -f))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=500)
    parser.add_argument("--relative", action="store_true", help="floors as shares of a ceiling")
    args = parser.parse_args()
    base = Run(args.sample, "minilm")
    print("set | floor | MiniLM R@1/Hit@1/R@5/nDCG, floor 0 -> chosen | fine-tuned, the same")
    for held_out in EVAL_FILES:
        floor = choose(base, held_out, args.relative)
        tuned = Run(args.sample, "fine-tuned", finetuned(held_out, "model_dynamic_int8.onnx"))
        for plain, mine in zip(base.sets(held_out), tuned.sets(held_out), strict=True):
            cells = []
            for prepared in (plain, mine):
                before = scored(prepared, 0.0)
                after = scored(prepared, floor, args.relative)
                cells.append(
                    " ".join(f"{x:.1f}" for x in before)
                    + " -> "
                    + " ".join(f"{x:.1f}" for x in after)
                )
            print(f"{plain.name} | {floor:g} | {cells[0]} | {cells[1]}", flush=True)


if __name__ == "__main__":
    main()

"""A training variant against the shipped recipe, chosen leave-one-set-out with the fold models.

A variant is a name: ``train/.cache/models/<catalog>-<variant>/`` holds the fold model of
``<catalog>`` trained the other way (``g``: ``finetune.py train --batching grouped``, each
batch from one training catalog; ``n``: ``--batching neighbours``; ``h``: pairs written with
``pairs --hard``, a mined hard negative a pair; ``e2``: ``--epochs 2``; ``d``: pairs written
with ``pairs --more``, the sources converted later train too), exported by ``export.py``.
Every model is scored on the catalog its fold held out, as ``SearchMiddleware`` serves it
(lexical weight 0.2). Then, for each reported catalog, the recipe is chosen by the mean
merit (R@1, R@5, nDCG@10 alike) on the *other* trainable catalogs that have both models, each
ranked by its own fold's model: the variant only when it gains at least ``MARGIN`` there (less
is within these sets' noise: one request of 390 is 0.26 R@1), else the shipped recipe. Arcade
is never trained on, so its choice uses every trainable catalog: the choice for the shipped
model.

Usage: ``.venv/bin/python train/variant_probe.py g [--sample 500]``
"""

from __future__ import annotations

import argparse

import numpy as np
from catalogs import EVAL_FILES, EVAL_ONLY
from embed import CACHE, finetuned
from evaluate import Run, merit
from ranking import SHIPPED_WEIGHT

FILE = "model_dynamic_int8.onnx"
MARGIN = 0.5  # mean merit points; fixed after the e2 probe, before the g folds were compared


def scores(sample: int, tag: str, catalog: str) -> dict[str, list[float]]:
    """R@1, Hit@1, R@5, nDCG@10 of ``tag``'s model on each of ``catalog``'s sets."""
    run = Run(sample, "fine-tuned", finetuned(tag, FILE))
    return {p.name: p.metrics(p.top(p.queries, SHIPPED_WEIGHT)) for p in run.sets(catalog)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("variant", help="the variant's name in its folders, e.g. g or e2")
    parser.add_argument("--sample", type=int, default=500)
    args = parser.parse_args()
    suffix = f"-{args.variant}"
    have = [c for c in EVAL_FILES if (CACHE / "models" / f"{c}{suffix}" / "onnx").is_dir()]
    results = {c: {v: scores(args.sample, f"{c}{v}", c) for v in ("", suffix)} for c in have}
    inner = {
        c: {v: float(np.mean([merit(m) for m in r[v].values()])) for v in r}
        for c, r in results.items()
        if c not in EVAL_ONLY
    }
    print("set | shipped recipe | variant (R@1 / Hit@1 / R@5 / nDCG@10) | chosen without it")
    for held_out, result in results.items():
        others = [c for c in inner if c != held_out]
        gain = np.mean([inner[c][suffix] - inner[c][""] for c in others]) if others else 0
        chosen = suffix[1:] if gain >= MARGIN else "shipped"
        for name, base in result[""].items():
            cells = [" / ".join(f"{x:.1f}" for x in m) for m in (base, result[suffix][name])]
            print(f"{name} | {cells[0]} | {cells[1]} | {chosen} ({gain:+.2f})", flush=True)
    gain = np.mean([inner[c][suffix] - inner[c][""] for c in inner])
    print(f"shipped model (arcade fold): {gain:+.2f} on {', '.join(inner)}", flush=True)


if __name__ == "__main__":
    main()

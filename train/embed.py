"""Frozen embeddings of every text the training and evaluation need, cached on disk.

The embedders are the ones the package ships: ``minilm`` (``MiniLMEmbedder``, the
``[semantic]`` extra: int8 ONNX all-MiniLM-L6-v2), ``wordllama`` (``WordLlamaEmbedder``, the
``[semantic-wordllama]`` extra) and ``ensemble`` (the two laid end to end at equal shares,
as ``EnsembleEmbedder`` does), so a trained adapter works on exactly the vectors the runtime
computes. Vectors are kept in ``train/.cache/<model>.npz`` (git-ignored) by a hash of the
text and whether it was embedded as a query; only texts not there yet are embedded.
``finetuned(fold)`` gives the vectors of a fine-tuned model exported by ``export.py``, run
by the same ``MiniLMEmbedder`` (its cache is named after the file's hash).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from catalogs import sq

from fastmcp_filtering.retrieval.embedders import MiniLMEmbedder, WordLlamaEmbedder

CACHE = Path(__file__).resolve().parent / ".cache"
# "minilm" is the original all-MiniLM-L6-v2, the base every fold starts from: the shipped
# model (MiniLMEmbedder's default) was trained on these catalogs.
MODELS = {"minilm": sq.base_minilm, "wordllama": WordLlamaEmbedder}


def _key(text: str, query: bool) -> str:
    return hashlib.sha1(f"{'q' if query else 'd'}\0{text}".encode()).hexdigest()


class Embeddings:
    """Text -> unit vector, embedded once and kept on disk."""

    def __init__(self, model: str = "minilm", factory: Callable[[], Any] | None = None) -> None:
        self.model = model
        self.factory = factory or MODELS[model]
        self.path = path = CACHE / f"{model}.npz"
        self.rows: dict[str, int] = {}
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        if path.is_file():
            data = np.load(path)
            self.rows = {k: i for i, k in enumerate(data["keys"].tolist())}
            self.matrix = data["vectors"]
        self._embedder: Any = None

    def ensure(self, texts: Sequence[str], *, query: bool) -> None:
        """Embed those of ``texts`` not cached yet, and save the cache."""
        todo = list(dict.fromkeys(t for t in texts if _key(t, query) not in self.rows))
        if not todo:
            return
        if self._embedder is None:
            self._embedder = self.factory()
        started = time.perf_counter()
        embed = getattr(self._embedder, "embed_query", self._embedder) if query else self._embedder
        vectors = [
            np.asarray(embed(todo[i : i + 512]), dtype=np.float32) for i in range(0, len(todo), 512)
        ]
        kind = "queries" if query else "documents"
        print(f"  embedded {len(todo):,} {kind} in {time.perf_counter() - started:.0f} s")
        for text in todo:
            self.rows[_key(text, query)] = len(self.rows)
        known = [self.matrix] if len(self.matrix) else []
        self.matrix = np.concatenate([*known, *vectors]).astype(np.float32)
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(sorted(self.rows, key=self.rows.__getitem__))
        np.savez(self.path, keys=keys, vectors=self.matrix)

    def get(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        """Unit vectors of ``texts`` (embedding any not cached yet), one row each."""
        self.ensure(texts, query=query)
        return self.matrix[[self.rows[_key(t, query)] for t in texts]]


class Ensemble:
    """Several models' vectors laid end to end, each scaled by the root of its share."""

    def __init__(self, *models: str) -> None:
        self.members = [Embeddings(m) for m in models]

    def get(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        share = np.sqrt(1.0 / len(self.members))
        return np.concatenate([share * m.get(texts, query=query) for m in self.members], axis=1)


def embeddings(base: str) -> Embeddings | Ensemble:
    """The vectors a base model gives: ``minilm``, ``wordllama`` or ``ensemble`` (both)."""
    return Ensemble("minilm", "wordllama") if base == "ensemble" else Embeddings(base)


def finetuned(fold: str, file: str = "model_int8.onnx") -> Embeddings:
    """The vectors of ``fold``'s fine-tuned model (``train/.cache/models/<fold>/onnx/``)."""
    folder = CACHE / "models" / fold / "onnx"
    path = folder / file
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]

    def build() -> MiniLMEmbedder:
        return MiniLMEmbedder(model_path=path, tokenizer_path=folder / "tokenizer.json")

    return Embeddings(f"finetuned-{fold}-{digest}", build)

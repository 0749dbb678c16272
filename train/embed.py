"""Frozen MiniLM embeddings of every text the training and evaluation need, cached on disk.

The embedder is the one the ``[semantic]`` extra ships (``MiniLMEmbedder``: int8 ONNX
all-MiniLM-L6-v2), so a trained adapter works on exactly the vectors the runtime computes.
Vectors are kept in ``train/.cache/minilm.npz`` (git-ignored) by a hash of the text and
whether it was embedded as a query; only texts not there yet are embedded.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from fastmcp_filtering.retrieval.embedders import MiniLMEmbedder

CACHE = Path(__file__).resolve().parent / ".cache" / "minilm.npz"


def _key(text: str, query: bool) -> str:
    return hashlib.sha1(f"{'q' if query else 'd'}\0{text}".encode()).hexdigest()


class Embeddings:
    """Text -> unit vector, embedded once and kept on disk."""

    def __init__(self, path: Path = CACHE) -> None:
        self.path = path
        self.rows: dict[str, int] = {}
        self.matrix = np.zeros((0, 384), dtype=np.float32)
        if path.is_file():
            data = np.load(path)
            self.rows = {k: i for i, k in enumerate(data["keys"].tolist())}
            self.matrix = data["vectors"]
        self._embedder: MiniLMEmbedder | None = None

    def ensure(self, texts: Sequence[str], *, query: bool) -> None:
        """Embed those of ``texts`` not cached yet, and save the cache."""
        todo = list(dict.fromkeys(t for t in texts if _key(t, query) not in self.rows))
        if not todo:
            return
        if self._embedder is None:
            self._embedder = MiniLMEmbedder()
        started = time.perf_counter()
        vectors = [
            self._embedder.encode(todo[i : i + 512], query=query) for i in range(0, len(todo), 512)
        ]
        kind = "queries" if query else "documents"
        print(f"  embedded {len(todo):,} {kind} in {time.perf_counter() - started:.0f} s")
        for text in todo:
            self.rows[_key(text, query)] = len(self.rows)
        self.matrix = np.concatenate([self.matrix, *vectors]).astype(np.float32)
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(sorted(self.rows, key=self.rows.__getitem__))
        np.savez(self.path, keys=keys, vectors=self.matrix)

    def get(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        """Unit vectors of ``texts`` (embedding any not cached yet), one row each."""
        self.ensure(texts, query=query)
        return self.matrix[[self.rows[_key(t, query)] for t in texts]]

"""An embedding index: cosine similarity to a query, re-embedding only what changed."""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import KeysView
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

from fastmcp_filtering.core.errors import OptionError, OptionTypeError
from fastmcp_filtering.retrieval.embedders import _require

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Sequence

    import numpy as np
    from numpy.typing import NDArray

    from fastmcp_filtering.retrieval.embedders import Embedder
    from fastmcp_filtering.retrieval.ranking import Document

_WORD_BREAK = re.compile(r"[_\-./:]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_INITIAL_ROWS = 64
# A ``within`` under 1/4 of the index is gathered row by row; a larger one filters the ranking.
_GATHER_SHARE = 4


def document_text(document: Document) -> str:
    """The text a tool is embedded from: what it does first, its parameters last.

    Identifiers become words (``create_pull_request`` reads "create pull
    request"), so the model sees language rather than tokens it never saw in
    training. The order matters: models truncate long inputs from the end.

    Example:
        ```python
        document_text(Document(name="create_pull_request", description="Open a PR."))
        # 'create pull request. Open a PR.'
        ```
    """
    parts = [_words(document.name), document.title, document.description]
    if document.groups:
        parts.append("Groups: " + ", ".join(document.groups))
    if document.tags:
        parts.append("Tags: " + ", ".join(_words(tag) for tag in document.tags))
    if document.params:
        parts.append("Parameters: " + ", ".join(_words(name) for name, _ in document.params))
    return ". ".join(p.strip().rstrip(".") for p in parts if p and p.strip()) + "."


def _words(identifier: str) -> str:
    return " ".join(w for w in _WORD_BREAK.split(identifier) if w)


class EmbeddingIndex:
    """Texts under keys, ranked by cosine similarity of their embeddings to a query.

    ``upsert`` only records a text; the embedder runs at the next ``search`` (or
    ``refresh``), once, for every key whose text is new or changed since it was
    last embedded, so a catalog of 10,000 tools is embedded once and a changed
    tool costs one text. A text seen before (a tool removed and added back, or
    two tools with the same text) reuses its vector. Vectors are rows of one
    matrix, so a search is a matrix-vector product; recent query vectors are
    kept in a small LRU cache. A query is embedded with the embedder's
    ``embed_query`` method if it has one, catalog texts with the embedder
    itself. Safe to use from several threads: the embedder
    runs outside the index's lock, so ``upsert`` and ``remove`` never wait for
    it (a text changed meanwhile is embedded again); a search waits for an
    embedding already under way, then uses its vectors.

    Example:
        ```python
        index = EmbeddingIndex(MiniLMEmbedder())
        index.upsert("create_pull_request", "create pull request. Open a PR.")
        index.search("ask to merge my branch", limit=5)  # [("create_pull_request", 0.27...)]
        ```
    """

    def __init__(
        self, embedder: Embedder, *, query_cache_size: int = 256, reuse_cache_size: int = 1024
    ) -> None:
        if not callable(embedder):
            raise OptionError(
                f"embedder must be a callable from texts to vectors, got {embedder!r}"
            )
        for name, value in (
            ("query_cache_size", query_cache_size),
            ("reuse_cache_size", reuse_cache_size),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise OptionError(f"{name} must be an integer >= 0 (0 turns it off), got {value!r}")
        _require(("numpy",), what="EmbeddingIndex")
        self.embedder = embedder
        self._query_cache_size = query_cache_size
        self._lock = threading.Lock()
        # One embedding run at a time: a second caller waits, then finds nothing to do.
        self._refresh_lock = threading.Lock()
        self._current: dict[str, bytes] = {}
        self._pending: dict[str, str] = {}
        self._rows = _Rows(reuse_cache_size)
        self._queries: OrderedDict[str, NDArray[np.float32]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._current)

    def __contains__(self, key: object) -> bool:
        return key in self._current

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._current))

    @property
    def pending(self) -> int:
        """How many keys wait to be embedded."""
        return len(self._pending)

    @property
    def dimension(self) -> int | None:
        """Length of the vectors, once the first ones are computed."""
        return None if self._rows.matrix is None else int(self._rows.matrix.shape[1])

    # -- updates ------------------------------------------------------------------------

    def upsert(self, key: str, text: str) -> None:
        """Record ``text`` under ``key``; it is embedded at the next search if it changed."""
        if not isinstance(text, str):
            raise OptionTypeError(f"text must be a string, got {type(text).__name__}")
        digest = _digest(text)
        with self._lock:
            if self._current.get(key) == digest:
                return
            self._current[key] = digest
            if self._rows.row_hash.get(key) == digest:
                # Changed and changed back before anything was embedded.
                self._pending.pop(key, None)
            else:
                self._pending[key] = text

    def remove(self, key: str) -> None:
        """Forget ``key``, keeping its vector for a while in case the same text returns."""
        with self._lock:
            if self._current.pop(key, None) is None:
                return
            self._pending.pop(key, None)
            self._rows.drop(key)

    def refresh(self) -> int:
        """Embed every new or changed text now, in one call; returns how many were embedded.

        ``search`` calls it; call it yourself (in a worker thread) to embed a
        catalog before the first query arrives.
        """
        with self._refresh_lock:
            with self._lock:
                if not self._pending:
                    return 0
                pending = dict(self._pending)
                reused = {}
                for text in pending.values():
                    digest = _digest(text)
                    vector = self._rows.reuse.get(digest)
                    if vector is not None:
                        reused[digest] = vector
            todo = list(
                dict.fromkeys(text for text in pending.values() if _digest(text) not in reused)
            )
            fresh = self._embed(todo) if todo else None
            vectors = dict(reused)
            if fresh is not None:
                for text, vector in zip(todo, fresh, strict=True):
                    vectors[_digest(text)] = vector
            with self._lock:
                for key, text in pending.items():
                    digest = _digest(text)
                    # An upsert or remove while we embedded wins over this result.
                    if self._pending.get(key) != text:
                        continue
                    self._rows.set(key, digest, vectors[digest])
                    del self._pending[key]
                    self._rows.reuse.pop(digest, None)
            return len(todo)

    # -- queries ------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        within: Collection[str] | None = None,
        min_score: float | None = None,
        refresh: bool = True,
    ) -> list[tuple[str, float]]:
        """Keys by cosine similarity to ``query``, best first; only keys in ``within`` if given.

        ``min_score`` drops keys less similar than that. Pending texts are embedded
        first; with ``refresh=False`` they are not, and the search covers the
        vectors already computed (a changed text keeps its old vector until then),
        so a query never waits for a large catalog to be embedded.
        """
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise OptionError(f"limit must be a positive integer or None, got {limit!r}")
        if refresh:
            self.refresh()
        if not self._rows.keys:
            return []
        vector = self._query_vector(query)
        if within is not None and not isinstance(within, AbstractSet | KeysView):
            within = set(within)  # membership is tested per candidate below
        with self._lock:
            keys = self._rows.keys
            if self._rows.matrix is None or not keys:
                return []
            gather = within is not None and len(within) * _GATHER_SHARE < len(keys)
            rows, scores = self._rows.scores(
                vector, only=within if gather else None, min_score=min_score
            )
            if within is not None and not gather:
                found = _best_within(keys, rows, scores, within=within, limit=limit)
            else:
                found = _best(keys, rows, scores, limit=limit)
        found.sort(key=lambda item: (-item[1], item[0]))
        return found

    # -- internals ----------------------------------------------------------------------

    def _embed(self, texts: Sequence[str], *, query: bool = False) -> NDArray[np.float32]:
        import numpy as np

        embed = self.embedder
        if query:
            # Models trained with a query instruction (bge, e5) word queries differently.
            embed_query = getattr(self.embedder, "embed_query", None)
            if callable(embed_query):
                embed = embed_query
        raw = embed(texts)
        vectors = np.asarray(raw, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise OptionError(
                f"the embedder returned {vectors.shape[0] if vectors.ndim else 0} vector(s) "
                f"of shape {vectors.shape[1:]} for {len(texts)} text(s); it must return one "
                "vector of the same length per text"
            )
        dimension = self.dimension
        if dimension is not None and vectors.shape[1] != dimension:
            raise OptionError(
                f"the embedder returned vectors of length {vectors.shape[1]}, but the index "
                f"holds vectors of length {dimension}; use one embedder per index"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        # A zero vector stays zero: it matches nothing rather than dividing by zero.
        return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)

    def _query_vector(self, query: str) -> NDArray[np.float32]:
        with self._lock:
            cached = self._queries.get(query)
            if cached is not None:
                self._queries.move_to_end(query)
                return cached
        vector: NDArray[np.float32] = self._embed([query], query=True)[0]
        if self._query_cache_size:
            with self._lock:
                self._queries[query] = vector
                while len(self._queries) > self._query_cache_size:
                    self._queries.popitem(last=False)
        return vector


class _Rows:
    """The vectors of an ``EmbeddingIndex``: one matrix, a row per key, kept contiguous.

    Vectors of texts that left the index are kept in a small LRU cache, so a
    text seen again reuses its vector. The caller holds the index's lock.
    """

    def __init__(self, reuse_size: int) -> None:
        self.reuse_size = reuse_size
        self.row_of: dict[str, int] = {}
        self.row_hash: dict[str, bytes] = {}
        self.keys: list[str] = []
        self.matrix: NDArray[np.float32] | None = None
        self.reuse: OrderedDict[bytes, NDArray[np.float32]] = OrderedDict()

    def set(self, key: str, digest: bytes, vector: NDArray[np.float32]) -> None:
        import numpy as np

        row = self.row_of.get(key)
        if row is None:
            row = len(self.keys)
            if self.matrix is None:
                self.matrix = np.zeros((_INITIAL_ROWS, len(vector)), dtype=np.float32)
            elif row == len(self.matrix):
                # Doubling keeps appends amortised O(1) as a catalog grows.
                grown = np.zeros((2 * row, self.matrix.shape[1]), dtype=np.float32)
                grown[:row] = self.matrix
                self.matrix = grown
            self.keys.append(key)
            self.row_of[key] = row
        else:
            assert self.matrix is not None
            self.remember(self.row_hash[key], self.matrix, row)
        assert self.matrix is not None
        self.matrix[row] = vector
        self.row_hash[key] = digest

    def scores(
        self,
        vector: NDArray[np.float32],
        *,
        only: Collection[str] | None,
        min_score: float | None,
    ) -> tuple[NDArray[np.intp] | None, NDArray[np.float32]]:
        """Each used row's cosine similarity to ``vector``, and which rows were scored.

        With ``only``, the rows of those keys (sorted); with ``min_score``, the rows
        scoring that or more. The rows are None when every used row is scored, in order.
        """
        import numpy as np

        assert self.matrix is not None
        rows: NDArray[np.intp] | None = None
        if only is not None:
            # A few candidates: score only their rows.
            row_of = self.row_of
            rows = np.unique(np.fromiter((row_of[k] for k in only if k in row_of), dtype=np.intp))
            scores = _dot(self.matrix[rows], vector)
        else:
            scores = _dot(self.matrix[: len(self.keys)], vector)
        if min_score is not None:
            keep = np.flatnonzero(scores >= min_score)
            rows = keep if rows is None else rows[keep]
            scores = scores[keep]
        return rows, scores

    def drop(self, key: str) -> None:
        row = self.row_of.pop(key, None)
        if row is None:
            return
        assert self.matrix is not None
        self.remember(self.row_hash.pop(key), self.matrix, row)
        # Move the last row into the hole, so the used rows stay contiguous.
        last = len(self.keys) - 1
        if row != last:
            moved = self.keys[last]
            self.matrix[row] = self.matrix[last]
            self.keys[row] = moved
            self.row_of[moved] = row
        self.keys.pop()

    def remember(self, digest: bytes, matrix: NDArray[np.float32], row: int) -> None:
        if not self.reuse_size:
            return
        self.reuse[digest] = matrix[row].copy()
        self.reuse.move_to_end(digest)
        while len(self.reuse) > self.reuse_size:
            self.reuse.popitem(last=False)


def _best_within(
    keys: Sequence[str],
    rows: NDArray[np.intp] | None,
    scores: NDArray[np.float32],
    *,
    within: Collection[str],
    limit: int | None,
) -> list[tuple[str, float]]:
    """The best-scored keys in ``within``, at most ``limit``, best first."""
    import numpy as np

    # Most keys are candidates: walk the best rows until enough are in ``within``,
    # rather than looking up every candidate's row.
    order = np.argsort(-scores, kind="stable")
    picked = order if rows is None else rows[order]
    found: list[tuple[str, float]] = []
    for row, score in zip(picked.tolist(), scores[order].tolist(), strict=True):
        if keys[row] in within:
            found.append((keys[row], score))
            if len(found) == limit:
                break
    return found


def _best(
    keys: Sequence[str],
    rows: NDArray[np.intp] | None,
    scores: NDArray[np.float32],
    *,
    limit: int | None,
) -> list[tuple[str, float]]:
    """The ``limit`` best-scored keys (every key without a limit), in no order."""
    import numpy as np

    if limit is not None and limit < len(scores):
        top = np.argpartition(-scores, limit - 1)[:limit]
    else:
        top = np.arange(len(scores))
    picked = top if rows is None else rows[top]
    return [
        (keys[row], score) for row, score in zip(picked.tolist(), scores[top].tolist(), strict=True)
    ]


def _dot(matrix: NDArray[np.float32], vector: NDArray[np.float32]) -> NDArray[np.float32]:
    import numpy as np

    # Not ``matrix @ vector``: a threaded BLAS can take 30 times longer on a
    # matrix-vector product this small than einsum's single-threaded loop.
    scores: NDArray[np.float32] = np.einsum("ij,j->i", matrix, vector)
    return scores


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

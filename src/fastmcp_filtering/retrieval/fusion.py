"""One ranking from a lexical and a semantic one, by a weighted sum of their scores."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastmcp_filtering.core.errors import OptionError

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["LEXICAL_WEIGHT", "blend"]

LEXICAL_WEIGHT = 0.2
"""The lexical ranking's share: meaning leads, and exact words break its ties.

Measured on the public tool-retrieval sets (``bench/search_quality.py``): a share
of 0.2 beat reciprocal-rank fusion and both rankings alone on all three sets.
"""


def blend(
    lexical: Iterable[tuple[str, float]],
    semantic: Iterable[tuple[str, float]],
    *,
    lexical_weight: float = LEXICAL_WEIGHT,
) -> list[tuple[str, float]]:
    """Merge two rankings into one, best first, with each key's blended score.

    Lexical scores (BM25, unbounded) are divided by the best of them, so they
    fall in [0, 1] like cosine similarities; a key scores
    ``lexical_weight * lexical + (1 - lexical_weight) * cosine``, counting 0 for
    a ranking it is missing from. Equal scores are ordered by key.

    Example:
        ```python
        blend([("a", 8.0), ("b", 4.0)], [("b", 0.9), ("c", 0.5)])
        # [("b", 0.82), ("c", 0.4), ("a", 0.2)]
        ```
    """
    if not 0.0 <= lexical_weight <= 1.0:
        raise OptionError(f"lexical_weight must be between 0 and 1, got {lexical_weight!r}")
    lexical = list(lexical)
    top = lexical[0][1] if lexical and lexical[0][1] > 0 else 1.0
    scores: dict[str, float] = {}
    for key, score in lexical:
        scores[key] = scores.get(key, 0.0) + lexical_weight * score / top
    for key, score in semantic:
        scores[key] = scores.get(key, 0.0) + (1.0 - lexical_weight) * score
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))

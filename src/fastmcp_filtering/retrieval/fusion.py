"""One ranking from a lexical and a semantic one, by a weighted sum of their scores: ``blend``,
and ``FusedRanking``, the search strategy built on it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastmcp_filtering.core.errors import OptionError
from fastmcp_filtering.retrieval.ranking import BLENDED_RULES, Ranking
from fastmcp_filtering.retrieval.semantic_index import document_text

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable

    from fastmcp_filtering.retrieval.ranking import Document, SearchIndex
    from fastmcp_filtering.retrieval.semantic_index import EmbeddingIndex

# Cosine similarity below which a semantic neighbour is noise, not a match.
MIN_SIMILARITY = 0.1

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


class FusedRanking(Ranking):
    """The lexical ranking blended with an embedding ranking by a weighted sum of scores.

    ``neighbours`` semantic matches at most join the blend, each at least
    ``min_similarity``; the lexical share, ``lexical_weight``, matches by the rules
    chosen with the blend. Until new documents are embedded (``refresh``), the
    vectors that are ready rank.

    Example:
        ```python
        FusedRanking(SearchIndex(), EmbeddingIndex(MiniLMEmbedder()), neighbours=50)
        ```
    """

    in_thread = True

    def __init__(
        self,
        lexical: SearchIndex,
        embeddings: EmbeddingIndex,
        *,
        neighbours: int,
        lexical_weight: float = LEXICAL_WEIGHT,
        min_similarity: float = MIN_SIMILARITY,
    ) -> None:
        if neighbours < 1:
            raise OptionError(f"neighbours must be at least 1, got {neighbours!r}")
        if not 0.0 <= lexical_weight <= 1.0:
            raise OptionError(f"lexical_weight must be between 0 and 1, got {lexical_weight!r}")
        super().__init__(lexical)
        self.embeddings = embeddings
        self._neighbours = neighbours
        self._lexical_weight = lexical_weight
        self._min_similarity = min_similarity

    def upsert(self, key: str, document: Document) -> None:
        super().upsert(key, document)
        # A no-op when the text did not change: nothing is embedded again.
        self.embeddings.upsert(key, document_text(document))

    def remove(self, key: str) -> None:
        super().remove(key)
        self.embeddings.remove(key)

    @property
    def pending(self) -> int:
        return self.embeddings.pending

    def refresh(self) -> None:
        self.embeddings.refresh()

    def order(
        self,
        query: str,
        *,
        within: Collection[str] | None,
        indexed: bool = False,
        first: int,
    ) -> Iterable[str]:
        lexical = self.lexical.search(query, within=within, indexed=indexed, rules=BLENDED_RULES)
        nearest = self.embeddings.search(
            query,
            limit=self._neighbours,
            within=within,
            min_score=self._min_similarity,
            refresh=False,
        )
        blended = blend(lexical, nearest, lexical_weight=self._lexical_weight)
        return [key for key, _score in blended]

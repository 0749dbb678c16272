"""The words of a search index, for what a query word nearly matches: typos and longer words."""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator

__all__ = ["Vocabulary"]


class Vocabulary:
    """Finds the words of an index one edit away from a word, or beginning with it.

    It reads the index's words live (``terms``, the keys of its postings) and is
    told of each word added or dropped, so that its lookup structures follow
    without being rebuilt: the sorted list for prefixes is re-sorted lazily
    (sorting on every new word would be quadratic), and the deletion
    neighbourhoods for typos are built at the first lookup, then kept up to date
    (most catalogs are searched with known words first).

    Example:
        ```python
        postings = {"pull": {...}, "request": {...}}
        vocabulary = Vocabulary(postings.keys())
        vocabulary.near("pul")              # ["pull"]
        list(vocabulary.prefixed("req"))    # ["request"]
        ```
    """

    __slots__ = ("_deletes", "_dirty", "_sorted", "_terms")

    def __init__(self, terms: Collection[str]) -> None:
        self._terms = terms
        self._sorted: list[str] = []
        self._dirty = bool(terms)
        self._deletes: dict[str, set[str]] | None = None

    def __repr__(self) -> str:
        return f"Vocabulary({len(self._terms)} words)"

    def added(self, term: str) -> None:
        """``term`` is a word of the index now."""
        self._dirty = True
        if self._deletes is not None:
            for variant in _deletions(term):
                self._deletes.setdefault(variant, set()).add(term)

    def dropped(self, term: str) -> None:
        """``term`` is no longer a word of the index."""
        self._dirty = True
        if self._deletes is not None:
            for variant in _deletions(term):
                owners = self._deletes.get(variant)
                if owners is not None:
                    owners.discard(term)
                    if not owners:
                        del self._deletes[variant]

    def near(self, word: str) -> list[str]:
        """Words one insertion, deletion, substitution or swap away from ``word``, sorted."""
        deletes = self._deletes
        if deletes is None:
            deletes = self._deletes = {}
            for term in self._terms:
                for variant in _deletions(term):
                    deletes.setdefault(variant, set()).add(term)
        terms = self._terms
        found: set[str] = set()
        for variant in (word, *_deletions(word)):
            found |= deletes.get(variant, set())
            if variant in terms:
                found.add(variant)
        found.discard(word)
        return sorted(found)

    def prefixed(self, word: str) -> Iterator[str]:
        """Words that begin with ``word`` (longer than it), sorted."""
        if self._dirty:
            self._sorted = sorted(self._terms)
            self._dirty = False
        start = bisect.bisect_right(self._sorted, word)
        for term in self._sorted[start:]:
            if not term.startswith(word):
                break
            yield term


def _deletions(word: str) -> set[str]:
    """``word`` with one character left out, each way (none for words under 3 characters)."""
    if len(word) < 3:
        return set()
    return {word[:i] + word[i + 1 :] for i in range(len(word))}

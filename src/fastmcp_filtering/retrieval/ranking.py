"""A lexical search index: BM25F with field weights, typo tolerance, incremental updates."""

from __future__ import annotations

import heapq
import math
from typing import TYPE_CHECKING

from fastmcp_filtering.retrieval.matching import Rules, match_query
from fastmcp_filtering.retrieval.postings import DEFAULT_WEIGHTS, FIELDS, Document, Postings
from fastmcp_filtering.retrieval.text import (
    asks_for_a_list,
)

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Mapping

__all__ = ["DEFAULT_RULES", "DEFAULT_WEIGHTS", "Document", "Rules", "SearchIndex", "best_first"]


DEFAULT_RULES = Rules()
# Up to this many keys left out of a search are skipped one by one; more, filtered by.
_FEW_LEFT_OUT = 64
_MAX_COMPLEMENTS = 16


class SearchIndex:
    """An inverted index that ranks documents for a plain-text query.

    Documents are added, replaced and removed one at a time, so a catalog change
    costs only the documents that changed. Scoring is BM25F over the fields of
    ``Document``; a query word missing from the vocabulary also matches words one
    edit away (``pul`` finds ``pull``) and longer words it begins (``repo`` finds
    ``repository``), at a discount. Parameters shared by most documents are left
    out of the score.

    Example:
        ```python
        index = SearchIndex()
        index.upsert("create_pull_request", Document(name="create_pull_request"))
        index.search("pul request")  # [("create_pull_request", 1.7...)]
        ```
    """

    def __init__(
        self, *, weights: Mapping[str, float] | None = None, rules: Rules = DEFAULT_RULES
    ) -> None:
        self._weights = {**DEFAULT_WEIGHTS, **(weights or {})}
        self._rules = rules
        unknown = set(self._weights) - set(FIELDS)
        if unknown:
            raise ValueError(f"unknown field weight(s) {sorted(unknown)}; fields are {FIELDS}")
        self._store = Postings(weights=self._weights, stopwords=rules.stopwords)
        # The store's own dicts (never replaced), read here without a hop on every search.
        self._entries = self._store.entries
        self._postings = self._store.postings
        self._name_words = self._store.name_words
        # The keys each recent ``within`` leaves out; forgotten whenever the keys change.
        self._complements: dict[int, tuple[Collection[str], frozenset[str]]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def keys(self) -> Collection[str]:
        return self._entries.keys()

    def document(self, key: str) -> Document | None:
        entry = self._entries.get(key)
        return entry.document if entry else None

    # -- updates ------------------------------------------------------------------------

    def upsert(self, key: str, document: Document) -> None:
        """Index ``document`` under ``key``, replacing what was there."""
        if self._store.upsert(key, document):
            self._complements.clear()

    def remove(self, key: str) -> None:
        """Forget ``key``; a no-op when it is not indexed."""
        if self._store.remove(key):
            self._complements.clear()

    # -- queries ------------------------------------------------------------------------

    def _matches(
        self, query: str, within: Collection[str] | None
    ) -> tuple[list[dict[str, float]], set[str]]:
        """The index terms the query matches, in groups that each count by their best
        term (see ``Rules.near_matches``), and the terms the query says: its own words,
        their typo neighbours and related verbs, not the longer words they begin.

        With ``within``, only the words of those documents count: whether a word is
        known, its typo neighbours and its longer forms never depend on documents
        outside ``within`` (a client must not learn the words of what it cannot see).
        """

        def live(term: str) -> bool:
            posting = self._postings.get(term)
            if posting is None:
                return False
            return within is None or any(key in within for key in posting)

        return match_query(query, self._rules, self._store.vocabulary, live)

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        within: Collection[str] | None = None,
        indexed: bool = False,
    ) -> list[tuple[str, float]]:
        """Keys ranked best first with their scores; only keys in ``within`` if given.

        Scores are computed over the documents in ``within`` alone (their count and
        each word's document frequency), so the ranking of what a client sees is
        the same whatever else the index holds. ``indexed``: the caller vouches
        that every key of ``within`` is indexed, so they need not be counted.
        """
        scores = self.scores(query, within=within, indexed=indexed)
        if limit is not None and limit < len(scores):
            return sorted(
                heapq.nlargest(limit, scores.items(), key=lambda item: (item[1], item[0])),
                key=_best_first,
            )
        return sorted(scores.items(), key=_best_first)

    def scores(
        self, query: str, *, within: Collection[str] | None = None, indexed: bool = False
    ) -> dict[str, float]:
        """The score of every key that matches ``query``, unordered (see ``search``)."""
        self._store.flush()
        candidates = within
        left_out: frozenset[str] = frozenset()
        if within is None:
            count = len(self._entries)
        elif indexed:
            count = len(within)
            left_out = self._left_out(within)
            if len(left_out) <= _FEW_LEFT_OUT:
                # Nearly every key indexed is in it: skip the few others rather than
                # test every matching key.
                within = None
        else:
            count = sum(k in self._entries for k in within)
        if not count:
            return {}
        scores: dict[str, float] = {}
        matched, said = self._matches(query, candidates)
        # "show me my apps" prefers the list tool among what matches, and matches nothing alone.
        boost = (
            self._rules.list_weight
            if self._rules.list_weight
            and not any("list" in m for m in matched)
            and asks_for_a_list(query)
            else 0.0
        )
        for matches in matched:
            if len(matches) == 1:
                for term, term_weight in matches.items():
                    self._add(scores, term, term_weight, count, within, left_out, best=False)
            else:
                # The near matches of one word: its best one counts.
                best: dict[str, float] = {}
                for term, term_weight in matches.items():
                    self._add(best, term, term_weight, count, within, left_out, best=True)
                get = scores.get
                for key, value in best.items():
                    scores[key] = get(key, 0.0) + value
        if self._rules.name_coverage and scores:
            self._cover(scores, said)
        if boost:
            posting = self._postings.get("list")
            if posting:
                factor = boost * _idf(count, len(self._keys(posting, within, left_out)))
                # Only what matched otherwise: every key with a score is one ``within`` holds.
                for key, saturated in posting.items():
                    if saturated and key in scores:
                        scores[key] += factor * saturated
        return scores

    def _cover(self, scores: dict[str, float], said: set[str]) -> None:
        """Raise the score of each tool by how much of its name the request says."""
        covered: dict[str, float] = {}
        get = covered.get
        for term in said:
            holders = self._name_words.get(term)
            if holders:
                for key, part in holders.items():
                    covered[key] = get(key, 0.0) + part
        share = self._rules.name_coverage
        # Only what matched has a score: a name word outside ``within`` changes nothing.
        for key, part in covered.items():
            value = scores.get(key)
            if value is not None:
                scores[key] = value * (1.0 + share * part)

    def _keys(
        self, posting: dict[str, float], within: Collection[str] | None, left_out: frozenset[str]
    ) -> Collection[str]:
        """The keys of ``posting`` a search counts."""
        if within is not None:
            return [k for k in posting if k in within]
        if any(k in posting for k in left_out):
            return [k for k in posting if k not in left_out]
        return posting

    def _add(
        self,
        scores: dict[str, float],
        term: str,
        term_weight: float,
        count: int,
        within: Collection[str] | None,
        left_out: frozenset[str],
        *,
        best: bool,
    ) -> None:
        """Add ``term``'s contribution to each matching key's score (``best``: keep the
        larger of it and what is there)."""
        posting = self._postings.get(term)
        if not posting:
            return
        keys = self._keys(posting, within, left_out)
        factor = term_weight * _idf(count, len(keys))
        get = scores.get
        # The hot loop of every search: postings hold saturated frequencies.
        if best:
            for key in keys:
                value = factor * posting[key]
                if value > get(key, 0.0):
                    scores[key] = value
        elif keys is posting:
            for key, saturated in posting.items():
                if saturated:
                    scores[key] = get(key, 0.0) + factor * saturated
        else:
            for key in keys:
                saturated = posting[key]
                if saturated:
                    scores[key] = get(key, 0.0) + factor * saturated

    def _left_out(self, within: Collection[str]) -> frozenset[str]:
        """The indexed keys not in ``within`` (all indexed), remembered per ``within`` object:
        a search's candidates are one object as long as the client's state holds."""
        found = self._complements.get(id(within))
        if found is not None and found[0] is within:
            return found[1]
        left_out = frozenset(self._entries.keys() - within)
        if len(self._complements) >= _MAX_COMPLEMENTS:
            self._complements.clear()
        # Holding ``within`` keeps its id from being reused by another object.
        self._complements[id(within)] = (within, left_out)
        return left_out


def _best_first(item: tuple[str, float]) -> tuple[float, str]:
    """Sort key: the highest score first, ties by key."""
    return (-item[1], item[0])


def best_first(scores: Mapping[str, float], first: int) -> Iterator[str]:
    """The keys of ``scores`` best first; all of them are sorted only once more than
    the best ``first`` are read (a page of results reads a few of thousands of matches)."""
    if first < len(scores):
        # Every key scoring at least the first-th best score, ties included, comes first.
        threshold = heapq.nlargest(first, scores.values())[-1]
        top = sorted(((k, v) for k, v in scores.items() if v >= threshold), key=_best_first)
        yield from (key for key, _score in top)
        ordered = sorted(scores.items(), key=_best_first)
        yield from (key for key, _score in ordered[len(top) :])
    else:
        yield from (key for key, _score in sorted(scores.items(), key=_best_first))


def _idf(count: int, matching: int) -> float:
    """BM25's inverse document frequency of a term ``matching`` of ``count`` documents hold."""
    return math.log(1.0 + (count - matching + 0.5) / (matching + 0.5))

"""Documents as BM25F postings: what a search adds up, worked out when a document changes."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastmcp_filtering.retrieval.text import split, split_name
from fastmcp_filtering.retrieval.vocabulary import Vocabulary

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["DEFAULT_WEIGHTS", "FIELDS", "Document", "Postings"]

FIELDS = ("name", "title", "description", "tags", "groups", "params")
DEFAULT_WEIGHTS: Mapping[str, float] = {
    "name": 4.0,
    "title": 2.0,
    "description": 1.0,
    "tags": 1.0,
    "groups": 0.5,
    "params": 1.0,
}
"""How much a match in each field counts; the name says most about what a tool does."""

# Length normalisation per field: names are short and all alike, descriptions vary.
_B = {"name": 0.3, "title": 0.3, "description": 0.75, "tags": 0.0, "groups": 0.3, "params": 0.75}
_K1 = 1.5

# A parameter that most tools share (tenant, retry options...) says nothing about any one tool.
_BOILERPLATE_SHARE = 0.5
_BOILERPLATE_MIN_TOOLS = 8
# Term counts of repeated texts (parameters, tags, group texts) remembered per index.
_MAX_COUNTED = 50_000
_NONE: dict[str, int] = {}
_NONE_PARAMS: Mapping[str, dict[str, int]] = {}
_NO_STOPWORDS: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Document:
    """The searchable text of one component, split into fields."""

    name: str = ""
    title: str = ""
    description: str = ""
    tags: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    params: tuple[tuple[str, str], ...] = ()
    """(parameter name, its description) pairs."""


@dataclass(slots=True)
class _Entry:
    """One document's term counts per field (few objects: indexing allocates one per tool)."""

    document: Document
    name: dict[str, int]
    title: dict[str, int]
    description: dict[str, int]
    tags: dict[str, int]
    groups: dict[str, int]
    params: Mapping[str, dict[str, int]]
    """Term counts per parameter name; shared between documents with the same parameters."""
    length: tuple[int, ...]
    """The length of each field, in ``FIELDS`` order."""
    name_words: frozenset[str]
    """The words of the name that say what the tool does (no stopwords, no whole
    identifiers beside their parts), for ``Rules.name_coverage``."""

    def fields(self) -> tuple[dict[str, int], ...]:
        """The term counts of each field but ``params``, in ``FIELDS`` order."""
        return (self.name, self.title, self.description, self.tags, self.groups)


class Postings:
    """The documents of one index as postings: per term, each document's saturated,
    weighted, length-normalised frequency (BM25F), so that a search only adds numbers.

    Documents are added, replaced and removed one at a time; they are posted at the
    next ``flush`` (a search), a bulk load then posting each document once with the
    field length averages of the whole catalog. The averages and the boilerplate
    parameters (those most documents share, which count for nothing) are frozen
    between recomputations, made when many documents changed, so one change does
    not touch every posting.

    Example:
        ```python
        postings = Postings(weights=DEFAULT_WEIGHTS, stopwords=STOPWORDS)
        postings.upsert("create_issue", Document(name="create_issue"))
        postings.flush()
        postings.postings["issu"]  # {"create_issue": 0.6...}
        ```
    """

    def __init__(self, *, weights: Mapping[str, float], stopwords: frozenset[str]) -> None:
        self._weights = weights
        self._stopwords = stopwords
        self.entries: dict[str, _Entry] = {}
        self.postings: dict[str, dict[str, float]] = {}
        """term -> {key: saturated weighted, length-normalised term frequency}."""
        self.name_words: dict[str, dict[str, float]] = {}
        """word -> {key whose name has it: the share of that name's words it is}."""
        self.vocabulary = Vocabulary(self.postings.keys())
        self._total_length = [0] * len(FIELDS)
        self._param_df: Counter[str] = Counter()
        self._norms = self._norms_for([1.0] * len(FIELDS))
        self._boilerplate: frozenset[str] = frozenset()
        self._changes = 0
        self._unposted: set[str] = set()
        self._counted: dict[tuple[object, ...], dict[str, int]] = {}
        self._parameter_sets: dict[
            tuple[tuple[str, str], ...], tuple[Mapping[str, dict[str, int]], int]
        ] = {}

    def __repr__(self) -> str:
        return f"Postings({len(self.entries)} documents, {len(self.postings)} terms)"

    def upsert(self, key: str, document: Document) -> bool:
        """Index ``document`` under ``key``, replacing what was there; False when it is there
        already."""
        current = self.entries.get(key)
        if current is not None:
            if current.document == document:
                return False
            self.remove(key)
        stop = self._stopwords
        name, words = split_name(document.name, stop)
        title = split(document.title, stop)
        description = split(document.description, stop)
        tags = self._repeated(document.tags, keep_stopwords=True)
        groups = self._repeated(document.groups, keep_stopwords=False)
        params, params_length = self._parameters(document.params)
        length = (
            len(name),
            len(title),
            len(description),
            sum(tags.values()),
            sum(groups.values()),
            params_length,
        )
        entry = _Entry(
            document,
            _count(name),
            _count(title),
            _count(description),
            tags,
            groups,
            params,
            length,
            words,
        )
        self.entries[key] = entry
        if entry.name_words:
            share = 1.0 / len(entry.name_words)
            for word in entry.name_words:
                self.name_words.setdefault(word, {})[key] = share
        self._total_length = [t + n for t, n in zip(self._total_length, length, strict=True)]
        self._param_df.update(params.keys())
        # Posted at the next search: a bulk load then posts each document once, with the
        # averages of the whole catalog.
        self._unposted.add(key)
        self._changes += 1
        return True

    def _repeated(self, texts: tuple[str, ...], *, keep_stopwords: bool) -> dict[str, int]:
        """Term counts of tags or group texts: the same few tuples recur across a catalog."""
        if not texts:
            return _NONE
        cache_key = (texts, keep_stopwords)
        counts = self._counted.get(cache_key)
        if counts is None:
            stop = self._stopwords
            words = [
                t for text in texts for t in split(text, _NO_STOPWORDS if keep_stopwords else stop)
            ]
            counts = self._remember(cache_key, _count(words))
        return counts

    def _parameters(
        self, params: tuple[tuple[str, str], ...]
    ) -> tuple[Mapping[str, dict[str, int]], int]:
        """Term counts per parameter and their total: most catalogs repeat their parameters."""
        if not params:
            return _NONE_PARAMS, 0
        found = self._parameter_sets.get(params)
        if found is None:
            stop = self._stopwords
            counts = {p: _count(split(p, _NO_STOPWORDS) + split(d, stop)) for p, d in params}
            found = (counts, sum(sum(c.values()) for c in counts.values()))
            if len(self._parameter_sets) >= _MAX_COUNTED:
                self._parameter_sets.clear()
            # Shared between entries and never changed: counts are read only once made.
            self._parameter_sets[params] = found
        return found

    def _remember(self, cache_key: tuple[object, ...], counts: dict[str, int]) -> dict[str, int]:
        # Shared between entries and never changed: counts are read only once made.
        if len(self._counted) >= _MAX_COUNTED:
            self._counted.clear()
        self._counted[cache_key] = counts
        return counts

    def remove(self, key: str) -> bool:
        """Forget ``key``; False (a no-op) when it is not indexed."""
        entry = self.entries.pop(key, None)
        if entry is None:
            return False
        for word in entry.name_words:
            holders = self.name_words[word]
            holders.pop(key, None)
            if not holders:
                del self.name_words[word]
        self._total_length = [t - n for t, n in zip(self._total_length, entry.length, strict=True)]
        self._param_df.subtract(entry.params.keys())
        self._changes += 1
        if key in self._unposted:
            self._unposted.discard(key)
            return True
        for term in set().union(*entry.fields(), *entry.params.values()):
            posting = self.postings.get(term)
            if posting is None:
                continue
            posting.pop(key, None)
            if not posting:
                del self.postings[term]
                self.vocabulary.dropped(term)
        return True

    def _post(self, key: str, entry: _Entry) -> None:
        """Write ``entry``'s weighted term frequencies into the postings."""
        weighted: dict[str, float] = {}
        get = weighted.get
        norms = self._norms
        length = entry.length
        # Every field but params (posted below, per parameter): ``fields()`` stops first.
        fields = zip(norms, entry.fields(), length, strict=False)
        for (weight, base, slope), counts, field_length in fields:
            if counts:
                factor = weight / (base + slope * field_length)
                for term, tf in counts.items():
                    weighted[term] = get(term, 0.0) + factor * tf
        if entry.params:
            weight, base, slope = norms[-1]
            params_weight = weight / (base + slope * length[-1])
            boilerplate = self._boilerplate
            for param, counts in entry.params.items():
                # A boilerplate parameter still puts its words in the vocabulary, at no weight.
                factor = 0.0 if param in boilerplate else params_weight
                for term, tf in counts.items():
                    weighted[term] = get(term, 0.0) + factor * tf
        postings = self.postings
        for term, weighted_tf in weighted.items():
            # BM25's saturation, once per posting rather than once per search.
            value = weighted_tf / (_K1 + weighted_tf)
            posting = postings.get(term)
            if posting is None:
                postings[term] = {key: value}
                self.vocabulary.added(term)
            else:
                posting[key] = value

    def _norms_for(self, averages: list[float]) -> list[tuple[float, float, float]]:
        """Per field in ``FIELDS`` order: its weight, and BM25's length normalisation
        ``1 - b + b * length / average`` as the pair ``(1 - b, b / average)``."""
        return [
            (self._weights[f], 1.0 - _B[f], _B[f] / average)
            for f, average in zip(FIELDS, averages, strict=True)
        ]

    def flush(self) -> None:
        """Post what changed since the last search, recomputing averages when many did."""
        count = len(self.entries)
        if self._changes and (count < 64 or self._changes * 10 >= count):
            # Most postings rest on outdated averages: cheaper to redo them all now.
            self._refreeze()
        elif self._unposted:
            for key in self._unposted:
                self._post(key, self.entries[key])
        self._unposted.clear()

    def _refreeze(self) -> None:
        count = len(self.entries)
        self._changes = 0
        self._unposted.clear()
        if not count:
            return
        self._norms = self._norms_for([max(total / count, 1.0) for total in self._total_length])
        self._boilerplate = (
            frozenset(p for p, df in self._param_df.items() if df / count > _BOILERPLATE_SHARE)
            if count >= _BOILERPLATE_MIN_TOOLS
            else frozenset()
        )
        for key, entry in self.entries.items():
            self._post(key, entry)


def _count(words: Sequence[str]) -> dict[str, int]:
    """How often each word occurs: a ``Counter`` without its per-call type checks, which
    cost more than the counting for the few words of a field (indexing 10,000 tools)."""
    counts = dict.fromkeys(words, 1)
    if len(counts) == len(words):
        # Most fields say each word once.
        return counts
    counts = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return counts

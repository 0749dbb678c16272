"""The lexical search index: BM25F over field-weighted postings, typo-tolerant, incremental.

- ``Vocabulary``: the index's words, for what a query word nearly matches (typos, longer words).
- ``Postings``: documents as BM25F postings, worked out when a document changes.
- ``match_query``: what a query matches in the index: its words, near matches and compounds.
- ``SearchIndex``: the index itself, ranking documents for a query (``Rules`` tune it).
- ``Ranking``: how a search service orders a catalog, whatever the strategy (as FastMCP's
  ``BaseSearchTransform``); ``LexicalRanking`` is this index alone, ``FusedRanking`` (in
  ``fusion``) blends it with embeddings.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from fastmcp_filtering.core.errors import OptionError
from fastmcp_filtering.core.options import FIELDS, field_weights
from fastmcp_filtering.retrieval.text import (
    QUOTED,
    STOPWORDS,
    asks_for_a_list,
    is_reading,
    related,
    split,
    split_name,
    steps,
    terms,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence


# -- The words of a search index, for what a query word nearly matches: typos and longer words
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


# -- Documents as BM25F postings: what a search adds up, worked out when a document changes

# Length normalisation per field: names are short and all alike, descriptions vary.
_B = {"name": 0.3, "title": 0.3, "description": 0.75, "tags": 0.0, "groups": 0.3, "params": 0.75}
_K1 = 1.5
# The field length averages (in FIELDS order, words) of a typical catalog, the mean over the
# seven training sources' catalogs (`train/field_lengths.py`; never an evaluation set): those
# of a catalog none of whose documents count in its statistics (each under an access check, a
# mounted server's, or listed per request), so it is not ranked as if every field were a word
# long (R@1 9 to 13 points lower on four request sets); with fewer than
# _BOILERPLATE_MIN_TOOLS that count beside some that do not, they make up the rest.
_TYPICAL_AVERAGES = (5.13, 1.0, 7.57, 1.0, 3.61, 16.73)

# A parameter that most tools share (tenant, retry options...) says nothing about any one tool.
_BOILERPLATE_SHARE = 0.5
_BOILERPLATE_MIN_TOOLS = 8
# Term counts of repeated texts (parameters, tags, group texts) remembered per index.
_MAX_COUNTED = 50_000
_NONE: dict[str, int] = {}
_NONE_PARAMS: Mapping[str, dict[str, int]] = {}
_NO_STOPWORDS: frozenset[str] = frozenset()
_NO_LENGTHS = (0,) * len(FIELDS)


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
    in_statistics: bool = True
    """Whether it counts toward the catalog's statistics (field length averages, boilerplate
    parameters): False for one only some clients may see, so it moves no other's scores."""


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
    field length averages of the catalog (its documents ``in_statistics``). The averages
    and the boilerplate parameters (those most documents share, which count for nothing)
    are frozen
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
        self._norms = self._norms_for(list(_TYPICAL_AVERAGES))
        self._boilerplate: frozenset[str] = frozenset()
        # Per parameter set (by identity, held so the id is not reused): its weighted term
        # frequencies under the current norms and boilerplate, alike for every tool that has it.
        self._param_terms: dict[int, tuple[object, list[tuple[str, float]]]] = {}
        self._changes = 0
        """Changes to the documents the statistics count since they were last computed."""
        self._statistics_count = 0
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
        title = split(document.title, stop) if document.title else ()
        description = split(document.description, stop) if document.description else ()
        tags = self._repeated(document.tags, keep_stopwords=True)
        groups = self._repeated(document.groups, keep_stopwords=False)
        params, params_length = self._parameters(document.params)
        length = (
            len(name),
            len(title),
            len(description),
            sum(tags.values()) if tags else 0,
            sum(groups.values()) if groups else 0,
            params_length,
        )
        self.entries[key] = _Entry(
            document,
            _count(name),
            _count(title) if title else _NONE,
            _count(description) if description else _NONE,
            tags,
            groups,
            params,
            length,
            words,
        )
        if words:
            share = 1.0 / len(words)
            name_words = self.name_words
            for word in words:
                holders = name_words.get(word)
                if holders is None:
                    name_words[word] = {key: share}
                else:
                    holders[key] = share
        if document.in_statistics:
            # The field lengths and parameter counts are summed when the statistics are made.
            self._statistics_count += 1
            self._changes += 1
        # Posted at the next search: a bulk load then posts each document once, with the
        # averages of the whole catalog.
        self._unposted.add(key)
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
        if entry.document.in_statistics:
            self._statistics_count -= 1
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
                if weighted:
                    for term, tf in counts.items():
                        weighted[term] = get(term, 0.0) + factor * tf
                else:
                    # The first field's terms: 0.0 + x is x, so the same sums in one step.
                    weighted = {term: factor * tf for term, tf in counts.items()}
                    get = weighted.get
        if entry.params:
            for term, value in self._weighted_params(entry.params, length[-1]):
                weighted[term] = get(term, 0.0) + value
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

    def _weighted_params(
        self, params: Mapping[str, dict[str, int]], params_length: int
    ) -> list[tuple[str, float]]:
        """Each (term, weighted frequency) of a parameter set, in order, worked out once per set
        (a catalog repeats its parameters) while the norms and boilerplate hold."""
        found = self._param_terms.get(id(params))
        if found is not None and found[0] is params:
            return found[1]
        weight, base, slope = self._norms[-1]
        weighted = _weighted(params, weight / (base + slope * params_length), self._boilerplate)
        if len(self._param_terms) >= _MAX_COUNTED:
            self._param_terms.clear()
        self._param_terms[id(params)] = (params, weighted)
        return weighted

    def _norms_for(self, averages: list[float]) -> list[tuple[float, float, float]]:
        """Per field in ``FIELDS`` order: its weight, and BM25's length normalisation
        ``1 - b + b * length / average`` as the pair ``(1 - b, b / average)``."""
        return [
            (self._weights[f], 1.0 - _B[f], _B[f] / average)
            for f, average in zip(FIELDS, averages, strict=True)
        ]

    def flush(self) -> None:
        """Post what changed since the last search, recomputing averages when many did."""
        count = self._statistics_count
        if self._changes and (count < 64 or self._changes * 10 >= count):
            # Most postings rest on outdated averages: cheaper to redo them all now.
            self._refreeze()
        elif self._unposted:
            for key in self._unposted:
                self._post(key, self.entries[key])
        self._unposted.clear()

    def _refreeze(self) -> None:
        # Over the documents every client may see: one only some may see moves no score.
        count = self._statistics_count
        self._changes = 0
        self._unposted.clear()
        # Beside documents that do not count, a few that do say little: the typical catalog's
        # lengths make up the rest, so a handful of shared tools beside many per-request ones
        # sets no average. A catalog whose every document counts keeps its own, however small.
        left_out = len(self.entries) > count
        weight = max(_BOILERPLATE_MIN_TOOLS - count, 0) if left_out or not count else 0
        counted = [e for e in self.entries.values() if e.document.in_statistics]
        self._norms = self._norms_for(
            [
                max((total + typical * weight) / (count + weight), 1.0)
                for total, typical in zip(_total_lengths(counted), _TYPICAL_AVERAGES, strict=True)
            ]
        )
        self._boilerplate = _boilerplate(counted)
        self._param_terms.clear()
        for key, entry in self.entries.items():
            self._post(key, entry)


def _total_lengths(counted: Sequence[_Entry]) -> Sequence[int]:
    """The sum of each field's length over ``counted``, in ``FIELDS`` order."""
    totals = [sum(field) for field in zip(*(e.length for e in counted), strict=True)]
    return totals or _NO_LENGTHS


def _boilerplate(counted: Sequence[_Entry]) -> frozenset[str]:
    """The parameters more than ``_BOILERPLATE_SHARE`` of ``counted`` have (none under
    ``_BOILERPLATE_MIN_TOOLS`` documents)."""
    count = len(counted)
    if count < _BOILERPLATE_MIN_TOOLS:
        return frozenset()
    # Iterating a document's parameters gives their names.
    df = Counter(itertools.chain.from_iterable(e.params for e in counted))
    return frozenset(p for p, n in df.items() if n / count > _BOILERPLATE_SHARE)


def _weighted(
    params: Mapping[str, dict[str, int]], weight: float, boilerplate: frozenset[str]
) -> list[tuple[str, float]]:
    """Each (term, ``weight`` times its count) of ``params``, in order."""
    return [
        # A boilerplate parameter still puts its words in the vocabulary, at no weight.
        (term, (0.0 if param in boilerplate else weight) * tf)
        for param, counts in params.items()
        for term, tf in counts.items()
    ]


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


# -- What a query matches in an index: its words, their near matches, and compounds
@dataclass(frozen=True, slots=True)
class Rules:
    """How queries and documents become terms; each rule can be turned off to measure it."""

    stopwords: frozenset[str] = STOPWORDS
    related_weight: float = 0.5
    """Weight of a verb that asks for the same action (``remove`` finds ``delete``); 0: off."""
    compounds: bool = True
    """Two adjacent query words also match their concatenation (``function app`` finds
    ``functionapp``), as identifiers run words together."""
    list_weight: float = 0.5
    """Weight of ``list`` added to a request for many things of a kind ("show me my
    apps" wants ``apps_list``, not ``app_get``); 0: off."""
    near_matches: Literal["all", "best", "own_and_best"] = "best"
    """How the other words a query word matches count (typos, longer forms, related
    verbs): ``all`` of them; one match per word, the ``best`` of the word itself and
    the others; or the word itself plus the best of the others (``own_and_best``:
    ``page`` also matching ``pagesize``, ``pageid`` and ``pager`` is one near match,
    not three). ``best``, the default: what the fourteen catalogs of
    bench/search_quality.py (its seven request files and train/'s seven sources,
    ``--grid-also train/data``) choose together; a word that also matches a related
    verb or a longer form counts once, by the best of them."""
    quoted_weight: float = 1.0
    """Weight of a word the request only says inside quotes or backticks: a value it
    passes ("title it \"Weekly report\""), not what it asks to do; 1: off, the default,
    as the data cannot tell it from 0.5."""
    name_coverage: float = 1.0
    """A tool's score grows by this share of it when the request says every word of the
    tool's name (in part: in proportion); 0: off; 1, the default, doubles it. A request
    that names a tool is the strongest sign there is that it wants that tool."""
    step_weight: float = 0.5
    """In a request that chains steps ("get the host, then list its scans": see
    ``text.steps``), each tool also scores by its best step: its score for that step
    over the step's best score, times this weight and the whole request's best score, so
    that a tool that does one step well is not outranked by one that matches a word of
    each; 0: off. 0.5, the default: what the bench catalogs choose together with the
    training sources' (``bench/search_quality.py --later-also``), which chain steps
    far more often."""


_FUZZY_WEIGHT = 0.6
_PREFIX_WEIGHT = 0.4
_MAX_EXPANSIONS = 12


def match_query(
    query: str, rules: Rules, vocabulary: Vocabulary, live: Callable[[str], bool]
) -> tuple[list[dict[str, float]], set[str]]:
    """The index terms ``query`` matches, in groups that each count by their best term
    (see ``Rules.near_matches``), and the terms the query says: its own words, their typo
    neighbours and related verbs, not the longer words they begin.

    Only terms ``live`` accepts count: the index passes the words of the documents a
    client may see, so whether a word is known, its typo neighbours and its longer forms
    never depend on anything else.

    Example:
        ```python
        groups, said = match_query("pul request", DEFAULT_RULES, vocabulary, live)
        # groups: [{"pull": 0.6}, {"request": 1.0}]
        ```
    """
    # A query of common words only ("show me") still means something: keep them then.
    words = terms(query, stopwords=rules.stopwords) or terms(query, keep_stopwords=True)
    many = bool(rules.list_weight) and asks_for_a_list(query)
    groups: list[dict[str, float]] = []
    said: set[str] = set()
    values = _quoted_only(query, rules.stopwords) if rules.quoted_weight != 1.0 else set()
    for word in dict.fromkeys(words):
        own = _word_groups(word, rules, vocabulary, live, many=many, said=said)
        if word in values:
            # A value the request passes ("title it \"Weekly report\"") says little of
            # what it asks to do.
            own = [{t: w * rules.quoted_weight for t, w in group.items()} for group in own]
        groups.extend(own)
    if rules.compounds:
        for first, second in itertools.pairwise(words):
            joined = first + second
            if live(joined):
                groups.append({joined: 1.0})
                said.add(joined)
    return _claimed(groups), said


def _word_groups(
    word: str,
    rules: Rules,
    vocabulary: Vocabulary,
    live: Callable[[str], bool],
    *,
    many: bool,
    said: set[str],
) -> list[dict[str, float]]:
    """The groups one query word matches: itself if known, then its near matches.

    Adds the terms the word says (itself, typo neighbours, related verbs) to ``said``;
    ``many``: the query asks for a list, so a reading verb relates to nothing.
    """
    near: dict[str, float] = {}

    def add(term: str, weight: float) -> None:
        near[term] = max(near.get(term, 0.0), weight)

    known = live(word)
    if not known and len(word) >= 3:
        for typo in _first(vocabulary.near(word), live):
            add(typo, _FUZZY_WEIGHT)
            said.add(typo)
    if rules.related_weight and not (many and is_reading(word)):
        # "show me my apps" asks for a list, not for the get tool "show" relates to.
        for other in related(word):
            if live(other):
                add(other, rules.related_weight)
                said.add(other)
    if len(word) >= 3:
        for longer in _first(vocabulary.prefixed(word), live):
            add(longer, _PREFIX_WEIGHT)
    groups: list[dict[str, float]] = []
    if known:
        said.add(word)
        near.pop(word, None)
        if rules.near_matches == "best":
            near[word] = 1.0
        else:
            groups.append({word: 1.0})
    if rules.near_matches == "all":
        groups.extend({term: weight} for term, weight in near.items())
    elif near:
        groups.append(near)
    return groups


def _first(candidates: Iterable[str], keep: Callable[[str], bool]) -> list[str]:
    """The first ``_MAX_EXPANSIONS`` candidates that ``keep`` accepts."""
    out: list[str] = []
    for term in candidates:
        if keep(term):
            out.append(term)
            if len(out) == _MAX_EXPANSIONS:
                break
    return out


def _quoted_only(query: str, stopwords: frozenset[str]) -> set[str]:
    """The words ``query`` says inside quotes and nowhere else; none when everything is
    quoted (a whole request in quotes is still the request)."""
    if '"' not in query and "`" not in query and "\u201c" not in query:
        return set()
    outside = set(terms(QUOTED.sub(" ", query), stopwords=stopwords))
    if not outside:
        return set()
    inside = {w for m in QUOTED.finditer(query) for w in terms(m.group(0), stopwords=stopwords)}
    return inside - outside


def _claimed(groups: list[dict[str, float]]) -> list[dict[str, float]]:
    """Each term in one group only, the one that gives it the most weight: a term two
    query words match ("show" and "fetch" both relate to ``get``) counts once."""
    owner: dict[str, tuple[float, int]] = {}
    for i, group in enumerate(groups):
        for term, weight in group.items():
            held = owner.get(term)
            if held is None or weight > held[0]:
                owner[term] = (weight, i)
    kept = [{t: w for t, w in group.items() if owner[t][1] == i} for i, group in enumerate(groups)]
    return [group for group in kept if group]


# -- A lexical search index: BM25F with field weights, typo tolerance, incremental updates
DEFAULT_RULES = Rules()
BLENDED_RULES = Rules(near_matches="all", name_coverage=0.5, step_weight=0.0)
"""The rules of the lexical share of a semantic blend (``SearchMiddleware(semantic=...)``).

Each ranking's rules are chosen with it: the lexical ranking alone by every catalog of
``bench/search_quality.py`` (``DEFAULT_RULES``); the blend with the tool model's fold models,
each catalog ranked by a model trained without it (``train/fusion_weight.py --rules blended
default``): for every held-out catalog the others find the lexical ranking's rules no better
for the blend than these (the rules it was first measured with) beyond the near-tie margin.
"""
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
        self._weights = field_weights(weights)
        self._rules = rules
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
        self, query: str, within: Collection[str] | None, rules: Rules
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

        return match_query(query, rules, self._store.vocabulary, live)

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        within: Collection[str] | None = None,
        indexed: bool = False,
        rules: Rules | None = None,
    ) -> list[tuple[str, float]]:
        """Keys ranked best first with their scores; only keys in ``within`` if given.

        Scores are computed over the documents in ``within`` alone (their count and each
        word's document frequency), so the ranking of what a client sees is the same
        whatever else the index holds. ``indexed``: the caller vouches that every key of
        ``within`` is indexed. ``rules``: this query's, not the index's (same stopwords).
        """
        scores = self.scores(query, within=within, indexed=indexed, rules=rules)
        if limit is not None and limit < len(scores):
            return sorted(
                heapq.nlargest(limit, scores.items(), key=lambda item: (item[1], item[0])),
                key=_best_first,
            )
        return sorted(scores.items(), key=_best_first)

    def scores(
        self,
        query: str,
        *,
        within: Collection[str] | None = None,
        indexed: bool = False,
        rules: Rules | None = None,
    ) -> dict[str, float]:
        """The score of every key that matches ``query``, unordered (see ``search``)."""
        rules = _for_query(rules, self._rules)
        scores = self._scores(query, within=within, indexed=indexed, rules=rules)
        if rules.step_weight and scores and (parts := steps(query)):
            # A step said twice scores the same twice: search it once ("a, then a, then a"
            # would otherwise cost a search each).
            distinct = dict.fromkeys(" ".join(part.split()) for part in parts)
            each = [self._scores(p, within=within, indexed=indexed, rules=rules) for p in distinct]
            _add_steps(scores, each, rules.step_weight)
        return scores

    def _scores(
        self, query: str, *, within: Collection[str] | None, indexed: bool, rules: Rules
    ) -> dict[str, float]:
        """``scores`` of the request as one text, its steps not looked at."""
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
        matched, said = self._matches(query, candidates, rules)
        # "show me my apps" prefers the list tool among what matches, and matches nothing alone.
        boost = (
            rules.list_weight
            if rules.list_weight
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
        if rules.name_coverage and scores:
            self._cover(scores, said, rules.name_coverage)
        if boost:
            posting = self._postings.get("list")
            if posting:
                factor = boost * _idf(count, len(self._keys(posting, within, left_out)))
                # Only what matched otherwise: every key with a score is one ``within`` holds.
                for key, saturated in posting.items():
                    if saturated and key in scores:
                        scores[key] += factor * saturated
        return scores

    def _cover(self, scores: dict[str, float], said: set[str], share: float) -> None:
        """Raise the score of each tool by how much of its name the request says."""
        covered: dict[str, float] = {}
        get = covered.get
        for term in said:
            holders = self._name_words.get(term)
            if holders:
                for key, part in holders.items():
                    covered[key] = get(key, 0.0) + part
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


def _for_query(rules: Rules | None, own: Rules) -> Rules:
    """A query's rules: ``rules``, or the index's ``own``; the stopwords must be the index's."""
    if rules is None:
        return own
    if rules.stopwords != own.stopwords:
        raise OptionError(
            "a query's rules must have the index's stopwords (they decide what was indexed): "
            "build a SearchIndex with those rules instead"
        )
    return rules


def _add_steps(
    scores: dict[str, float], step_scores: list[dict[str, float]], weight: float
) -> None:
    """Raise each key's score by its best share of a step's best score (``Rules.step_weight``)."""
    best = max(scores.values())
    if best <= 0.0:
        return
    shares: dict[str, float] = {}
    get = shares.get
    for found in step_scores:
        top = max(found.values(), default=0.0)
        # A step whose matches all weigh nothing (a quoted value at weight 0) shares nothing.
        if top > 0.0:
            for key, value in found.items():
                share = value / top
                if share > get(key, 0.0):
                    shares[key] = share
    # In the whole request's units, so that other uses of the scores keep their scale.
    weight *= best
    before = scores.get
    for key, share in shares.items():
        scores[key] = before(key, 0.0) + weight * share


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


# -- Strategies: how a search service orders a catalog ------------------------------------
class Ranking(ABC):
    """One way to order indexed documents for a query.

    Every strategy keeps ``lexical``, the BM25F index: what a listing indexes goes
    through ``upsert`` and ``remove``, so the strategies never drift apart.

    Example:
        ```python
        class Newest(Ranking):
            def order(self, query, *, within, indexed=False, first):
                return iter(sorted(within or self.lexical, reverse=True))
        ```
    """

    in_thread: ClassVar[bool] = False
    """Whether ``order`` blocks long enough to run off the event loop."""

    def __init__(self, lexical: SearchIndex) -> None:
        self.lexical = lexical

    def upsert(self, key: str, document: Document) -> None:
        """Index ``document`` under ``key`` (a no-op when it did not change)."""
        self.lexical.upsert(key, document)

    def remove(self, key: str) -> None:
        """Forget ``key``."""
        self.lexical.remove(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.lexical)

    @property
    def pending(self) -> int:
        """Documents waiting for work ``refresh`` does off the event loop (0: none)."""
        return 0

    def refresh(self) -> None:  # noqa: B027  (a strategy with no pending work has none to do)
        """Do the pending work (blocking; run it in a worker thread)."""

    @abstractmethod
    def order(
        self,
        query: str,
        *,
        within: Collection[str] | None,
        indexed: bool = False,
        first: int,
    ) -> Iterable[str]:
        """Keys of ``within`` (None: every key) that match ``query``, best first; the best
        ``first`` are found without sorting every match. ``indexed``: ``within`` holds
        only indexed keys (the index need not check)."""


class LexicalRanking(Ranking):
    """The BM25F index alone: lexical, offline, ordered lazily on the event loop.

    Example:
        ```python
        LexicalRanking(SearchIndex(weights={"description": 2.0}))
        ```
    """

    def order(
        self,
        query: str,
        *,
        within: Collection[str] | None,
        indexed: bool = False,
        first: int,
    ) -> Iterable[str]:
        return best_first(self.lexical.scores(query, within=within, indexed=indexed), first)

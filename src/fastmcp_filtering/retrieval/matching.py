"""What a query matches in an index: its words, their near matches, and compounds."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from fastmcp_filtering.retrieval.text import STOPWORDS, asks_for_a_list, is_reading, related, terms

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from fastmcp_filtering.retrieval.vocabulary import Vocabulary

__all__ = ["Rules", "match_query"]


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
    near_matches: Literal["all", "best", "own_and_best"] = "all"
    """How the other words a query word matches count (typos, longer forms, related
    verbs): ``all`` of them; one match per word, the ``best`` of the word itself and
    the others; or the word itself plus the best of the others (``own_and_best``:
    ``page`` also matching ``pagesize``, ``pageid`` and ``pager`` is one near match,
    not three). ``all``: the data cannot tell the three apart (bench/search_quality.py)."""
    quoted_weight: float = 1.0
    """Weight of a word the request only says inside quotes or backticks: a value it
    passes ("title it \"Weekly report\""), not what it asks to do; 1: off, the default,
    as the data cannot tell it from 0.5."""
    name_coverage: float = 0.5
    """A tool's score grows by this share of it when the request says every word of the
    tool's name (in part: in proportion); 0: off. A request that names a tool is the
    strongest sign there is that it wants that tool."""


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


_QUOTED = re.compile(r'"([^"]{1,400})"|\u201c([^\u201d]{1,400})\u201d|`([^`]{1,400})`')


def _quoted_only(query: str, stopwords: frozenset[str]) -> set[str]:
    """The words ``query`` says inside quotes and nowhere else; none when everything is
    quoted (a whole request in quotes is still the request)."""
    if '"' not in query and "`" not in query and "\u201c" not in query:
        return set()
    outside = set(terms(_QUOTED.sub(" ", query), stopwords=stopwords))
    if not outside:
        return set()
    inside = {w for m in _QUOTED.finditer(query) for w in terms(m.group(0), stopwords=stopwords)}
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

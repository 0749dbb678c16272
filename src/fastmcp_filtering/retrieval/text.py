"""Text to search terms: identifiers split into words, Unicode-aware, lightly stemmed."""

from __future__ import annotations

import itertools
import re
import unicodedata
from functools import lru_cache
from typing import TypeVar

# Scripts written without spaces: indexed as single characters and character pairs.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u0e00-\u0e7f"
_RUN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]")
_ASCII_RUN = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_VOWEL = re.compile(r"[aeiouy]")

STOPWORDS = frozenset(
    """a an and are as at be by can do does for from given how i in into is it its me my of
    on or our please so that the their them then there these this to tool tools use using
    want was we what when where which while who will with would you your""".split()  # noqa: SIM905
)
"""Words too common in requests and descriptions to tell tools apart.

Verbs are never stopwords, ``get`` included: in catalogs named ``x_get``,
``x_list``, ``x_create`` the verb is often all that tells two tools apart.
"""


# Words an -s does not make plural (Snowball English's invariant forms, and "always",
# "series", "species"): "news" is not "new".
_INVARIANT = frozenset({"news", "atlas", "cosmos", "bias", "andes", "always", "series", "species"})


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A light English stemmer: plural, -ing, -ed, -ation and a final -e, so forms meet.

    ``create``, ``creates``, ``created``, ``creating`` and ``creation`` all give
    ``creat``; words of three letters or fewer and non-Latin words are unchanged.
    """
    if len(word) <= 3 or not word.isascii() or not word.isalpha() or word in _INVARIANT:
        return word
    for suffix, replacement in (("ational", "ate"), ("ation", "ate"), ("ies", "y"), ("ied", "y")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            word = word[: -len(suffix)] + replacement
            break
    else:
        if word.endswith("sses"):
            word = word[:-2]
        elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
            word = word[:-1]
        for suffix in ("ing", "ed"):
            base = word[: -len(suffix)]
            if word.endswith(suffix) and len(base) >= 3 and _VOWEL.search(base):
                word = base
                # running -> run, but keep fill, pass, buzz
                if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                    word = word[:-1]
                break
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return word


def terms(
    text: str, *, keep_stopwords: bool = False, stopwords: frozenset[str] = STOPWORDS
) -> list[str]:
    """Search terms of ``text`` (see ``_terms``); repeated texts are split once."""
    if not text:
        return []
    return list(_terms(text, _NO_STOPWORDS if keep_stopwords else stopwords))


_NO_STOPWORDS: frozenset[str] = frozenset()


def split(text: str, stopwords: frozenset[str]) -> tuple[str, ...]:
    """``terms`` as a tuple (shared: read only), for indexing, which splits every field of
    every tool: most of those texts are met once, so ASCII text skips ``_terms``' cache
    (its words are still cached)."""
    if text.isascii():
        return tuple(_ascii_words(text, stopwords))
    return _terms(text, stopwords)


# Verbs that ask for the same kind of action, whatever the catalog calls it. A request
# says "show", "remove" or "find"; a tool is named get, delete or search.
_VERB_CLASSES = (
    "get fetch retrieve read show view display see describe inspect lookup",
    "list enumerate browse all",
    "create add new make insert generate register write save",
    "update edit modify change set patch rename replace",
    "delete remove destroy erase drop purge clear",
    "search find query locate filter lookup",
    "send post publish notify share",
    "run execute invoke start launch trigger",
    "stop cancel abort terminate kill pause",
    "download export",
    "upload import",
)


def _classes() -> dict[str, tuple[str, ...]]:
    related: dict[str, set[str]] = {}
    for line in _VERB_CLASSES:
        stems = [stem(word) for word in line.split()]
        for word in stems:
            related.setdefault(word, set()).update(w for w in stems if w != word)
    return {word: tuple(sorted(others)) for word, others in related.items()}


_RELATED = _classes()


_READ_VERBS = frozenset(stem(w) for w in _VERB_CLASSES[0].split())
_WORD = re.compile(r"[A-Za-z]+")


def asks_for_a_list(query: str) -> bool:
    """Whether ``query`` asks to see many things of a kind: "show me my function apps".

    True when it has a plural noun and no verb but a reading one (show, get,
    view...): "delete old branches" asks to delete, not to list.
    """
    plural = False
    for raw in _WORD.findall(query):
        word = raw.casefold()
        if word in STOPWORDS:
            continue
        base = stem(word)
        if base in _RELATED and base not in _READ_VERBS:
            return False
        if (
            len(word) > 3
            and word.endswith("s")
            and not word.endswith(("ss", "us", "is"))
            and base not in _RELATED
        ):
            plural = True
    return plural


# A request that names several actions joins them with these words, and each action is
# then best done by a different tool: where they cut, the request has steps.
_STEP_BREAK = re.compile(
    r"\b(?:and\s+)?(?:then|finally|afterwards|after that|additionally|subsequently|also)\b",
    re.IGNORECASE,
)
# Each step is one more search of the index: a request of more is ranked as one text.
_MAX_STEPS = 8

QUOTED = re.compile(r'"([^"]{1,400})"|\u201c([^\u201d]{1,400})\u201d|`([^`]{1,400})`')
"""A value a request quotes: ``"..."``, curly double quotes or backticks."""


def steps(query: str) -> list[str]:
    """The steps of a request that chains actions; ``[]`` for a request of one step.

    The request is cut at words that order actions in English (then, finally, afterwards,
    after that, additionally, subsequently, also), wherever they stand outside quotes (a
    German "also" cuts too; sentence punctuation does not: several sentences often
    describe one need). A part is a step when it has two words that are not stopwords,
    or one that is an action verb ("delete it"): "could you" or "the folders" is not. A
    request of more than eight steps gives ``[]`` too (each step costs a search).

    Example:
        ```python
        steps("Get the host's details and then list all scans")
        # ["Get the host's details", "list all scans"]
        ```
    """
    quoted = [match.span() for match in QUOTED.finditer(query)]
    parts: list[str] = []
    start = 0
    for match in _STEP_BREAK.finditer(query):
        if not any(left <= match.start() < right for left, right in quoted):
            parts.append(query[start : match.start()])
            start = match.end()
    parts.append(query[start:])
    found = [part.strip(" \t\r\n,") for part in parts if _is_step(part)]
    return found if 1 < len(found) <= _MAX_STEPS else []


def _is_step(part: str) -> bool:
    words = terms(part)
    return len(words) >= 2 or any(word in _RELATED for word in words)


def is_reading(term: str) -> bool:
    """Whether ``term`` (stemmed) is a verb that asks to see something: get, show, view..."""
    return term in _READ_VERBS


def related(term: str) -> tuple[str, ...]:
    """Stemmed verbs that ask for the same action as ``term`` (a stemmed word), if any.

    ``related("remov")`` gives ``delet``, ``destroy``, ``drop``...; nouns give ().
    """
    return _RELATED.get(term, ())


@lru_cache(maxsize=16_384)
def _terms(text: str, stopwords: frozenset[str]) -> tuple[str, ...]:
    """Search terms of ``text``: words split at case, ``_``, ``-``, ``.``, stemmed, casefolded.

    Runs of CJK, kana, hangul or Thai become single characters plus adjacent
    pairs, since those scripts do not separate words with spaces.
    """
    if text.isascii():
        return tuple(_ascii_words(text, stopwords))
    out: list[str] = []
    text = unicodedata.normalize("NFKC", text)
    for run in _RUN.findall(text):
        if _CJK_RUN.match(run):
            chars = list(run)
            out.extend(chars)
            out.extend(a + b for a, b in itertools.pairwise(chars))
            continue
        _split_words(run, stopwords, out)
    return tuple(out)


def _ascii_words(text: str, stopwords: frozenset[str]) -> list[str]:
    """The terms of ASCII text (no normalisation or other scripts to handle): the same
    words recur across a catalog, so each word's terms are worked out once."""
    cache = _cache(_WORDS, stopwords)
    runs = _ASCII_RUN.findall(text)
    found = list(map(cache.get, runs))
    if None in found:
        for i, terms in enumerate(found):
            if terms is None:
                run = runs[i]
                if run.isdigit():
                    # A number is its own term, and often met once (an id, a copy's number):
                    # not kept, so the cache and the heap's long-lived objects do not grow.
                    found[i] = () if run in stopwords else (run,)
                else:
                    found[i] = cache[run] = _ascii_terms(run, stopwords)
    return [term for terms in found for term in terms]  # type: ignore[union-attr]


def _ascii_terms(run: str, stopwords: frozenset[str], *, whole: bool = True) -> tuple[str, ...]:
    """The terms of one ASCII word: most are lowercase or capitalised, with no case
    boundary inside to split at."""
    tail = run[1:]
    if not tail or tail.islower() or tail.isdigit():
        word = run.lower()
        return () if word in stopwords else (stem(word),)
    out: list[str] = []
    _split_words(run, stopwords, out, whole=whole)
    return tuple(out)


_V = TypeVar("_V")


def _cache(caches: dict[frozenset[str], dict[str, _V]], stopwords: frozenset[str]) -> dict[str, _V]:
    """The per-word cache for ``stopwords``, emptied when full."""
    cache = caches.get(stopwords)
    if cache is None or len(cache) >= _MAX_WORDS:
        if len(caches) >= 8:
            caches.clear()
        cache = caches[stopwords] = {}
    return cache


# Per set of stopwords: the terms of ASCII words, and the (terms, name words) of ASCII
# words in names.
_WORDS: dict[frozenset[str], dict[str, tuple[str, ...]]] = {}
_NAME_WORDS: dict[frozenset[str], dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {}
_MAX_WORDS = 100_000


def split_name(name: str, stopwords: frozenset[str]) -> tuple[tuple[str, ...], frozenset[str]]:
    """The terms of an identifier (``split`` keeping stopwords) and its distinct name
    words: no stopwords, nor the whole words kept beside their parts (``GitHubIssue``
    has the terms git, hub, issu and githubissu, the words git, hub and issu).

    One pass over the name: indexing splits every tool's name.
    """
    if name.isascii():
        cache = _cache(_NAME_WORDS, stopwords)
        every: list[str] = []
        words: list[str] = []
        for run in _ASCII_RUN.findall(name):
            found = cache.get(run)
            if found is None:
                if run.isdigit():
                    # A number is its own term (see ``_ascii_words``), not kept.
                    every.append(run)
                    if run not in stopwords:
                        words.append(run)
                    continue
                found = cache[run] = (
                    _ascii_terms(run, _NO_STOPWORDS),
                    _ascii_terms(run, stopwords, whole=False),
                )
            every += found[0]
            words += found[1]
        return tuple(every), frozenset(words)
    words = []
    for run in _RUN.findall(unicodedata.normalize("NFKC", name)):
        if _CJK_RUN.match(run):
            words.extend(run)
        else:
            _split_words(run, stopwords, words, whole=False)
    return split(name, _NO_STOPWORDS), frozenset(words)


def _split_words(
    run: str, stopwords: frozenset[str], out: list[str], *, whole: bool = True
) -> None:
    """Append the stemmed words of ``run``, split at case changes, to ``out`` (``whole``:
    with the whole run beside its parts)."""
    parts = _CAMEL.split(run)
    if whole and len(parts) > 1:
        # "GitHub" must meet "github": keep the whole word beside its parts.
        parts.append(run)
    for part in parts:
        word = part.casefold()
        if not word or word in stopwords:
            continue
        out.append(stem(word))

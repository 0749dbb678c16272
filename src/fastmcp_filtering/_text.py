"""Text to search terms: identifiers split into words, Unicode-aware, lightly stemmed."""

from __future__ import annotations

import itertools
import re
import unicodedata
from functools import lru_cache

__all__ = ["STOPWORDS", "stem", "terms"]

# Scripts written without spaces: indexed as single characters and character pairs.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u0e00-\u0e7f"
_RUN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_VOWEL = re.compile(r"[aeiouy]")

STOPWORDS = frozenset(
    """a an and are as at be by can do does for from get given how i in into is it its me my of
    on or our please so that the their them then there these this to tool tools use using
    want was we what when where which while who will with would you your""".split()  # noqa: SIM905
)
"""Words too common in requests and descriptions to tell tools apart."""


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A light English stemmer: plural, -ing, -ed, -ation and a final -e, so forms meet.

    ``create``, ``creates``, ``created``, ``creating`` and ``creation`` all give
    ``creat``; words of three letters or fewer and non-Latin words are unchanged.
    """
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
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


def terms(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Search terms of ``text`` (see ``_terms``); repeated texts are split once."""
    if not text:
        return []
    return list(_terms(text, keep_stopwords))


@lru_cache(maxsize=16_384)
def _terms(text: str, keep_stopwords: bool) -> tuple[str, ...]:
    """Search terms of ``text``: words split at case, ``_``, ``-``, ``.``, stemmed, casefolded.

    Runs of CJK, kana, hangul or Thai become single characters plus adjacent
    pairs, since those scripts do not separate words with spaces.
    """
    text = unicodedata.normalize("NFKC", text)
    out: list[str] = []
    for run in _RUN.findall(text):
        if _CJK_RUN.match(run):
            chars = list(run)
            out.extend(chars)
            out.extend(a + b for a, b in itertools.pairwise(chars))
            continue
        parts = _CAMEL.split(run)
        if len(parts) > 1:
            # "GitHub" must meet "github": keep the whole word beside its parts.
            parts.append(run)
        for part in parts:
            word = part.casefold()
            if not word or (not keep_stopwords and word in STOPWORDS):
                continue
            out.append(stem(word))
    return tuple(out)

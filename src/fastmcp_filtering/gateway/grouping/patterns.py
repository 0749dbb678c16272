"""Name patterns for a set of components: globs where one says exactly the set, else names.

A glob is used only when, among every name the patterns will be matched against
(all tools, prompts, resources and their URIs, templates, and the stack's own
meta-tools), it matches members and nothing else. Candidates are word-boundary
prefixes (``get_*``), suffixes (``*_reviews``) and globs the caller proposes
(``*pull_request*``); the fewest that cover the most members win, the rest are
listed by name.
"""

from __future__ import annotations

import bisect
import fnmatch
import re
from typing import TYPE_CHECKING

from fastmcp_filtering.gateway.grouping.words import name_words

if TYPE_CHECKING:
    from collections.abc import Iterable

_SPECIAL = re.compile(r"([*?\[])")


def escape(name: str) -> str:
    """``name`` as a pattern matching only itself."""
    return _SPECIAL.sub(r"[\1]", name)


class Names:
    """Every name patterns are matched against, indexed by prefix and suffix."""

    def __init__(self, names: Iterable[str]) -> None:
        self._sorted = sorted(set(names))
        self._reversed = sorted(n[::-1] for n in self._sorted)

    def matching(self, pattern: str) -> frozenset[str]:
        """The names ``pattern`` matches."""
        if pattern.startswith("*") and not _SPECIAL.search(pattern[1:]):
            # A suffix: the names whose reversed spelling starts with it reversed.
            return frozenset(n[::-1] for n in _starting(self._reversed, pattern[:0:-1]))
        literal = _SPECIAL.split(pattern, maxsplit=1)[0]
        regex = re.compile(fnmatch.translate(pattern))
        return frozenset(n for n in _starting(self._sorted, literal) if regex.match(n))


def _starting(names: list[str], prefix: str) -> list[str]:
    start = bisect.bisect_left(names, prefix)
    return names[start : bisect.bisect_left(names, prefix + "\U0010ffff")]


def _candidates(raw: str) -> list[str]:
    words = name_words(raw)
    found = []
    for index, word in enumerate(words):
        before = raw[: word.end]
        if index + 1 < len(words):
            separator = raw[word.end : words[index + 1].start]
            if separator:
                found.append(escape(before + separator) + "*")
        else:
            found.append(escape(before) + "*")
        if index > 0:
            separator = raw[words[index - 1].end : word.start]
            if separator:
                found.append("*" + escape(separator + raw[word.start :]))
    return found


def compress(
    members: Iterable[str], universe: Names, *, globs: Iterable[str] = (), scope: str = ""
) -> list[str]:
    """Patterns matching exactly ``members`` among the names of ``universe``.

    Candidates are the members' word-boundary prefixes and suffixes, and the
    caller's ``globs`` (``*pull_request*``); each must match at least two names,
    all of them members. With ``scope`` (a namespace prefix, ``github_``) every
    pattern starts with it, so a tool another server adds later cannot match. The
    candidate covering most members not yet covered is taken first (then the
    shortest); members no glob covers are listed by name.

    Example:
        ```python
        compress(["get_issue", "get_user"], Names(["get_issue", "get_user", "list_users"]))
        # ["get_*"]
        ```
    """
    wanted = set(members)
    candidates: dict[str, frozenset[str]] = {}
    proposed = [*globs, *(c for name in sorted(wanted) for c in _candidates(name))]
    for candidate in proposed:
        pattern = escape(scope) + candidate if candidate.startswith("*") else candidate
        if pattern in candidates or not pattern.startswith(escape(scope)):
            continue
        matched = universe.matching(pattern)
        if len(matched) >= 2 and matched <= wanted:
            candidates[pattern] = matched
    chosen: list[str] = []
    left = set(wanted)
    while True:
        best = min(
            candidates.items(),
            key=lambda item: (-len(item[1] & left), len(item[0]), item[0]),
            default=None,
        )
        if best is None or len(best[1] & left) < 2:
            break
        chosen.append(best[0])
        left -= best[1]
    return sorted(chosen) + sorted(escape(n) for n in left)

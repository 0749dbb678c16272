"""Words of tool names and descriptions: splitting, plurals, verbs, for proposing groups.

Names split on ``_``, ``-``, ``.``, ``/``, ``:``, spaces and camelCase; words are
compared lowercased and singular (``repositories`` and ``repository`` are one
word). An action word (``get``, ``create``, ``delete``...) at the start of a name (or
second, after a prefix like ``jira_``) or at its end is the tool's verb, not its
topic; a plural word is never a verb (``list_builds``: ``builds`` is a noun).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Verbs that only read: a tool without annotations named with one is guessed read-only.
READ_VERBS = _set(
    "get list search find query lookup look describe show view read fetch retrieve count "
    "inspect browse check validate verify explain preview peek diff compare"
)
# Verbs that destroy: a tool without annotations named with one is guessed destructive.
DESTRUCTIVE_VERBS = _set(
    "delete remove drop destroy purge erase wipe truncate kill terminate revoke reset "
    "overwrite clear uninstall"
)
# Other actions: they set a tool's verb apart from its topic, and guess nothing.
_OTHER_VERBS = _set(
    "create add set put post patch update upsert insert append replace edit modify change "
    "rename move copy write save store send submit push pull merge fork run execute exec call "
    "invoke start stop restart open close enable disable toggle trigger schedule assign "
    "unassign invite share lock unlock approve reject cancel archive restore publish "
    "unpublish subscribe unsubscribe upload download import export sync refresh load apply "
    "deploy install generate convert parse format translate transform compress echo print "
    "evaluate click type fill select hover press scroll navigate drag take capture resize "
    "wait handle simulate login logout connect disconnect attach detach mark sign grant "
    "transfer make use ask reply respond notify ping test process pin unpin star unstar "
    "follow unfollow analyze summarize watch poll calculate compute return"
)
VERBS = READ_VERBS | DESTRUCTIVE_VERBS | _OTHER_VERBS

STOPWORDS = _set(
    "a an the and or of for to in on by with from at as into via per is are be it its this "
    "that these those all any each if not no can will may should must you your we our their "
    "them they which what when where how than then also only such other more most some about "
    "after before over under between through within without one two three tool given using "
    "use used provided specified based"
)

_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a name: where it is, how it is spelled, and its singular lowercase form."""

    surface: str
    start: int
    end: int
    key: str
    verb: bool = False

    @property
    def plural(self) -> bool:
        """Spelled as a plural (``issues``)."""
        return is_plural(self.surface.lower())


def singular(word: str) -> str:
    """``repositories`` -> ``repository``, ``branches`` -> ``branch``; short words stay."""
    if len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("s"):
        return word[:-1]
    return word


def is_plural(word: str) -> bool:
    """Whether a lowercase word is spelled as a plural."""
    return singular(word) != word


def _spans(name: str) -> list[tuple[str, int, int]]:
    spans = []
    for part in re.finditer(r"[A-Za-z0-9]+", name):
        for match in _CAMEL.finditer(part.group()):
            start = part.start() + match.start()
            spans.append((match.group(), start, start + len(match.group())))
    return spans


def name_words(name: str) -> list[Word]:
    """The words of a tool name, with the verb marked.

    A word is the verb when it is an action word spelled singular and stands first,
    second after a word that is no action, or last, or follows ``or``/``and`` after
    the verb (``create_or_update_file``).
    """
    spans = _spans(name)
    words: list[Word] = []
    last = len(spans) - 1
    for index, (surface, start, end) in enumerate(spans):
        lower = surface.lower()
        verb = lower in VERBS and (
            index in (0, last)
            or (index == 1 and not words[0].verb)
            or (index >= 2 and words[index - 1].key in ("or", "and") and words[index - 2].verb)
        )
        words.append(Word(surface, start, end, singular(lower), verb))
    return words


def plain_words(text: str) -> list[str]:
    """The singular lowercase words of free text (a description), without stopwords."""
    return [
        singular(w.lower())
        for w in _SEPARATORS.split(text)
        if w and w.lower() not in STOPWORDS and not w.isdigit()
    ]

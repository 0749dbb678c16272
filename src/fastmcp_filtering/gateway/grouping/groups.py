"""Proposing groups for a tool catalog from the words of its names and descriptions.

The rules, the same for any catalog (``cap`` is the most tools a group holds):

1. Each name's words are split (``_ - . / :``, camelCase), made singular, and
   its verb (``get``, ``create``...) set aside; two words always next to each
   other in the catalog's names become one phrase (``pull request``). What is
   left, in name order, is the tool's topic path
   (``get_pull_request_reviews``: ``pull request``, ``review``).
2. Tools whose paths start with the same topic form a group when they are at
   least two. A group over ``cap`` tools becomes a parent: the next topic of its
   tools makes subgroups beneath it; the rest stay its own tools. A topic every
   tool starts with (a prefix like ``browser_``) makes no level of its own: its
   subgroups are the top groups.
3. Tools left alone are placed, in order: with others sharing a word of their
   names' topics; with others sharing their verb
   (``search_code``, ``search_users``: a ``search`` group); in the group whose
   topic their description names (``create_branch``: "... in a GitHub
   repository"); with others whose names and descriptions share a word that
   fewer than half the catalog's descriptions use; in an ``other`` group. A
   single tool left joins the group sharing most words with it (then the one
   whose tools have its risk, then the smallest). No group gets more than
   ``cap`` tools of its own or fewer than two (a one-tool catalog excepted).
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from fastmcp_filtering.gateway.grouping.words import (
    DESTRUCTIVE_VERBS,
    READ_VERBS,
    STOPWORDS,
    VERBS,
    Word,
    name_words,
    plain_words,
    singular,
)
from fastmcp_filtering.gateway.upstreams.annotations import is_annotated, risk_of

ClusterKind = Literal["topic", "verb", "word", "other"]


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """What grouping reads of a tool: its name, title, description and annotations."""

    name: str
    title: str | None = None
    description: str | None = None
    annotations: object = None


@dataclass(frozen=True, slots=True)
class Token:
    """One topic of a name: a word or phrase, singular, and as the name spells it."""

    key: str
    spelled: str
    start: int
    end: int


@dataclass(slots=True)
class Item:
    """A tool as grouping sees it."""

    tool: ToolInfo
    words: list[Word]
    topics: list[Token]
    verb: str | None
    bag: set[str]
    """Words of its name and description, for matching leftovers."""
    description: list[str]
    risk: str
    annotated: bool

    @property
    def name(self) -> str:
        return self.tool.name

    def human(self) -> str:
        """The name as words: ``create pull request``."""
        return " ".join(w.surface.lower() for w in self.words) or self.name


@dataclass(slots=True)
class Cluster:
    """A proposed group: its own tools, subgroups, and how it was found."""

    kind: ClusterKind
    tokens: list[Token]
    members: list[Item]
    children: list[Cluster] = field(default_factory=list)
    attached: list[Item] = field(default_factory=list)
    """Members placed by their description or by likeness, not by their names' topic."""
    depth: int = 0

    @property
    def size(self) -> int:
        """Its own tools and every subgroup's."""
        return len(self.members) + sum(c.size for c in self.children)

    def all_items(self) -> list[Item]:
        return [*self.members, *(i for c in self.children for i in c.all_items())]


# -- items ----------------------------------------------------------------------------------


def _items(tools: list[ToolInfo]) -> list[Item]:
    words = [name_words(t.name) for t in tools]
    phrases = _phrases(words)
    descriptions = [plain_words(t.description or "") for t in tools]
    items = []
    for tool, name, description in zip(tools, words, descriptions, strict=True):
        verb = next((w.key for w in name if w.verb), None)
        annotated = is_annotated(tool.annotations)
        items.append(
            Item(
                tool=tool,
                words=name,
                topics=_topics(name, phrases),
                verb=verb,
                bag={w.key for w in name if w.key not in STOPWORDS} | set(description),
                description=description,
                risk=risk_of(tool.annotations) if annotated else guess_risk(verb),
                annotated=annotated,
            )
        )
    return items


def guess_risk(verb: str | None) -> str:
    """A risk from a verb, for a tool without annotations: read verbs, destroying verbs, else."""
    if verb in READ_VERBS:
        return "read-only"
    if verb in DESTRUCTIVE_VERBS:
        return "destructive"
    return "write"


def _phrases(names: list[list[Word]]) -> set[tuple[str, str]]:
    """Adjacent word pairs that always occur together, at least twice: ``pull request``."""
    counts: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    verbs: set[str] = set()
    for words in names:
        counts.update(w.key for w in words)
        verbs.update(w.key for w in words if w.verb)
        pairs.update((a.key, b.key) for a, b in itertools.pairwise(words))
    return {
        (a, b)
        for (a, b), n in pairs.items()
        if n >= 2 and n == counts[a] == counts[b] and not {a, b} & (STOPWORDS | verbs) and a != b
    }


def _topics(words: list[Word], phrases: set[tuple[str, str]]) -> list[Token]:
    tokens: list[Token] = []
    previous: Word | None = None
    for word in words:
        if word.verb or word.key in STOPWORDS:
            previous = None
            continue
        if previous is not None and tokens and (previous.key, word.key) in phrases:
            last = tokens.pop()
            tokens.append(
                Token(
                    f"{last.key} {word.key}",
                    f"{last.spelled}_{word.surface.lower()}",
                    last.start,
                    word.end,
                )
            )
        else:
            tokens.append(Token(word.key, word.surface.lower(), word.start, word.end))
        previous = word
    return tokens


# -- clusters -------------------------------------------------------------------------------


def propose_groups(tools: list[ToolInfo], *, cap: int) -> list[Cluster]:
    """The proposed groups of ``tools`` (module docstring: the rules), roots largest first."""
    items = _items(tools)
    if len(items) <= 1:
        return [Cluster("other", [Token("tools", "tools", 0, 0)], items)] if items else []
    clusters, rest = _topic_clusters(items, 0, cap)
    # One topic holding every tool (a prefix like browser_) is no choice for an agent: its
    # subgroups are the roots.
    while len(clusters) == 1 and not rest and clusters[0].children:
        clusters, rest = clusters[0].children, clusters[0].members
    _place(clusters, rest, cap, stopwords=_frequent(items))
    return _sorted(clusters)


def _topic_clusters(items: list[Item], depth: int, cap: int) -> tuple[list[Cluster], list[Item]]:
    buckets: dict[str, list[Item]] = {}
    rest: list[Item] = []
    for item in items:
        if len(item.topics) > depth:
            buckets.setdefault(item.topics[depth].key, []).append(item)
        else:
            rest.append(item)
    clusters = []
    for members in buckets.values():
        if len(members) < 2:
            rest.extend(members)
        else:
            clusters.append(_topic_cluster(members, depth, cap))
    return clusters, rest


def _topic_cluster(members: list[Item], depth: int, cap: int) -> Cluster:
    cluster = Cluster("topic", [members[0].topics[depth]], members, depth=depth)
    if len(members) <= cap:
        return cluster
    children, rest = _topic_clusters(members, depth + 1, cap)
    if len(children) == 1 and not rest:
        # One subtopic holds them all: one group named by both topics, not a parent of one.
        child = children[0]
        child.tokens = [*cluster.tokens, *child.tokens]
        return child
    cluster.children, cluster.members = children, rest
    if len(rest) > cap:
        # Its own tools are still too many: they make subgroups the way leftovers do.
        cluster.children += _by_verb(rest, cap) + _by_word(rest, cap, _frequent(members))
        if len(rest) > cap:
            cluster.children += _other(rest, cap)
    return cluster


def _frequent(items: list[Item]) -> frozenset[str]:
    """Words in more than half the descriptions: they set no tools apart."""
    counts: Counter[str] = Counter()
    for item in items:
        counts.update(set(item.description))
    return frozenset(w for w, n in counts.items() if n * 2 > len(items))


def _place(
    clusters: list[Cluster], rest: list[Item], cap: int, *, stopwords: frozenset[str]
) -> None:
    """Put every leftover tool in a group (rule 3), adding groups to ``clusters``."""
    clusters += _by_word(rest, cap, stopwords, names_only=True)
    clusters += _by_verb(rest, cap)
    for item in list(rest):
        target = _named_in_description(item, clusters, cap)
        if target is not None:
            target.members.append(item)
            target.attached.append(item)
            rest.remove(item)
    clusters += _by_word(rest, cap, stopwords)
    if len(rest) == 1:
        item = rest[0]
        target = _likest(item, clusters, cap, stopwords)
        if target is not None:
            target.members.append(item)
            target.attached.append(item)
            rest.clear()
    clusters += _other(rest, cap)


def _by_verb(rest: list[Item], cap: int) -> list[Cluster]:
    counts = Counter(i.verb for i in rest if i.verb is not None)
    found = []
    for verb, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if 2 <= count <= cap:
            members = [i for i in rest if i.verb == verb]
            found.append(Cluster("verb", [Token(verb, verb, 0, 0)], members))
            for item in members:
                rest.remove(item)
    return found


def _contains(words: list[str], phrase: list[str]) -> int | None:
    size = len(phrase)
    for start in range(len(words) - size + 1):
        if words[start : start + size] == phrase:
            return start
    return None


def _named_in_description(item: Item, clusters: list[Cluster], cap: int) -> Cluster | None:
    found: list[tuple[int, int, int, Cluster]] = []
    for order, cluster in enumerate(clusters):
        if cluster.kind != "topic" or len(cluster.members) >= cap:
            continue
        phrase = [singular(w) for t in cluster.tokens for w in t.key.split()]
        at = _contains(item.description, phrase)
        if at is not None:
            found.append((at, len(cluster.members), order, cluster))
    return min(found, key=lambda f: f[:3])[3] if found else None


def _by_word(
    rest: list[Item], cap: int, stopwords: frozenset[str], *, names_only: bool = False
) -> list[Cluster]:
    """Groups of leftovers sharing a word: of their names' topics, or also of descriptions."""
    found = []
    while len(rest) >= 2:
        counts: Counter[str] = Counter()
        for item in rest:
            words = {w for t in item.topics for w in t.key.split()} if names_only else item.bag
            counts.update(w for w in words if w not in stopwords and w not in VERBS and len(w) > 2)
        best = [(n, w) for w, n in counts.items() if 2 <= n <= cap]
        if not best:
            break
        _, word = min(best, key=lambda nw: (-nw[0], nw[1]))
        members = [
            i
            for i in rest
            if word in ({w for t in i.topics for w in t.key.split()} if names_only else i.bag)
        ]
        found.append(Cluster("word", [Token(word, word, 0, 0)], members))
        for item in members:
            rest.remove(item)
    return found


def _likest(
    item: Item, clusters: list[Cluster], cap: int, stopwords: frozenset[str]
) -> Cluster | None:
    def score(order_cluster: tuple[int, Cluster]) -> tuple[int, float, int, int]:
        order, cluster = order_cluster
        shared = set().union(*(i.bag for i in cluster.members)) & item.bag - stopwords
        same_risk = sum(i.risk == item.risk for i in cluster.members) / len(cluster.members)
        return (-len(shared), -same_risk, len(cluster.members), order)

    open_clusters = [(n, c) for n, c in enumerate(clusters) if 0 < len(c.members) < cap]
    return min(open_clusters, key=score)[1] if open_clusters else None


def _other(rest: list[Item], cap: int) -> list[Cluster]:
    if not rest:
        return []
    ordered = sorted(rest, key=lambda i: i.name)
    rest.clear()
    count = -(-len(ordered) // cap)
    size = -(-len(ordered) // count)
    return [
        Cluster("other", [Token("other", "other", 0, 0)], ordered[start : start + size])
        for start in range(0, len(ordered), size)
    ]


def _sorted(clusters: list[Cluster]) -> list[Cluster]:
    for cluster in clusters:
        cluster.children = _sorted(cluster.children)
    kinds = {"topic": 0, "verb": 1, "word": 2, "other": 3}
    return sorted(clusters, key=lambda c: (kinds[c.kind], -c.size, c.tokens[0].key))

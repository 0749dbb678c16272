"""Names, titles and descriptions of proposed groups, drawn from their tools' names.

A topic group is named by its topic as the names spell it (plural when a member
spells it so: ``pull_requests``) and described by its members' verbs and what
else they act on: "Create, get, list and merge pull requests,
with reviews and files". A verb group says what its tools do ("Search code and
users"); word groups, and tools that share no topic, list their tools.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from fastmcp_filtering.gateway.grouping.groups import Cluster, Item

_LONGEST = 200
_INVALID = re.compile(r"[^A-Za-z0-9_.:/-]+")


def spelled(cluster: Cluster) -> str:
    """The cluster's key as its members spell it, words joined by ``_``: ``pull_requests``."""
    if cluster.kind != "topic":
        return cluster.tokens[0].key.replace(" ", "_")
    depth = cluster.depth
    size = len(cluster.tokens)
    forms = [
        [t.spelled for t in item.topics[depth : depth + size]]
        for item in cluster.members + [i for c in cluster.children for i in c.all_items()]
        if item not in cluster.attached and len(item.topics) >= depth + size
    ]
    words = [t.key.replace(" ", "_") for t in cluster.tokens]
    if any(form[-1] != words[-1] for form in forms if form):
        # A member spells the last word as a plural: the group is a collection of them.
        words[-1] = next(form[-1] for form in forms if form and form[-1] != words[-1])
    return "_".join(words)


def slug(text: str) -> str:
    """``text`` as a valid group name."""
    name = _INVALID.sub("_", text).strip("_") or "tools"
    return name if re.match(r"[A-Za-z0-9_]", name) else f"_{name}"


def title(cluster: Cluster) -> str:
    """``Pull requests``: the key in words, capitalized; tools sharing no topic, by their names."""
    if cluster.kind == "other":
        # "Other tools" says nothing an agent can choose by: name what is in the group.
        return _capital(join((i.human() for i in cluster.members), limit=3))
    return _capital(spelled(cluster).replace("_", " "))


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def join(words: Iterable[str], *, limit: int = 8) -> str:
    """``a, b and c``; past ``limit`` items, ``a, b, ... and 3 more``."""
    items = list(dict.fromkeys(w for w in words if w))
    if len(items) > limit:
        items = [*items[: limit - 1], f"{len(items) - limit + 1} more"]
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def _related(items: list[Item], depth: int, size: int) -> list[str]:
    """The topics after the group's own in its tools' names, once each, plural if spelled so."""
    forms: dict[str, str] = {}
    for item in items:
        for token in item.topics[depth + size :]:
            if forms.get(token.key, token.key) == token.key:
                forms[token.key] = token.spelled
    return [form.replace("_", " ") for form in forms.values()]


def _topic_description(cluster: Cluster, own: list[Item]) -> str:
    size = len(cluster.tokens)
    named = [i for i in own if i not in cluster.attached]
    subject = spelled(cluster).replace("_", " ")
    # git_diff's topic is its verb too: "Diff, with staged", not "Diff diff".
    verbs = sorted({i.verb for i in named if i.verb and i.verb != subject})
    text = f"{join(verbs)} {subject}" if verbs else subject.capitalize()
    text = text[:1].upper() + text[1:]
    related = _related(named, cluster.depth, size)
    if related:
        text += f", with {join(related)}"
    if cluster.attached:
        text += f"; also: {join(i.human() for i in cluster.attached)}"
    return text


def _objects(item: Item) -> str:
    return " ".join(t.spelled.replace("_", " ") for t in item.topics) or item.human()


def describe(cluster: Cluster) -> str:
    """A one-line description of what the cluster's tools do, from their names."""
    own = cluster.members
    if cluster.kind == "topic":
        text = _topic_description(cluster, own) if own else title(cluster)
    elif cluster.kind == "verb":
        verb = cluster.tokens[0].key
        # git_diff beside git_diff_staged: "Diff unstaged and staged", not "Diff diff, ...".
        objects = join(o for o in map(_objects, own) if o != verb)
        text = f"{verb.capitalize()} {objects}".rstrip()
    elif cluster.kind == "word":
        text = f"Tools about {cluster.tokens[0].key}: {join(i.human() for i in own)}"
    else:
        text = _capital(join(i.human() for i in own))
    if cluster.children:
        text += f"; subgroups: {join(title(c).lower() for c in cluster.children)}"
    if len(text) > _LONGEST:
        text = text[: _LONGEST - 3].rsplit(" ", 1)[0].rstrip(",;:") + "..."
    return text

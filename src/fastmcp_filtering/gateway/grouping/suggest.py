"""Zero-config grouping: groups, tags, a risk concern and progressive options for any catalog.

``suggest_config(tools)`` reads the tools' names, descriptions and MCP
annotations and proposes a proxy configuration; ``fastmcp-filtering init`` does
the same for a running server and writes the TOML. The rules are the same for
every catalog (``cap`` is ``max_group_size``, 15 by default; N the tool count):

- Groups: shared topics in the names (``fastmcp_filtering.gateway.grouping.groups`` has the
  rules); every tool in exactly one group; no group with more than ``cap``
  tools of its own or fewer than two.
- Patterns: a glob where it matches exactly a group's tools among every name
  (tools, prompts, resources, templates, the meta-tools), else the names.
- Tags ``read-only``, ``destructive``, ``idempotent``, ``open-world``: the tools
  whose annotations state that hint. A ``risk`` concern ``from_annotations``
  (default ``write``); tools with no ``readOnlyHint`` nor ``destructiveHint``
  get a ``concern_mapping`` entry guessed from their verb (read verbs:
  ``read-only``, destroying verbs: ``destructive``, others: ``write``).
- Progressive disclosure, on when N is over ``cap``: ``max_tools`` is half the
  catalog, at least ``cap`` and at most ``2 * cap``, and never below the tools a
  group shows with its parents; ``initial_groups`` are the largest root groups
  that together fit in half of ``max_tools``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fastmcp_filtering.core.errors import OptionError
from fastmcp_filtering.gateway.config.mcp_json import namespace_of
from fastmcp_filtering.gateway.config.models import ConcernConfig, GroupConfig, TagConfig
from fastmcp_filtering.gateway.grouping.groups import Cluster, Item, ToolInfo, propose_groups
from fastmcp_filtering.gateway.grouping.naming import describe, join, slug, spelled, title
from fastmcp_filtering.gateway.grouping.patterns import Names, compress, escape
from fastmcp_filtering.gateway.grouping.suggestion import SuggestedConfig
from fastmcp_filtering.gateway.upstreams.annotations import ANNOTATION_TAGS, RISK_VALUES, hints

DEFAULT_META_TOOLS = ("search_tools", "enable_tools", "disable_tools", "call_tool")
"""The stack's own tool names, which proposed patterns must not match."""


def _info(tool: object) -> ToolInfo:
    def get(key: str) -> Any:
        return tool.get(key) if isinstance(tool, Mapping) else getattr(tool, key, None)

    name = get("name")
    if not isinstance(name, str) or not name:
        raise OptionError(f"every tool needs a name; got {tool!r:.80}")
    return ToolInfo(name, get("title"), get("description"), get("annotations"))


def _namespace(namespace: object) -> str:
    if not isinstance(namespace, str) or namespace != namespace_of(namespace):
        raise OptionError(
            f"namespace {namespace!r} must be letters, digits, '_' or '-', starting with a letter "
            f"or digit (it prefixes tool names), e.g. {namespace_of(str(namespace))!r}"
        )
    return namespace


def suggest_config(
    tools: Iterable[object] | Mapping[str, Iterable[object]],
    *,
    others: Iterable[str] = (),
    max_group_size: int = 15,
    meta_tools: Iterable[str] = DEFAULT_META_TOOLS,
) -> SuggestedConfig:
    """Propose groups, tags, a risk concern and progressive options for ``tools``.

    ``tools`` are MCP ``Tool`` objects, FastMCP tools or ``tools/list`` dicts
    (name, title, description, annotations); a mapping of namespace to tools
    proposes one configuration for several servers, each namespaced
    (``{namespace}_{tool}``) under a parent group of its own. ``others`` are the
    names and URIs of prompts, resources and templates, which patterns must not
    match. The rules are in this module's docstring.

    Example:
        ```python
        suggestion = suggest_config(tools)
        print([g.name for g in suggestion.groups], suggestion.max_tools)
        ```
    """
    if isinstance(max_group_size, bool) or not isinstance(max_group_size, int):
        raise OptionError(f"max_group_size must be an int of at least 2, got {max_group_size!r}")
    if max_group_size < 2:
        raise OptionError(f"max_group_size must be at least 2, got {max_group_size}")
    servers = (
        {_namespace(ns): [_info(t) for t in ts] for ns, ts in tools.items()}
        if isinstance(tools, Mapping)
        else {"": [_info(t) for t in tools]}
    )
    prefixes = {ns: f"{ns}_" if ns else "" for ns in servers}
    full = [prefixes[ns] + t.name for ns, ts in servers.items() for t in ts]
    if len(set(full)) != len(full):
        twice = sorted({n for n in full if full.count(n) > 1})
        raise OptionError(f"tool names must be unique; {twice} appear twice")
    others = tuple(others)
    builder = _Builder(Names([*full, *others, *meta_tools]), max_group_size)
    for namespace, infos in servers.items():
        builder.add_server(namespace, propose_groups(infos, cap=max_group_size))
    return builder.result(others=others, namespaces=tuple(n for n in servers if n))


def _server_description(namespace: str, clusters: list[Cluster]) -> str:
    """``Tools of git: branch, diff and commit; also: add, reset and status``."""
    topics = join(title(c).lower() for c in clusters if c.kind != "other")
    rest = join(i.human() for c in clusters if c.kind == "other" for i in c.members)
    if not topics:
        return f"Tools of {namespace}: {rest}"
    return f"Tools of {namespace}: {topics}" + (f"; also: {rest}" if rest else "")


class _Builder:
    """Turns clusters into the configuration's models, naming and patterning each group."""

    def __init__(self, universe: Names, cap: int) -> None:
        self.universe = universe
        self.cap = cap
        self.groups: list[GroupConfig] = []
        self.members: dict[str, tuple[str, ...]] = {}
        self.items: dict[str, Item] = {}
        self.scopes: dict[str, list[str]] = {}
        """Each namespace prefix's tools, for patterns that stay within one server."""
        self.parents: dict[str, str | None] = {}

    def add_server(self, namespace: str, clusters: list[Cluster]) -> None:
        prefix = f"{namespace}_" if namespace else ""
        self.scopes[prefix] = []
        for cluster in clusters:
            for item in cluster.all_items():
                self.items[prefix + item.name] = item
                self.scopes[prefix].append(prefix + item.name)
        if not namespace or not clusters:
            self._add(clusters, None, "", prefix)
        elif len(clusters) == 1:
            # One group for the whole server: the server's group is that group.
            self._add(clusters, None, f"{namespace}.", prefix, names=[namespace])
        else:
            self._group(
                GroupConfig(
                    name=namespace,
                    title=namespace,
                    description=_server_description(namespace, clusters),
                ),
                (),
                None,
            )
            self._add(clusters, namespace, f"{namespace}.", prefix)

    def _group(self, group: GroupConfig, members: tuple[str, ...], parent: str | None) -> None:
        self.groups.append(group)
        self.members[group.name] = members
        self.parents[group.name] = parent

    def _add(
        self,
        clusters: list[Cluster],
        parent: str | None,
        qualifier: str,
        prefix: str,
        names: Sequence[str] = (),
    ) -> None:
        for index, cluster in enumerate(clusters):
            name = names[index] if index < len(names) else self._free(qualifier, cluster, parent)
            members = tuple(prefix + i.name for i in cluster.members)
            globs = [
                f"*{escape(i.name[t[0].start : t[-1].end])}*"
                for i in cluster.members
                if cluster.kind == "topic" and i not in cluster.attached
                for t in [i.topics[cluster.depth : cluster.depth + len(cluster.tokens)]]
                if len(t) == len(cluster.tokens)
            ]
            patterns = (
                compress(members, self.universe, globs=globs, scope=prefix) if members else []
            )
            shown, about = title(cluster), describe(cluster)
            if index < len(names) and cluster.kind == "other":
                # A server's tools with no topic in common: the group is the server's own.
                shown, about = name, f"Tools of {name}: {join(i.human() for i in cluster.members)}"
            group = GroupConfig(
                name=name, title=shown, description=about, parent=parent, tools=patterns
            )
            self._group(group, members, parent)
            self._add(cluster.children, name, qualifier, prefix)

    def _free(self, qualifier: str, cluster: Cluster, parent: str | None) -> str:
        base = slug(qualifier + spelled(cluster))
        if base not in self.members:
            return base
        if parent is not None and slug(f"{parent}_{spelled(cluster)}") not in self.members:
            return slug(f"{parent}_{spelled(cluster)}")
        number = 2
        while f"{base}_{number}" in self.members:
            number += 1
        return f"{base}_{number}"

    def result(self, *, others: tuple[str, ...], namespaces: tuple[str, ...]) -> SuggestedConfig:
        count = len(self.items)
        loads = {g.name: self._load(g.name) for g in self.groups}
        budget = min(max(math.ceil(count / 2), self.cap), 2 * self.cap)
        max_tools = max([budget, *loads.values()])
        initial: list[str] = []
        shown = 0
        roots = [g.name for g in self.groups if self.parents[g.name] is None]
        for name in sorted(roots, key=lambda n: -len(self.members[n])):
            if shown + len(self.members[name]) <= max_tools // 2:
                initial.append(name)
                shown += len(self.members[name])
        guessed = frozenset(n for n, i in self.items.items() if not i.annotated)
        mapping: dict[str, dict[str, str]] = {}
        for value in RISK_VALUES:
            chosen = {n for n in guessed if self.items[n].risk == value}
            for pattern in self._patterns(chosen):
                mapping[pattern] = {"risk": value}
        groups = tuple(self.groups)
        if others:
            # A prompt may share a tool's name: the patterns are for the tools alone.
            groups = tuple(
                g.model_copy(update={"kinds": ["tool"]}) if g.tools else g for g in groups
            )
        return SuggestedConfig(
            groups=groups,
            members=self.members,
            tags=self._tags(),
            concerns=(ConcernConfig(name="risk", from_annotations=True, default="write"),)
            if count
            else (),
            concern_mapping=mapping,
            risk={n: i.risk for n, i in sorted(self.items.items())},
            guessed=guessed,
            initial_groups=tuple(g for g in roots if g in initial),
            max_tools=max_tools,
            progressive=count > self.cap,
            max_group_size=self.cap,
            namespaces=namespaces,
            others=others,
        )

    def _load(self, name: str | None) -> int:
        """The tools a group shows once enabled with its parents."""
        total = 0
        while name is not None:
            total += len(self.members[name])
            name = self.parents[name]
        return total

    def _patterns(self, chosen: set[str]) -> list[str]:
        """Patterns for the ``chosen`` tools, each within one server's namespace."""
        patterns: list[str] = []
        for scope, names in self.scopes.items():
            members = sorted(n for n in names if n in chosen)
            if members:
                patterns += compress(members, self.universe, scope=scope)
        return patterns

    def _tags(self) -> tuple[TagConfig, ...]:
        tags = []
        for tag, (hint, value, description) in ANNOTATION_TAGS.items():
            chosen = {
                n for n, i in self.items.items() if hints(i.tool.annotations).get(hint) is value
            }
            if chosen:
                patterns = self._patterns(chosen)
                tags.append(TagConfig(name=tag, description=description, tools=patterns))
        return tuple(tags)

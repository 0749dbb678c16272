"""One place that resolves groups, hierarchy and membership for every middleware."""

from __future__ import annotations

import fnmatch
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from fastmcp.prompts.base import Prompt
from fastmcp.resources.base import Resource
from fastmcp.resources.template import ResourceTemplate
from fastmcp.tools.base import Tool
from fastmcp.tools.function_tool import FunctionTool
from pydantic import PrivateAttr

from fastmcp_filtering.core.declarations import (
    META_TOOL_KEY,
    Group,
    Tag,
    declared_groups_of,
    lineage,
    per_request_rule,
)
from fastmcp_filtering.core.errors import OptionError, OptionTypeError
from fastmcp_filtering.core.watch import TAGS_LIST_CHANGED, Audience, Watch

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from fastmcp import FastMCP
    from fastmcp.utilities.components import FastMCPComponent
    from mcp.server.connection import Connection

logger = logging.getLogger("fastmcp_filtering")

ComponentKind = Literal["tool", "prompt", "resource", "template"]
# Every kind, in the order the package lists them (tools first).
COMPONENT_KINDS: tuple[ComponentKind, ...] = ("tool", "prompt", "resource", "template")
Unauthenticated = Literal["deny", "allow"]
"""What a client with no token gets of the groups with access checks."""

# The list_changed notification each kind's membership change calls for.
LIST_METHOD: dict[ComponentKind, str] = {
    "tool": "tools/list",
    "prompt": "prompts/list",
    "resource": "resources/list",
    "template": "resources/templates/list",
}
"""The list request of each kind."""


_T = TypeVar("_T")


class MetaTool(FunctionTool):
    """A tool of the package's own (``search_tools``, ``enable_tools``, ...): in no group.

    Build one with ``MetaTool.from_function(...)`` and pass it to
    ``mark_meta_tool``. What makes a meta-tool is that mark on the object itself,
    never its ``_meta`` (a proxied upstream tool could carry any ``_meta`` it
    likes) and never its class alone: a copy FastMCP makes (a mounted server's
    namespaced tool) keeps the class and the mark's value but is another object,
    so it is not one.

    Example:
        ```python
        tool = mark_meta_tool(MetaTool.from_function(search_tools, name="search_tools"))
        assert is_meta_tool(tool) and not is_meta_tool(tool.model_copy())
        ```
    """

    # The id of the object marked: a copy carries the original's id, never its own.
    _marked_as: int = PrivateAttr(default=0)


def mark_meta_tool(tool: FunctionTool) -> MetaTool:
    """Mark ``tool`` as one of the package's meta-tools, and its ``_meta`` for clients.

    Meta-tools belong to no group, whatever a group's patterns say.

    Example:
        ```python
        tools = {t.name: mark_meta_tool(t) for t in built}
        ```
    """
    if not isinstance(tool, MetaTool):
        raise OptionTypeError(f"build a meta-tool with MetaTool.from_function, not {type(tool)}")
    tool.meta = {**(tool.meta or {}), META_TOOL_KEY: True}
    tool._marked_as = id(tool)
    return tool


def search_key(component: FastMCPComponent) -> str:
    """The index key of a component: FastMCP's own key without the version."""
    return component.key.rpartition("@")[0]


def same_kind(original: FastMCPComponent, copy: _T) -> _T:
    """``copy`` (a model copy of ``original``), marked as a meta-tool if ``original`` is one."""
    if is_meta_tool(original):
        assert isinstance(copy, MetaTool)
        copy._marked_as = id(copy)
    return copy


def is_meta_tool(component: FastMCPComponent) -> bool:
    """Whether ``component`` is a meta-tool this package built and marked (by identity)."""
    return isinstance(component, MetaTool) and component._marked_as == id(component)


def kind_of(component: FastMCPComponent) -> ComponentKind:
    """The primitive kind of a FastMCP component."""
    if isinstance(component, Tool):
        return "tool"
    if isinstance(component, Prompt):
        return "prompt"
    if isinstance(component, ResourceTemplate):
        return "template"
    if isinstance(component, Resource):
        return "resource"
    raise OptionTypeError(f"not a tool, prompt, resource or template: {type(component).__name__}")


_KIND_LABEL: dict[ComponentKind, str] = {
    "tool": "tool",
    "prompt": "prompt",
    "resource": "resource",
    "template": "resource template",
}


def kind_label(component: FastMCPComponent) -> str:
    """How messages name a component's kind: ``resource template``."""
    return _KIND_LABEL[kind_of(component)]


def match_names(component: FastMCPComponent, kind: ComponentKind) -> tuple[str, ...]:
    """The strings a name pattern (``Group.tools``, a proxy's tags) is matched against."""
    if kind == "resource":
        return (component.name, str(getattr(component, "uri", "")))
    if kind == "template":
        return (component.name, str(getattr(component, "uri_template", "")))
    # A renamed tool answers to the patterns of every name it was made from.
    return tuple(dict.fromkeys(c.name for c in lineage(component)))


@dataclass(frozen=True, slots=True)
class Membership:
    """Where one component sits: its direct groups and every group that contains it."""

    direct: tuple[str, ...]
    """Declared groups the component is a member of, in declaration order."""
    effective: frozenset[str]
    """``direct`` plus all their ancestors: what a group filter matches against."""
    undeclared: tuple[str, ...]
    """Groups the component claims that no ``Group`` declares."""


class GroupTree(Protocol):
    """The groups as one client may know them: the ``Catalog``, or a view with some taken out.

    Every request-time answer that names groups reads a ``GroupTree``, so a group a
    client may not use answers as an unknown one.
    """

    @property
    def groups(self) -> tuple[Group, ...]: ...
    @property
    def tags(self) -> tuple[Tag, ...]: ...
    @property
    def version(self) -> int: ...
    @property
    def key(self) -> Hashable: ...
    def group(self, name: str) -> Group | None: ...
    def children(self, name: str) -> tuple[str, ...]: ...
    def descendants(self, name: str) -> frozenset[str]: ...
    def ancestors(self, name: str) -> frozenset[str]: ...
    def roots(self) -> tuple[str, ...]: ...
    def membership(self, component: FastMCPComponent) -> Membership: ...


_NO_GROUPS = Membership((), frozenset(), ())
_MAX_CACHED = 100_000


class Catalog:
    """The groups and tags of a server, resolved once and shared by every middleware.

    Validates the declarations (duplicate names, unknown parents, cycles), keeps
    the hierarchy closure, and answers which groups a component belongs to from
    a cache that is rebuilt only when the declarations change. Middlewares built
    from the same ``Catalog`` agree on membership and see each other's runtime
    changes (``add_group`` / ``remove_group``), which are announced to connected
    clients with ``notifications/groups/list_changed`` and the list_changed of
    each primitive kind.

    Example:
        ```python
        catalog = Catalog(groups=[Group("code"), Group("repos", parent="code")])
        mcp.add_middleware(FilterMiddleware(catalog=catalog))
        await catalog.add_group(Group("wiki", tools=["wiki_*"]))
        ```

    Groups with ``access`` checks are enforced by every middleware built on
    the catalog; ``unauthenticated`` says what a client with no token (stdio,
    unauthenticated HTTP) gets of them: ``"deny"`` (nothing) or ``"allow"``.
    ``per_request`` marks components a provider lists per caller (by its token):
    as a mounted server's, they move no shared search statistics and are announced to nobody.
    """

    def __init__(
        self,
        *,
        groups: Iterable[Group] = (),
        tags: Iterable[Tag] = (),
        unauthenticated: Unauthenticated = "deny",
        per_request: Callable[[FastMCPComponent], bool] | None = None,
    ) -> None:
        self.per_request = per_request_rule(per_request)
        """Whether a component is listed per request (``per_request_rule``)."""
        groups = _as_declarations(groups, Group, "groups")
        tags = _as_declarations(tags, Tag, "tags")
        self._groups: dict[str, Group] = {}
        for group in groups:
            if group.name in self._groups:
                raise OptionError(f"group {group.name!r} is declared twice; group names are unique")
            self._groups[group.name] = group
        self._tags: dict[str, Tag] = {}
        for tag in tags:
            if tag.name in self._tags:
                raise OptionError(f"tag {tag.name!r} is declared twice; tag names are unique")
            self._tags[tag.name] = tag
        self._warned: set[tuple[str, str]] = set()
        self._watch = Watch(self)
        self._rebuild(self._groups)
        if unauthenticated not in ("deny", "allow"):
            raise OptionError(
                f"unauthenticated must be 'deny' or 'allow', got {unauthenticated!r}: 'deny' "
                "keeps groups with access checks from clients with no token (stdio, "
                "unauthenticated HTTP), 'allow' opens them to such clients"
            )
        self.unauthenticated: Unauthenticated = unauthenticated
        """What a client with no token gets of the groups with ``access`` checks."""
        self._listeners: list[Callable[[], None]] = []
        self.access_rules: object | None = None
        """This catalog's access rules (``policy.access.GroupAccess``), kept here by their
        constructor: every middleware built on the catalog judges with the same object."""

    def __repr__(self) -> str:
        return f"Catalog(groups={list(self._groups)!r}, tags={list(self._tags)!r})"

    @classmethod
    def shared(
        cls,
        catalog: Catalog | None,
        groups: Iterable[Group] = (),
        tags: Iterable[Tag] = (),
        unauthenticated: Unauthenticated | None = None,
    ) -> Catalog:
        """``catalog`` if given, else a new one from ``groups`` and ``tags``; never both.

        Every middleware takes its declarations this way, so handing them one
        ``Catalog`` makes them agree on membership.
        """
        groups, tags = list(groups), list(tags)
        if catalog is None:
            return cls(groups=groups, tags=tags, unauthenticated=unauthenticated or "deny")
        if unauthenticated is not None:
            raise OptionError(
                "unauthenticated= belongs to the Catalog when one is shared: "
                f"Catalog(groups=..., unauthenticated={unauthenticated!r})"
            )
        if not isinstance(catalog, Catalog):
            raise OptionError(f"catalog must be a Catalog, got {type(catalog).__name__}")
        if groups or tags:
            raise OptionError(
                "pass either catalog= or groups=/tags=, not both: "
                "declare them once in Catalog(groups=..., tags=...)"
            )
        return catalog

    # -- declarations -----------------------------------------------------------------

    @property
    def groups(self) -> tuple[Group, ...]:
        """The declared groups, in declaration order."""
        return tuple(self._groups.values())

    @property
    def declared(self) -> bool:
        """Whether any group is declared."""
        return bool(self._groups)

    @property
    def tags(self) -> tuple[Tag, ...]:
        """The declared tags, in declaration order."""
        return tuple(self._tags.values())

    @property
    def version(self) -> int:
        """Bumped by every change to the declarations."""
        return self._version

    @property
    def key(self) -> tuple[int, frozenset[str]]:
        """What answers about groups depend on: the version (a ``CatalogView`` adds its denials)."""
        return (self._version, frozenset())

    def group(self, name: str) -> Group | None:
        """The declared group called ``name``, if any."""
        return self._groups.get(name)

    def children(self, name: str) -> tuple[str, ...]:
        """Groups that name ``name`` as a parent, in declaration order."""
        return self._resolved.children.get(name, ())

    def descendants(self, name: str) -> frozenset[str]:
        """``name`` and every group below it."""
        return self._resolved.descendants.get(name, frozenset())

    def ancestors(self, name: str) -> frozenset[str]:
        """``name`` and every group above it."""
        return self._resolved.ancestors.get(name, frozenset())

    def roots(self) -> tuple[str, ...]:
        """Groups with no parent, in declaration order."""
        return tuple(g.name for g in self._groups.values() if not g.parents)

    def _rebuild(self, groups: dict[str, Group]) -> None:
        """Validate ``groups`` as a whole and swap in its hierarchy and a fresh cache."""
        self._resolved = _Resolved(groups, on_unseen=self._unseen)
        self._groups = groups
        self._version = getattr(self, "_version", -1) + 1
        # The change that rebuilt us announces itself (``Watch.declarations_changed``).
        self._watch.stale = True

    def membership(self, component: FastMCPComponent) -> Membership:
        """The groups ``component`` belongs to, from the cache when nothing changed."""
        return self._resolved.membership(component)

    def _unseen(
        self, kind: ComponentKind, seen: FastMCPComponent, undeclared: tuple[str, ...]
    ) -> None:
        # Never seen before: the catalog may have grown (a per-request one is no one else's).
        self._watch.stale = self._watch.stale or not self.per_request(seen)
        component = seen.name
        for group in undeclared:
            if (component, group) in self._warned:
                continue
            self._warned.add((component, group))
            logger.warning(
                "%s %r claims group %r, which no Group declares; it is left out of that group. "
                "Declare Group(%r) or fix the name (declared: %s)",
                kind,
                component,
                group,
                group,
                sorted(self._groups),
            )

    # -- runtime changes ----------------------------------------------------------------

    async def add_group(self, group: Group) -> None:
        """Declare ``group`` at runtime and tell each connected client what it sees changed."""
        if not isinstance(group, Group):
            raise OptionTypeError(f"add_group() takes a Group, got {type(group).__name__}")
        if group.name in self._groups:
            raise OptionError(f"group {group.name!r} already exists; remove_group() it first")
        before = await self._watch.sights()
        self._rebuild({**self._groups, group.name: group})
        for listener in list(self._listeners):
            listener()
        await self._watch.declarations_changed(before)

    def on_declarations_changed(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after each runtime ``add_group`` (setup follows new checks)."""
        self._listeners.append(listener)

    async def remove_group(self, name: str) -> Group:
        """Remove the group called ``name`` and tell each connected client what it sees changed."""
        if name not in self._groups:
            raise OptionError(f"no group {name!r} to remove (declared: {sorted(self._groups)})")
        if children := self._resolved.children.get(name):
            raise OptionError(
                f"group {name!r} is the parent of {list(children)}; remove or re-parent them first"
            )
        removed = self._groups[name]
        before = await self._watch.sights()
        self._rebuild({k: v for k, v in self._groups.items() if k != name})
        await self._watch.declarations_changed(before)
        return removed

    async def add_tag(self, tag: Tag) -> None:
        """Declare ``tag`` at runtime and send ``notifications/tags/list_changed``."""
        if tag.name in self._tags:
            raise OptionError(f"tag {tag.name!r} already exists")
        self._tags = {**self._tags, tag.name: tag}
        self._version += 1
        await self.broadcast(TAGS_LIST_CHANGED)

    async def refresh(self, server: FastMCP, *, force: bool = False) -> None:
        """Compare the server's components with the last look and announce what changed.

        FastMCP does not announce ``mcp.add_tool()`` at runtime; the middlewares
        call this after a listing that met a component the catalog had not seen,
        so clients learn of new members (each kind's list_changed) and new tags
        (``notifications/tags/list_changed``). Call it yourself, with
        ``force=True``, after removing components at runtime.
        """
        if self._watch.stale or force:
            await self._watch.refresh(server, force=force)

    def remember(self, connection: Connection, principal: object = None) -> None:
        """Keep ``connection`` (a session-era client) to announce later changes to.

        ``principal`` is who it authenticated as (its token; None: none), handed to
        the ``audience`` to tell it only of changes to what it may see.
        """
        # Every message of a session passes here: the watch's own code runs only on a change.
        self._watch.connections[connection] = principal

    def set_audience(self, audience: Audience) -> None:
        """Judge what each remembered connection may see by ``audience`` (the access rules)."""
        self._watch.audience = audience

    async def broadcast(self, *methods: str) -> None:
        """Send each notification in ``methods`` to every connected session-era client."""
        await self._watch.broadcast(*methods)


class _Resolved:
    """One version of the declarations, resolved: the hierarchy's closure and who is in what.

    Built whole on every change to the groups (so a bad parent or a cycle fails
    the change, not a later request) and never modified after; its membership
    cache lives and dies with it.
    """

    def __init__(
        self,
        groups: dict[str, Group],
        *,
        on_unseen: Callable[[ComponentKind, FastMCPComponent, tuple[str, ...]], None],
    ) -> None:
        for group in groups.values():
            for parent in group.parents:
                if parent not in groups:
                    raise OptionError(
                        f"group {group.name!r} names unknown parent {parent!r}; "
                        f"declare Group({parent!r}) or fix the name (known: {sorted(groups)})"
                    )
        self.ancestors = {name: _walk(name, groups) for name in groups}
        children: dict[str, list[str]] = {}
        for group in groups.values():
            for parent in group.parents:
                children.setdefault(parent, []).append(group.name)
        descendants = {name: {name} for name in groups}
        for name, above in self.ancestors.items():
            for ancestor in above:
                descendants[ancestor].add(name)
        self.children = {k: tuple(v) for k, v in children.items()}
        self.descendants = {k: frozenset(v) for k, v in descendants.items()}
        self._groups = groups
        self._order = {name: i for i, name in enumerate(groups)}
        self._patterns = [
            (
                group.name,
                re.compile("|".join(fnmatch.translate(p) for p in group.tools)),
                group.kinds,
            )
            for group in groups.values()
            if group.tools
        ]
        self._on_unseen = on_unseen
        self._cache: dict[tuple[Any, ...], Membership] = {}
        self._by_id: dict[int, tuple[FastMCPComponent, Membership]] = {}

    def membership(self, component: FastMCPComponent) -> Membership:
        by_id = self._by_id.get(id(component))
        if by_id is not None and by_id[0] is component:
            return by_id[1]
        if is_meta_tool(component):
            # A pattern like "search_*" must not put the stack's own search_tools in a group.
            return _NO_GROUPS
        membership = self._resolve(component)
        if len(self._by_id) > _MAX_CACHED:
            self._by_id.clear()
        # Holding the component keeps its id from being reused by another object.
        self._by_id[id(component)] = (component, membership)
        return membership

    def _resolve(self, component: FastMCPComponent) -> Membership:
        kind = kind_of(component)
        claimed = declared_groups_of(component)
        names = match_names(component, kind)
        key = (kind, *names, claimed)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        found = dict.fromkeys(g for g in claimed if g in self._groups)
        for group_name, pattern, kinds in self._patterns:
            if (kinds is None or kind in kinds) and any(pattern.match(n) for n in names):
                found[group_name] = None
        direct = tuple(sorted(found, key=self._order.__getitem__))
        effective: set[str] = set()
        for name in direct:
            effective |= self.ancestors[name]
        undeclared = tuple(g for g in claimed if g not in self._groups)
        self._on_unseen(kind, component, undeclared)
        membership = Membership(direct, frozenset(effective), undeclared)
        self._cache[key] = membership
        return membership


def _walk(name: str, groups: dict[str, Group]) -> frozenset[str]:
    """``name`` and all its ancestors; raises on a cycle, naming it."""
    seen: set[str] = set()
    path: list[str] = []

    def visit(current: str) -> None:
        if current in path:
            cycle = " -> ".join([*path[path.index(current) :], current])
            raise OptionError(f"groups form a cycle: {cycle}; remove one of these parent links")
        if current in seen:
            return
        path.append(current)
        for parent in groups[current].parents:
            visit(parent)
        path.pop()
        seen.add(current)

    visit(name)
    return frozenset(seen)


def _as_declarations(items: object, cls: type[Any], what: str) -> Sequence[Any]:
    if isinstance(items, str | bytes) or not isinstance(items, Iterable):
        raise OptionError(f"{what} must be a list of {cls.__name__}, got {type(items).__name__}")
    result = list(items)
    for item in result:
        if not isinstance(item, cls):
            raise OptionError(
                f"{what} must hold {cls.__name__} objects, got {item!r}: "
                f"use {cls.__name__}({item!r})"
            )
    return result

"""Progressive disclosure in the policy: which groups are offered, and each client's enabled ones.

The pure rules come first (which groups a client is offered, what enabling or
disabling some does, the paths that reach a group); then ``ProgressiveLayer``, the
policy layer that hides what no enabled group shows, with the per-client store of
enabled groups and the hints that tell an agent what to enable.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from typing_extensions import override

from fastmcp_filtering.core.catalog import COMPONENT_KINDS, LIST_METHOD, is_meta_tool, kind_label
from fastmcp_filtering.core.errors import StateUnavailable
from fastmcp_filtering.core.request import (
    OutageLog,
    brief,
    client_key,
    current_info,
    holds_state,
    is_unrestricted,
    load_state,
    save_state,
)
from fastmcp_filtering.policy.access import access_of
from fastmcp_filtering.policy.decision import (
    CONCEALED,
    ClientRequest,
    Hidden,
    LayerView,
    PolicyLayer,
    call_hint,
)

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterable, Sequence

    from fastmcp.server.context import Context
    from fastmcp.tools.base import Tool
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.core.catalog import Catalog, ComponentKind, GroupTree, Membership
    from fastmcp_filtering.core.options import ProgressiveOptions
    from fastmcp_filtering.core.request import RequestInfo
    from fastmcp_filtering.policy.decision import Listing

logger = logging.getLogger("fastmcp_filtering")

LIST_METHODS = frozenset(LIST_METHOD.values())

# -- the rules: offered groups, changes, paths ----------------------------------------


MAX_GROUP_NAMES = 100
"""Most group names one enable_tools / disable_tools call takes."""


def as_names(names: Iterable[str]) -> str:
    """``["a", "b"]``: names as the agent would pass them."""
    return json.dumps(list(names))


def shown(membership: Membership, enabled: frozenset[str], *, hide_ungrouped: bool) -> bool:
    """Whether a component with ``membership`` is visible when ``enabled`` are enabled.

    A component is visible when one of its direct groups is enabled. Enabling a
    parent does not show the members of its children: it offers the children.
    A component in no group is visible unless ``hide_ungrouped``; one that only
    claims undeclared groups is hidden, so a typo never exposes a tool.
    """
    if membership.direct:
        return not enabled.isdisjoint(membership.direct)
    if membership.undeclared:
        return False
    return not hide_ungrouped


def _reachable(catalog: GroupTree, name: str, enabled: Iterable[str]) -> bool:
    """A root, or a group with at least one enabled parent."""
    group = catalog.group(name)
    if group is None:
        return False
    return not group.parents or any(p in enabled for p in group.parents)


def closed(catalog: GroupTree, names: Iterable[str]) -> frozenset[str]:
    """``names`` cut down to declared groups whose parents are enabled.

    Stored state can outlive a group (``Catalog.remove_group``) or a parent
    link; the enabled set must still form a tree hanging from the roots.
    """
    kept = {n for n in names if catalog.group(n) is not None}
    while True:
        dropped = {n for n in kept if not _reachable(catalog, n, kept)}
        if not dropped:
            return frozenset(kept)
        kept -= dropped


def offered(catalog: GroupTree, enabled: frozenset[str], *, roots: bool = True) -> list[str]:
    """Groups that can be enabled now, in declaration order: roots and children of enabled.

    With ``roots=False`` only the children: the groups that enabling opened up.
    """
    return [
        g.name
        for g in catalog.groups
        if g.name not in enabled and (roots or g.parents) and _reachable(catalog, g.name, enabled)
    ]


def path_to(catalog: GroupTree, name: str, enabled: frozenset[str]) -> list[str]:
    """The shortest list of groups to enable, root first, so that ``name`` becomes enabled."""
    return paths_to(catalog, name, enabled)[0]


# Most alternative paths weighed for one group (a group may have several parents at each level).
_MAX_PATHS = 16


def paths_to(catalog: GroupTree, name: str, enabled: frozenset[str]) -> list[list[str]]:
    """Every way to enable ``name`` (through each of its parents), shortest first.

    Each is the groups to enable, root first; ties keep the parents' declared
    order. Empty lists never occur: ``name`` itself ends each path, unless it is
    enabled already (then the one path is empty).
    """
    if name in enabled:
        return [[]]
    found: list[list[str]] = []

    def walk(current: str, chain: list[str], seen: frozenset[str]) -> None:
        if len(found) >= _MAX_PATHS:
            return
        chain = [current, *chain]
        group = catalog.group(current)
        if group is None or not group.parents:
            found.append(chain)
            return
        if any(p in enabled for p in group.parents):
            found.append(chain)
        # Through a parent not enabled yet too: enabling it may fit where the other does not.
        for parent in group.parents:
            if parent not in enabled and parent not in seen:
                walk(parent, chain, seen | {parent})

    walk(name, [], frozenset({name}))
    return sorted(found, key=len) or [[name]]


@dataclass
class Change:
    """What one ``enable_tools`` / ``disable_tools`` call did."""

    enabled: frozenset[str]
    changed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _request_errors(groups: object, tool: str) -> tuple[list[str], list[str]]:
    """The string names in ``groups`` and an error for everything else."""
    if not isinstance(groups, list):
        got = type(groups).__name__
        example = call_hint(
            tool, [groups] if isinstance(groups, str) and len(groups) <= 64 else ["<group>"]
        )
        return [], [f"groups must be a list of group names, got {got}: call {example}"]
    if len(groups) > MAX_GROUP_NAMES:
        return [], [
            f"groups has {len(groups)} names; at most {MAX_GROUP_NAMES} fit in one call: "
            "name the groups you need"
        ]
    # A dict keeps the order and makes each duplicate check constant time.
    names: dict[str, None] = {}
    errors: list[str] = []
    repeated: dict[str, None] = {}
    for item in groups:
        if not isinstance(item, str):
            errors.append(f"group names are strings, got {brief(item)}")
        elif item in names:
            repeated.setdefault(item, None)
        else:
            names[item] = None
    # Said once per name: the group is handled once, as if named once.
    errors.extend(f"group {brief(name)} is named more than once; handled once" for name in repeated)
    return list(names), errors


def enable(
    catalog: GroupTree,
    enabled: frozenset[str],
    groups: object,
    *,
    tool: str,
    disable_tool: str,
    members: Mapping[str, frozenset[str]],
    max_tools: int | None,
    holding: frozenset[str] | None = None,
) -> Change:
    """Enable ``groups`` on top of ``enabled``; each group is enabled whole or not at all.

    Parents are handled before children, so a child named with its parent in
    one call is enabled whatever the order. ``members`` maps each group to the
    grouped tools it shows; ``max_tools`` caps the union over enabled groups. A
    group not in ``holding`` (when given) holds nothing the client could use: it
    is not enabled (it would count for nothing under ``max_tools``, then grow past
    it when filled) and its error says what to do instead.
    """
    names, errors = _request_errors(groups, tool)
    change = Change(enabled=enabled, errors=errors)
    known = [n for n in names if catalog.group(n) is not None]
    for name in names:
        if catalog.group(name) is None:
            change.errors.append(
                f"unknown group {brief(name)}; groups you can enable now: "
                f"{as_names(offered(catalog, enabled))}"
            )
    for name in _parents_first(catalog, known):
        current = change.enabled
        if name in current:
            if name in change.changed:
                continue
            change.errors.append(f"group {name!r} is already enabled")
            continue
        if holding is not None and name not in holding:
            change.errors.append(_holds_nothing(catalog, name, current, holding))
            continue
        if not _reachable(catalog, name, current):
            path = path_to(catalog, name, current)
            parents = catalog.group(name).parents  # type: ignore[union-attr]
            change.errors.append(
                f"group {name!r} needs its parent {_either(parents)} enabled first: "
                f"call {call_hint(tool, path)}"
            )
            continue
        if max_tools is not None:
            in_use = _union(members, current)
            after = in_use | members.get(name, frozenset())
            if len(after) > max_tools:
                change.errors.append(
                    _over_cap(
                        catalog, name, in_use, after, current, members, max_tools, disable_tool
                    )
                )
                continue
        change.enabled = current | {name}
        change.changed.append(name)
    return change


def _holds_nothing(
    catalog: GroupTree, name: str, enabled: frozenset[str], holding: frozenset[str]
) -> str:
    """The error for a group holding nothing the client could use, and what to do instead.

    The same words whether the group has no member at all or only members hidden
    from this client: the answer must not tell them apart. The groups it offers
    instead are those the client can enable now that hold something (``holding``, every
    kind listed since a named group holds nothing): never another of a dead upstream's.

    Example:
        ```python
        _holds_nothing(tree, "clock", frozenset({"time"}), frozenset({"time", "time.zones"}))
        ```
    """
    others = [g for g in offered(catalog, enabled) if g in holding]
    # An upstream that is down, or a server that adds tools, can fill the group later.
    instead = f"enable another group ({as_names(others)} can be enabled now), or " if others else ""
    return (
        f"group {name!r} holds nothing you can use right now, so it was not enabled; "
        f"{instead}try {name!r} again later"
    )


def _parents_first(catalog: GroupTree, names: Sequence[str]) -> list[str]:
    """``names`` in the order given, except that a group comes after its named ancestors."""
    requested = set(names)
    order: list[str] = []
    for name in names:
        above = (catalog.ancestors(name) - {name}) & requested
        for ancestor in sorted(above, key=lambda n: len(catalog.ancestors(n))):
            if ancestor not in order:
                order.append(ancestor)
        if name not in order:
            order.append(name)
    return order


def _either(names: Sequence[str]) -> str:
    if len(names) == 1:
        return repr(names[0])
    return "one of " + ", ".join(repr(n) for n in names)


def _union(members: Mapping[str, frozenset[str]], groups: Iterable[str]) -> frozenset[str]:
    result: set[str] = set()
    for group in groups:
        result |= members.get(group, frozenset())
    return frozenset(result)


def _over_cap(
    catalog: GroupTree,
    name: str,
    in_use: frozenset[str],
    after: frozenset[str],
    enabled: frozenset[str],
    members: Mapping[str, frozenset[str]],
    max_tools: int,
    disable_tool: str,
) -> str:
    needed = len(after) - len(in_use)
    message = (
        f"cannot enable {name!r}: it adds {needed} tool{'s' if needed != 1 else ''} "
        f"and {len(in_use)} of max_tools={max_tools} are in use"
    )
    # What disabling each enabled group (and, by cascade, its descendants) frees, largest first.
    frees = sorted(
        ((len(in_use - _union(members, enabled - catalog.descendants(g))), g) for g in enabled),
        key=lambda pair: (-pair[0], pair[1]),
    )
    frees = [(n, g) for n, g in frees if n]
    if not frees:
        return message + "; this group alone is larger than max_tools"
    must_free = len(after) - max_tools
    suggestions = ", ".join(f"{call_hint(disable_tool, [g])} frees {n}" for n, g in frees[:3])
    return f"{message}; disable groups that free at least {must_free} first: {suggestions}"


def room_for(
    catalog: GroupTree,
    enabled: frozenset[str],
    path: Sequence[str],
    members: Mapping[str, frozenset[str]],
    max_tools: int,
) -> tuple[str, ...] | None:
    """Enabled groups to disable so that enabling ``path`` stays within ``max_tools``.

    Empty when it fits already; None when it cannot (the path alone is larger).
    Groups that free the most go first; the enabled parent ``path`` hangs on is
    never offered, since disabling it would take the path's root with it.
    """
    wanted = frozenset(path)
    keep = catalog.ancestors(path[0]) if path else frozenset()
    current = enabled
    chosen: list[str] = []
    while len(_union(members, current | wanted)) > max_tools:
        in_use = _union(members, current | wanted)
        best: tuple[int, str] | None = None
        for group in _ordered(catalog, current - keep):
            rest = current - catalog.descendants(group)
            freed = len(in_use - _union(members, rest | wanted))
            if freed and (best is None or freed > best[0]):
                best = (freed, group)
        if best is None:
            return None
        chosen.append(best[1])
        current = current - catalog.descendants(best[1])
    return tuple(chosen)


def disable(catalog: GroupTree, enabled: frozenset[str], groups: object, *, tool: str) -> Change:
    """Disable ``groups`` and, with each, every enabled group below it."""
    names, errors = _request_errors(groups, tool)
    change = Change(enabled=enabled, errors=errors)
    for name in names:
        if catalog.group(name) is None:
            change.errors.append(
                f"unknown group {brief(name)}; "
                f"enabled groups: {as_names(_ordered(catalog, enabled))}"
            )
            continue
        if name not in change.enabled:
            if name not in change.changed:
                change.errors.append(f"group {name!r} is not enabled")
            continue
        gone = catalog.descendants(name) & change.enabled
        change.changed.extend([name, *(n for n in _ordered(catalog, gone) if n != name)])
        change.enabled = change.enabled - gone
    return change


def _ordered(catalog: GroupTree, names: Iterable[str]) -> list[str]:
    wanted = set(names)
    return [g.name for g in catalog.groups if g.name in wanted]


# -- the layer ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Enabled:
    """One client's enabled groups for one request, and why they may be the initial set."""

    groups: frozenset[str]
    problem: str | None = None
    """None, ``"anonymous"`` (nothing identifies the client), ``"store"`` (the store failed)
    or ``"fixed"`` (a 2026-07-28 list, which no call of the client's may change)."""


class EnabledStore:
    """Each client's enabled groups in FastMCP's state store, failing closed to the initial set."""

    def __init__(self, catalog: Catalog, initial: Iterable[str], namespace: str) -> None:
        self.catalog = catalog
        self.initial = frozenset(initial)
        self.namespace = namespace
        # Reads and writes fail apart (a read-only replica): each logs its own outage.
        self.reads = OutageLog("progressive disclosure")
        self.writes = OutageLog("progressive disclosure")
        # Serializes one client's read-modify-write on this replica; the state stays in the store.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._initial_closed: tuple[Hashable, frozenset[str]] | None = None

    def initial_in(self, tree: GroupTree) -> frozenset[str]:
        """The initial groups as ``tree`` keeps them (``closed``).

        Worked out once per state of the declarations and denials (``tree.key``),
        not on every request.
        """
        key = tree.key
        last = self._initial_closed
        if last is None or last[0] != key:
            last = self._initial_closed = (key, closed(tree, self.initial))
        return last[1]

    def lock(self, key: str | None) -> asyncio.Lock:
        lock = self._locks.get(key or "")
        if lock is None:
            lock = self._locks[key or ""] = asyncio.Lock()
        return lock

    async def load(self, ctx: Context, key: str | None, tree: GroupTree) -> Enabled:
        """This client's enabled groups; the initial set when they cannot be known.

        Only groups of ``tree`` (those the client's principal may use) count as
        enabled, whatever the initial set or the stored state says.
        """
        if key is None:
            return Enabled(self.initial_in(tree), "anonymous")
        try:
            stored = await load_state(ctx, self.namespace)
        except StateUnavailable as exc:
            self.reads.failed(exc, "serving the initial groups")
            return Enabled(self.initial_in(tree), "store")
        self.reads.answered()
        if stored is None:
            return Enabled(self.initial_in(tree))
        names = stored.get("enabled") if isinstance(stored, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            logger.warning("progressive disclosure: unreadable state %r; initial groups", stored)
            return Enabled(self.initial_in(tree), "store")
        return Enabled(closed(tree, names))

    async def save(self, ctx: Context, enabled: frozenset[str]) -> None:
        """Store this client's enabled groups; raises ``StateUnavailable``."""
        try:
            await save_state(ctx, self.namespace, {"enabled": self.ordered(enabled)})
        except StateUnavailable as exc:
            self.writes.failed(exc, "groups not changed")
            raise
        self.writes.answered()

    def ordered(self, names: Iterable[str]) -> list[str]:
        wanted = set(names)
        return [g.name for g in self.catalog.groups if g.name in wanted]


@dataclass(frozen=True, slots=True)
class Holding:
    """What ``ProgressiveLayer.holding`` found: the groups that hold something, and its tools.

    ``enable_tools`` checks the groups, and narrows the tools to its reply's list
    rather than running the middleware chain again.

    Example:
        ```python
        held = await layer.holding(ServerListing(ctx.fastmcp), ["clock"])
        "clock" in held.groups
        ```
    """

    groups: frozenset[str]
    """The groups named, and their ancestors, that hold something the client could use."""
    tools: Sequence[Tool] | None = None
    """The tools as this client lists them through the middleware chain, with what enabling
    groups would show added; None when no group was named or that listing was refused."""
    refused: bool = False
    """The server's middleware refused the tools listing: what the groups hold is not known,
    nor what the reply would list, so ``enable_tools`` changes nothing."""
    complete: bool = False
    """Every kind was listed (a named group held nothing): ``groups`` holds every group that
    holds something, and any other holds nothing now (its upstream down, say)."""

    def usable(self, names: Sequence[str]) -> list[str]:
        """``names`` less the groups known to hold nothing now: what a reply may offer."""
        return [n for n in names if not self.complete or n in self.groups]


class ProgressiveLayer(PolicyLayer):
    """A component is visible when one of its direct groups is enabled for the client.

    A hidden component in a declared group is discoverable: the client can
    enable the group, and its hint says how. One hidden because it is in no
    group (``hide_ungrouped``) or claims only undeclared groups is concealed:
    calling it gets FastMCP's "Unknown tool", as for a name that never existed.

    What the client has not enabled is left out of lists only (``Hidden.unlisted``:
    a call, read or get by its exact name finds it) for a client that keeps no
    state, which could not enable it, and for every client with ``call_unlisted``
    (then also what is in no group under ``hide_ungrouped``). Without
    ``offer_enable`` no enable call is ever advised.
    """

    def __init__(
        self,
        store: EnabledStore,
        options: ProgressiveOptions,
        *,
        side_effect_lists: bool = False,
    ) -> None:
        self.store = store
        self.catalog = store.catalog
        self.options = options
        self.side_effect_lists = side_effect_lists
        self._failed_kinds: set[str] = set()

    def __repr__(self) -> str:
        return f"ProgressiveLayer(initial={sorted(self.store.initial)!r})"

    def fixed(self, info: RequestInfo | None) -> bool:
        """Whether this request's lists hold the initial groups whatever the client enabled.

        On 2026-07-28 a list "MUST NOT vary per-connection or as a side effect of
        other requests" (``server/tools.mdx``): enabling groups there hands out
        definitions and changes no list, unless ``side_effect_lists`` opts out.
        """
        return info is not None and info.modern and not self.side_effect_lists

    def lists_fixed(self, _auth: object) -> bool:
        """A FastMCP ``auth`` check: this request's lists hold the initial groups."""
        return is_unrestricted() or self.fixed(current_info())

    def offers_state_tools(self, auth: Any) -> bool:
        """A FastMCP ``auth`` check: ``enable_tools`` / ``disable_tools`` exist for this client.

        On a fixed list they need no state (every client, identified or not); else only
        a client whose enabled groups can be kept (``holds_state``).
        """
        return self.lists_fixed(auth) or holds_state(auth)

    @override
    def changes_with(self, *, modern: bool) -> bool:
        """The client's own calls change this layer's view, except on a fixed list."""
        return not modern or self.side_effect_lists

    async def view(self, client: ClientRequest) -> LayerView:
        tree = await access_of(self.catalog).tree()
        if self.fixed(client.info):
            # No state is read: the list is the initial groups and those its own filter names,
            # the same before and after any other request; the rest is reached by name.
            shown_now = self.store.initial_in(tree) | filtered_groups(tree, client.info)
            return _View(self, tree, Enabled(shown_now, "fixed"))
        return _View(self, tree, await self.store.load(client.ctx, client.key, tree))

    async def members(self, listing: Listing) -> dict[str, frozenset[str]]:
        """Each group's tools this principal may use: what ``max_tools`` counts.

        Counted over what FastMCP's lookup finds with this server's policy set
        aside (``listing.unjudged_tools``), not this request's view of its other
        layers, so no request shape (a concerns override, say) can enable more; but
        never a tool access control conceals from this principal, or a mounted
        server's own policy hides, whose count would betray it (and refuse room the
        principal could use).
        """
        access = await access_of(self.catalog).judge()
        tools = await listing.unjudged_tools()
        members: dict[str, set[str]] = {}
        for tool in tools:
            if not is_meta_tool(tool) and access.judge(tool) is None:
                for group in self.catalog.membership(tool).direct:
                    members.setdefault(group, set()).add(tool.name)
        return {g: frozenset(names) for g, names in members.items()}

    async def holding(self, listing: Listing, wanted: Iterable[str]) -> Holding:
        """Which of ``wanted`` hold something this client could use, through subgroups too.

        A group holds a component the client sees, or would see once it enables the
        group: each kind is listed as the client lists it (the server's middleware
        chain, a mounted server's policy, FastMCP's own checks), with only what enabling
        groups would show added (``widened``), so no middleware is handed what access
        control, another layer or the client's concerns hide. A member hidden by any of
        them leaves the group as a group with no member at all: the answer tells nothing
        of it. Tools first, always; prompts, resources and templates only while a named
        group holds nothing visible, so how many listings run depends on nothing hidden.
        A refused tools listing ends it (``refused``); any other kind whose listing is
        refused holds nothing (logged, never told to the client).

        Example:
            ```python
            held = await layer.holding(ServerListing(ctx.fastmcp), ["clock"])
            enable(tree, before, ["clock"], tool="enable_tools", holding=held.groups)
            ```
        """
        tree = await access_of(self.catalog).tree()
        named = {n for n in wanted if tree.group(n) is not None}
        access = await access_of(self.catalog).judge()
        held: set[str] = set()
        tools: Sequence[Tool] | None = None
        complete = True
        for kind in COMPONENT_KINDS:
            if named <= held:
                complete = False
                break
            listed = await self.listed(listing, kind, call=self.options.enable_tool_name)
            if kind == "tool":
                if listed is None:
                    # No more listings: the call is refused, spending no more of a limit.
                    return Holding(frozenset(), refused=True)
                tools = cast("Sequence[Tool]", listed)
            for component in listed or ():
                # The listing has left out what access control denies; judged again all the
                # same, as ``members`` judges, should a transform be missing.
                if not is_meta_tool(component) and access.judge(component) is None:
                    held.update(
                        a for g in tree.membership(component).direct for a in tree.ancestors(g)
                    )
        return Holding(frozenset(held), tools, complete=complete)

    async def listed(
        self, listing: Listing, kind: ComponentKind, *, call: str
    ) -> Sequence[FastMCPComponent] | None:
        """``kind`` as this client lists it, widened; None when the listing failed.

        A server's own middleware may refuse a listing (a role gate raising on
        ``prompts/list``, a rate limiter): the client never asked for it, so the
        refusal's words stay in the log.

        Example:
            ```python
            prompts = await self.listed(listing, "prompt", call="enable_tools") or ()
            ```
        """
        try:
            return await listing.widened(kind)
        except Exception as exc:
            self.log_refused(call, kind, exc)
            return None

    def log_refused(self, call: str, kind: str, exc: Exception) -> None:
        """Log that the server's middleware refused a listing ``call`` ran for its client.

        A warning the first time for each kind, then debug level, with the refusal's
        words (which the client is never told) and what the call did instead.

        Example:
            ```python
            layer.log_refused("disable_tools", "tool", RateLimitError("Rate limit exceeded"))
            ```
        """
        # Once per kind: a gate that always refuses would otherwise log every call.
        level = logging.DEBUG if kind in self._failed_kinds else logging.WARNING
        self._failed_kinds.add(kind)
        outcome = (
            "refused the call, changing nothing"
            if kind == "tool"
            else "counting none, so a group holding only those is not enabled"
        )
        logger.log(
            level,
            "progressive disclosure: %s could not list %ss through the middleware chain "
            "(%r); %s (logged once per kind, then at debug level)",
            call,
            kind,
            exc,
            outcome,
        )

    @override
    async def remedy(
        self, ctx: Context, enable: Sequence[str], listing: Listing
    ) -> dict[str, Any] | None:
        if not enable or not self.options.offer_enable:
            return None
        if self.options.max_tools is None:
            return {self.options.enable_tool_name: {"groups": list(enable)}}
        tree = await access_of(self.catalog).tree()
        enabled = await self.store.load(ctx, client_key(ctx), tree)
        members = await self.members(listing)
        # The shortest path first; when max_tools refuses it, the group's other parents.
        for path in [list(enable), *paths_to(tree, enable[-1], enabled.groups)]:
            room = room_for(tree, enabled.groups, path, members, self.options.max_tools)
            if room is None:
                continue
            calls: dict[str, Any] = {}
            if room:
                calls[self.options.disable_tool_name] = {"groups": list(room)}
            calls[self.options.enable_tool_name] = {"groups": path}
            return calls
        return None

    def hint(
        self,
        component: FastMCPComponent,
        membership: Membership,
        enabled: Enabled,
        tree: GroupTree,
    ) -> str:
        """What the agent should do to use ``component``, a member of a declared group."""
        what = f"{kind_label(component).capitalize()} {component.name!r}"
        if not self.options.offer_enable or enabled.problem == "fixed":
            # Search first: nothing is enabled, anything the client may use runs by its name.
            return f"{what} is not listed; call it by its exact name."
        groups = membership.direct
        where = (
            f"group {groups[0]!r}, which is not"
            if len(groups) == 1
            else "groups " + ", ".join(repr(g) for g in groups) + ", none of which is"
        )
        now = as_names(self.store.ordered(enabled.groups))
        if enabled.problem == "anonymous":
            return (
                f"{what} is in {where} enabled, and this connection cannot enable groups: "
                "this server keeps enabled groups per session (protocol 2025-11-25) or per "
                "authenticated user, and this stateless HTTP request has neither. "
                f"Authenticate or connect with a session. Enabled now: {now}."
            )
        if enabled.problem == "store":
            return (
                f"{what} is in {where} enabled; the server cannot read its session state "
                f"store right now, so only the initial groups apply. Enabled now: {now}."
            )
        options = " or ".join(
            call_hint(self.options.enable_tool_name, path_to(tree, g, enabled.groups))
            for g in groups
        )
        return f"{what} is in {where} enabled. Call {options} first. Enabled now: {now}."


def filtered_groups(tree: GroupTree, info: RequestInfo) -> frozenset[str]:
    """The groups a list request's ``filter.groups`` names, with every group below them.

    On a fixed list they are the host's own progressive disclosure: a request
    parameter (part of its cache key) that lists those groups' tools, as the
    filter matches a group's descendants. Only groups of ``tree`` (those the
    principal may use) count; a filter that is not valid names none (the
    filtering middleware answers it with -32602).
    """
    raw = info.params.get("filter") if info.method in LIST_METHODS else None
    names = raw.get("groups") if isinstance(raw, Mapping) else None
    if not isinstance(names, list) or len(names) > MAX_GROUP_NAMES:
        return frozenset()
    return frozenset(
        below
        for name in names
        if isinstance(name, str) and tree.group(name) is not None
        for below in tree.descendants(name)
    )


class _View:
    """One client's enabled groups, judging components for one request."""

    __slots__ = ("_enabled", "_layer", "_tree", "key", "unlisted")

    def __init__(self, layer: ProgressiveLayer, tree: GroupTree, enabled: Enabled) -> None:
        self._layer = layer
        self._tree = tree
        self._enabled = enabled
        # Hints name the enabled groups and the problem; membership follows the catalog and
        # the groups the client's principal may use.
        self.key = (id(layer), tree.key, enabled.groups, enabled.problem)
        # A client that keeps no state could never enable what it is not shown, nor may a
        # fixed list show it: it may still name it.
        self.unlisted = layer.options.call_unlisted or enabled.problem in ("anonymous", "fixed")

    def judge(self, component: FastMCPComponent) -> Hidden | None:
        layer = self._layer
        membership = self._tree.membership(component)
        if shown(membership, self._enabled.groups, hide_ungrouped=layer.options.hide_ungrouped):
            return None
        if not membership.direct:
            if layer.options.call_unlisted and not membership.undeclared:
                # In no group under hide_ungrouped: left out of lists, called by its name.
                return Hidden(
                    f"{kind_label(component).capitalize()} {component.name!r} is not listed; "
                    "call it by its exact name.",
                    discoverable=True,
                    unlisted=True,
                )
            # In no group (hide_ungrouped) or only in undeclared ones: no group the client
            # could enable shows it, so it does not exist for the client at all.
            return CONCEALED
        enabled = self._enabled
        enable: tuple[str, ...] = ()
        if enabled.problem is None and layer.options.offer_enable:
            # The shortest enable call among the component's groups; declaration order breaks ties.
            paths = [tuple(path_to(self._tree, g, enabled.groups)) for g in membership.direct]
            enable = min(paths, key=len)
        hint = layer.hint(component, membership, enabled, self._tree)
        return Hidden(hint, discoverable=True, enable=enable, unlisted=self.unlisted)

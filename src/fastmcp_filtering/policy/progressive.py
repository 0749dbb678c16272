"""The progressive-disclosure layer of the access policy: enabled groups per client, and hints."""

from __future__ import annotations

import asyncio
import logging
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from typing_extensions import override

from fastmcp_filtering.core.catalog import kind_label
from fastmcp_filtering.core.declarations import is_meta_tool
from fastmcp_filtering.core.scope import unrestricted
from fastmcp_filtering.core.state import StateUnavailable, client_key, load_state, save_state
from fastmcp_filtering.policy.access import access_of
from fastmcp_filtering.policy.decision import (
    CONCEALED,
    ClientRequest,
    Hidden,
    LayerView,
    PolicyLayer,
)
from fastmcp_filtering.policy.disclosure import (
    as_names,
    call_hint,
    closed,
    path_to,
    paths_to,
    room_for,
    shown,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from fastmcp import FastMCP
    from fastmcp.server.context import Context
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.core.catalog import Catalog, GroupTree, Membership

__all__ = ["Enabled", "EnabledStore", "ProgressiveLayer"]

logger = logging.getLogger("fastmcp_filtering")


@dataclass(frozen=True, slots=True)
class Enabled:
    """One client's enabled groups for one request, and why they may be the initial set."""

    groups: frozenset[str]
    problem: str | None = None
    """None, ``"anonymous"`` (nothing identifies the client) or ``"store"`` (the store failed)."""


class EnabledStore:
    """Each client's enabled groups in FastMCP's state store, failing closed to the initial set."""

    def __init__(self, catalog: Catalog, initial: Iterable[str], namespace: str) -> None:
        self.catalog = catalog
        self.initial = frozenset(initial)
        self.namespace = namespace
        # Serializes one client's read-modify-write on this replica; the state stays in the store.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

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
            return Enabled(closed(tree, self.initial), "anonymous")
        try:
            stored = await load_state(ctx, self.namespace)
        except StateUnavailable as exc:
            logger.warning("progressive disclosure: %s; serving the initial groups", exc)
            return Enabled(closed(tree, self.initial), "store")
        if stored is None:
            return Enabled(closed(tree, self.initial))
        names = stored.get("enabled") if isinstance(stored, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            logger.warning("progressive disclosure: unreadable state %r; initial groups", stored)
            return Enabled(closed(tree, self.initial), "store")
        return Enabled(closed(tree, names))

    async def save(self, ctx: Context, enabled: frozenset[str]) -> None:
        """Store this client's enabled groups; raises ``StateUnavailable``."""
        await save_state(ctx, self.namespace, {"enabled": self.ordered(enabled)})

    def ordered(self, names: Iterable[str]) -> list[str]:
        wanted = set(names)
        return [g.name for g in self.catalog.groups if g.name in wanted]


class ProgressiveLayer(PolicyLayer):
    """A component is visible when one of its direct groups is enabled for the client.

    A hidden component in a declared group is discoverable: the client can
    enable the group, and its hint says how. One hidden because it is in no
    group (``hide_ungrouped``) or claims only undeclared groups is concealed:
    calling it gets FastMCP's "Unknown tool", as for a name that never existed.
    """

    def __init__(
        self,
        store: EnabledStore,
        *,
        hide_ungrouped: bool,
        enable_tool: str,
        disable_tool: str = "disable_tools",
        max_tools: int | None = None,
    ) -> None:
        self.store = store
        self.catalog = store.catalog
        self.hide_ungrouped = hide_ungrouped
        self.enable_tool = enable_tool
        self.disable_tool = disable_tool
        self.max_tools = max_tools

    def __repr__(self) -> str:
        return f"ProgressiveLayer(initial={sorted(self.store.initial)!r})"

    async def view(self, client: ClientRequest) -> LayerView:
        tree = await access_of(self.catalog).tree()
        return _View(self, tree, await self.store.load(client.ctx, client.key, tree))

    async def members(self, server: FastMCP) -> dict[str, frozenset[str]]:
        """Each group's tools this principal may use: what ``max_tools`` counts.

        Counted over the whole catalog, not this request's view of other layers,
        so no request shape (a concerns override, say) can enable more; but never
        a tool access control conceals from this principal, whose count would
        betray it (and refuse room the principal could use).
        """
        access = await access_of(self.catalog).judge()
        with unrestricted():
            tools = await server.list_tools(run_middleware=False)
        members: dict[str, set[str]] = {}
        for tool in tools:
            if not is_meta_tool(tool) and access.judge(tool) is None:
                for group in self.catalog.membership(tool).direct:
                    members.setdefault(group, set()).add(tool.name)
        return {g: frozenset(names) for g, names in members.items()}

    @override
    async def remedy(self, ctx: Context, enable: Sequence[str]) -> dict[str, Any] | None:
        if not enable:
            return None
        if self.max_tools is None:
            return {self.enable_tool: {"groups": list(enable)}}
        tree = await access_of(self.catalog).tree()
        enabled = await self.store.load(ctx, client_key(ctx), tree)
        members = await self.members(ctx.fastmcp)
        # The shortest path first; when max_tools refuses it, the group's other parents.
        for path in [list(enable), *paths_to(tree, enable[-1], enabled.groups)]:
            room = room_for(tree, enabled.groups, path, members, self.max_tools)
            if room is None:
                continue
            calls: dict[str, Any] = {}
            if room:
                calls[self.disable_tool] = {"groups": list(room)}
            calls[self.enable_tool] = {"groups": path}
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
            call_hint(self.enable_tool, path_to(tree, g, enabled.groups)) for g in groups
        )
        return f"{what} is in {where} enabled. Call {options} first. Enabled now: {now}."


class _View:
    """One client's enabled groups, judging components for one request."""

    __slots__ = ("_enabled", "_layer", "_tree", "key")

    def __init__(self, layer: ProgressiveLayer, tree: GroupTree, enabled: Enabled) -> None:
        self._layer = layer
        self._tree = tree
        self._enabled = enabled
        # Hints name the enabled groups and the problem; membership follows the catalog and
        # the groups the client's principal may use.
        self.key = (id(layer), tree.key, enabled.groups, enabled.problem)

    def judge(self, component: FastMCPComponent) -> Hidden | None:
        layer = self._layer
        membership = self._tree.membership(component)
        if shown(membership, self._enabled.groups, hide_ungrouped=layer.hide_ungrouped):
            return None
        if not membership.direct:
            # In no group (hide_ungrouped) or only in undeclared ones: no group the client
            # could enable shows it, so it does not exist for the client at all.
            return CONCEALED
        enabled = self._enabled
        enable: tuple[str, ...] = ()
        if enabled.problem is None:
            # The shortest enable call among the component's groups; declaration order breaks ties.
            paths = [tuple(path_to(self._tree, g, enabled.groups)) for g in membership.direct]
            enable = min(paths, key=len)
        hint = layer.hint(component, membership, enabled, self._tree)
        return Hidden(hint, discoverable=True, enable=enable)

"""A search's candidates from a catalog snapshot, per state of the client's views.

What ``tools/list`` with ``query`` ranks is what the client's listing holds
(every visible version, the highest of each key ranked) narrowed by the
request's ``filter``, and, where a layer can show what it hides, what the
client could enable under the keys it cannot use at all, or call by name though its
lists leave it out (``Hit.by_name``; ``search.service``). The
same policy answers for every client whose views are in the same state
(``Policy.state``), so those candidates are worked out once per state and
filter, within a bounded budget, and every later search of that state only ranks.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fastmcp.utilities.versions import version_sort_key

from fastmcp_filtering.core.catalog import is_meta_tool, search_key
from fastmcp_filtering.core.filters import ListFilter, checked_filter, matches
from fastmcp_filtering.policy.decision import Hit

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Sequence

    from fastmcp.tools import Tool

    from fastmcp_filtering.core.catalog import GroupTree
    from fastmcp_filtering.core.request import RequestInfo
    from fastmcp_filtering.policy.decision import Policy

# Entries (a tool a state holds, a candidate a selection holds) remembered per snapshot,
# over every state and filter: about 20 states of a 10,000-tool catalog.
_MAX_ENTRIES = 400_000
_MAX_FILTERS = 8


@dataclass(slots=True)
class Selection:
    """The candidates of one search: keys to rank and what each key stands for.

    Few objects per candidate (a 10,000-tool catalog makes 10,000 candidates): the
    callable ones are the tools themselves, ``Hit`` made only for those read.
    """

    within: frozenset[str]
    """Keys of the candidates, meta-tools left out."""
    callable: dict[str, Tool]
    """Candidates the client can call now, by key."""
    enable: dict[str, Hit[Tool]]
    """Candidates it could call after enabling groups, by key."""
    versioned: list[Tool]
    """Candidates of keys with several versions: the index must describe these ones."""
    versions: dict[str, list[Tool]] = field(default_factory=dict)
    """Every version the client can use of each key with several, as its listing holds them."""

    def hit(self, key: str) -> Hit[Tool]:
        tool = self.callable.get(key)
        return Hit(tool) if tool is not None else self.enable[key]

    def component(self, key: str) -> Tool | None:
        tool = self.callable.get(key)
        if tool is None and (hit := self.enable.get(key)) is not None:
            tool = hit.component
        return tool

    @property
    def size(self) -> int:
        return len(self.callable) + len(self.enable) + len(self.within)


@dataclass(slots=True)
class _State:
    """What one state of the views lets a client use, and could enable, of the snapshot."""

    visible: list[int]
    """Every version this client may use (positions in the snapshot), as its listing holds it."""
    enable_hidden: list[tuple[int, tuple[str, ...]]]
    """Versions hidden only until groups are enabled, with the groups; or only from lists
    (no groups: callable by name)."""
    tags: frozenset[str]
    selections: OrderedDict[Hashable, Selection] = field(default_factory=OrderedDict)

    @property
    def size(self) -> int:
        own = len(self.visible) + len(self.enable_hidden)
        return own + sum(s.size for s in self.selections.values())


class CatalogSnapshot:
    """The server's tools at one fingerprint, and the candidates of each client state.

    ``tools`` is the server's listing as FastMCP gives it to anyone (all
    versions, every transform applied, no client's policy); ``injected`` are
    the ids of the tools middleware injects, which FastMCP lists past every
    transform, so no policy judges them.
    """

    def __init__(
        self,
        stamp: tuple[object, ...],
        tools: Sequence[Tool],
        *,
        injected: frozenset[int],
        trusted: bool,
        discovery: bool,
    ) -> None:
        self.fingerprint = stamp
        self.tools = tuple(tools)
        self.keys = tuple(search_key(t) for t in self.tools)
        self.trusted = trusted
        self._injected = injected
        self._discovery = discovery
        counts: dict[str, int] = {}
        newest: dict[str, Tool] = {}
        for key, tool in zip(self.keys, self.tools, strict=True):
            counts[key] = counts.get(key, 0) + 1
            held = newest.get(key)
            if held is None or version_sort_key(tool) > version_sort_key(held):
                newest[key] = tool
        self.newest = newest
        """The highest version of each key: what the index describes unless told otherwise."""
        self._versioned = frozenset(k for k, n in counts.items() if n > 1)
        self._meta = {k: t.name.casefold() for k, t in newest.items() if is_meta_tool(t)}
        self._states: OrderedDict[Hashable, _State] = OrderedDict()
        self._size = 0

    def component_of(self, selection: Selection) -> Callable[[str], Tool | None]:
        """What each key stands for in ``selection``: its candidate, else the newest version."""

        def of(key: str) -> Tool | None:
            return selection.component(key) or self.newest.get(key)

        return of

    def selection(
        self, policy: Policy, catalog: GroupTree, info: RequestInfo | None, query: str
    ) -> Selection:
        """This client's candidates for ``query``, narrowed by the request's ``filter``."""
        key = policy.state
        state = self._states.get(key) if key is not None else None
        if state is None:
            state = self._judge(policy)
            self._remember(key, state, state.size)
        else:
            self._states.move_to_end(key)
        list_filter = checked_filter(catalog, info, "tool", lambda: state.tags)
        filter_key = None if list_filter is None else (list_filter.groups, list_filter.tags)
        selection = state.selections.get(filter_key)
        if selection is None:
            selection = self._select(state, catalog, list_filter)
            if key is not None and self._states.get(key) is state:
                state.selections[filter_key] = selection
                if len(state.selections) > _MAX_FILTERS:
                    self._size -= state.selections.popitem(last=False)[1].size
                self._remember(key, state, selection.size)
        named = query.strip().casefold()
        exact = [k for k, name in self._meta.items() if name == named and selection.component(k)]
        if exact:
            # A meta-tool is ranked only when the query is exactly its name.
            return Selection(
                selection.within | set(exact),
                selection.callable,
                selection.enable,
                selection.versioned,
                selection.versions,
            )
        return selection

    def _remember(self, key: Hashable | None, state: _State, added: int) -> None:
        """Count ``added`` entries of ``state`` (kept only with a key), forgetting the least
        recently used states beyond the budget."""
        if key is None:
            return
        if self._states.get(key) is not state:
            self._states[key] = state
        self._size += added
        while self._size > _MAX_ENTRIES and len(self._states) > 1:
            self._size -= self._states.popitem(last=False)[1].size

    def _judge(self, policy: Policy) -> _State:
        """Judge every tool once for this state of the views, as the listing would."""
        if policy.hides_nothing:
            # No layer (search alone): every tool is visible, none to enable.
            every_tag = frozenset().union(*(tool.tags for tool in self.tools))
            return _State(list(range(len(self.tools))), [], every_tag)
        # Only a layer that can show what it hides makes anything discoverable.
        discovery = policy.as_discovery() if self._discovery else None
        injected = self._injected
        visible: list[int] = []
        enable_hidden: list[tuple[int, tuple[str, ...]]] = []
        tags: set[str] = set()
        for position, tool in enumerate(self.tools):
            is_injected = id(tool) in injected
            hidden = policy.judge(tool)
            # Injected tools are listed past the transforms: no policy hides them.
            if hidden is None or is_injected:
                visible.append(position)
                tags |= tool.tags
            if (
                hidden is not None
                and (hidden.enable or hidden.unlisted)
                and discovery is not None
                and (is_injected or discovery.judge(tool) is None)
            ):
                enable_hidden.append((position, hidden.enable))
        return _State(visible, enable_hidden, frozenset(tags))

    def _select(
        self, state: _State, catalog: GroupTree, list_filter: ListFilter | None
    ) -> Selection:
        """The candidates as search ranks them from a listing: the highest version of each
        key, then what the client could enable under the keys it cannot use at all."""
        tools, keys, versioned_keys = self.tools, self.keys, self._versioned
        chosen: dict[str, Tool] = {}
        versions: dict[str, list[Tool]] = {}
        for position in state.visible:
            tool, key = tools[position], keys[position]
            if list_filter is not None and not matches(catalog, list_filter, tool):
                continue
            if key in versioned_keys:
                versions.setdefault(key, []).append(tool)
            held = chosen.get(key) if key in versioned_keys else None
            if held is None or version_sort_key(tool) > version_sort_key(held):
                chosen[key] = tool
        extra: dict[str, Hit[Tool]] = {}
        for position, enable in state.enable_hidden:
            tool, key = tools[position], keys[position]
            if key in chosen:
                continue
            held_hit = extra.get(key)
            if held_hit is None or version_sort_key(tool) > version_sort_key(held_hit.component):
                # No groups to enable: left out of lists only, callable by its name.
                extra[key] = Hit(tool, enable, by_name=not enable)
        if list_filter is not None:
            extra = {k: h for k, h in extra.items() if matches(catalog, list_filter, h.component)}
        within = frozenset(k for k in (*chosen, *extra) if k not in self._meta)
        selection = Selection(within, chosen, extra, [], versions)
        for key in versioned_keys:
            component = selection.component(key)
            if component is not None:
                selection.versioned.append(component)
        return selection

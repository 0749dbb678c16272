"""The one access decision: what one client may see and use, for one request.

Every middleware of the package that narrows what a client may use (concerns,
progressive disclosure) owns a ``PolicyLayer``. For each request the layers are
asked once for a ``LayerView`` (one snapshot of each layer's state for this
client), and the views are combined into a ``Policy`` that answers for any
component: visible (``None``) or ``Hidden``, with what the agent may be told
and whether it may learn the component exists at all.

The policy is applied inside FastMCP's own component lookup by
``AccessTransform`` (``server.transform``), so every path FastMCP has sees one
catalog per client. Search, meta-tools and hints ask the same ``Policy``. Nothing
here lists a server or subclasses FastMCP: what a layer must list (the components a
group holds, say) it asks of a ``Listing`` the server side hands it.

Fail closed: with no request (startup, a programmatic call), or when a layer
cannot load its view, every component is concealed. Code of this package that
must read the whole catalog (membership counts, change detection) does so
inside ``unrestricted()``.

Adding a layer: subclass ``PolicyLayer``, return a view whose ``judge`` says
``Hidden(...)`` for what the client may not use, and expose it as the
``policy_layer`` of a middleware (see ``LayerMiddleware``).
"""

from __future__ import annotations

import contextlib
import json
import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, cast

from fastmcp_filtering.core.request import (
    RequestInfo,
    current_scope,
    request_memo,
    scoped,
)

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterable, Iterator, Sequence

    from fastmcp.server.context import Context
    from fastmcp.tools.base import Tool
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.core.catalog import ComponentKind

logger = logging.getLogger("fastmcp_filtering")

_C = TypeVar("_C", bound="FastMCPComponent")


@dataclass(frozen=True, slots=True)
class Hidden:
    """Why a component is hidden from a client, and what the client may learn of it."""

    message: str | None = None
    """What the agent is told when it names the component; None: it is unknown, nothing more."""
    discoverable: bool = False
    """True when the client could make it visible itself (enable its group): search may offer it."""
    enable: tuple[str, ...] = ()
    """The groups whose enabling, parents first, shows the component to this client; empty
    when no enable call can (another layer hides it, or the client cannot enable groups)."""
    unlisted: bool = False
    """True when lists leave it out but a lookup by its exact name (a call, a read, a get)
    finds it: progressive disclosure's groups not enabled, for a client that keeps no state
    or under ``call_unlisted``. Only a hint may say so; search then offers it as callable."""


CONCEALED = Hidden()
"""Hidden without a trace: the answer for anything unknown."""


@dataclass(frozen=True, slots=True)
class Hit(Generic[_C]):
    """A component a client may use now, or once it enables ``enable``: what search ranks.

    ``enable`` is the ``Hidden.enable`` of a component hidden only because none of
    its groups is enabled; empty for one the client can use now.

    Example:
        ```python
        Hit(tool, ("repos", "pull_requests"))
        ```
    """

    component: _C
    enable: tuple[str, ...] = ()
    """Groups to enable first, parents first; empty when the client can use it now."""
    by_name: bool = False
    """Left out of the client's lists but callable by its exact name (``Hidden.unlisted``)."""

    @property
    def listed(self) -> bool:
        """Whether the client's list holds it (nothing to enable, not only by name)."""
        return not self.enable and not self.by_name


class LayerView(Protocol):
    """One layer's decision for one client, loaded once per request.

    A view that may answer ``Hidden.unlisted`` says so with an ``unlisted = True``
    attribute, so that search judges lookups apart from lists only when it needs to.
    """

    @property
    def key(self) -> Hashable | None:
        """What the view's answers depend on besides the component (its enabled groups, its
        concerns), so equal keys give equal answers and they can be remembered; None: never."""

    def judge(self, component: FastMCPComponent) -> Hidden | None:
        """None if the client may see and use ``component``, else why not."""


@dataclass(frozen=True, slots=True)
class ClientRequest:
    """The client a view is loaded for: its request context, wire request and identity."""

    ctx: Context
    info: RequestInfo
    key: str | None
    """The client's identity for per-client state, or None when nothing identifies it."""


class PolicyLayer(ABC):
    """One layer of the access policy: loads one client's view for one request."""

    serves_declarations: ClassVar[bool] = False
    """Whether the server's components leave it with their ``@in_group`` groups in ``_meta``
    (a mounted server's: the parent gets FastMCP's provider components, which keep
    ``_meta`` and no function)."""

    def changes_with(self, *, modern: bool) -> bool:
        """Whether the client's own calls can change its view in the request's era (a cached
        answer would outlive them: cacheable answers get ``ttlMs: 0``); False for a view
        fixed per principal."""
        return True

    @abstractmethod
    async def view(self, client: ClientRequest) -> LayerView:
        """This client's view; raising conceals everything for this request."""

    async def remedy(
        self, ctx: Context, enable: Sequence[str], listing: Listing
    ) -> dict[str, Any] | None:
        """The meta-tool calls, in order, that show what this layer hid with ``enable``.

        A mapping from tool name to its arguments, e.g. ``{"enable_tools":
        {"groups": ["write"]}}``; None when this layer set no ``Hidden.enable``
        or no calls can make room for it. ``listing`` answers what the layer must
        count on the server (what a group holds).
        """
        return None


class Listing(Protocol):
    """What a layer may ask the server to list: the policy itself lists nothing.

    The server side (``server.transform.ServerListing``) answers through FastMCP's
    lookup, so what a layer counts is what FastMCP would find; the layer only judges.

    Example:
        ```python
        tools = await listing.unjudged_tools()
        prompts = await listing.widened("prompt")
        ```
    """

    async def unjudged_tools(self) -> Sequence[Tool]:
        """The server's tools as its lookup finds them with its own policy set aside."""
        ...

    async def widened(self, kind: ComponentKind) -> Sequence[FastMCPComponent]:
        """``kind`` as this client lists it through the server's middleware chain, with
        what it could enable itself shown too; raises what the chain raises."""
        ...


class Policy:
    """Every layer's view for one client and one request, combined.

    A component is visible when every view admits it. When several hide it, a
    view that conceals it (no message) wins over any other, so no layer's words
    reveal what another layer conceals, whatever the order of the layers; then
    a refusal the client may read (its own concerns) wins over a hint that it
    could make the component visible.
    """

    __slots__ = ("_memo", "_reach", "_table", "_views", "_widened", "denied_groups", "state")

    def __init__(
        self,
        views: Sequence[LayerView],
        memo: Memo | None = None,
        *,
        widened: bool = False,
        reach: bool = False,
    ) -> None:
        self._views = tuple(views)
        self._memo = memo
        self._widened = widened
        self._reach = reach
        self._table: dict[int, tuple[FastMCPComponent, Hidden | None]] | None = None
        keys = tuple(getattr(view, "key", None) for view in self._views)
        self.state: tuple[Hashable, ...] | None = None if None in keys else (*keys, widened, reach)
        """What the answers depend on besides the component: equal states, equal answers;
        None when a view cannot say (its answers are never remembered)."""
        if memo is not None and self.state is not None:
            self._table = memo.table(self.state)
        self.denied_groups: frozenset[str] = frozenset().union(
            *(getattr(view, "denied_groups", frozenset()) for view in self._views)
        )
        """Groups a view denies this client outright (access control): components it may
        see still must not name them in their own ``_meta`` (a view says so with a
        ``denied_groups`` attribute)."""

    @property
    def hides_nothing(self) -> bool:
        """Whether no layer has a view: every component is visible."""
        return not self._views

    def as_discovery(self) -> Policy:
        """This policy as discovery judges: what the client could enable itself counts as shown."""
        return Policy(self._views, self._memo, widened=True, reach=self._reach)

    def as_reach(self) -> Policy:
        """This policy as a lookup by exact name judges: what lists only leave out counts as
        shown (``Hidden.unlisted``), so search offers it as callable."""
        if self._reach or not any(getattr(view, "unlisted", False) for view in self._views):
            # No view leaves anything out of lists only: the same answers, the same state.
            return self
        return Policy(self._views, self._memo, widened=self._widened, reach=True)

    def lookup(self, component: FastMCPComponent) -> Hidden | None:
        """None if a lookup by ``component``'s exact name may find it, else why not.

        As ``judge``, but what lists only leave out (``Hidden.unlisted``) is found.
        """
        hidden = self.judge(component)
        return None if hidden is not None and hidden.unlisted else hidden

    def judge(self, component: FastMCPComponent) -> Hidden | None:
        table = self._table
        if table is None:
            return self._judge(component)
        # Listing judges every component on every request: remember answers per component
        # object and per state of the views (the same for every client in that state).
        hit = table.get(id(component))
        if hit is not None and hit[0] is component:
            return hit[1]
        return self._judged(table, component)

    def shown(self, components: Iterable[_C]) -> list[_C]:
        """The ``components`` this policy shows (``judge`` says None), in order.

        One pass, for a listing: the remembered answers are read inline, a
        component at a time, without a call per component.

        Example:
            ```python
            shown = policy.shown(await call_next(context))
            ```
        """
        table = self._table
        if table is None:
            return [c for c in components if self._judge(c) is None]
        get = table.get
        kept: list[_C] = []
        for component in components:
            hit = get(id(component))
            if hit is not None and hit[0] is component:
                if hit[1] is None:
                    kept.append(component)
            elif self._judged(table, component) is None:
                kept.append(component)
        return kept

    def _judged(
        self, table: dict[int, tuple[FastMCPComponent, Hidden | None]], component: FastMCPComponent
    ) -> Hidden | None:
        hidden = self._judge(component)
        assert self._memo is not None
        self._memo.store(table, component, hidden)
        return hidden

    def _judge(self, component: FastMCPComponent) -> Hidden | None:
        refusal: Hidden | None = None
        hint: Hidden | None = None
        unlisted = True
        for view in self._views:
            hidden = view.judge(component)
            if hidden is None:
                continue
            if hidden.discoverable:
                hint = hint or hidden
                # Found by name only when every layer that hides it leaves it out of lists only.
                unlisted = unlisted and hidden.unlisted
            elif hidden.message is None:
                # Concealed by one layer: no other layer's words may reveal it.
                return hidden
            else:
                refusal = refusal or hidden
        if hint is not None and hint.unlisted and not unlisted:
            hint = replace(hint, unlisted=False)
        if refusal is None and hint is not None:
            # Discovery: what the client could show itself (enabling groups, or naming what
            # lists only leave out) counts as shown; a reach, what it can name.
            if self._widened and (hint.enable or hint.unlisted):
                return None
            if self._reach and hint.unlisted:
                return None
        return refusal or hint

    def visible(self, component: FastMCPComponent) -> bool:
        return self.judge(component) is None


class Memo:
    """Answers remembered per state of the views, for one ``AccessTransform``; bounded."""

    def __init__(self) -> None:
        self._tables: dict[tuple[Hashable, ...], dict[int, tuple[Any, Any]]] = {}
        self._size = 0

    def table(self, keys: tuple[Hashable, ...]) -> dict[int, tuple[Any, Any]]:
        table = self._tables.get(keys)
        if table is None:
            table = self._tables[keys] = {}
        return table

    def store(self, table: dict[int, tuple[Any, Any]], component: Any, answer: Any) -> None:
        if self._size >= _MAX_REMEMBERED:
            # Many client states at once: start over rather than grow (tables are reused
            # by reference, so empty them in place).
            for each in self._tables.values():
                each.clear()
            self._tables.clear()
            self._size = 0
        # Holding the component keeps its id from being reused by another object.
        table[id(component)] = (component, answer)
        self._size += 1

    def clear(self) -> None:
        """Forget every answer: the layers changed."""
        for each in self._tables.values():
            each.clear()
        self._tables.clear()
        self._size = 0


# Most answers a Memo holds, over every state of the views.
_MAX_REMEMBERED = 200_000


class _ConcealAll:
    key = None

    def judge(self, component: FastMCPComponent) -> Hidden | None:
        return CONCEALED


ALLOW_ALL = Policy(())
CONCEAL_ALL = Policy((_ConcealAll(),))


@contextlib.contextmanager
def widened(owner: object) -> Iterator[None]:
    """Within: ``owner``'s lookups also show what the client could enable itself.

    Only a ``Hidden`` with an ``enable`` path (hidden because no group is
    enabled, and by nothing else) turns visible, and only for ``owner`` (the
    server's ``AccessTransform``): a mounted server's policy, every other
    layer, FastMCP's own checks and every middleware still apply. Discovery
    lists through the whole chain this way, so it never offers what any of
    them hides.
    """
    with scoped(replace(current_scope(), widened=owner)):
        yield


@contextlib.contextmanager
def set_aside(owner: object) -> Iterator[None]:
    """Within: ``owner``'s policy shows everything; every other check still applies.

    What a client's own change (enabling groups, its concerns) can change is
    read once inside this block, then judged by its policy before and after
    the change. A mounted server's policy, FastMCP's own checks and the
    session's visibility rules still apply, unlike ``unrestricted``.
    """
    with scoped(replace(current_scope(), set_aside=owner)):
        yield


def is_widened() -> bool:
    """Whether this is a discovery listing (see ``widened``)."""
    return current_scope().widened is not None


def invalidate() -> None:
    """Forget this request's policies: a layer's state changed during the request."""
    memo = request_memo()
    if memo is not None:
        for key in [k for k in memo if isinstance(k, tuple) and k[:1] == ("policy",)]:
            del memo[key]


def loaded_policy(owner: object) -> Policy | None:
    """This request's policy on ``owner`` if ``load_policy`` loaded it already; None: unknown.

    For FastMCP's synchronous lookups (a ``ToolInjectionMiddleware``'s tools), which
    cannot load it themselves: whoever asks loads it first, and a caller treats None as
    hidden. Everything shows inside ``unrestricted()`` and for ``set_aside`` owners.
    """
    scope = current_scope()
    if scope.unrestricted or scope.set_aside is owner:
        return ALLOW_ALL
    remembered = request_memo()
    if remembered is None:
        return None
    cached = remembered.get(policy_key(owner))
    return cast("Policy", cached[1]) if cached is not None and cached[0] is owner else None


def policy_key(owner: object) -> tuple[object, ...]:
    """Where this request remembers ``owner``'s policy: per owner and per scope, since a
    policy that holds another's (a mounted server's holds its parents') differs in a block
    that widens or sets aside that other one."""
    scope = current_scope()
    return ("policy", id(owner), id(scope.widened), id(scope.set_aside))


def call_hint(tool: str, groups: Sequence[str]) -> str:
    """``enable_tools(groups=["code", "repos"])``: a call the agent can copy."""
    return f"{tool}(groups={json.dumps(list(groups))})"

"""The one access decision: what one client may see and use, for one request.

Every middleware of the package that narrows what a client may use (concerns,
progressive disclosure) owns a ``PolicyLayer``. For each request the layers are
asked once for a ``LayerView`` (one snapshot of each layer's state for this
client), and the views are combined into a ``Policy`` that answers for any
component: visible (``None``) or ``Hidden``, with what the agent may be told
and whether it may learn the component exists at all.

The policy is applied inside FastMCP's own component lookup by
``AccessTransform`` (``policy.transform``), so every path FastMCP has sees one
catalog per client. Search, meta-tools and hints ask the same ``Policy``.

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
import logging
from abc import ABC, abstractmethod
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from fastmcp_filtering._fastmcp import current_request
from fastmcp_filtering.core.request import RequestInfo, client_key, info_of, is_unrestricted

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterator, Sequence

    from fastmcp.server.context import Context
    from fastmcp.utilities.components import FastMCPComponent

__all__ = [
    "CONCEALED",
    "ClientRequest",
    "Hidden",
    "LayerView",
    "Memo",
    "Policy",
    "PolicyLayer",
    "invalidate",
    "is_widened",
    "load_policy",
    "widened",
]

logger = logging.getLogger("fastmcp_filtering")


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


CONCEALED = Hidden()
"""Hidden without a trace: the answer for anything unknown."""


class LayerView(Protocol):
    """One layer's decision for one client, loaded once per request."""

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

    changes_with_client: ClassVar[bool] = True
    """Whether the client's own calls can change its view (a cached answer would outlive
    them: cacheable answers get ``ttlMs: 0``); False for one fixed per principal."""

    @abstractmethod
    async def view(self, client: ClientRequest) -> LayerView:
        """This client's view; raising conceals everything for this request."""

    async def remedy(self, ctx: Context, enable: Sequence[str]) -> dict[str, Any] | None:
        """The meta-tool calls, in order, that show what this layer hid with ``enable``.

        A mapping from tool name to its arguments, e.g. ``{"enable_tools":
        {"groups": ["write"]}}``; None when this layer set no ``Hidden.enable``
        or no calls can make room for it.
        """
        return None


class Policy:
    """Every layer's view for one client and one request, combined.

    A component is visible when every view admits it. When several hide it, a
    view that conceals it (no message) wins over any other, so no layer's words
    reveal what another layer conceals, whatever the order of the layers; then
    a refusal the client may read (its own concerns) wins over a hint that it
    could make the component visible.
    """

    __slots__ = ("_memo", "_table", "_views", "_widened", "state")

    def __init__(
        self, views: Sequence[LayerView], memo: Memo | None = None, *, widened: bool = False
    ) -> None:
        self._views = tuple(views)
        self._memo = memo
        self._widened = widened
        self._table: dict[int, tuple[FastMCPComponent, Hidden | None]] | None = None
        keys = tuple(getattr(view, "key", None) for view in self._views)
        self.state: tuple[Hashable, ...] | None = None if None in keys else (*keys, widened)
        """What the answers depend on besides the component: equal states, equal answers;
        None when a view cannot say (its answers are never remembered)."""
        if memo is not None and self.state is not None:
            self._table = memo.table(self.state)

    @property
    def hides_nothing(self) -> bool:
        """Whether no layer has a view: every component is visible."""
        return not self._views

    def as_discovery(self) -> Policy:
        """This policy as discovery judges: what the client could enable itself counts as shown."""
        return Policy(self._views, self._memo, widened=True)

    def judge(self, component: FastMCPComponent) -> Hidden | None:
        table = self._table
        if table is None:
            return self._judge(component)
        # Listing judges every component on every request: remember answers per component
        # object and per state of the views (the same for every client in that state).
        hit = table.get(id(component))
        if hit is not None and hit[0] is component:
            return hit[1]
        hidden = self._judge(component)
        assert self._memo is not None
        self._memo.store(table, component, hidden)
        return hidden

    def _judge(self, component: FastMCPComponent) -> Hidden | None:
        refusal: Hidden | None = None
        hint: Hidden | None = None
        for view in self._views:
            hidden = view.judge(component)
            if hidden is None:
                continue
            if hidden.discoverable:
                hint = hint or hidden
            elif hidden.message is None:
                # Concealed by one layer: no other layer's words may reveal it.
                return hidden
            else:
                refusal = refusal or hidden
        if refusal is None and hint is not None and hint.enable and self._widened:
            # Discovery: what the client could show itself by enabling groups counts as shown.
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

# The AccessTransform whose lookups also show what the client could enable itself.
_WIDENED: ContextVar[object | None] = ContextVar("fastmcp_filtering_widened", default=None)
# (request, owner, widened, policy): one policy per wire request, AccessTransform and mode.
_CACHED: ContextVar[tuple[object, object, bool, Policy] | None] = ContextVar(
    "fastmcp_filtering_policy", default=None
)


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
    token = _WIDENED.set(owner)
    try:
        yield
    finally:
        _WIDENED.reset(token)


def is_widened() -> bool:
    """Whether this is a discovery listing (see ``widened``)."""
    return _WIDENED.get() is not None


def invalidate() -> None:
    """Forget this request's policy: a layer's state changed during the request."""
    _CACHED.set(None)


async def load_policy(
    owner: object, layers: Sequence[PolicyLayer], memo: Memo | None = None
) -> Policy:
    """This request's policy over ``layers``, loaded once per request and ``owner``."""
    if not layers or is_unrestricted():
        return ALLOW_ALL
    request = current_request()
    if request is None:
        # Startup, a programmatic call outside any request: nobody to show anything to.
        return CONCEAL_ALL
    wide = _WIDENED.get() is owner
    cached = _CACHED.get()
    if cached is not None and cached[0] is request and cached[1] is owner and cached[2] is wide:
        return cached[3]
    policy = await _load(request, layers, memo, wide)
    _CACHED.set((request, owner, wide, policy))
    return policy


async def _load(
    request: object, layers: Sequence[PolicyLayer], memo: Memo | None, wide: bool
) -> Policy:
    from fastmcp.server.dependencies import get_context

    try:
        ctx = get_context()
    except RuntimeError:
        return CONCEAL_ALL
    info = info_of(request)  # type: ignore[arg-type]
    client = ClientRequest(ctx=ctx, info=info, key=client_key(ctx))
    views: list[LayerView] = []
    for layer in layers:
        try:
            views.append(await layer.view(client))
        except Exception as exc:
            # A request that names bad input gets its error from the middleware that
            # validates it; here nothing is shown rather than too much.
            logger.debug("%r could not load its view (%r); concealing", layer, exc)
            return CONCEAL_ALL
    return Policy(views, memo, widened=wide)

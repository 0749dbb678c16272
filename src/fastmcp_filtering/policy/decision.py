"""The one access decision: what one client may see and use, for one request.

Every middleware of the package that narrows what a client may use (concerns,
progressive disclosure) owns a ``PolicyLayer``. For each request the layers are
asked once for a ``LayerView`` (one snapshot of each layer's state for this
client), and the views are combined into a ``Policy`` that answers for any
component: visible (``None``) or ``Hidden``, with what the agent may be told
and whether it may learn the component exists at all.

The policy is applied inside FastMCP's own component lookup by
``AccessTransform`` (below), so every path FastMCP has sees one catalog per
client. Search, meta-tools and hints ask the same ``Policy``.

Fail closed: with no request (startup, a programmatic call), or when a layer
cannot load its view, every component is concealed. Code of this package that
must read the whole catalog (membership counts, change detection) does so
inside ``unrestricted()``.

Adding a layer: subclass ``PolicyLayer``, return a view whose ``judge`` says
``Hidden(...)`` for what the client may not use, and expose it as the
``policy_layer`` of a middleware (see ``LayerMiddleware``).

``AccessTransform``: the policy applied where FastMCP resolves components.

A FastMCP server-level ``Transform`` sees every component FastMCP lists or looks
up, whoever asks. Hiding a component here makes it not exist for the client on
every path FastMCP has. The paths, each covered by ``tests/security/test_lookup_paths.py``:

- ``tools/list``, ``prompts/list``, ``resources/list``, ``resources/templates/list``
  (``FastMCP.list_*``), and so ``tags/list``, search and the meta-tools' replies;
- ``tools/call`` by name (``FastMCP.get_tool``), with ``_meta.fastmcp.version``,
  and FastMCP's fallback to a lower version when the highest is disabled;
- ``tools/call`` by hashed name, ``<hash>_<name>`` before FastMCP 4.2 and
  ``__<hash>_<name>`` since (``get_tool_by_hash`` looks the tool up again through
  ``get_tool``);
- nested ``ctx.fastmcp.call_tool`` / ``read_resource`` / ``render_prompt`` inside a
  tool, which judge the version they will run, not the outer request's;
- ``PromptsAsTools`` and ``ResourcesAsTools`` (their tools look up through the server);
- ``resources/read`` of a resource or a URI a template matches, ``prompts/get``;
- ``completion/complete`` (refused in ``LayerMiddleware`` after the same lookup);
- FastMCP's resource access check (``LayerMiddleware.check_resource_access``);
- mounted servers and proxies (their components reach the parent's lookup);
- starting a background task: FastMCP's tasks extension looks the tool up with
  ``get_tool``, and runs a hidden one as the ordinary call, which fails. Polling,
  answering and cancelling a task name only its id: ``policy.tasks.TaskGuard`` judges
  the task's tool with this same lookup.

``AccessTransform`` is a ``CatalogTransform``: FastMCP's ``get_tasks``, which
registers the task-enabled tools with the task queue when the server starts
(outside any request, where this transform hides everything), keeps what a
catalog transform hides. That registration is the server's, not a client's: it
is never listed to anyone, and nothing runs as a task without the lookup above.

When FastMCP's best match for a lookup is hidden (the highest version, the
first of two providers offering a name, the first template matching a URI), the
lookup gets the best match this client may see, as its list shows it; a lookup
naming a hidden version exactly finds nothing.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, cast

from fastmcp.exceptions import AuthorizationError
from fastmcp.resources.template import ResourceTemplate
from fastmcp.server.transforms.catalog import CatalogTransform
from fastmcp.utilities.versions import VersionSpec, version_sort_key
from typing_extensions import override

from fastmcp_filtering._fastmcp import current_request
from fastmcp_filtering.core.catalog import same_kind
from fastmcp_filtering.core.declarations import GROUPS_META_KEY, with_declared_groups
from fastmcp_filtering.core.request import (
    RequestInfo,
    client_key,
    current_scope,
    info_of,
    is_unrestricted,
    request_memo,
    scoped,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Hashable, Iterator, Sequence

    from fastmcp import FastMCP
    from fastmcp.prompts.base import Prompt
    from fastmcp.resources.base import Resource
    from fastmcp.server.context import Context
    from fastmcp.server.transforms import (
        GetPromptNext,
        GetResourceNext,
        GetResourceTemplateNext,
        GetToolNext,
    )
    from fastmcp.tools.base import Tool
    from fastmcp.utilities.components import FastMCPComponent

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
    unlisted: bool = False
    """True when lists leave it out but a lookup by its exact name (a call, a read, a get)
    finds it: progressive disclosure's groups not enabled, for a client that keeps no state
    or under ``call_unlisted``. Only a hint may say so; search then offers it as callable."""


CONCEALED = Hidden()
"""Hidden without a trace: the answer for anything unknown."""


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
    cached = remembered.get(_policy_key(owner))
    return cast("Policy", cached[1]) if cached is not None and cached[0] is owner else None


def _policy_key(owner: object) -> tuple[object, ...]:
    """Where this request remembers ``owner``'s policy: per owner and per scope, since a
    policy that holds another's (a mounted server's holds its parents') differs in a block
    that widens or sets aside that other one."""
    scope = current_scope()
    return ("policy", id(owner), id(scope.widened), id(scope.set_aside))


async def load_policy(
    owner: object,
    layers: Sequence[PolicyLayer],
    memo: Memo | None = None,
    server: FastMCP | None = None,
) -> Policy:
    """This request's policy over ``layers``, loaded once per request and ``owner``.

    ``server`` is the server whose layers they are: their views read its state (a mounted
    server's lookup may load its parent's policy, which must not read the child's).
    """
    if not layers or is_unrestricted() or current_scope().set_aside is owner:
        return ALLOW_ALL
    request = current_request()
    if request is None:
        # Startup, a programmatic call outside any request: nobody to show anything to.
        return CONCEAL_ALL
    wide = current_scope().widened is owner
    remembered = request_memo()
    key = _policy_key(owner)
    cached = remembered.get(key) if remembered is not None else None
    if cached is not None and cached[0] is owner:
        return cast("Policy", cached[1])
    policy = await _load(request, layers, memo, wide, server)
    if remembered is not None:
        # The owner is held with its policy, so its id is not reused within the request.
        remembered[key] = (owner, policy)
    return policy


async def _load(
    request: object,
    layers: Sequence[PolicyLayer],
    memo: Memo | None,
    wide: bool,
    server: FastMCP | None,
) -> Policy:
    from fastmcp.server.context import Context
    from fastmcp.server.dependencies import get_context

    try:
        ctx = get_context()
    except RuntimeError:
        return CONCEAL_ALL
    if server is not None and ctx.fastmcp is not server:
        # Loaded from a lookup on another server (a mounted one, judging by its parent's
        # policy): the views read the state of the server whose layers they are.
        async with Context(fastmcp=server) as own:
            return await _views(request, layers, memo, wide, own)
    return await _views(request, layers, memo, wide, ctx)


async def _views(
    request: object, layers: Sequence[PolicyLayer], memo: Memo | None, wide: bool, ctx: Context
) -> Policy:
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


# -- the transform that applies it ----------------------------------------------------

_C = TypeVar("_C", bound="FastMCPComponent")


_MAX_SCRUBBED = 4096

# The FastMCP method that lists each kind of component.
LISTERS = {
    "tool": "list_tools",
    "prompt": "list_prompts",
    "resource": "list_resources",
    "template": "list_resource_templates",
}


def _same_template(component: FastMCPComponent, other: FastMCPComponent) -> bool:
    """Whether two templates are versions of one (the same URI template)."""
    return getattr(component, "uri_template", None) == getattr(other, "uri_template", None)


def _matches(component: FastMCPComponent, kind: str, key: str) -> bool:
    """Whether ``component`` is what a lookup of ``key`` could answer."""
    if kind == "resource":
        return str(getattr(component, "uri", "")) == key
    if kind == "template":
        return isinstance(component, ResourceTemplate) and component.matches(key) is not None
    return component.name == key


class AccessTransform(CatalogTransform):
    """Hide from each client what its policy hides, in every list and lookup.

    Installed once per server by ``fastmcp_filtering.install`` (or
    ``add_filtering``), after the server's own transforms, so it judges
    components under the names clients use. The layers are the
    ``policy_layer`` of each of the package's middlewares on the server.

    Example:
        ```python
        install(mcp, ConcernMiddleware(concerns=[...]))
        assert any(isinstance(t, AccessTransform) for t in mcp.transforms)
        ```
    """

    def __init__(self, server: FastMCP | None = None) -> None:
        super().__init__()
        self._server = weakref.ref(server) if server is not None else None
        self._layers: list[PolicyLayer] = []
        self._memo = Memo()
        self._scrubbed: dict[tuple[int, frozenset[str]], tuple[FastMCPComponent, FastMCPComponent]]
        self._scrubbed = {}

    def __repr__(self) -> str:
        return f"AccessTransform(layers={self._layers!r})"

    @classmethod
    def of(cls, server: FastMCP) -> AccessTransform | None:
        """The ``AccessTransform`` installed on ``server``, if any."""
        for transform in server.transforms:
            if isinstance(transform, cls):
                return transform
        return None

    @classmethod
    def ensure(cls, server: FastMCP) -> AccessTransform:
        """The server's ``AccessTransform``, added after its transforms if it has none yet."""
        transform = cls.of(server)
        if transform is None:
            transform = cls(server)
            server.add_transform(transform)
        return transform

    def add_layer(self, layer: PolicyLayer) -> None:
        """Judge with ``layer`` too, from the next request on."""
        if layer not in self._layers:
            self._layers.append(layer)
            self._memo.clear()

    @property
    def layers(self) -> tuple[PolicyLayer, ...]:
        return tuple(self._layers)

    async def policy(self) -> Policy:
        """The current request's policy (loaded once per request)."""
        server = self._server() if self._server is not None else None
        return await load_policy(self, self._layers, self._memo, server)

    async def _kept(self, components: Sequence[_C]) -> Sequence[_C]:
        if not self._layers:
            return components
        policy = await self.policy()
        kept = [self._served(c) for c in components if policy.judge(c) is None]
        denied = policy.denied_groups
        return [self._scrub(c, denied) for c in kept] if denied else kept

    def _served(self, component: _C) -> _C:
        """``component`` as this server serves it: with its declared groups in ``_meta``
        where a layer needs them there (see ``PolicyLayer.serves_declarations``)."""
        if any(layer.serves_declarations for layer in self._layers):
            return with_declared_groups(component)
        return component

    def _scrub(self, component: _C, denied: frozenset[str]) -> _C:
        """``component`` without the denied groups its own ``_meta`` names.

        An author may declare groups in ``meta`` (the proposal's wire form); a
        component allowed through another group must not name the denied one in
        lists, lookups, or what FastMCP renders from it (``prompts/get``,
        ``resources/read`` contents).
        """
        named = (component.meta or {}).get(GROUPS_META_KEY)
        if not isinstance(named, list | tuple) or denied.isdisjoint(named):
            return component
        key = (id(component), denied)
        hit = self._scrubbed.get(key)
        if hit is not None and hit[0] is component:
            return cast("_C", hit[1])
        meta = {**(component.meta or {}), GROUPS_META_KEY: [g for g in named if g not in denied]}
        copy = same_kind(component, component.model_copy(update={"meta": meta}))
        if len(self._scrubbed) >= _MAX_SCRUBBED:
            self._scrubbed.clear()
        # Holding the original keeps its id from being reused by another object.
        self._scrubbed[key] = (component, copy)
        return copy

    async def _visible_version(
        self,
        kind: str,
        key: str,
        call_next: Callable[..., Awaitable[_C | None]],
        version: VersionSpec | None,
    ) -> _C | None:
        """What ``call_next`` finds for ``key`` if visible, else the best visible match.

        FastMCP's lookup answers one best match (the highest version, the first
        provider, the first template); when this client may not see it, the
        answer is the best match among what this client's listing holds, as the
        list shows it: another version of it, never another template that also
        matches the URI. A lookup naming one exact version finds nothing instead.
        """
        found = await call_next(key, version=version)
        if found is None or not self._layers:
            return found
        policy = await self.policy()
        if policy.lookup(found) is None:
            denied = policy.denied_groups
            served = self._served(found)
            return self._scrub(served, denied) if denied else served
        if version is not None and version.eq is not None:
            return None
        server = self._server() if self._server is not None else None
        if server is None:
            return None
        # The server's own listing, this transform applied and widened to what the client could
        # show itself, then only what a lookup by name may find.
        with widened(self):
            listed: Sequence[FastMCPComponent] = await getattr(server, LISTERS[kind])(
                run_middleware=False
            )
        matching = [
            c
            for c in listed
            if policy.lookup(c) is None
            and _matches(c, kind, key)
            and (version is None or version.matches(c.version))
            # Another template matching the URI would read it in the hidden one's place (a
            # proxy's upstream resolves the URI by its own order: the hidden one's content).
            and (kind != "template" or _same_template(c, found))
        ]
        # The listing above is this transform's output: already scrubbed.
        return cast("_C", max(matching, key=version_sort_key)) if matching else None

    @override
    async def transform_tools(self, tools: Sequence[Tool]) -> Sequence[Tool]:
        return await self._kept(tools)

    @override
    async def get_tool(
        self, name: str, call_next: GetToolNext, *, version: VersionSpec | None = None
    ) -> Tool | None:
        return await self._visible_version("tool", name, call_next, version)

    @override
    async def transform_prompts(self, prompts: Sequence[Prompt]) -> Sequence[Prompt]:
        return await self._kept(prompts)

    @override
    async def get_prompt(
        self, name: str, call_next: GetPromptNext, *, version: VersionSpec | None = None
    ) -> Prompt | None:
        return await self._visible_version("prompt", name, call_next, version)

    @override
    async def transform_resources(self, resources: Sequence[Resource]) -> Sequence[Resource]:
        return await self._kept(resources)

    @override
    async def get_resource(
        self, uri: str, call_next: GetResourceNext, *, version: VersionSpec | None = None
    ) -> Resource | None:
        if not self._layers:
            return await call_next(uri, version=version)
        resource = await self._visible_version("resource", uri, call_next, version)
        if resource is None and await call_next(uri, version=version) is not None:
            # A hidden resource must not fall through to a template that matches its URI
            # (a proxy's template would fetch it from upstream): FastMCP answers "Unknown
            # resource" for a resource its lookup reports as not authorized.
            raise AuthorizationError(f"Unknown resource: {uri!r}")
        return resource

    @override
    async def transform_resource_templates(
        self, templates: Sequence[ResourceTemplate]
    ) -> Sequence[ResourceTemplate]:
        return await self._kept(templates)

    @override
    async def get_resource_template(
        self, uri: str, call_next: GetResourceTemplateNext, *, version: VersionSpec | None = None
    ) -> ResourceTemplate | None:
        return await self._visible_version("template", uri, call_next, version)


async def current_policy(server: FastMCP) -> Policy:
    """This request's policy on ``server``, as its ``AccessTransform`` applies it (every
    component visible on a server without one)."""
    transform = AccessTransform.of(server)
    return await transform.policy() if transform is not None else ALLOW_ALL


def shown(server: FastMCP, policy: Policy, components: Sequence[_C]) -> list[_C]:
    """``components`` as ``server``'s lookups show them to the client ``policy`` judges for:
    without the groups it denies that their own ``_meta`` names.

    For what the package hands out from outside FastMCP's lookup (a search page from the
    catalog snapshot), so it names no more groups than a listing of the same tools would.
    """
    transform = AccessTransform.of(server)
    denied = policy.denied_groups
    if transform is None or not denied:
        return list(components)
    return [transform._scrub(c, denied) for c in components]

"""``AccessTransform``: the policy applied where FastMCP resolves components.

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
  answering and cancelling a task name only its id: ``server.tasks.TaskGuard`` judges
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

``ServerListing`` answers what a policy layer must list (``policy.decision.Listing``)
through this same lookup: the policy decides, and lists nothing itself.
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Any, TypeVar, cast

from fastmcp.exceptions import AuthorizationError
from fastmcp.resources.template import ResourceTemplate
from fastmcp.server.transforms.catalog import CatalogTransform
from fastmcp.utilities.versions import VersionSpec, version_sort_key
from typing_extensions import override

from fastmcp_filtering._fastmcp import current_request
from fastmcp_filtering.core.catalog import same_kind
from fastmcp_filtering.core.declarations import GROUPS_META_KEY, with_declared_groups
from fastmcp_filtering.core.request import (
    client_key,
    current_scope,
    info_of,
    is_unrestricted,
    request_memo,
)
from fastmcp_filtering.policy.decision import (
    ALLOW_ALL,
    CONCEAL_ALL,
    ClientRequest,
    LayerView,
    Memo,
    Policy,
    PolicyLayer,
    policy_key,
    set_aside,
    widened,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

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

    from fastmcp_filtering.core.catalog import ComponentKind

logger = logging.getLogger("fastmcp_filtering")


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
    key = policy_key(owner)
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
        self._declares = False
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
            # Asked of every component listed: worked out once, as the layers change.
            self._declares = any(each.serves_declarations for each in self._layers)
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
        kept = policy.shown(components)
        if self._declares:
            kept = [with_declared_groups(c) for c in kept]
        denied = policy.denied_groups
        return [self._scrub(c, denied) for c in kept] if denied else kept

    def _served(self, component: _C) -> _C:
        """``component`` as this server serves it: with its declared groups in ``_meta``
        where a layer needs them there (see ``PolicyLayer.serves_declarations``)."""
        return with_declared_groups(component) if self._declares else component

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


class ServerListing:
    """What a policy layer must list on ``server``, answered through FastMCP's lookup.

    The ``policy.decision.Listing`` the server side hands the layers: the tools with
    this server's own policy set aside (what ``max_tools`` counts), and a kind as the
    client lists it through the whole middleware chain with what it could enable shown.

    Example:
        ```python
        members = await layer.members(ServerListing(ctx.fastmcp))
        ```
    """

    __slots__ = ("_server",)

    def __init__(self, server: FastMCP) -> None:
        self._server = server

    async def unjudged_tools(self) -> Sequence[Tool]:
        with set_aside(AccessTransform.of(self._server)):
            return await self._server.list_tools(run_middleware=False)

    async def widened(self, kind: ComponentKind) -> Sequence[FastMCPComponent]:
        with widened(AccessTransform.of(self._server)):
            listed: Sequence[FastMCPComponent] = await getattr(self._server, LISTERS[kind])()
        return listed


async def remedy(ctx: Context, enable: Sequence[str]) -> dict[str, Any] | None:
    """The meta-tool calls that make a component hidden with ``enable`` usable; None: none can."""
    transform = AccessTransform.of(ctx.fastmcp)
    if transform is None:
        return None
    listing = ServerListing(ctx.fastmcp)
    for layer in transform.layers:
        calls = await layer.remedy(ctx, enable, listing)
        if calls is not None:
            return calls
    return None

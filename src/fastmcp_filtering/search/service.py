"""A ``SearchMiddleware``'s search service: indexes that follow the catalog, ranking, discovery.

Discovery is search beyond what a client can call now: what it could use after enabling groups.

Progressive disclosure hides most tools until their group is enabled, which is
exactly when an agent needs search to tell it which group to enable. A
component is *discoverable* for a client when the policy hides it only because
one of its groups is not enabled (``Hidden.enable`` is set): no layer conceals
or refuses it, and the client can enable groups. Concealed components, and
those that concerns or FastMCP's own authorization hide, never become
candidates, so no ranking, count or hint names them.

## The catalog snapshot

What a server's tools are for search, read once and kept until the catalog changes.

Ranking through ``tools/list`` with ``query`` needs the client's candidates:
listing them through FastMCP on every search reads and judges the whole
catalog each time. A ``CatalogSnapshot`` holds the server's tools as FastMCP
lists them (its providers and transforms, with no client's policy) and their
index, and is rebuilt only when something that could change them changes:
its fingerprint holds the local provider's generation (``catalog_generation``),
the server's providers, transforms and middleware, the catalogs' versions and
the policy's layers. What a client may use is then this request's policy
(``Policy.judge``, remembered per state of the views), the same answers the
``AccessTransform`` gives inside FastMCP's lookup, applied to the snapshot.

The snapshot is trusted only when nothing else could change a listing: a
``LocalProvider`` alone (no mounted server, no proxy; a subclass only when it lists
what its storage holds, ``lists_its_storage``), transforms FastMCP
applies the same way to every request, middleware whose listings the package
knows, no component ``auth``, no per-session visibility rules. Otherwise search
lists through the chain as before. The page a search ranks is handed to the
rest of the middleware chain by ``Prefilled``, the innermost middleware, so
every middleware still shapes what the client gets.

A server's own middleware *ahead* of a list hook (FastMCP's ``AuthMiddleware``, a
role check in ``on_list_tools``) shapes a list on its way back, after a search
ranked it and after a ``filter`` checked its tag names: a page it empties would
still carry the cursor and count of what it dropped, and a tag only dropped
components carry would still be a known tag. Where such a middleware sits ahead
(``shaped_ahead``), the hook reads its candidates from the client's own listing
through the whole chain (``as_listed``), the request's ``filter`` and ``query``
set aside, so what the client cannot list shapes nothing it gets.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import weakref
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from fastmcp.server.transforms import Namespace, ToolTransform, VersionFilter, Visibility
from fastmcp.server.transforms.visibility import get_session_transforms
from fastmcp.utilities.versions import version_sort_key

from fastmcp_filtering._fastmcp import catalog_generation, lists_its_storage
from fastmcp_filtering.core.catalog import is_meta_tool, search_key
from fastmcp_filtering.core.request import unrestricted
from fastmcp_filtering.policy.access import access_of
from fastmcp_filtering.policy.decision import Hit, Policy, PolicyLayer, widened
from fastmcp_filtering.retrieval.fusion import FusedRanking
from fastmcp_filtering.retrieval.ranking import Document, LexicalRanking, Ranking, SearchIndex
from fastmcp_filtering.retrieval.semantic_index import EmbeddingIndex
from fastmcp_filtering.search.candidates import CatalogSnapshot
from fastmcp_filtering.server.hooks import known_to_leave, prefill_ready
from fastmcp_filtering.server.injection import unjudged_tools
from fastmcp_filtering.server.transform import LISTERS, AccessTransform

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from fastmcp.server.context import Context
    from fastmcp.server.middleware import Middleware
    from fastmcp.tools import Tool
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.core.catalog import Catalog, ComponentKind
    from fastmcp_filtering.retrieval.embedders import Embedder

logger = logging.getLogger("fastmcp_filtering")

_C = TypeVar("_C", bound="FastMCPComponent")

# Up to this many new or changed tools are embedded before answering; more, in the background.
_EMBED_INLINE = 32
# Component keys remembered per index, over every version of the catalog.
_MAX_KEYS = 200_000
# Distinct parameter lists shared between documents.
_MAX_PARAMS = 50_000


class SearchService:
    """Ranks components for a query, from indexes that follow the catalog by object identity.

    The candidates are always what the caller's listing returned for this
    client (FastMCP's listing, every middleware and the access policy
    applied); the index only orders them. New or replaced objects are indexed
    as they are met, so results stay exact when the catalog changes.
    """

    def __init__(
        self,
        catalog: Catalog,
        *,
        weights: Mapping[str, float],
        embedder: Embedder | None,
        max_results: int,
    ) -> None:
        self.catalog = catalog
        self._weights = dict(weights)
        self._embedder = embedder
        self._max_results = max_results
        SearchIndex(weights=self._weights)  # validates the weights now, not at first search
        self._indexes: dict[ComponentKind, SyncedIndex] = {}
        self._warming: asyncio.Task[None] | None = None
        # Embedding a new catalog takes a while: it runs in the background meanwhile.
        self._embedding: set[asyncio.Task[None]] = set()
        # One tuple per distinct parameter list, shared by the documents that have it: most
        # catalogs repeat theirs, and every tuple kept is one more object for the collector.
        self._params: dict[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = {}

    def index(self, kind: ComponentKind) -> SyncedIndex:
        index = self._indexes.get(kind)
        if index is None:
            index = self._indexes[kind] = self.new_index()
        return index

    def replace_index(self, kind: ComponentKind, index: SyncedIndex) -> None:
        """Rank ``kind`` with ``index`` from now on."""
        self._indexes[kind] = index

    def new_index(self) -> SyncedIndex:
        """An empty index with this service's ranking: lexical, or fused with the embedder's."""
        lexical = SearchIndex(weights=self._weights)
        if self._embedder is None:
            return SyncedIndex(LexicalRanking(lexical))
        neighbours = max(50, 5 * self._max_results)
        embeddings = EmbeddingIndex(self._embedder)
        return SyncedIndex(FusedRanking(lexical, embeddings, neighbours=neighbours))

    async def rank(
        self, kind: ComponentKind, components: Sequence[_C], query: str, limit: int
    ) -> list[_C]:
        """The best ``limit`` of ``components`` for ``query``, best first.

        The package's meta-tools (``search_tools``, ``enable_tools``...) are tools
        to reach other tools, never an answer to a request: they are ranked only
        when the query is exactly one's name.
        """
        await self.settled()
        index = self.index(kind)
        named = query.strip().casefold()
        by_key: dict[str, _C] = {}
        key_of = index.key_of
        for component in components:
            if is_meta_tool(component) and component.name.casefold() != named:
                continue
            # A list holds every visible version of a component; clients get the highest.
            key = key_of(component)
            held = by_key.get(key)
            if held is None or version_sort_key(component) > version_sort_key(held):
                by_key[key] = component
        index.merge(by_key, self.document, self.catalog.version)
        ranked: list[_C] = []
        for key in await self._ranked(index, query, within=by_key.keys(), first=limit):
            ranked.append(by_key[key])
            if len(ranked) == limit:
                break
        return ranked

    # -- warm-up --------------------------------------------------------------------------

    def warm(
        self, server: FastMCP, snapshot: Callable[[FastMCP], Awaitable[object | None]]
    ) -> None:
        """Index the server's tools in a worker thread, once, ahead of the first search:
        its ``snapshot``, or (None: it cannot be trusted) the index listings fill."""
        if self._warming is None:
            self._warming = asyncio.get_running_loop().create_task(self._warm(server, snapshot))
            self._warming.add_done_callback(_log_failure)

    async def _all_tools(self, server: FastMCP) -> Sequence[FastMCPComponent]:
        # Only to fill the index: what a client gets is judged per search.
        with unrestricted():
            return await server.list_tools(run_middleware=False)

    async def _warm(
        self, server: FastMCP, snapshot: Callable[[FastMCP], Awaitable[object | None]]
    ) -> None:
        if await snapshot(server) is not None:
            return
        index = self.index("tool")
        tools = await self._all_tools(server)

        def build() -> None:
            index.merge(index.keyed(tools), self.document, self.catalog.version)
            index.ranking.lexical.search("")  # posts the documents

        await anyio.to_thread.run_sync(build)

    async def settled(self) -> None:
        """Wait for a warm-up in progress: the index is not to be touched meanwhile."""
        task = self._warming
        if task is not None and not task.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(task)

    async def prepare(self, server: FastMCP) -> None:
        """Index (and embed) the server's tools now."""
        await self.settled()
        index = self.index("tool")
        tools = await self._all_tools(server)
        index.merge(index.keyed(tools), self.document, self.catalog.version)
        index.ranking.lexical.search("")  # posts the documents
        await self.embed()

    async def embed(self) -> None:
        """Embed what the tool index holds and is not embedded yet (with ``semantic``)."""
        await self.settled()
        ranking = self.index("tool").ranking
        if ranking.pending:
            await anyio.to_thread.run_sync(ranking.refresh)

    # -- ranking --------------------------------------------------------------------------

    async def rank_keys(
        self,
        query: str,
        within: Collection[str],
        described: Sequence[Any],
        component_of: Callable[[str], Any],
        first: int,
    ) -> Iterable[str]:
        """Keys of ``within`` (all indexed) best first for ``query``; the best ``first``
        are found without sorting every match.

        ``described`` are components the index must describe for this ranking
        (one version of a key among several); ``component_of(key)`` is the
        component a key stands for, indexed again where a listing indexed
        another object under its key since.
        """
        index = self.index("tool")
        again = [c for key in index.take_touched() if (c := component_of(key)) is not None]
        index.merge(index.keyed([*again, *described]), self.document, self.catalog.version)
        index.take_touched()
        return await self._ranked(index, query, within, indexed=True, first=first)

    async def _ranked(
        self,
        index: SyncedIndex,
        query: str,
        within: Collection[str] | None = None,
        *,
        indexed: bool = False,
        first: int,
    ) -> Iterable[str]:
        """Keys best first, by the index's ranking; pending work (embedding new documents)
        is done first when it is little, else in the background meanwhile."""
        ranking = index.ranking
        if ranking.pending:
            if ranking.pending <= _EMBED_INLINE:
                # A few new or changed tools: embed them now, off the event loop.
                await anyio.to_thread.run_sync(ranking.refresh)
            elif not self._embedding:
                task = asyncio.get_running_loop().create_task(self._embed_all(ranking))
                self._embedding.add(task)
                task.add_done_callback(self._embedding.discard)
        order = functools.partial(ranking.order, query, within=within, indexed=indexed, first=first)
        if ranking.in_thread:
            return await anyio.to_thread.run_sync(order)
        return order()

    async def _embed_all(self, ranking: Ranking) -> None:
        try:
            await anyio.to_thread.run_sync(ranking.refresh)
        except Exception:
            logger.exception("embedding the tool catalog failed; search stays lexical")

    def document(self, component: FastMCPComponent) -> Document:
        """The searchable text of a component: its fields and its groups' titles."""
        catalog = self.catalog
        # One index serves every client: a group under an access check must not steer rankings.
        ruled = access_of(catalog).rules().ruled
        group_text: list[str] = []
        membership = catalog.membership(component) if catalog.declared else None
        # Without declared groups no membership adds text (indexing 10,000 tools, it would
        # cost as much as the rest of the document).
        for name in membership.direct if membership is not None else ():
            group = catalog.group(name)
            if group is not None and name not in ruled:
                group_text.extend(
                    t for t in (group.name, group.display_title, group.description) if t
                )
        tags = component.tags
        params = _params(component)
        if params:
            if len(self._params) >= _MAX_PARAMS:
                self._params.clear()
            params = self._params.setdefault(params, params)
        return Document(
            name=component.name,
            title=component.title or "",
            description=component.description or "",
            tags=tuple(sorted(tags)) if tags else (),
            groups=tuple(group_text),
            params=params,
            # A member of a group under an access check, a component with its own auth, or one
            # listed per request (a mounted server's, one listed by the caller's token) moves no
            # other client's scores.
            in_statistics=getattr(component, "auth", None) is None
            and not catalog.per_request(component)
            and (membership is None or ruled.isdisjoint(membership.effective)),
        )


def _params(component: FastMCPComponent) -> tuple[tuple[str, str], ...]:
    """(name, description) of each parameter of a tool's input schema or a prompt's arguments."""
    schema = getattr(component, "parameters", None)
    # ``type(...) is dict`` first: the ABC check costs more than the rest (10,000 tools).
    if type(schema) is dict or isinstance(schema, Mapping):
        properties = schema.get("properties")
        if type(properties) is dict or isinstance(properties, Mapping):
            return tuple(
                [
                    (name if type(name) is str else str(name), _description(spec))
                    for name, spec in properties.items()
                ]
            )
    elif (arguments := getattr(component, "arguments", None)) is not None:
        return tuple((a.name, a.description or "") for a in arguments)
    return ()


class SyncedIndex:
    """A ``Ranking``'s documents, following components by object identity."""

    def __init__(self, ranking: Ranking) -> None:
        self.ranking = ranking
        self._seen: dict[str, FastMCPComponent] = {}
        self._version = -1
        # Keys whose document a merge replaced, until the snapshot takes them.
        self._touched: set[str] = set()
        # FastMCP's key is a property built on every access: remember it per object.
        self._keys: dict[int, tuple[FastMCPComponent, str]] = {}

    def key_of(self, component: FastMCPComponent) -> str:
        """``search_key(component)``, computed once per component object."""
        hit = self._keys.get(id(component))
        if hit is not None and hit[0] is component:
            return hit[1]
        key = search_key(component)
        if len(self._keys) > _MAX_KEYS:
            self._keys.clear()
        # Holding the component keeps its id from being reused by another object.
        self._keys[id(component)] = (component, key)
        return key

    @property
    def version(self) -> int:
        """The catalog version the documents were described at."""
        return self._version

    def take_touched(self) -> set[str]:
        """Keys whose document a merge replaced since the last call."""
        touched, self._touched = self._touched, set()
        return touched

    def keyed(self, components: Iterable[_C]) -> dict[str, _C]:
        """``components`` by key (of several with one key, the last)."""
        key_of = self.key_of
        return {key_of(c): c for c in components}

    def unseen(self, components: Mapping[str, FastMCPComponent]) -> int:
        """How many of ``components`` (by key) the index does not describe yet (new objects)."""
        seen = self._seen
        return sum(seen.get(key) is not c for key, c in components.items())

    def retain(self, keys: Collection[str]) -> None:
        """Forget every key not in ``keys``: those components are gone."""
        for key in [k for k in self.ranking if k not in keys]:
            self.ranking.remove(key)
            self._seen.pop(key, None)

    def merge(
        self,
        components: Mapping[str, FastMCPComponent],
        describe: Callable[[Any], Document],
        version: int,
    ) -> None:
        """Index components (by key) not seen before, or changed (a new object), keeping the
        rest."""
        if version != self._version:
            # Group titles are part of the text: describe everything again (an upsert
            # of an unchanged document is a no-op).
            self._seen.clear()
            self._version = version
        seen = self._seen
        for key, component in components.items():
            if seen.get(key) is not component:
                self._touched.add(key)
                self.ranking.upsert(key, describe(component))
                seen[key] = component


def _description(spec: object) -> str:
    """A parameter's description in its JSON schema, or ""."""
    if type(spec) is dict or isinstance(spec, Mapping):
        description = spec.get("description", "")
        return description if type(description) is str else str(description)
    return ""


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and (error := task.exception()) is not None:
        logger.warning("indexing the tool catalog ahead of time failed: %r", error)


# -- discovery: what the client could use after enabling groups ----------------------


async def rank_hits(
    service: SearchService,
    kind: ComponentKind,
    usable: Sequence[_C],
    extra: Sequence[Hit[_C]],
    query: str,
) -> list[Hit[_C]]:
    """``usable`` and the enable-able ``extra`` in one ranking for ``query``, best first."""
    later = {id(h.component): h for h in extra}
    ranked = await service.rank(
        kind, [*usable, *(h.component for h in extra)], query, len(usable) + len(extra)
    )
    return [later.get(id(c)) or Hit(c) for c in ranked]


async def discoverable(server: FastMCP, kind: ComponentKind, usable: Sequence[_C]) -> list[Hit[_C]]:
    """Components of ``kind`` this client could use after enabling groups, not in ``usable``.

    Listed through the server's whole middleware chain and FastMCP's own checks,
    with only this server's policy widened to what enabling groups would show
    (``widened``); then judged by this request's policy, keeping what it hides
    with an enable path. Whatever else hides a component (a middleware, a
    mounted server's layers, FastMCP's auth) hides it here too.
    """
    listed = await _widened_listing(server, kind)
    if listed is None:
        return []
    every, policy = listed
    return _enable_only(every, policy, {search_key(c) for c in usable})


async def candidates(server: FastMCP, kind: ComponentKind) -> tuple[list[_C], list[Hit[_C]]]:
    """What this client can use now, and what it could after enabling groups: one listing.

    The widened listing holds both; this request's policy tells them apart, as
    ``AccessTransform`` would for a lookup by name (what lists only leave out,
    ``Hidden.unlisted``, can be used now).
    """
    listed = await _widened_listing(server, kind)
    if listed is None:
        return list(await getattr(server, LISTERS[kind])()), []
    every, policy = listed
    # FastMCP lists the package's meta-tools past every transform: no policy judges them
    # (and a provider's tool of the same name is not listed); other injected tools are.
    injected = {t.name for t in unjudged_tools(server)}
    usable = [c for c in every if c.name in injected or policy.lookup(c) is None]
    return usable, _enable_only(every, policy, {search_key(c) for c in usable})


async def _widened_listing(
    server: FastMCP, kind: ComponentKind
) -> tuple[Sequence[Any], Policy] | None:
    """The widened listing and this request's policy; None when no layer could widen it."""
    transform = AccessTransform.of(server)
    if transform is None or not any(can_enable(layer) for layer in transform.layers):
        # No layer hides anything the client could show itself: nothing to list twice for.
        return None
    policy = await transform.policy()
    with widened(transform):
        every: Sequence[Any] = await getattr(server, LISTERS[kind])()
    return every, policy


def _enable_only(every: Sequence[_C], policy: Policy, taken: set[str]) -> list[Hit[_C]]:
    """Components of ``every`` not in ``taken`` that ``policy`` hides with an enable path,
    or only from lists (callable by name: ``Hidden.unlisted``)."""
    hits: dict[str, Hit[_C]] = {}
    for component in every:
        key = search_key(component)
        if key in taken:
            continue
        hidden = policy.judge(component)
        if hidden is None or not (hidden.enable or hidden.unlisted):
            continue
        held = hits.get(key)
        # One entry per name, as a list shows it: the highest version hidden this way.
        if held is None or _newer(component, held.component):
            hits[key] = Hit(component, hidden.enable, by_name=not hidden.enable)
    return list(hits.values())


def can_enable(layer: PolicyLayer) -> bool:
    """Whether ``layer`` hides components the client can make visible (it words a remedy)."""
    return type(layer).remedy is not PolicyLayer.remedy


def _newer(a: FastMCPComponent, b: FastMCPComponent) -> bool:
    from fastmcp.utilities.versions import version_sort_key

    return bool(version_sort_key(a) > version_sort_key(b))


# -- the catalog snapshot ------------------------------------------------------------------

# Transforms that do the same to every request's listing, whoever asks.
_STATIC_TRANSFORMS = (Visibility, Namespace, ToolTransform, VersionFilter)
# Up to this many new or replaced tools are indexed in place; more, in a new index.
_INCREMENTAL = 256


def fingerprint(server: FastMCP, search: Middleware) -> tuple[object, ...] | None:
    """What the server's listing depends on, outside any request; None when it could
    depend on something else (the snapshot cannot be trusted)."""
    local = server.local_provider
    providers = tuple(server.providers)
    if not lists_its_storage(local) or providers != (local,):
        return None
    generation = catalog_generation(local)
    middleware = tuple(server.middleware)
    transforms = tuple(server.transforms)
    local_transforms = tuple(local.transforms)
    if generation is None or search not in middleware:
        return None
    if not all(type(t) in _STATIC_TRANSFORMS for t in local_transforms):
        return None
    access = AccessTransform.of(server)
    after_access = False
    for transform in transforms:
        if transform is access:
            after_access = True
        elif type(transform) not in _STATIC_TRANSFORMS or (
            # Judged as the names are at the AccessTransform: a rename after it is not.
            after_access and type(transform) is not Visibility
        ):
            return None
    layers = access.layers if access is not None else ()
    inner = middleware[middleware.index(search) + 1 :]
    outer = middleware[: middleware.index(search)]
    discovery = any(can_enable(layer) for layer in layers)
    # Middleware inside the search shapes its candidates; outside, only discovery's listing.
    if not all(known_to_leave(m, inner=True) for m in inner) or (
        discovery and not all(known_to_leave(m, inner=False) for m in outer)
    ):
        return None
    versions = tuple(
        catalog.version for m in middleware if (catalog := getattr(m, "catalog", None)) is not None
    )
    return (generation, providers, transforms, local_transforms, middleware, versions, layers)


async def list_catalog(server: FastMCP) -> tuple[list[Tool], bool]:
    """Every tool the server lists to anyone, and whether any tool has its own ``auth``.

    Read in a context of its own: no request, no session's visibility rules, no
    client's policy (``unrestricted``). Tools with ``auth`` are judged per
    request by FastMCP: their presence makes the snapshot untrusted.
    """

    async def read() -> tuple[list[Tool], bool]:
        with unrestricted():
            tools = list(await server.list_tools(run_middleware=False))
            provided = await server.local_provider.list_tools()
        injected = [t for m in server.middleware for t in getattr(m, "injected_tools", ())]
        return tools, any(t.auth is not None for t in [*provided, *injected])

    return await asyncio.get_running_loop().create_task(read(), context=contextvars.Context())


async def request_trusts(snapshot: CatalogSnapshot, ctx: Context) -> bool:
    """Whether this request lists what the snapshot holds: no visibility rules of its session."""
    return snapshot.trusted and not await get_session_transforms(ctx)


class Snapshots:
    """The snapshot of each server one search serves, rebuilt when its fingerprint changes."""

    def __init__(self, service: SearchService, search: Middleware) -> None:
        self._service = service
        self._search = search
        self._snapshots: weakref.WeakKeyDictionary[FastMCP, CatalogSnapshot] = (
            weakref.WeakKeyDictionary()
        )
        self._locks: weakref.WeakKeyDictionary[FastMCP, asyncio.Lock] = weakref.WeakKeyDictionary()

    async def current(self, server: FastMCP) -> CatalogSnapshot | None:
        """The snapshot this request's search may use; None: list through the chain."""
        ready = prefill_ready(server)
        snapshot = await self.snapshot(server)
        return snapshot if ready else None

    async def snapshot(self, server: FastMCP) -> CatalogSnapshot | None:
        """The server's snapshot as the catalog is now; None when it cannot be trusted."""
        stamp = fingerprint(server, self._search)
        if stamp is None:
            return None
        snapshot = self._snapshots.get(server)
        if snapshot is None or snapshot.fingerprint != stamp:
            lock = self._locks.setdefault(server, asyncio.Lock())
            async with lock:
                snapshot = self._snapshots.get(server)
                stamp = fingerprint(server, self._search)
                if stamp is None:
                    return None
                if snapshot is None or snapshot.fingerprint != stamp:
                    snapshot = await self._build(server, stamp)
                    self._snapshots[server] = snapshot
        return snapshot if snapshot.trusted else None

    async def _build(self, server: FastMCP, stamp: tuple[object, ...]) -> CatalogSnapshot:
        service = self._service
        tools, has_auth = await list_catalog(server)
        # The package's meta-tools: every other injected tool is judged like any tool.
        injected = frozenset(id(t) for t in unjudged_tools(server))
        access = AccessTransform.of(server)
        layers = access.layers if access is not None else ()
        snapshot = CatalogSnapshot(
            stamp,
            tools,
            injected=injected,
            trusted=not has_auth,
            discovery=any(can_enable(layer) for layer in layers),
        )
        index = service.index("tool")
        version = service.catalog.version
        fresh = index.version != version or index.unseen(snapshot.newest) > _INCREMENTAL
        if fresh:
            # Many documents to describe: in a new index, which no search reads until done.
            index = service.new_index()
        if has_auth:
            # FastMCP judges each tool's own auth per request: search lists through it.
            return snapshot

        def build() -> None:
            index.merge(snapshot.newest, service.document, version)
            index.retain(snapshot.newest.keys())
            index.take_touched()
            index.ranking.lexical.search("")  # posts the documents

        if fresh:
            # A new index no search reads yet: built off the event loop.
            await anyio.to_thread.run_sync(build)
            service.replace_index("tool", index)
        else:
            # Searches read this index between awaits: only the loop may change it.
            build()
        return snapshot

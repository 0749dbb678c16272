"""What a server's tools are for search, read once and kept until the catalog changes.

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
import contextvars
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio
from fastmcp.server.transforms import Namespace, ToolTransform, VersionFilter, Visibility
from fastmcp.server.transforms.visibility import get_session_transforms

from fastmcp_filtering._fastmcp import catalog_generation, lists_its_storage
from fastmcp_filtering.core.request import current_scope, scoped, unrestricted
from fastmcp_filtering.middleware.candidates import CatalogSnapshot
from fastmcp_filtering.middleware.hooks import Gate, ListHooks, Prefilled, prefill_ready
from fastmcp_filtering.middleware.search_service import can_enable
from fastmcp_filtering.policy.decision import LISTERS, AccessTransform
from fastmcp_filtering.policy.injection import JudgedInjection, unjudged_tools

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fastmcp import FastMCP
    from fastmcp.server.context import Context
    from fastmcp.server.middleware import Middleware
    from fastmcp.tools import Tool

    from fastmcp_filtering.core.catalog import ComponentKind
    from fastmcp_filtering.middleware.search_service import SearchService

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
    if not all(_known(m, inner=True) for m in inner) or (
        discovery and not all(_known(m, inner=False) for m in outer)
    ):
        return None
    versions = tuple(
        catalog.version for m in middleware if (catalog := getattr(m, "catalog", None)) is not None
    )
    return (generation, providers, transforms, local_transforms, middleware, versions, layers)


# The hooks through which a middleware could change what a tools/list returns.
_LISTING_HOOKS = ("__call__", "on_message", "on_request", "on_list_tools", "on_list", "answer")
# (A layer's own ``marked`` is allowed: search applies it where it shows a page.)


def _known(middleware: Middleware, *, inner: bool) -> bool:
    """Whether a middleware's effect on a tool listing is known: none, or the package's own.

    The package's middlewares, and layers of one's own on ``LayerMiddleware``
    (the documented way to add one), are known while every listing hook is the
    package's; of FastMCP's, those that never change a listing.
    """
    from fastmcp.server.middleware.dereference import DereferenceRefsMiddleware

    if isinstance(middleware, Gate):
        return _known(middleware.inner, inner=inner)
    if type(middleware) is DereferenceRefsMiddleware:
        # Its copies change parameter text, which search ranks: outside the search only.
        return not inner
    return leaves_tools(middleware)


def leaves_tools(middleware: Middleware) -> bool:
    """Whether a listing through ``middleware`` leaves each tool as it was but for its marks.

    The package's middlewares and layers of one's own on ``LayerMiddleware`` (while every
    listing hook is the package's: their marks are ``ListHooks.marked``), FastMCP's
    ``DereferenceRefsMiddleware`` (its copies are ``hooks.marked_by``'s too), and FastMCP's
    middlewares that never change a listed tool.
    """
    from fastmcp.server.middleware.dereference import DereferenceRefsMiddleware
    from fastmcp.server.middleware.error_handling import ErrorHandlingMiddleware, RetryMiddleware
    from fastmcp.server.middleware.logging import LoggingMiddleware, StructuredLoggingMiddleware
    from fastmcp.server.middleware.rate_limiting import (
        RateLimitingMiddleware,
        SlidingWindowRateLimitingMiddleware,
    )
    from fastmcp.server.middleware.timing import DetailedTimingMiddleware, TimingMiddleware
    from fastmcp.server.middleware.tool_injection import ToolInjectionMiddleware

    from fastmcp_filtering.policy.tasks import TaskGuard

    neutral: tuple[type, ...] = (
        ErrorHandlingMiddleware,
        RetryMiddleware,
        LoggingMiddleware,
        StructuredLoggingMiddleware,
        RateLimitingMiddleware,
        SlidingWindowRateLimitingMiddleware,
        TimingMiddleware,
        DetailedTimingMiddleware,
        ToolInjectionMiddleware,
        TaskGuard,
        Prefilled,
        DereferenceRefsMiddleware,
    )
    if isinstance(middleware, Gate | JudgedInjection):
        return leaves_tools(middleware.inner)
    if type(middleware) in neutral:
        return True
    return isinstance(middleware, ListHooks) and all(
        getattr(getattr(type(middleware), hook, None), "__module__", "").startswith(
            ("fastmcp_filtering.", "fastmcp.")
        )
        for hook in _LISTING_HOOKS
    )


def shaped_ahead(server: FastMCP, middleware: Middleware) -> bool:
    """Whether a middleware ahead of ``middleware`` in ``server``'s chain may change a list.

    True too when ``middleware`` is not in the chain (a mounted server's, answering
    inside its parent's request): nothing says what runs ahead of it.
    """
    for each in server.middleware:
        if each is middleware or getattr(each, "inner", None) is middleware:
            return False
        if not leaves_tools(each):
            return True
    return True


async def as_listed(server: FastMCP, kind: ComponentKind) -> Sequence[Any]:
    """What the client lists of ``kind`` through ``server``'s whole chain, its request's own
    ``filter`` and ``query`` aside (every middleware, every layer, FastMCP's checks)."""
    with scoped(replace(current_scope(), as_listed=True)):
        listed: Sequence[Any] = await getattr(server, LISTERS[kind])()
    return listed


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

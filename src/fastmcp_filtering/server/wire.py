"""What the package adds to answers at the MCP SDK's dispatch, where FastMCP's hooks cannot reach.

FastMCP's list hooks return components; the serialized result, its cursors and
its cache hints exist only at the SDK's dispatch. One SDK-level middleware per
server, ``Wire`` (outermost), does all of it:

- For a list request it opens the request's ``ListReply``: the one object the
  request's hooks report to (the page a ``query`` listing is on and the next one,
  the groups holding better matches, a concerns override's warnings), and writes
  what they reported into the result.
- It binds each page cursor to the listing's parameters: FastMCP's cursors only
  carry an offset, so a cursor from one ``filter`` (or ``query``, or concerns
  override) would silently page through another's list. Cursors of such listings
  are ``ffc1.<scope>.<cursor>``; one sent with other parameters, or a bare one sent
  with them, is -32602.
- For a cacheable result (SEP-2549) on a server whose policy has layers, it makes
  the hints true for the client: ``cacheScope`` ``"private"``, and ``ttlMs`` 0
  when a layer's view changes by the client's own calls (``enable_tools``,
  ``concerns/update`` on 2025-11-25, or on 2026-07-28 with ``side_effect_lists``).
  A 2026-07-28 list no call of the client's changes keeps the server's TTL, as
  access control does. The layers that count are the server's and those of every
  server mounted into it.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeAlias

from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from fastmcp_filtering._fastmcp import list_cache_hint, mounted_servers
from fastmcp_filtering.core.catalog import LIST_METHOD
from fastmcp_filtering.core.concerns import REQUEST_META_KEY as CONCERNS_META_KEY
from fastmcp_filtering.core.declarations import (
    BETTER_BY_NAME_META_KEY,
    BETTER_MATCHES_META_KEY,
    WARNINGS_META_KEY,
)
from fastmcp_filtering.core.request import invalid_params, request_override

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from fastmcp import FastMCP
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

    from fastmcp_filtering.policy.decision import PolicyLayer

    OwnLayers: TypeAlias = Callable[[FastMCP], Sequence[PolicyLayer]]

LIST_METHODS = frozenset(LIST_METHOD.values())
SCOPED_PARAMS = ("filter", "query")
"""Request parameters that change what a listing contains, and so what a cursor means."""

CACHEABLE_METHODS = frozenset({*LIST_METHODS, "resources/read", "server/discover"})
"""SEP-2549's cacheable methods: the results FastMCP gives the server's hints."""

OWN_LISTS = frozenset({"groups/list", "tags/list"})
"""The package's lists: hinted here with the server's list lifetime, which FastMCP gives
only to its own methods."""

_PREFIX = "ffc1."
_SEARCH = "search."
_MAX_OFFSET = 10**9


@dataclass(slots=True)
class SearchPage:
    """Where a ``query`` listing's page starts, and where the next one does once it is ranked.

    FastMCP pages a list by its ``list_page_size`` after the middleware chain;
    a ranked list pages by the search's own ``max_results``, with cursors this
    module issues and reads (``ffc1.<scope>.search.<offset>``).
    """

    offset: int = 0
    next: int | None = None
    """Set by the search that ranked this listing when more matches follow."""
    owner: object | None = None
    """The search middleware that pages this listing (the outermost; a mounted server's defers)."""
    server: object | None = None
    """The server the list request was sent to: only its searches page, a mounted one's rank."""


@dataclass(slots=True)
class ListReply:
    """What one list request's hooks report for its result: page, better matches, warnings."""

    server: FastMCP
    """The server the list request was sent to (a mounted server's hooks report nothing)."""
    page: SearchPage | None = None
    """The search page, for a listing with a ``query``."""
    better: list[str] = field(default_factory=list)
    """Groups holding better matches than the page (``_meta`` better-matches)."""
    by_name: list[str] = field(default_factory=list)
    """Better matches than the page that lists leave out, callable by name."""
    warnings: list[str] = field(default_factory=list)
    """What a per-request concerns override ignored (``_meta`` warnings)."""


_REPLY: ContextVar[ListReply | None] = ContextVar("fastmcp_filtering_list_reply", default=None)


def list_reply() -> ListReply | None:
    """The reply of the list request being answered; None outside a list request."""
    return _REPLY.get()


def search_page() -> SearchPage | None:
    """The page a ``query`` listing asks for, or None outside a list request with a query."""
    reply = _REPLY.get()
    return reply.page if reply is not None else None


def report(
    server: FastMCP,
    *,
    better: Iterable[str] = (),
    by_name: Iterable[str] = (),
    warnings: Iterable[str] = (),
) -> None:
    """Add ``better`` groups, ``by_name`` tools and ``warnings`` to ``server``'s list result.

    A mounted server's hooks, answering inside their parent's list, report nothing:
    the parent's result speaks for the parent's own search and concerns.

    Example:
        ```python
        report(server, better=["pull_requests"])
        ```
    """
    reply = _REPLY.get()
    if reply is None or reply.server is not server:
        return
    reply.better.extend(g for g in better if g not in reply.better)
    reply.by_name.extend(n for n in by_name if n not in reply.by_name)
    reply.warnings.extend(w for w in warnings if w not in reply.warnings)


class Wire:
    """SDK-level middleware: cursors bound to their listing, list reports, true cache hints."""

    def __init__(self, server: FastMCP, own_layers: OwnLayers) -> None:
        # Weak: the server holds this middleware.
        self._server = weakref.ref(server)
        self._own_layers = own_layers

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        server = self._server()
        if server is None or (ctx.method not in CACHEABLE_METHODS and ctx.method not in OWN_LISTS):
            # Most requests (every tools/call) have nothing here: straight through.
            return await call_next(ctx)
        if ctx.method in LIST_METHODS and isinstance(ctx.params, Mapping):
            result = await self._list(server, ctx, ctx.params, call_next)
        else:
            result = await call_next(ctx)
        if ctx.method in OWN_LISTS:
            return self._own_list_hinted(server, ctx.protocol_version, result)
        return self._hinted(server, ctx.protocol_version, result)

    async def _list(
        self,
        server: FastMCP,
        ctx: ServerRequestContext[Any, Any],
        params: Mapping[str, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        scope = _scope_of(params)
        cursor = params.get("cursor")
        page = SearchPage(server=server) if params.get("query") is not None else None
        if isinstance(cursor, str):
            inner = _unwrap(cursor, scope)
            offset = _search_offset(inner) if page is not None else None
            if offset is not None and page is not None:
                # The search pages this listing itself; FastMCP's paging starts from the top.
                page.offset = offset
                ctx = replace(ctx, params={k: v for k, v in params.items() if k != "cursor"})
            elif inner != cursor:
                ctx = replace(ctx, params={**params, "cursor": inner})
        reply = ListReply(server, page)
        token = _REPLY.set(reply)
        try:
            result = await call_next(ctx)
        finally:
            _REPLY.reset(token)
        if page is not None and page.offset and page.owner is None:
            # A search page cursor, but no search ranked this listing (a blank query, no
            # search middleware): page 1 again would look like the next page.
            raise invalid_params(
                "cursor is a search page cursor, and this listing is not a search; list "
                "again without the cursor",
                field="cursor",
            )
        if not isinstance(result, dict):
            return result
        return _with_reply(result, reply, scope)

    def _hinted(self, server: FastMCP, version: str | None, result: HandlerResult) -> HandlerResult:
        layers = _layers(server, self._own_layers)
        if not layers:
            return result
        modern = version in MODERN_PROTOCOL_VERSIONS
        unkept = any(layer.changes_with(modern=modern) for layer in layers)
        if isinstance(result, dict):
            hinted: dict[str, Any] = {**result, "cacheScope": "private"}
            if unkept:
                hinted["ttlMs"] = 0
            return hinted
        if isinstance(result, BaseModel) and {"ttl_ms", "cache_scope"} <= set(
            type(result).model_fields
        ):
            # server/discover, as FastMCP's handshake returns it before serializing.
            update: dict[str, Any] = {"cache_scope": "private"}
            if unkept:
                update["ttl_ms"] = 0
            return result.model_copy(update=update)
        return result

    def _own_list_hinted(
        self, server: FastMCP, version: str | None, result: HandlerResult
    ) -> HandlerResult:
        """``groups/list``/``tags/list`` with the hints FastMCP gives its own lists.

        The server's hint, then narrowed as those are: private where a layer decides
        per client, 0 where a layer lets the client's own calls change lists.
        """
        hint = list_cache_hint(server)
        # 2025-11-25 has no cache hints: FastMCP gives its own lists none there either.
        if not isinstance(result, dict) or hint is None or version not in MODERN_PROTOCOL_VERSIONS:
            return result
        ttl, scope = hint
        return self._hinted(server, version, {"ttlMs": ttl, "cacheScope": scope, **result})


def _with_reply(result: dict[str, Any], reply: ListReply, scope: str) -> dict[str, Any]:
    """The list result with what its hooks reported, and its next cursor bound to ``scope``."""
    meta = dict(result.get("_meta") or {})
    if reply.better:
        meta[BETTER_MATCHES_META_KEY] = list(reply.better)
    if reply.by_name:
        meta[BETTER_BY_NAME_META_KEY] = list(reply.by_name)
    if reply.warnings:
        # Result _meta: typed clients keep it, where they drop unknown top-level keys.
        meta[WARNINGS_META_KEY] = [*meta.get(WARNINGS_META_KEY, []), *reply.warnings]
    if meta:
        result = {**result, "_meta": meta}
    page = reply.page
    if page is not None and page.next is not None:
        result = {**result, "nextCursor": f"{_SEARCH}{page.next}"}
    next_cursor = result.get("nextCursor")
    if scope and isinstance(next_cursor, str):
        result = {**result, "nextCursor": f"{_PREFIX}{scope}.{next_cursor}"}
    return result


def _layers(server: FastMCP, own_layers: OwnLayers) -> list[PolicyLayer]:
    """The policy layers of ``server`` and of every server mounted into it."""
    found = list(own_layers(server))
    for child in mounted_servers(server):
        found += _layers(child, own_layers)
    return found


def _scope_of(params: Mapping[str, Any]) -> str:
    """A short digest of the scoped parameters, or "" when the request has none."""
    scoped = {key: params[key] for key in SCOPED_PARAMS if params.get(key) is not None}
    raw_filter = scoped.get("filter")
    if isinstance(raw_filter, Mapping):
        # The same names in another order, or repeated, are the same filter.
        scoped["filter"] = {
            key: sorted(set(value))
            if isinstance(value, list) and all(isinstance(v, str) for v in value)
            else value
            for key, value in raw_filter.items()
        }
    meta = params.get("_meta")
    override = request_override(meta) if isinstance(meta, Mapping) else None
    if override is not None:
        # A per-request concerns override changes the listing as much as a filter does.
        scoped[f"_meta.{CONCERNS_META_KEY}"] = override
    if not scoped:
        return ""
    try:
        canonical = json.dumps(scoped, sort_keys=True, separators=(",", ":"), default=repr)
    except (RecursionError, ValueError):
        # Nothing valid nests this deep; name the parameter rather than fail inside the SDK.
        field = next(iter(scoped)).removeprefix("_meta.")
        raise invalid_params(f"{field} is nested too deeply", field=field) from None
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _unwrap(cursor: str, scope: str) -> str:
    if not cursor.startswith(_PREFIX):
        if scope:
            raise invalid_params(
                "cursor was not issued for this filter; list again without a cursor",
                field="cursor",
            )
        return cursor
    issued_scope, _, inner = cursor[len(_PREFIX) :].partition(".")
    if issued_scope != scope:
        raise invalid_params(
            "cursor was issued for a different filter or query; send the same filter and "
            "query as the request that returned it, or list again without a cursor",
            field="cursor",
        )
    return inner


def _search_offset(inner: str) -> int | None:
    """The offset of a search page cursor; None for any other cursor."""
    if not inner.startswith(_SEARCH):
        return None
    digits = inner[len(_SEARCH) :]
    if not digits.isdecimal() or not digits.isascii() or len(digits) > 10:
        raise invalid_params("cursor is not a search page cursor", field="cursor")
    offset = int(digits)
    if offset > _MAX_OFFSET:
        raise invalid_params("cursor is not a search page cursor", field="cursor")
    return offset

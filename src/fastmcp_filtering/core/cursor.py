"""Pagination cursors tied to the ``filter`` (and ``query``) they were issued for."""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from fastmcp_filtering._fastmcp import sdk_middleware
from fastmcp_filtering.core.catalog import LIST_METHOD
from fastmcp_filtering.core.concerns import REQUEST_META_KEY as CONCERNS_META_KEY
from fastmcp_filtering.core.concerns import request_override
from fastmcp_filtering.core.request import invalid_params

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

__all__ = ["SearchPage", "install_cursor_scope", "search_page"]

LIST_METHODS = frozenset(LIST_METHOD.values())
SCOPED_PARAMS = ("filter", "query")
"""Request parameters that change what a listing contains, and so what a cursor means."""

_PREFIX = "ffc1."
_SEARCH = "search."
_MAX_OFFSET = 10**9
_installed: weakref.WeakSet[FastMCP] = weakref.WeakSet()


@dataclass(slots=True)
class SearchPage:
    """Where a ``query`` listing's page starts, and where the next one does once it is ranked.

    FastMCP pages a list by its ``list_page_size`` after the middleware chain;
    a ranked list pages by the search's own ``max_results``, with cursors the
    scope issues and reads (``ffc1.<scope>.search.<offset>``).
    """

    offset: int = 0
    next: int | None = None
    """Set by the search that ranked this listing when more matches follow."""
    owner: object | None = None
    """The search middleware that pages this listing (the outermost; a mounted server's defers)."""
    server: object | None = None
    """The server the list request was sent to: only its searches page, a mounted one's rank."""


_PAGE: ContextVar[SearchPage | None] = ContextVar("fastmcp_filtering_search_page", default=None)


def search_page() -> SearchPage | None:
    """The page a ``query`` listing asks for, or None outside a list request with a query."""
    return _PAGE.get()


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


class CursorScope:
    """SDK-level middleware that binds each page cursor to its listing's parameters.

    FastMCP paginates after the middleware chain with cursors that only carry an
    offset, so a cursor from one filter would silently page through another
    filter's list. Cursors of filtered listings are wrapped as
    ``ffc1.<scope>.<cursor>``; a wrapped cursor sent with other parameters, or a
    bare one sent with a filter, is refused with -32602.
    """

    def __init__(self, server: FastMCP) -> None:
        # Weak: the server holds this middleware.
        self._server = weakref.ref(server)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method not in LIST_METHODS or not isinstance(ctx.params, Mapping):
            return await call_next(ctx)
        params = ctx.params
        scope = _scope_of(params)
        cursor = params.get("cursor")
        page = SearchPage(server=self._server()) if params.get("query") is not None else None
        if isinstance(cursor, str):
            inner = _unwrap(cursor, scope)
            offset = _search_offset(inner) if page is not None else None
            if offset is not None and page is not None:
                # The search pages this listing itself; FastMCP's paging starts from the top.
                page.offset = offset
                ctx = replace(ctx, params={k: v for k, v in params.items() if k != "cursor"})
            elif inner != cursor:
                ctx = replace(ctx, params={**params, "cursor": inner})
        token = _PAGE.set(page)
        try:
            result = await call_next(ctx)
        finally:
            _PAGE.reset(token)
        if page is not None and page.offset and page.owner is None:
            # A search page cursor, but no search ranked this listing (a blank query, no
            # search middleware): page 1 again would look like the next page.
            raise invalid_params(
                "cursor is a search page cursor, and this listing is not a search; list "
                "again without the cursor",
                field="cursor",
            )
        if page is not None and page.next is not None and isinstance(result, dict):
            result = {**result, "nextCursor": f"{_SEARCH}{page.next}"}
        if scope and isinstance(result, dict):
            next_cursor = result.get("nextCursor")
            if isinstance(next_cursor, str):
                result = {**result, "nextCursor": f"{_PREFIX}{scope}.{next_cursor}"}
        return result


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


def install_cursor_scope(server: FastMCP) -> None:
    """Install ``CursorScope`` on ``server``'s SDK dispatch once."""
    if server in _installed:
        return
    _installed.add(server)
    # Outermost, so it sees the wire params before validation and the final result.
    sdk_middleware(server).insert(0, CursorScope(server))

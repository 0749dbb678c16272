"""Rate limiting searches: which requests are searches, each counted once, and whose they are.

FastMCP's rate limiters (``RateLimitingMiddleware``, ``SlidingWindowRateLimitingMiddleware``)
count every ``on_request``, and FastMCP runs the middleware chain again for the
listings a request makes inside itself: a ``search_tools`` call lists the tools it
ranks, a ``tools/list`` with a ``query`` under progressive disclosure lists what
enabling groups would show. ``SearchMiddleware(rate_limit=...)`` hands a limiter
only the searches, once per wire request, so its budget counts searches.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import mcp_types as mt
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.core.catalog import LIST_METHOD
from fastmcp_filtering.core.request import client_key, request_info, request_memo

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from fastmcp.server.middleware import MiddlewareContext

_LIST_METHODS = frozenset(LIST_METHOD.values())


def _counted_key(owner: object) -> tuple[str, int]:
    """Where the request memo marks a search ``owner`` is counting: the dispatches it makes
    inside itself are not counted again."""
    return ("rate-counted", id(owner))


def is_search(
    context: MiddlewareContext[Any],
    owner: object,
    search_tool: str | None,
    clean: Callable[[object], str],
) -> bool:
    """Whether ``context`` is a client's search that ``owner`` has not counted yet.

    A search is a list request sent with a non-blank ``query`` (a query that is not
    a string counts too: it is refused, but a flood of them is a flood of searches)
    or a call of the ``search_tool`` meta-tool, directly or through ``call_tool``.
    The listings a search makes inside itself, and requests the server's own code
    makes outside any wire request, are not searches.
    """
    fastmcp_context = context.fastmcp_context
    request = fastmcp_context.request_context if fastmcp_context else None
    info = request_info(context)
    if request is None or info is None:
        return False
    memo = request_memo()
    if memo is not None and memo.get(_counted_key(owner)) is owner:
        return False
    if context.method == "tools/call":
        message = context.message
        return (
            search_tool is not None
            and isinstance(message, mt.CallToolRequestParams)
            and message.name == search_tool
        )
    # A listing counts only as the wire request itself, not inside another request.
    if context.method not in _LIST_METHODS or info.method != context.method:
        return False
    raw = info.params.get("query")
    if raw is None:
        return False
    try:
        return bool(clean(raw))
    except MCPError:
        return True


@contextmanager
def counted(owner: object) -> Iterator[None]:
    """While inside, ``is_search`` is False for ``owner`` in this wire request."""
    memo = request_memo()
    if memo is None:
        yield
        return
    key = _counted_key(owner)
    held = memo.get(key)
    memo[key] = owner
    try:
        yield
    finally:
        memo[key] = held


def rate_limit_key(context: MiddlewareContext[Any]) -> str:
    """Whose budget a request counts against: a ``get_client_id`` for FastMCP's rate limiters.

    The identity the package keeps per-client state under: the authenticated
    principal (either era), else in 2025-11-25 the session (one the server
    issued), or on stdio and in-memory transports (one client) the process. A request
    with none of these (2026-07-28 over HTTP without auth, a stateless HTTP
    server) counts against its HTTP peer address, and without one against a
    budget every such request shares. Never FastMCP's ``session_id`` alone: in
    2026-07-28 it is new for every request, so a limiter keyed on it never limits.

    Example:
        ```python
        RateLimitingMiddleware(max_requests_per_second=2, burst_capacity=10,
                               get_client_id=rate_limit_key)
        ```
    """
    fastmcp_context = context.fastmcp_context
    identity = client_key(fastmcp_context) if fastmcp_context is not None else None
    if identity is not None:
        return identity
    request = fastmcp_context.request_context if fastmcp_context else None
    peer = request.request.client if request is not None and request.request else None
    if peer is not None and peer.host:
        return f"address:{peer.host}"
    return "anonymous"

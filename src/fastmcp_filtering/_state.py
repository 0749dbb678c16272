"""Per-client state in FastMCP's session state store, keyed the way FastMCP keys sessions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastmcp.server.context import Context

__all__ = ["StateUnavailable", "client_key", "load_state", "save_state"]

_PREFIX = "fastmcp-filtering"
_TTL_SECONDS = 86_400


class StateUnavailable(Exception):
    """The client has no identity to keep state under, or the store failed."""


def client_key(context: Context) -> str | None:
    """Who this request's state belongs to, or None when nothing identifies the client.

    2025-11-25: the session. 2026-07-28 (stateless): the authenticated principal;
    on stdio and in-memory transports, which serve one client, the process. An
    unauthenticated 2026-07-28 HTTP request has no identity: None, so no client
    ever reads another's state.
    """
    try:
        return context._session_scope_key()
    except RuntimeError:
        return None


def _store_key(namespace: str, key: str) -> str:
    return f"{_PREFIX}:{namespace}:{key}"


async def load_state(context: Context, namespace: str) -> Any:
    """The value stored for this client under ``namespace``, or None.

    Raises ``StateUnavailable`` when the client has no identity or the store fails,
    so callers can fail closed.
    """
    key = client_key(context)
    if key is None:
        raise StateUnavailable("this client has no session or authenticated principal")
    try:
        stored = await context.fastmcp._state_store.get(key=_store_key(namespace, key))
    except Exception as exc:
        # The exception's text may name the store's address: the client gets its type only.
        raise StateUnavailable(f"the session state store failed: {type(exc).__name__}") from exc
    return None if stored is None else stored.value


async def save_state(context: Context, namespace: str, value: Any) -> None:
    """Store ``value`` for this client under ``namespace``; raises ``StateUnavailable``."""
    from fastmcp.server.server import StateValue

    key = client_key(context)
    if key is None:
        raise StateUnavailable("this client has no session or authenticated principal")
    try:
        await context.fastmcp._state_store.put(
            key=_store_key(namespace, key), value=StateValue(value=value), ttl=_TTL_SECONDS
        )
    except Exception as exc:
        # The exception's text may name the store's address: the client gets its type only.
        raise StateUnavailable(f"the session state store failed: {type(exc).__name__}") from exc

"""Per-client state in FastMCP's session state store, keyed by an identity the server trusts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastmcp_filtering._fastmcp import client_identity, state_store

if TYPE_CHECKING:
    from fastmcp.server.context import Context

__all__ = ["StateUnavailable", "client_key", "load_state", "save_state"]

_PREFIX = "fastmcp-filtering"
_TTL_SECONDS = 86_400


class StateUnavailable(Exception):
    """The client has no identity to keep state under, or the store failed."""


def client_key(context: Context) -> str | None:
    """Who this request's state belongs to, or None when nothing identifies the client.

    2025-11-25: the session the server issued (a client-chosen session id on a
    stateless HTTP server is no identity). 2026-07-28: the authenticated
    principal; on stdio and in-memory transports, which serve one client, the
    process. None means no client ever reads another's state: there is none.
    """
    return client_identity(context)


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
        stored = await state_store(context.fastmcp).get(key=_store_key(namespace, key))
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
        await state_store(context.fastmcp).put(
            key=_store_key(namespace, key), value=StateValue(value=value), ttl=_TTL_SECONDS
        )
    except Exception as exc:
        # The exception's text may name the store's address: the client gets its type only.
        raise StateUnavailable(f"the session state store failed: {type(exc).__name__}") from exc

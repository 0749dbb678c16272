"""Cache hints (SEP-2549) that stay true for answers the policy shapes per client.

FastMCP fills ``ttlMs`` and ``cacheScope`` on every cacheable result from
``FastMCP(cache_ttl=..., cache_scope=...)``, one value for the whole server. On
a server whose ``AccessTransform`` has policy layers, every cacheable answer
depends on who asks (a list, a search, a read that is refused to others, the
discovery answer), so:

- ``cacheScope`` is ``"private"``: a cache shared between clients must not
  serve one principal's answer to another;
- ``ttlMs`` is 0 when a layer's view can change by the client's own calls
  (``enable_tools``, ``disable_tools``, ``concerns/update``): the 2026-07-28 era
  has no ``list_changed`` to correct a kept answer. Access control alone
  (``PolicyLayer.changes_with_client`` false) keeps the server's TTL: the same
  principal gets the same answer until the catalog changes, as FastMCP assumes.

The layers that count are the server's and those of every server mounted
into it, whose answers are part of its own. A server with no layer (groups,
tags and search only: answers that depend on the request's own parameters)
keeps the server's hints.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import BaseModel

from fastmcp_filtering._fastmcp import mounted_servers, sdk_middleware

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from fastmcp import FastMCP
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

    from fastmcp_filtering.policy.decision import PolicyLayer

    OwnLayers: TypeAlias = Callable[[FastMCP], Sequence[PolicyLayer]]

__all__ = ["CacheHints", "install_cache_hints"]

CACHEABLE_METHODS = frozenset(
    {
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "server/discover",
    }
)
"""SEP-2549's cacheable methods: the results FastMCP gives the server's hints."""

_installed: weakref.WeakSet[FastMCP] = weakref.WeakSet()


class CacheHints:
    """SDK-level middleware that makes a cacheable result's hints true for its client.

    It sits outermost, where the result is already the wire mapping with the
    server's hints filled in.
    """

    def __init__(self, server: FastMCP, own_layers: OwnLayers) -> None:
        # Weak: the server holds this middleware.
        self._server = weakref.ref(server)
        self._own_layers = own_layers

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method not in CACHEABLE_METHODS:
            # Most requests (every tools/call) carry no hint: no walk over the layers.
            return result
        server = self._server()
        layers = _layers(server, self._own_layers) if server is not None else []
        if not layers:
            return result
        unkept = any(layer.changes_with_client for layer in layers)
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


def _layers(server: FastMCP, own_layers: OwnLayers) -> list[PolicyLayer]:
    """The policy layers of ``server`` and of every server mounted into it."""
    found = list(own_layers(server))
    for child in mounted_servers(server):
        found += _layers(child, own_layers)
    return found


def install_cache_hints(server: FastMCP, own_layers: OwnLayers) -> None:
    """Install ``CacheHints`` on ``server``'s SDK dispatch once.

    ``own_layers`` gives a server's own policy layers (those of its ``AccessTransform``).
    """
    if server in _installed:
        return
    _installed.add(server)
    # Outermost, so it sees the wire result with the server's hints filled in.
    sdk_middleware(server).insert(0, CacheHints(server, own_layers))

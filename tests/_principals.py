"""In-memory principals: a test middleware that authenticates each client by its name.

FastMCP's in-memory transport carries no HTTP headers, so no token verifier runs. This
middleware (added first, outermost) sets the token FastMCP's ``get_access_token`` returns
for every request of a client, chosen by the client's ``clientInfo.name``: what a verifier
would have done. The HTTP tests use real verifiers (tests/access/test_access_http.py).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import mcp_types as mt
from fastmcp import FastMCP
from fastmcp.server.auth import AccessToken, require_scopes
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

from fastmcp_filtering import Group
from fastmcp_filtering._fastmcp import current_request, request_method_and_params

TOKENS: dict[str, AccessToken] = {
    "admin": AccessToken(
        token="admin-token",
        client_id="admin",
        scopes=["github:read", "github:admin"],
        claims={"tenant": "acme", "roles": ["ops"]},
    ),
    "reader": AccessToken(
        token="reader-token",
        client_id="reader",
        scopes=["github:read"],
        claims={"tenant": "globex"},
    ),
    "keeper": AccessToken(
        token="keeper-token",
        client_id="keeper",
        scopes=["github:read", "github:admin", "github:secrets", "vault:open"],
        claims={"tenant": "acme"},
    ),
    "expired": AccessToken(
        token="expired-token",
        client_id="expired",
        scopes=["github:read", "github:admin", "github:secrets"],
        expires_at=int(time.time()) - 60,
        claims={"tenant": "acme"},
    ),
}
"""Tokens by client name; a client with any other name (or none) is unauthenticated."""


def as_principal(name: str) -> dict[str, Any]:
    """``Client`` keyword arguments that make the client authenticate as ``name``."""
    return {"client_info": mt.Implementation(name=name, version="1")}


class PrincipalByClientName(Middleware):
    """Authenticates each request with ``TOKENS[clientInfo.name]``, as a verifier would."""

    async def on_message(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        token = TOKENS.get(_client_name(context) or "")
        if token is None:
            return await call_next(context)
        reset = auth_context_var.set(AuthenticatedUser(token))
        try:
            return await call_next(context)
        finally:
            auth_context_var.reset(reset)


def _client_name(context: MiddlewareContext[Any]) -> str | None:
    request = current_request()
    if request is not None:
        # 2026-07-28: every request names its client in _meta.
        _, params = request_method_and_params(request)
        meta = params.get("_meta")
        info = meta.get("io.modelcontextprotocol/clientInfo") if isinstance(meta, Mapping) else None
        if isinstance(info, Mapping) and isinstance(info.get("name"), str):
            return str(info["name"])
    # 2025-11-25: the session's initialize named it.
    ctx = context.fastmcp_context
    session = getattr(ctx, "session", None) if ctx is not None else None
    params = getattr(session, "client_params", None)
    info = getattr(params, "clientInfo", None) or getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    return name if isinstance(name, str) else None


def guarded_server(name: str) -> tuple[FastMCP, Group]:
    """A server whose clients are authenticated by name, with ``ping`` and ``drop_table``,
    and an ``admin`` group (``drop_*``) only for tokens with ``github:admin``."""
    mcp: FastMCP = FastMCP(name)
    mcp.add_middleware(PrincipalByClientName())

    @mcp.tool
    def ping() -> str:
        return "pong"

    @mcp.tool
    def drop_table() -> str:
        return "dropped"

    return mcp, Group("admin", tools=["drop_*"], access=require_scopes("github:admin"))

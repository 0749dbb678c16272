"""Every use of a private FastMCP or MCP SDK attribute, in one place.

FastMCP has no public API for a few things the package needs. Each function
here reaches one private attribute, says why, and is covered by
``tests/stack/test_fastmcp_adapter.py``, which fails if FastMCP renames or changes it.
Nothing else in the package touches a private FastMCP or SDK attribute.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fastmcp.server.dependencies import fastmcp_request_ctx
from fastmcp.server.providers import LocalProvider

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from fastmcp.server.auth import AccessToken
    from fastmcp.server.context import Context
    from fastmcp.server.dependencies import FastMCPRequestContext
    from fastmcp.server.transforms import Transform
    from fastmcp.tools.base import Tool
    from mcp.server.connection import Connection

_HTTP_TRANSPORTS = frozenset({"sse", "streamable-http", "http"})
# Where a session-era connection keeps the identity the server gave it.
_IDENTITY = "fastmcp_filtering.identity"


def list_page_size(server: FastMCP) -> int | None:
    """The server's ``list_page_size`` (None: lists are not paginated).

    Private: ``FastMCP._list_page_size``. The package's own lists (``groups/list``)
    page like FastMCP's, with the size the server was built with.
    """
    size = getattr(server, "_list_page_size", None)
    return size if isinstance(size, int) and size > 0 else None


def list_cache_hint(server: FastMCP) -> tuple[int, str] | None:
    """The server's hint for its lists (``ttlMs``, ``cacheScope``), None when it gives none.

    Private: ``FastMCP._mcp_server`` (its ``cache_hints``, public on the SDK's server).
    FastMCP gives its ``cache_ttl`` only to the SDK's own cacheable methods; the
    package's lists (``groups/list``, ``tags/list``) carry the same hint.
    """
    hints = getattr(getattr(server, "_mcp_server", None), "cache_hints", None)
    hint = hints.get("tools/list") if isinstance(hints, dict) else None
    ttl, scope = getattr(hint, "ttl_ms", None), getattr(hint, "scope", None)
    return (ttl, scope) if isinstance(ttl, int) and isinstance(scope, str) else None


def proxy_client_factory(component: object) -> object | None:
    """The client factory a proxied component reaches its upstream with; None for any other.

    Private: ``ProxyTool._client_factory`` (``ProxyPrompt``'s, ``ProxyResource``'s and
    ``ProxyTemplate``'s too). It tells the gateway which upstream listed a component, also
    after a transform renamed it (a copy keeps it): an upstream that gets each client's
    headers lists per client.
    """
    return getattr(component, "_client_factory", None)


def current_request() -> FastMCPRequestContext | None:
    """The wire request being served, or None outside one (startup, programmatic calls).

    FastMCP binds one ``FastMCPRequestContext`` per wire request (a public
    ContextVar); nested ``Context`` objects inside that request share it, so
    it identifies the request for the per-request policy cache.
    """
    return fastmcp_request_ctx.get()


def request_method_and_params(
    request: FastMCPRequestContext,
) -> tuple[str, Mapping[str, Any]]:
    """The JSON-RPC method and raw params of the wire request.

    Private: ``_srctx`` is FastMCP's documented escape hatch to the SDK's request
    context. FastMCP hands list hooks a params-less typed message, so parameters
    the protocol does not define yet (``filter``, ``query``) exist only here.
    """
    sdk = request._srctx
    params = sdk.params
    return sdk.method, params if isinstance(params, Mapping) else {}


def request_connection(request: FastMCPRequestContext) -> Connection | None:
    """The SDK connection behind a request, to notify a session-era client later.

    Private: ``ServerSession._connection``; the session object is rebuilt per
    request while the connection lasts as long as the client's session.
    """
    return getattr(request.session, "_connection", None)


def client_identity(ctx: Context) -> str | None:
    """Who a request's per-client state belongs to; None when nothing trustworthy says.

    - An authenticated request, in either era: its principal (the token's
      ``client_id``, issuer and subject), keyed as FastMCP keys a 2026-07-28
      user (``Context._session_scope_key()``, private), so a user's state is
      the same whichever era or replica serves it.
    - 2026-07-28 (stateless) otherwise: on stdio and in-memory transports (one
      client per process) the process; an unauthenticated HTTP request has none.
    - 2025-11-25 over streamable HTTP otherwise: the session id the server
      issued. With ``stateless_http=True`` the server issues none, and FastMCP
      would key on the client-chosen ``Mcp-Session-Id`` header: a client naming
      another's id would read its state, so there is no identity.
    - 2025-11-25 on stdio, SSE and in memory: the connection, which lasts the
      client's whole session: a random id the server keeps on it.
    """
    request = ctx.request_context
    if request is None:
        return None
    return _identity(ctx, request)


def _identity(ctx: Context, request: FastMCPRequestContext) -> str | None:
    principal = _principal_key()
    if principal is not None:
        return principal
    if _is_modern(request.protocol_version):
        try:
            return ctx._session_scope_key()
        except RuntimeError:
            return None
    connection = request_connection(request)
    if connection is None:
        return None
    issued = connection.session_id
    if isinstance(issued, str) and issued:
        return issued
    if ctx.transport in _HTTP_TRANSPORTS - {"sse"}:
        return None
    identity = connection.state.get(_IDENTITY)
    if not isinstance(identity, str):
        identity = connection.state[_IDENTITY] = uuid.uuid4().hex
    return identity


def _principal_key() -> str | None:
    """The authenticated principal's key, as ``Context._session_scope_key()`` makes it.

    Private: ``fastmcp.server.sessions._principal_segment`` hashes the principal
    into a fixed-length key segment; using it keeps a user's key in the
    2025-11-25 era equal to the one FastMCP gives it in 2026-07-28.
    """
    from fastmcp.server.sessions import _principal_segment, current_principal

    principal = current_principal()
    return None if principal is None else f"user:{_principal_segment(principal)}"


def _is_modern(protocol_version: str) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return protocol_version in MODERN_PROTOCOL_VERSIONS


def state_store(server: FastMCP) -> Any:
    """The server's session state store (memory by default, Redis or any py-key-value store).

    Private: ``FastMCP._state_store``; per-client state lives where FastMCP keeps
    its own session state, so replicas sharing a store share it.
    """
    return server._state_store


def sdk_middleware(server: FastMCP) -> list[Any]:
    """The MCP SDK server's middleware list, outermost first.

    Private: ``FastMCP._mcp_server``. Pagination cursors are written and read by
    FastMCP after its own middleware chain, so binding a cursor to its ``filter``
    and ``query`` needs a hook at the SDK level.
    """
    middleware: list[Any] = server._mcp_server.middleware
    return middleware


def check_headers_as_listed(server: FastMCP) -> None:
    """Have the MCP SDK check a call's ``Mcp-Param-*`` headers against the input schema the
    caller's own ``tools/list`` shows it.

    Private: ``FastMCP._mcp_server.get_tool_input_schema`` (FastMCP 4.2 and later; absent
    before, where the SDK checks no such header). FastMCP sets it to a server-wide cache of
    schemas that every client's listing fills, read before any middleware or lookup: a
    hidden tool's header-bound argument was refused with HTTP 400 where an absent tool is
    "Unknown tool". Without it the SDK lists tools for the request it checks, through the
    server's own handler (every layer applied): a tool the caller cannot list is not
    checked, and its call is refused as an absent one's.
    """
    low_level = server._mcp_server
    if getattr(low_level, "get_tool_input_schema", None) is not None:
        low_level.get_tool_input_schema = None


def serving_server() -> FastMCP | None:
    r"""The server whose lifespan or request is running, or None outside both.

    Public (``get_server()``), but relied on at one moment FastMCP does not
    document: when a server starts, it asks its ``ToolInjectionMiddleware``\ s for
    their tools (to find task tools) with itself as the current server. That is
    the one moment a middleware added with ``mcp.add_middleware`` sees its
    server before any message; ``tests/stack/test_fastmcp_adapter.py`` checks it.
    """
    from fastmcp.server.dependencies import get_server

    try:
        return get_server()
    except RuntimeError:
        return None


def auth_middleware_checks(server: FastMCP) -> tuple[Any, ...]:
    """The checks of ``server``'s FastMCP ``AuthMiddleware`` instances that judge this
    request: none over stdio, where that middleware checks nothing.

    Private: ``fastmcp.server.context._current_transport``, which the middleware reads.
    """
    from fastmcp.server.context import _current_transport
    from fastmcp.server.middleware.authorization import AuthMiddleware

    if _current_transport.get() == "stdio":
        return ()
    return tuple(m.auth for m in server.middleware if isinstance(m, AuthMiddleware))


def request_token() -> AccessToken | None:
    """The request's access token as FastMCP's ``AuthMiddleware`` reads it; None when none
    was sent or it cannot be read."""
    from fastmcp.server.dependencies import get_access_token

    try:
        return get_access_token()
    except Exception:
        return None


def mounted_servers(server: FastMCP) -> list[FastMCP]:
    """The servers mounted into ``server`` (``server.mount(child)``), directly.

    A mounted server's own middleware is set up with its parent's, since the parent's
    lookups by name reach the child through its transforms, not its middleware.
    """
    return [child for child, _ in mount_paths(server)]


def mount_paths(server: FastMCP) -> list[tuple[FastMCP, tuple[Transform, ...]]]:
    """Each server mounted into ``server`` directly, with the transforms its components
    pass on their way into ``server`` (innermost first: tool renames, then the namespace).

    Private: ``_WrappedProvider._inner`` and ``Provider._transforms``. ``mount`` with a
    namespace or tool renames wraps the child's ``FastMCPProvider`` in providers that
    apply them, and only the outermost is in ``server.providers``; the names a parent's
    policy judges are the child's components as those transforms rename them.
    """
    from fastmcp.server.providers.fastmcp_provider import FastMCPProvider

    found: list[tuple[FastMCP, tuple[Transform, ...]]] = []
    for provider in server.providers:
        applied: list[Transform] = []
        while not isinstance(provider, FastMCPProvider):
            applied[:0] = getattr(provider, "_transforms", ())
            inner = getattr(provider, "_inner", None)
            if inner is None:
                break
            provider = inner
        if isinstance(provider, FastMCPProvider):
            applied[:0] = getattr(provider, "_transforms", ())
            found.append((provider.server, tuple(applied)))
    return found


class _CountedComponents(dict[str, Any]):
    """A ``LocalProvider``'s component storage that counts every change made to it."""

    __slots__ = ("generation",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.generation = 0

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self.generation += 1

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.generation += 1

    def pop(self, *args: Any) -> Any:
        self.generation += 1
        return super().pop(*args)

    def popitem(self) -> tuple[str, Any]:
        self.generation += 1
        return super().popitem()

    def clear(self) -> None:
        self.generation += 1
        super().clear()

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.generation += 1
        super().update(*args, **kwargs)

    def setdefault(self, key: str, default: Any = None) -> Any:
        self.generation += 1
        return super().setdefault(key, default)


def catalog_generation(provider: LocalProvider) -> int | None:
    """A number that changes whenever a component is added to, replaced in or removed from
    ``provider``; None when its storage is not what the adapter knows.

    Private: ``LocalProvider._components``, the provider's storage (a dict keyed by
    component key, which ``add_tool``, ``remove_tool`` and the others write). FastMCP
    announces no change to it, and reading the whole list per search is what search
    must not do: the first call swaps the dict for one that counts its changes, so
    search keeps a snapshot of the catalog and knows when it is stale.
    """
    storage = getattr(provider, "_components", None)
    if type(storage) is _CountedComponents:
        return storage.generation
    if type(storage) is not dict:
        return None
    counted = _CountedComponents(storage)
    provider._components = counted
    return counted.generation


def renderer_alias_hash(tool: Tool) -> str | None:
    """The hash in ``tool``'s per-tool Prefab renderer URI; None when FastMCP has no such URI.

    Private: ``prefab_synthesis._get_tool_hash``, how FastMCP names the renderer
    ``ui://prefab/tool/<hash>/renderer.html`` of a tool (its stored hash, or one
    of its app and name). FastMCP 4.1 lists those URIs. From 4.2 a tool names a
    renderer shared by configuration (``ui://prefab/renderer/<sha256>/...``) and
    the per-tool URI stays readable as an alias: a client may read it only for a
    tool it sees, so the package needs the alias of each listed tool. Without the
    function (FastMCP renamed it) no alias is known, and none is readable.
    """
    try:
        from fastmcp.server.providers.prefab_synthesis import _get_tool_hash
    except ImportError:
        return None
    digest = _get_tool_hash(tool)
    return digest if isinstance(digest, str) else None


# What FastMCP calls on a provider to list its tools or look one up.
_TOOL_READERS = (
    "list_tools",
    "_list_tools",
    "get_tool",
    "_get_tool",
    "get_tool_by_hash",
    "_get_tool_by_hash",
)


def lists_its_storage(provider: object) -> bool:
    """Whether ``provider`` lists and looks up exactly the tools its storage holds, as
    ``LocalProvider`` does: it is one, and its class overrides none of the readers.

    Private: ``LocalProvider._list_tools``, ``_get_tool`` and ``_get_tool_by_hash``,
    the readers of ``_components``. FastMCP may give a server a subclass of its own
    (4.2 adds one that mirrors each registered tool's schema into a cache): one that
    only adds to what registering does still lists what ``catalog_generation``
    counts, while one that reads elsewhere could list anything, any time.
    """
    if not isinstance(provider, LocalProvider):
        return False
    cls = type(provider)
    # A reader FastMCP renamed could be overridden unseen: nothing is trusted then.
    if any(getattr(LocalProvider, name, None) is None for name in _TOOL_READERS):
        return False
    return all(
        getattr(cls, name, None) is getattr(LocalProvider, name, None) for name in _TOOL_READERS
    )

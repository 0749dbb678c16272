"""The request as the package sees it: what it carries, whose it is, and how it is answered.

- ``RequestInfo``: the raw request (method, params, ``_meta``, era) whatever FastMCP parsed;
  JSON-RPC errors (``invalid_params``), capabilities and custom results for replies.
- The client's identity (``client_key``) and its state in FastMCP's session state store
  (``load_state`` / ``save_state``), keyed by an identity the server trusts.
- The scope the running code is in: inside ``unrestricted()`` lookups show the whole catalog.
"""

from __future__ import annotations

import contextlib
import logging
import reprlib
import unicodedata
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar, cast

import mcp_types as mt
from fastmcp.server.dependencies import extract_version_spec
from fastmcp.server.dependencies import get_context as _fastmcp_context
from fastmcp.utilities.versions import VersionSpec
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict

from fastmcp_filtering._fastmcp import (
    client_identity,
    current_request,
    request_connection,
    request_method_and_params,
    state_store,
)
from fastmcp_filtering.core.declarations import CONCERNS_META_ALIAS, CONCERNS_META_KEY
from fastmcp_filtering.core.errors import StateUnavailable

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterator

    from fastmcp.server.context import Context
    from fastmcp.server.dependencies import FastMCPRequestContext
    from fastmcp.server.middleware import MiddlewareContext
    from fastmcp.utilities.authorization import AuthContext
    from mcp.server.connection import Connection

_ResultT = TypeVar("_ResultT")


def _without_description(schema: dict[str, Any]) -> None:
    schema.pop("description", None)


REPLY_CONFIG = ConfigDict(json_schema_extra=_without_description)
"""``model_config`` of a meta-tool's reply model: its docstring stays out of ``outputSchema``.

The docstring is written for Python readers; every listed tool's schema costs an agent's
context, and the tool's own description already says what the reply holds.
"""


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """The wire request a middleware hook is running for."""

    method: str
    params: Mapping[str, Any]
    protocol_version: str
    connection: Connection | None

    @property
    def modern(self) -> bool:
        """True on the stateless 2026-07-28 era (no session, no standing channel)."""
        return self.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def meta(self) -> Mapping[str, Any]:
        meta = self.params.get("_meta")
        return meta if isinstance(meta, Mapping) else {}


def request_info(context: MiddlewareContext[Any]) -> RequestInfo | None:
    """The raw JSON-RPC request behind ``context``, or None outside a wire request.

    FastMCP hands list hooks a params-less typed message, so parameters that the
    protocol does not define yet (``filter``, ``query``) are read from the wire
    request FastMCP binds for the duration of the handler.
    """
    fastmcp_context = context.fastmcp_context
    request = fastmcp_context.request_context if fastmcp_context else None
    return None if request is None else info_of(request)


def requested_version(context: MiddlewareContext[Any]) -> VersionSpec | None:
    """The component version the request asks for (FastMCP's ``_meta.fastmcp.version``)."""
    info = request_info(context)
    version = extract_version_spec(dict(info.meta)) if info is not None else None
    return VersionSpec(eq=version) if version else None


def current_info() -> RequestInfo | None:
    """The wire request being served, or None outside one."""
    request = current_request()
    return None if request is None else info_of(request)


def info_of(request: FastMCPRequestContext) -> RequestInfo:
    """The ``RequestInfo`` of one bound FastMCP request."""
    # Every layer asks, several times per request: worked out once, kept with the request.
    memo = _memo_of(request)
    info = memo.get(_INFO)
    if info is None:
        method, params = request_method_and_params(request)
        info = memo[_INFO] = RequestInfo(
            method=method,
            params=params,
            protocol_version=request.protocol_version,
            connection=request_connection(request),
        )
    return cast("RequestInfo", info)


_SHORT = reprlib.Repr()
_SHORT.maxstring = 64
_SHORT.maxother = 64
_SHORT.maxlevel = 2


def request_override(meta: Mapping[str, Any]) -> Any:
    """The request's one-request concerns override from its ``_meta``; None when it has none.

    Read under ``CONCERNS_META_KEY`` or its alias; the two giving different
    values is -32602, since either answer would ignore what the client sent.
    """
    value = meta.get(CONCERNS_META_KEY)
    alias = meta.get(CONCERNS_META_ALIAS)
    if value is None:
        return alias
    if alias is not None and alias != value:
        raise invalid_params(
            f"_meta has both {CONCERNS_META_KEY!r} and {CONCERNS_META_ALIAS!r} with different "
            f"concerns; send only {CONCERNS_META_KEY!r}",
            field=f"_meta.{CONCERNS_META_ALIAS}",
        )
    return value


def has_filter(info: RequestInfo | None) -> bool:
    """Whether the request carries a ``filter`` (most listings do not: nothing to narrow)."""
    return info is not None and info.params.get("filter") is not None


def brief(value: object) -> str:
    """``repr`` of a client-sent value, short and safe to put in a reply.

    A name or argument may be huge or nested thousands deep: an error message
    must neither echo it whole nor fail while describing it.
    """
    return _SHORT.repr(value)


def invalid_params(message: str, **data: Any) -> MCPError:
    """A JSON-RPC -32602 error whose ``data`` names the offending field."""
    return MCPError(code=mt.INVALID_PARAMS, message=message, data=data or None)


def custom_result(info: RequestInfo | None, result: dict[str, Any]) -> dict[str, Any]:
    """Shape the result of a method the protocol does not define for the wire era."""
    if info is not None and info.modern:
        # 2026-07-28 requires resultType on every result; the SDK adds it only
        # for results that pass through its own handler table.
        return {**result, "resultType": "complete"}
    return result


class _OpenToolsCapability(mt.ToolsCapability):
    """``capabilities.tools`` keeping keys the typed model does not declare (``filtering``)."""

    model_config = ConfigDict(extra="allow")


class OpenServerCapabilities(mt.ServerCapabilities):
    """Server capabilities that keep keys the typed model does not declare, at the top
    level and in ``tools`` (where SEP-1821 puts ``filtering``)."""

    model_config = ConfigDict(extra="allow")

    tools: _OpenToolsCapability | None = None


class _InitializeResult(mt.InitializeResult):
    capabilities: OpenServerCapabilities


class _DiscoverResult(mt.DiscoverResult):
    capabilities: OpenServerCapabilities


def add_capabilities(
    result: _ResultT,
    additions: Mapping[str, Any],
    *,
    extensions: Mapping[str, dict[str, Any]] | None = None,
) -> _ResultT:
    """Return ``result`` (an initialize or discover result) with extra capabilities.

    Each addition lands at the top level of ``capabilities`` (where the proposals
    put it) and, because typed clients drop undeclared keys, again under
    ``capabilities.experimental`` with the same name (a value that is not an
    object is wrapped as ``{name: value}``, since experimental entries are
    objects). Each of ``extensions`` (SEP-2133 ids) joins
    ``capabilities.extensions``, and ``experimental`` as well. The result keeps its
    type, so other middlewares still see a typed result.
    """
    mirrored = {k: v if isinstance(v, dict) else {k: v} for k, v in additions.items()}
    mirrored.update(extensions or {})
    if isinstance(result, Mapping):
        raw = dict(result.get("capabilities") or {})
    elif isinstance(result, mt.InitializeResult | mt.DiscoverResult):
        raw = result.capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
    else:
        return result
    merged = {**raw, **additions, "experimental": {**(raw.get("experimental") or {}), **mirrored}}
    if extensions:
        merged["extensions"] = {**(raw.get("extensions") or {}), **extensions}
    if isinstance(result, Mapping):
        return {**result, "capabilities": merged}  # type: ignore[return-value]
    typed = cast("mt.InitializeResult | mt.DiscoverResult", result)
    open_cls = _InitializeResult if isinstance(typed, mt.InitializeResult) else _DiscoverResult
    fields: dict[str, Any] = {name: getattr(typed, name) for name in type(typed).model_fields}
    fields["capabilities"] = OpenServerCapabilities.model_validate(merged)
    return open_cls.model_construct(  # type: ignore[return-value]
        _fields_set=typed.model_fields_set | {"capabilities"}, **fields
    )


MAX_QUERY_LENGTH = 1000
"""Longest query accepted, in characters."""


def clean_query(raw: object, *, field: str) -> str:
    """Validate a query: a string of at most ``MAX_QUERY_LENGTH`` characters, as plain text.

    Control characters are read as spaces; the result is trimmed. No syntax is
    interpreted: the query is only ever split into words.
    """
    if not isinstance(raw, str):
        problem = f"must be a string of plain words, got {type(raw).__name__}"
    elif len(raw) > MAX_QUERY_LENGTH:
        problem = f"has {len(raw)} characters; at most {MAX_QUERY_LENGTH} are allowed"
    else:
        cleaned = "".join(" " if unicodedata.category(ch)[0] == "C" else ch for ch in raw)
        return cleaned.strip()
    raise invalid_params(f"{field} {problem}", field=field)


# -- the client's identity and state --------------------------------------------------

_PREFIX = "fastmcp-filtering"
_TTL_SECONDS = 86_400


_logger = logging.getLogger("fastmcp_filtering")


class OutageLog:
    """Logs a state store outage once when it starts and once when it ends, not per request.

    ``failed`` logs a warning for the first store failure (a ``StateUnavailable``
    the store raised) after the store last answered, repeats at debug level only,
    and logs any other ``StateUnavailable`` (no identity, a corrupt entry) as it
    comes; ``answered`` logs one line when the store answers again. One per layer:
    a busy server with its store down would otherwise log a line per request.

    Example:
        ```python
        outage = OutageLog("progressive disclosure")
        try:
            stored = await load_state(ctx, "progressive")
        except StateUnavailable as exc:
            outage.failed(exc, "serving the initial groups")
        else:
            outage.answered()
        ```
    """

    __slots__ = ("_down", "_who")

    def __init__(self, who: str) -> None:
        self._who = who
        self._down = False

    def failed(self, exc: StateUnavailable, consequence: str) -> None:
        """Log ``exc`` and what the layer does about it (once per outage for the store's)."""
        if exc.__cause__ is None:
            _logger.warning("%s: %s; %s", self._who, exc, consequence)
            return
        if self._down:
            _logger.debug("%s: %s (still); %s", self._who, exc, consequence)
            return
        self._down = True
        _logger.warning(
            "%s: %s; %s (logged once until the store answers again)", self._who, exc, consequence
        )

    def answered(self) -> None:
        """The store answered: log the end of an outage, if one was logged."""
        if self._down:
            self._down = False
            _logger.info("%s: the session state store answers again", self._who)


def client_key(context: Context) -> str | None:
    """Who this request's state belongs to, or None when nothing identifies the client.

    2025-11-25: the session the server issued (a client-chosen session id on a
    stateless HTTP server is no identity). 2026-07-28: the authenticated
    principal; on stdio and in-memory transports, which serve one client, the
    process. None means no client ever reads another's state: there is none.
    """
    request = context.request_context
    if request is None:
        return None
    # Asked by several layers per request: worked out once, kept with the request.
    memo = _memo_of(request)
    if _IDENTITY not in memo:
        memo[_IDENTITY] = client_identity(context)
    return cast("str | None", memo[_IDENTITY])


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


# -- the scope the running code is in, and what its request worked out ----------------


@dataclass(frozen=True, slots=True)
class Scope:
    """What holds for the code running now: set for a block, whoever the client."""

    unrestricted: bool = False
    """Lookups show the whole catalog, every layer aside (``unrestricted()``)."""
    widened: object | None = None
    """The ``AccessTransform`` whose lookups also show what the client could enable itself."""
    set_aside: object | None = None
    """The ``AccessTransform`` whose policy shows everything (``policy.decision.set_aside``)."""
    as_listed: bool = False
    """Lists leave the request's own ``filter`` and ``query`` aside: what the client lists
    through the whole chain, which a search or a filter check reads as its candidates when a
    middleware ahead of it may drop components (``search.service.as_listed``)."""


# The one ContextVar for block-scoped state: a new Scope per block, the old one back after it.
_SCOPE: ContextVar[Scope | None] = ContextVar("fastmcp_filtering_scope", default=None)
_OPEN = Scope()
# The one ContextVar for per-request state: (wire request, what was worked out once for it).
_MEMO: ContextVar[tuple[object, dict[Hashable, Any]] | None] = ContextVar(
    "fastmcp_filtering_request_memo", default=None
)


def current_scope() -> Scope:
    """The scope the running code is in."""
    return _SCOPE.get() or _OPEN


@contextlib.contextmanager
def scoped(scope: Scope) -> Iterator[None]:
    """Run the block in ``scope`` (made with ``dataclasses.replace(current_scope(), ...)``)."""
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)


def unrestricted() -> contextlib.AbstractContextManager[None]:
    """Look components up as no client sees them: the whole catalog, every layer aside.

    Outside a request FastMCP's lookups find nothing once a layer is set up
    (there is no client to judge for). Server code that needs the whole
    catalog (a startup check, an admin script) and the package's own
    bookkeeping (counting a group's members) look inside this block; never
    hand what it returns to a client.

    Example:
        ```python
        with unrestricted():
            every_tool = await mcp.list_tools(run_middleware=False)
        ```
    """
    return scoped(replace(current_scope(), unrestricted=True))


def is_unrestricted() -> bool:
    """Whether lookups show the whole catalog (inside ``unrestricted()``)."""
    return current_scope().unrestricted


def request_memo() -> dict[Hashable, Any] | None:
    """What this wire request worked out once (its policy, its denied groups...); None outside.

    Keyed by what was worked out, e.g. ``("policy", owner, widened)``; the same
    object for the whole request, so a later step finds what an earlier one found.
    """
    request = current_request()
    return None if request is None else _memo_of(request)


def _memo_of(request: object) -> dict[Hashable, Any]:
    """The memo of ``request``: a new one when the slot holds another request's."""
    held = _MEMO.get()
    if held is None or held[0] is not request:
        # Held with the request object itself, so a memo never passes to another request.
        held = (request, {})
        _MEMO.set(held)
    return held[1]


# Keys of what every request works out once (see ``_memo_of``).
_INFO = "request info"
_IDENTITY = "client identity"


def holds_state(_auth: AuthContext) -> bool:
    """An auth check (``Tool(auth=...)``): only a client whose state can be kept passes.

    A client nothing identifies (unauthenticated stateless HTTP) could only be
    refused by them, so they do not exist for it. No request: no client; inside
    ``unrestricted()`` (server code reading the whole catalog) they exist.
    """
    if is_unrestricted():
        return True
    try:
        ctx = _fastmcp_context()
    except RuntimeError:
        return False
    return client_key(ctx) is not None

"""Proxy mode: groups, tags, concerns, search and progressive disclosure for any MCP server.

``build_proxy(config)`` puts FastMCP's proxy in front of the configured upstream
server(s), stdio or HTTP, and adds the filtering stack (``add_filtering``) with
the configured declarations, so an operator filters servers whose code they
cannot change (GitHub's, Azure's, any npm or PyPI server).
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import hashlib
import json
import os
import re
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TextIO, TypeVar

from fastmcp import FastMCP
from fastmcp.client.transports import ClientTransport, StdioTransport, StreamableHttpTransport
from fastmcp.client.transports.base import TransportOptions
from fastmcp.client.transports.sse import SSETransport
from fastmcp.mcp_config import infer_transport_type_from_url
from fastmcp.server.dependencies import get_http_headers, get_http_request
from fastmcp.server.transforms import Transform

from fastmcp_filtering._fastmcp import current_request, proxy_client_factory
from fastmcp_filtering.core.catalog import ComponentKind, kind_of, match_names
from fastmcp_filtering.core.concerns import COMPONENT_META_KEY
from fastmcp_filtering.core.declarations import GROUPS_META_KEY, META_TOOL_KEY
from fastmcp_filtering.gateway.audit import logged_audit
from fastmcp_filtering.gateway.redact import Redactor
from fastmcp_filtering.gateway.upstreams.annotations import risk_of
from fastmcp_filtering.gateway.upstreams.health import UpstreamHealth
from fastmcp_filtering.gateway.upstreams.listings import NoticesChanges
from fastmcp_filtering.gateway.upstreams.namespacing import OwnNamespace
from fastmcp_filtering.gateway.upstreams.provider import (
    UPSTREAM_MARK,
    Probe,
    UpstreamInstructions,
    UpstreamProvider,
    client_factory,
)
from fastmcp_filtering.gateway.upstreams.stdio import NamedStdio, StderrRelay
from fastmcp_filtering.server.transform import AccessTransform
from fastmcp_filtering.stack import add_filtering

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping, Sequence
    from pathlib import Path

    from fastmcp.prompts.base import Prompt
    from fastmcp.resources.base import Resource
    from fastmcp.resources.template import ResourceTemplate
    from fastmcp.server.transforms import (
        GetPromptNext,
        GetResourceNext,
        GetResourceTemplateNext,
        GetToolNext,
    )
    from fastmcp.tools.base import Tool
    from fastmcp.utilities.components import FastMCPComponent
    from fastmcp.utilities.versions import VersionSpec
    from mcp.client.session import ClientSession

    from fastmcp_filtering.gateway.config.models import FilteringConfig, UpstreamConfig
    from fastmcp_filtering.gateway.upstreams.provider import Audience

_C = TypeVar("_C", bound="FastMCPComponent")

# What an upstream may claim in _meta that only the operator's configuration may decide.
_UPSTREAM_MARKS = (GROUPS_META_KEY, META_TOOL_KEY)

# FastMCP's own names for the backend era: None mirrors each incoming request's era.
_MODES: dict[str, str | None] = {"auto": "auto", "legacy": "legacy", "mirror": None}


class _OwnHeaders:
    """An HTTP upstream connection that sends its configured headers, none of the client's.

    FastMCP's proxy forwards each client's HTTP headers upstream, its
    ``Authorization`` too. Behind ``[auth]`` that header holds the client's
    token for this proxy: it must not reach another server.
    """

    @asynccontextmanager
    async def connect_session(
        self, *, transport_options: TransportOptions | None = None, **session_kwargs: Any
    ) -> AsyncIterator[ClientSession]:
        options = replace(transport_options or TransportOptions(), forward_incoming_headers=False)
        connect = super().connect_session  # type: ignore[misc]
        async with connect(transport_options=options, **session_kwargs) as session:
            yield session


class _Stdio(NoticesChanges, NamedStdio, StdioTransport):
    pass


class _Http(NoticesChanges, StreamableHttpTransport):
    pass


class _SSE(NoticesChanges, SSETransport):
    pass


class _OwnHeadersHttp(_OwnHeaders, _Http):
    pass


class _OwnHeadersSSE(_OwnHeaders, _SSE):
    pass


def _forwards_client_headers(transport: ClientTransport) -> bool:
    """Whether ``transport`` sends each client's HTTP headers upstream with its own.

    True for an HTTP upstream ``upstream_transport`` reaches with
    ``forward_client_headers`` (a gateway without ``[auth]``); False for a stdio
    upstream or one that sends only its configured ``headers``.

    Example:
        ```python
        _forwards_client_headers(upstream_transport(config.upstreams[0]))  # True for a URL
        ```
    """
    return isinstance(transport, _Http | _SSE) and not isinstance(transport, _OwnHeaders)


# Headers a client (or a proxy on its way) sends anew with each request, tracing ids: they
# reach the upstream but do not say who asks, so listings asked with different ones are still
# shared. Of ``baggage`` only Sentry's own members (a trace's) are left out: the rest may say
# who asks.
_PER_REQUEST_HEADERS = frozenset(
    {
        "b3",
        "cf-ray",
        "fly-request-id",
        "sentry-trace",
        "traceparent",
        "tracestate",
        "uber-trace-id",
        "x-amz-cf-id",
        "x-amzn-trace-id",
        "x-cloud-trace-context",
        "x-correlation-id",
        "x-datadog-parent-id",
        "x-datadog-trace-id",
        "x-request-id",
        "x-vercel-id",
    }
)


# Where a request keeps its own forwarded scope (Starlette's per-request state).
_SCOPE_STATE = "fastmcp_filtering_forwarded_scope"


def forwarded_scope() -> str:
    """Whose listing this request asks an upstream for: a digest of the headers it forwards.

    Covers every header of the client's HTTP request that FastMCP's proxy may
    send upstream (its ``Authorization`` too, and ``Cookie``, which FastMCP
    leaves out today: more headers only split listings further, fewer could
    share one client's with another), less MCP's own per-connection headers and
    tracing ids (Sentry's ``baggage`` members too). "" without an HTTP request
    (stdio, ``check``, start-up) only: an HTTP request that forwards none of these
    has a scope of its own. A digest, so the kept listings' keys hold no token.

    Example:
        ```python
        provider.listings.scope = forwarded_scope  # an upstream that gets the client's headers
        ```
    """
    try:
        request = get_http_request()
    except RuntimeError:
        request = None  # no HTTP request (stdio, start-up, a background task)
    # Asked once per component a listing holds: computed once per HTTP request.
    if request is None:
        return ""
    known = getattr(request.state, _SCOPE_STATE, None)
    if isinstance(known, str):
        return known
    scope = _digest(get_http_headers(include={"authorization", "cookie", "proxy-authorization"}))
    setattr(request.state, _SCOPE_STATE, scope)
    return scope


def _digest(headers: dict[str, str]) -> str:
    """A SHA-256 digest of what in ``headers`` says who asks (never "": an HTTP request that
    says nothing is still a client over HTTP, whose failures are its own)."""
    if "baggage" in headers:
        members = [member.strip() for member in headers.pop("baggage").split(",")]
        kept = ",".join(m for m in members if not m.startswith("sentry-"))
        if kept:
            headers["baggage"] = kept
    carried = sorted(
        (name, value)
        for name, value in headers.items()
        if not name.startswith("mcp-")
        and name != "last-event-id"
        and name not in _PER_REQUEST_HEADERS
        and not name.startswith("x-b3-")
    )
    return hashlib.sha256(json.dumps(carried).encode()).hexdigest()


def upstream_transport(
    upstream: UpstreamConfig,
    *,
    forward_client_headers: bool = True,
    log_file: Path | TextIO | None = None,
) -> ClientTransport:
    """The FastMCP client transport that reaches ``upstream``.

    A stdio upstream's subprocess is kept alive between requests and shared by
    them; close the transport (``await transport.close()``) to stop it. Its
    stderr goes to ``log_file`` (default: this process's stderr), each line prefixed
    ``[label]`` and rate-limited (``StderrRelay``); its exit and restart are logged. An HTTP
    upstream gets the configured ``headers``, plus (FastMCP's proxy default)
    the headers of the client's request unless ``forward_client_headers=False``.
    Its ``changed`` hook hears the upstream's ``list_changed`` notifications.

    Example:
        ```python
        transport = upstream_transport(config.upstreams[0])
        async with Client(transport) as client:
            tools = await client.list_tools()
        ```
    """
    if upstream.url is not None:
        sse = infer_transport_type_from_url(upstream.url) == "sse"
        if forward_client_headers:
            kind: type[ClientTransport] = _SSE if sse else _Http
        else:
            kind = _OwnHeadersSSE if sse else _OwnHeadersHttp
        return kind(upstream.url, headers=dict(upstream.headers))  # type: ignore[call-arg]
    assert upstream.command is not None
    stdio = _Stdio(
        command=upstream.command,
        args=list(upstream.args),
        # The mark tells a gateway started this way (by any path) that it must not serve.
        env={**upstream.env, UPSTREAM_MARK: "1"},
        cwd=upstream.cwd,
        log_file=log_file,
    )
    stdio.label = upstream.label
    if getattr(log_file, "name", None) != os.devnull:  # --quiet: nothing to relay
        stdio.relay = StderrRelay(upstream.label, log_file)
    return stdio


def build_proxy(config: FilteringConfig, *, upstream_log: Path | TextIO | None = None) -> FastMCP:
    """A FastMCP server proxying the configured upstream(s), with the filtering stack added.

    Each upstream is a FastMCP ``ProxyProvider`` under its namespace (if any);
    group and tag patterns match the prefixed names (``gh_create_issue``). Tags
    with ``tools`` patterns and ``concern_mapping`` are applied to the proxied
    components by a ``ConfigAnnotations`` transform, so every layer sees them.
    Clients get the configured ``instructions``, then each upstream's own
    (under its name when there are several), then the stack's paragraphs. With
    ``on_upstream_error = "warn"`` (the default with several upstreams) an
    upstream that fails is logged once (its label and the reason) and left out
    while the others are served. Stdio
    upstreams start at the first request, write their stderr to ``upstream_log``
    (default: this process's), and stop when the server's lifespan ends (the
    last in-memory client leaves, or the server stops).
    ``[auth]`` becomes the server's ``auth`` (a token verifier, for HTTP) and
    ``[state]`` its ``session_state_store``.

    Example:
        ```python
        proxy = build_proxy(load_config("examples/server-github.toml"))
        proxy.run()  # stdio; proxy.run(transport="http", port=8000) for HTTP
        ```
    """
    return _build(config, upstream_log=upstream_log).server


class _Proxy(NamedTuple):
    server: FastMCP[Any]
    transports: list[ClientTransport]
    """Closed when the server's lifespan ends; ``check`` and a signal close them sooner."""
    health: UpstreamHealth

    async def close(self) -> None:
        """Stop every upstream connection (stdio subprocesses in parallel)."""
        self.health.closing = True
        await _close_all(self.transports)


def _stop_probes(providers: Sequence[UpstreamProvider]) -> None:
    """Cancel the upstreams' probes on their way: the proxy stops, their outcome is no news."""
    for provider in providers:
        if provider.probe is not None:
            provider.probe.stop()


async def _close_all(transports: Sequence[ClientTransport]) -> None:
    # In parallel: the SDK gives each stdio upstream up to 2 s to exit after its stdin closes.
    await asyncio.gather(*(t.close() for t in transports))  # type: ignore[no-untyped-call]


def _build(
    config: FilteringConfig,
    *,
    on_upstream_error: Literal["raise", "warn"] | None = None,
    upstream_log: Path | TextIO | None = None,
    log_failures: bool = True,
    relay: bool = True,
    audit: bool = False,
) -> _Proxy:
    """The proxy, the transports it owns and its upstreams' health (``relay=False``: the
    upstreams' notifications reach no client, for a proxy no client uses; ``audit``: once
    serving, log each group that matches nothing, as ``check`` reports it;
    ``log_failures=False``: the caller reports them to the operator, paths named)."""
    # Behind [auth] the client's Authorization header is its token for this proxy.
    forward = config.auth is None
    transports = [
        upstream_transport(u, forward_client_headers=forward, log_file=upstream_log)
        for u in config.upstreams
    ]
    strategy = on_upstream_error or config.on_upstream_error
    if strategy is None:
        # One dead upstream among several is harmless; a lone one has nothing else to serve.
        strategy = "warn" if len(config.upstreams) > 1 else "raise"
    health = _health(config, strategy, log_failures=log_failures)

    audits = [config.catalog()] if audit else []

    @asynccontextmanager
    async def close_upstreams(server: FastMCP[Any]) -> AsyncIterator[dict[str, Any]]:
        health.closing = False  # serving (again): the upstreams restart on demand
        # Once, at the first start: a mistake in the groups is logged, not refused.
        audited = logged_audit(server, audits.pop(), health.unavailable) if audits else None
        try:
            async with audited or contextlib.nullcontext():
                yield {}
        finally:
            health.closing = True
            _stop_probes(providers)
            await _close_all(transports)

    # Who each HTTP request is ([auth]) and where its state lives ([state]).
    served: dict[str, Any] = {
        "auth": config.auth.verifier() if config.auth is not None else None,
        "session_state_store": config.state.store(),
    }
    server: FastMCP[Any] = FastMCP(
        config.name, instructions=config.instructions, lifespan=close_upstreams, **served
    )
    server.provider_error_strategy = strategy
    providers = _add_upstreams(
        server, config, transports, health=health, on_error=strategy, relay=relay
    )
    _add_filtering(server, config, providers)
    if AccessTransform.of(server) is not None:
        audience = _audience(server)
        for provider in providers:
            provider.audience = audience
    # Innermost: the stack's paragraphs are appended after the upstreams' instructions.
    server.add_middleware(UpstreamInstructions(providers))
    return _Proxy(server, transports, health)


def _health(
    config: FilteringConfig, strategy: Literal["raise", "warn"], *, log_failures: bool
) -> UpstreamHealth:
    """The upstreams' health: what fails is logged (paths hidden), or reported by the
    caller to the operator (``log_failures=False``: ``check``, ``init``), who sees the path
    that is missing; no configured secret either way."""
    secrets = [secret for u in config.upstreams for secret in u.secrets]
    redact = Redactor(secrets, paths=log_failures)
    return UpstreamHealth(log=log_failures, mode=strategy, redact=redact)


def _audience(server: FastMCP[Any]) -> Audience:
    """Whether this request's client may see (or could show itself) any of ``served``.

    True outside a client's request (the operator's own code, ``check``): every
    failure is named there. None when ``served`` is unknown (the upstream never
    listed): a caller hides and refuses.
    """

    async def sees_any(served: Sequence[FastMCPComponent] | None) -> bool | None:
        transform = AccessTransform.of(server)
        if current_request() is None or transform is None:
            return True
        if served is None:
            return None
        # What the client could enable, or name, counts: only what it may not use is hidden.
        policy = (await transform.policy()).as_discovery()
        return any(policy.lookup(c) is None for c in served)

    return sees_any


def _add_upstreams(
    server: FastMCP[Any],
    config: FilteringConfig,
    transports: Sequence[ClientTransport],
    *,
    health: UpstreamHealth,
    on_error: Literal["raise", "warn"],
    relay: bool,
) -> list[UpstreamProvider]:
    """Add a provider per upstream, under its namespace; returns them in the configured order."""
    providers = []
    prefixes = [f"{u.namespace}_" for u in config.upstreams if u.namespace]
    for upstream, transport in zip(config.upstreams, transports, strict=True):
        provider = UpstreamProvider(
            client_factory(transport, _MODES[upstream.mode], relay=relay),
            label=upstream.label,
            health=health,
            on_error=on_error,
            timeouts=upstream.timeouts,
            prefix=f"{upstream.namespace}_" if upstream.namespace else "",
            # An upstream without a namespace must not serve names in another's namespace.
            foreign=() if upstream.namespace else tuple(prefixes),
            list_ttl=upstream.list_ttl,
            backoff=upstream.backoff,
            backoff_max=upstream.backoff_max,
        )
        # A listing then carries the asking client's headers: its failure may be their doing.
        if _forwards_client_headers(transport):
            provider.listings.forwarded = True
            # What one client's headers list (an upstream may list by token) is its own.
            provider.listings.scope = forwarded_scope
            # Whether a client's unanswered request was its own doing: asked without them.
            provider.probe = Probe(client_factory(transport, _MODES[upstream.mode], relay=False))
        if isinstance(transport, NoticesChanges):
            # The upstream's list_changed drops its kept listing for every client at once.
            transport.changed = provider.listings.forget
            # What its SDK cannot parse fails the listings waiting at once.
            transport.garbled = provider.listings.garbled.heard
        # FastMCP's namespace, said once: an upstream's own git_status is not git_git_status.
        namespaced = (
            provider.wrap_transform(OwnNamespace(upstream.namespace))
            if upstream.namespace
            else provider
        )
        server.add_provider(namespaced)
        providers.append(provider)
    return providers


def _add_filtering(
    server: FastMCP[Any], config: FilteringConfig, providers: Sequence[UpstreamProvider]
) -> None:
    """Add the configured annotations (a transform) and the filtering stack (middleware).

    What an upstream that gets each client's headers lists is that client's: while a request
    carries headers it forwards, the catalog counts it as listed per request
    (``Catalog(per_request=...)``). Served without HTTP (stdio, in memory) no request does:
    every client shares one listing, whose changes are announced as any other's.
    """
    per_client = {p.client_factory for p in providers if p.listings.scope is not None}

    def listed_per_client(component: FastMCPComponent) -> bool:
        return proxy_client_factory(component) in per_client and forwarded_scope() != ""

    server.add_transform(
        ConfigAnnotations(
            tags={t.name: t.tools for t in config.tags if t.tools},
            concern_mapping=config.concern_mapping,
            trust_upstream_groups=config.trust_upstream_groups,
            from_annotations=[c.name for c in config.concerns if c.from_annotations],
        )
    )
    add_filtering(
        server,
        catalog=config.catalog(listed_per_client if per_client else None),
        search=config.search.to_options() if config.search.enabled else False,
        concerns=config.to_concerns() or None,
        apply_concern_defaults=config.concern_options().apply_defaults,
        concern_authorization=config.concern_authorization(),
        side_effect_lists=config.side_effect_lists,
        progressive=config.progressive.to_options()
        if config.progressive is not None and config.progressive.enabled
        else False,
    )


def _same(cached: object, component: object) -> bool:
    """Whether a relisted component is the one annotated before, attribute for attribute.

    Not FastMCP's ``==``, which serializes both components (a cost per listing,
    and a serializer warning for a namespaced resource); and stricter: every
    instance attribute counts, so a proxied component bound to another
    upstream's client is never mistaken for a cached one.
    """
    return (
        type(cached) is type(component)
        and vars(cached) == vars(component)
        and getattr(cached, "__pydantic_private__", None)
        == getattr(component, "__pydantic_private__", None)
    )


def _compile(patterns: Sequence[str]) -> re.Pattern[str]:
    return re.compile("|".join(fnmatch.translate(p) for p in patterns))


class ConfigAnnotations(Transform):
    """Put configured tags and concern values on proxied components, by name or glob.

    An upstream that is not a FastMCP server has no FastMCP tags and no
    ``_meta.concerns``; this transform adds them as components are listed or
    looked up, so filters, search, concerns and calls all see the same values.
    The operator's configuration is the only source of group membership: the
    groups an upstream claims in ``_meta["io.modelcontextprotocol/groups"]``, and
    the package's own meta-tool mark, are removed unless
    ``trust_upstream_groups=True``.
    For ``concern_mapping`` an exact name wins over patterns, and among patterns
    the first one wins; values the upstream set itself are overridden. Each
    concern in ``from_annotations`` gets, on tools the mapping leaves without
    it, ``read-only``, ``write`` or ``destructive`` from the tool's MCP
    annotations (``fastmcp_filtering.gateway.upstreams.annotations.risk_of``). An
    unchanged component keeps its identity between listings (the proxy builds
    new objects on every listing), so the search index does not re-read it.

    Example:
        ```python
        server.add_transform(ConfigAnnotations(
            tags={"read-only": ["get_*", "list_*"]},
            concern_mapping={"merge_*": {"risk": "destructive"}},
        ))
        ```
    """

    def __init__(
        self,
        *,
        tags: Mapping[str, Sequence[str]] | None = None,
        concern_mapping: Mapping[str, Mapping[str, str]] | None = None,
        trust_upstream_groups: bool = False,
        from_annotations: Sequence[str] = (),
    ) -> None:
        self._trust_groups = trust_upstream_groups
        self._from_annotations = tuple(from_annotations)
        self._tags = [(name, _compile(p)) for name, p in (tags or {}).items() if p]
        mapping = dict(concern_mapping or {})
        self._exact = {k: dict(v) for k, v in mapping.items() if not _is_glob(k)}
        self._patterns = [(_compile([k]), dict(v)) for k, v in mapping.items() if _is_glob(k)]
        self._last: dict[tuple[ComponentKind, str], tuple[Any, Any]] = {}

    def __repr__(self) -> str:
        return f"ConfigAnnotations(tags={[t for t, _ in self._tags]!r})"

    def annotate(self, component: _C) -> _C:
        """``component`` with the configured tags and concern values (the same object if none)."""
        kind = kind_of(component)
        key = (kind, component.name)
        last = self._last.get(key)
        if last is not None and (last[0] is component or _same(last[0], component)):
            return last[1]  # type: ignore[no-any-return]
        names = match_names(component, kind)
        tags = {tag for tag, pattern in self._tags if any(pattern.match(n) for n in names)}
        values: dict[str, str] = {}
        for name in names:
            for concern, value in self._exact.get(name, {}).items():
                values.setdefault(concern, value)
        for pattern, mapped in self._patterns:
            if any(pattern.match(n) for n in names):
                for concern, value in mapped.items():
                    values.setdefault(concern, value)
        if kind == "tool":
            for concern in self._from_annotations:
                values.setdefault(concern, risk_of(getattr(component, "annotations", None)))
        meta = dict(component.meta or {})
        untrusted = [] if self._trust_groups else [k for k in _UPSTREAM_MARKS if k in meta]
        result = component
        if (tags and not tags <= component.tags) or values or untrusted:
            update: dict[str, Any] = {"tags": component.tags | tags}
            for mark in untrusted:
                del meta[mark]
            if values:
                meta[COMPONENT_META_KEY] = {**(meta.get(COMPONENT_META_KEY) or {}), **values}
            update["meta"] = meta
            result = component.model_copy(update=update)
        self._last[key] = (component, result)
        return result

    def _listed(self, kind: ComponentKind, components: Sequence[_C]) -> list[_C]:
        """``components``, annotated; the cache keeps only this listing's names of ``kind``.

        An upstream renaming its tools on every listing would otherwise grow the
        cache without end.
        """
        annotated = [self.annotate(c) for c in components]
        listed = {c.name for c in components}
        stale = [key for key in self._last if key[0] == kind and key[1] not in listed]
        for key in stale:
            del self._last[key]
        return annotated

    async def list_tools(self, tools: Sequence[Tool]) -> Sequence[Tool]:
        return self._listed("tool", tools)

    async def get_tool(
        self, name: str, call_next: GetToolNext, *, version: VersionSpec | None = None
    ) -> Tool | None:
        tool = await call_next(name, version=version)
        return self.annotate(tool) if tool is not None else None

    async def list_prompts(self, prompts: Sequence[Prompt]) -> Sequence[Prompt]:
        return self._listed("prompt", prompts)

    async def get_prompt(
        self, name: str, call_next: GetPromptNext, *, version: VersionSpec | None = None
    ) -> Prompt | None:
        prompt = await call_next(name, version=version)
        return self.annotate(prompt) if prompt is not None else None

    async def list_resources(self, resources: Sequence[Resource]) -> Sequence[Resource]:
        return self._listed("resource", resources)

    async def get_resource(
        self, uri: str, call_next: GetResourceNext, *, version: VersionSpec | None = None
    ) -> Resource | None:
        resource = await call_next(uri, version=version)
        return self.annotate(resource) if resource is not None else None

    async def list_resource_templates(
        self, templates: Sequence[ResourceTemplate]
    ) -> Sequence[ResourceTemplate]:
        return self._listed("template", templates)

    async def get_resource_template(
        self,
        uri: str,
        call_next: GetResourceTemplateNext,
        *,
        version: VersionSpec | None = None,
    ) -> ResourceTemplate | None:
        template = await call_next(uri, version=version)
        return self.annotate(template) if template is not None else None


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")

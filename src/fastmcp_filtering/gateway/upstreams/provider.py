"""The proxy's upstreams: named, health-tracked, and with their instructions kept.

``UpstreamProvider`` is FastMCP's ``ProxyProvider`` for one configured upstream:
a failure to list (or look up) its components is reported once, with the
upstream's label and the reason, to ``UpstreamHealth``, and with
``on_upstream_error = "warn"`` the upstream contributes nothing until it answers
again, so the other upstreams are served; after a failure it is left alone for a
back-off (``backoff``, doubled per failure in a row up to ``backoff_max``), each
request failing at once. ``UpstreamInstructions`` gives clients
each upstream's own instructions in the ``initialize`` / ``server/discover``
result, under the upstream's name when there are several.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import logging
import math
from collections import OrderedDict
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import mcp_types as mt
from fastmcp.exceptions import NotFoundError
from fastmcp.server import create_proxy
from fastmcp.server.providers import ProxyProvider
from fastmcp.server.providers.proxy import ProxyClient
from mcp.shared.exceptions import MCPError
from typing_extensions import override

from fastmcp_filtering._fastmcp import current_request
from fastmcp_filtering.core.request import current_scope
from fastmcp_filtering.gateway.upstreams.health import heard
from fastmcp_filtering.gateway.upstreams.limits import (
    Bound,
    Timeouts,
    UpstreamTimeout,
    bounded,
    unusable,
)
from fastmcp_filtering.gateway.upstreams.listings import (
    MOST_KEPT,
    BackingOff,
    Listings,
    how_soon,
    keep_recent,
)
from fastmcp_filtering.gateway.upstreams.namespacing import served_name
from fastmcp_filtering.server.hooks import Announces

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator, Sequence

    from fastmcp.client.transports import ClientTransport
    from fastmcp.prompts.base import Prompt
    from fastmcp.resources.base import Resource
    from fastmcp.resources.template import ResourceTemplate
    from fastmcp.server.middleware import MiddlewareContext
    from fastmcp.server.providers.proxy import ClientFactoryT
    from fastmcp.tools.base import Tool
    from fastmcp.utilities.components import FastMCPComponent
    from fastmcp.utilities.versions import VersionSpec

    from fastmcp_filtering.gateway.upstreams.health import UpstreamHealth

    Audience = Callable[[Sequence[FastMCPComponent] | None], Awaitable[bool | None]]

logger = logging.getLogger("fastmcp_filtering")

_T = TypeVar("_T")
_R = TypeVar("_R")
_C = TypeVar("_C", bound="FastMCPComponent")
_UNREAD: Any = object()
_WENT_ON: Any = object()
UPSTREAM_MARK = "FASTMCP_FILTERING_UPSTREAM"
"""Set in each stdio upstream's environment: a gateway that finds it refuses to serve."""
_DEFAULT_TIMEOUTS = Timeouts(connect=30.0, list=30.0, call=300.0)
# Seconds a request waits beyond its listing's own bound, so that bound (which records the
# failure and starts the back-off) always fires first.
_GRACE = 1.0
_MOMENT = 0.1
_PATIENT: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "fastmcp_filtering_patient", default=False
)


@contextlib.contextmanager
def patiently() -> Iterator[None]:
    """Within it, each listing waits for every upstream its whole bound, never ``SHORT_WAIT``:
    for ``check``, ``init`` and the audit at startup, which must hear every upstream.

    Example:
        ```python
        with patiently():
            tools = await server.list_tools(run_middleware=False)
        ```
    """
    token = _PATIENT.set(True)
    try:
        yield
    finally:
        _PATIENT.reset(token)


SHORT_WAIT = 3.0
"""Seconds a handshake, or a listing that can do without an upstream (``on_upstream_error =
"warn"``), waits for it before going on without it; its answer is kept when it comes."""


def client_factory(
    transport: ClientTransport, mode: str | None, *, relay: bool = True
) -> ClientFactoryT:
    """FastMCP's per-request proxy client factory for ``transport`` (``mode`` None mirrors).

    ``create_proxy`` builds it (the public way; the factory that mirrors each
    request's era is FastMCP's own); the proxy server it comes with is dropped.
    With ``relay=False`` the upstream's notifications and log messages are passed to
    no client, and no client's headers are forwarded: ``check`` and ``Probe`` connect
    outside any client's request, where FastMCP's proxy, relaying an upstream's
    ``list_changed`` or log message, finds no session and logs a traceback for each.
    """
    if relay:
        return create_proxy(transport, mode=mode).client_factory
    options: dict[str, Any] = {
        "message_handler": _relay_nothing,
        "log_handler": _relay_nothing,
        "progress_handler": _relay_nothing,
        "forward_incoming_headers": False,
    }
    if mode is not None:
        options["mode"] = mode
    backend = ProxyClient(transport, **options)
    return create_proxy(backend).client_factory


async def _relay_nothing(*_message: Any) -> None:
    """A proxy client's handler (messages, logs, progress) with no client to relay to."""


class UpstreamProvider(ProxyProvider):
    """FastMCP's ``ProxyProvider`` for one configured upstream, failing by the config's rule.

    A failure to list or look up the upstream's components is recorded in
    ``health`` under ``label``. With ``on_error="warn"`` the upstream then
    contributes no components (the others are served); with ``"raise"`` the
    request fails with an error naming the upstream. Its listings are kept
    (``listings``) for ``list_ttl`` seconds or until the upstream says they
    changed, and shared by every client (by the clients that forward the same
    headers, when it gets theirs: ``listings.scope``); after a failed listing it is not asked
    for ``backoff`` seconds (doubled per failure in a row, up to ``backoff_max``;
    0: asked on every request), each request failing at once. Nothing waits longer than
    ``timeouts`` allow (connecting, then listing; a tool call, prompt get or resource
    read), and a listed
    tool the proxy cannot serve safely (``limits.unusable``; ``prefix`` is what
    the namespace puts before its name) is left out with a warning.

    Example:
        ```python
        provider = UpstreamProvider(factory, label="github", health=UpstreamHealth())
        server.add_provider(provider, namespace="gh")
        ```
    """

    def __init__(
        self,
        factory: ClientFactoryT,
        *,
        label: str,
        health: UpstreamHealth,
        on_error: Literal["raise", "warn"] = "warn",
        timeouts: Timeouts = _DEFAULT_TIMEOUTS,
        prefix: str = "",
        foreign: Sequence[str] = (),
        list_ttl: float = 60.0,
        backoff: float = 1.0,
        backoff_max: float = 30.0,
    ) -> None:
        # FastMCP's own cache off: its lookups then ask ``_list_*``, which ``listings`` keeps.
        super().__init__(factory, cache_ttl=0)
        self.listings = Listings(seconds=list_ttl, backoff=backoff, backoff_max=backoff_max)
        """The upstream's latest listings, shared by every client, or per ``scope`` (``forget`` on
        a change)."""
        self.label = label
        self.health = health
        self.on_error = on_error
        self.timeouts = timeouts
        self.prefix = prefix
        self.foreign = tuple(foreign)
        """Other upstreams' namespace prefixes (``gh_``): names this one may not take."""
        self.audience: Audience | None = None
        """Whether this request's client may see any of what the upstream serves (set by
        the proxy); None: every client may."""
        self._instructions = _Instructions()
        self._short_wait = _ShortWait()
        self._served = _Served()
        self.probe: Probe | None = None
        """What asks the upstream without any client's headers when one client's were not
        answered (set by the proxy for an upstream that gets them); None: never asked."""

    @override
    def __repr__(self) -> str:
        return f"UpstreamProvider({self.label!r})"

    async def _guard(
        self, pending: Awaitable[_T], fallback: _T, what: str, *, short: bool = False
    ) -> _T:
        """``pending``'s result within the listing's bound, or failing by ``on_error``.

        ``short``: the request can do without the upstream: after ``SHORT_WAIT`` it gets
        ``fallback``, and the listing goes on (shared, kept when it answers; a failure then is
        recorded by the next request that asks).
        """
        try:
            result = await self._short_wait.within(pending, self.list_limit, what, short=short)
            if result is _WENT_ON:
                logger.debug("upstream %r: %s on its way; went on without it", self.label, what)
                return fallback
        except NotFoundError:
            raise
        except Exception as error:
            reason = _reason(self, error, what)
            if self.on_error == "raise":
                shown = False if _bookkeeping() else await self.shown()
                if shown is False:
                    # An upstream this client may not see contributes nothing, not even its
                    # failure; nor does one failing in the package's own lookups.
                    return fallback
                message = (
                    _unavailable(self.label, reason, self.listings.retry_in())
                    if shown
                    else "a server behind this gateway is unavailable; try again later"
                )
                raise MCPError(code=mt.INTERNAL_ERROR, message=message) from error
            return fallback
        if not self.listings.failing:  # a kept listing answered: no news of the upstream
            self.health.answered(self.label, self.listings.current_scope())
        return cast("_T", result)

    @property
    def _short(self) -> bool:
        """Whether a client's listing goes on without this upstream after ``SHORT_WAIT``."""
        return self.on_error == "warn" and not _PATIENT.get()

    async def shown(self) -> bool | None:
        """Whether this request's client may see any tool or prompt the upstream last served,
        named as the proxy serves them; None when it cannot be told (it never listed).

        What it last served this client's headers, when it lists by them (``listings.scope``).
        """
        if self.audience is None:
            return True
        return await self.audience(self._served.get(self.listings.current_scope()))

    async def refresh(self) -> None:
        """List the upstream's tools and prompts, as ``shown`` judges them (kept listings
        answer at once; a slow upstream is waited for ``SHORT_WAIT`` at most)."""
        short = not _PATIENT.get()
        await asyncio.gather(self._listed_tools(short=short), self._listed_prompts(short=short))

    def _keep(self, kind: str, components: Sequence[FastMCPComponent]) -> None:
        named = [
            c.model_copy(update={"name": served_name(self.prefix, c.name)}) for c in components
        ]
        self._served.keep(kind, self.listings.current_scope(), named)

    async def instructions(self) -> str | None:
        """The upstream's own instructions: read once it answers, then kept; None while down.

        Kept per scope when the upstream gets each client's headers (``listings.scope``).
        Never raises, and never waits for an upstream known to be down, nor
        longer than ``connect_timeout``: a client's handshake succeeds whatever
        the upstreams do.
        """
        scope = self.listings.current_scope()
        if scope in self._instructions.kept:
            return self._instructions.kept[scope]
        if self.health.failing(self.label, scope):
            return None  # read once a listing finds it answering again
        return await self._instructions.read(scope, lambda: _read_instructions(self, scope))

    def _servable(self, tools: Sequence[Tool]) -> list[Tool]:
        """The tools the proxy may serve; each other one is logged (once) and left out."""
        kept = []
        for tool in tools:
            problem = unusable(tool, self.prefix)
            if problem is None and tool.name.startswith(self.foreign):
                problem = "its name is in another upstream's namespace"
            if problem is None:
                kept.append(tool)
            else:
                self.health.dropped(self.label, tool.name, problem)
        return kept

    @property
    def list_limit(self) -> float:
        return self.timeouts.connect + self.timeouts.list

    @override
    async def _list_tools(self) -> Sequence[Tool]:
        return await self.listings.get("tool", self._fetch_tools, give_up_after=self.list_limit)

    async def _fetch_tools(self) -> Sequence[Tool]:
        # Checked once per upstream listing, not once per client's listing.
        tools = self._servable(await super()._list_tools())
        self._keep("tool", tools)
        return tools

    @override
    async def _list_prompts(self) -> Sequence[Prompt]:
        fetch = super()._list_prompts
        return await self.listings.get("prompt", fetch, give_up_after=self.list_limit)

    @override
    async def _list_resources(self) -> Sequence[Resource]:
        fetch = super()._list_resources
        return await self.listings.get("resource", fetch, give_up_after=self.list_limit)

    @override
    async def _list_resource_templates(self) -> Sequence[ResourceTemplate]:
        fetch = super()._list_resource_templates
        return await self.listings.get("template", fetch, give_up_after=self.list_limit)

    @override
    async def list_tools(self) -> Sequence[Tool]:
        return await self._listed_tools(short=self._short)

    async def _listed_tools(self, *, short: bool) -> Sequence[Tool]:
        listed = await self._guard(super().list_tools(), None, "tools/list", short=short)
        return [] if listed is None else listed

    @override
    async def get_tool(self, name: str, version: VersionSpec | None = None) -> Tool | None:
        tool = await self._guard(super().get_tool(name, version), None, "tools/list")
        if tool is None or not self._servable([tool]):
            return None
        return self._bounded(tool)

    def _bounded(self, component: _C | None) -> _C | None:
        """``component``, giving up after call_timeout (naming the upstream to who may see it)."""
        if component is None:
            return None
        answered, unreachable = partial(_answered_call, self), partial(_unreachable, self)
        bound = Bound(self.label, self.timeouts.call, self.shown, answered, unreachable)
        # FastMCP 4.1's proxy has no identity (its results carry the proxy's).
        return bounded(
            component, self.client_factory, bound, identity=getattr(self, "identity", "proxy")
        )

    @override
    async def list_prompts(self) -> Sequence[Prompt]:
        return await self._listed_prompts(short=self._short)

    async def _listed_prompts(self, *, short: bool) -> Sequence[Prompt]:
        listed = await self._guard(super().list_prompts(), None, "prompts/list", short=short)
        if listed is None:
            return []
        self._keep("prompt", listed)
        return listed

    @override
    async def get_prompt(self, name: str, version: VersionSpec | None = None) -> Prompt | None:
        prompt = await self._guard(super().get_prompt(name, version), None, "prompts/list")
        return self._bounded(prompt)

    @override
    async def list_resources(self) -> Sequence[Resource]:
        short = self._short
        return await self._guard(super().list_resources(), [], "resources/list", short=short)

    @override
    async def get_resource(self, uri: str, version: VersionSpec | None = None) -> Resource | None:
        resource = await self._guard(super().get_resource(uri, version), None, "resources/list")
        return self._bounded(resource)

    @override
    async def list_resource_templates(self) -> Sequence[ResourceTemplate]:
        listed = super().list_resource_templates()
        short = self._short
        return await self._guard(listed, [], "resources/templates/list", short=short)

    @override
    async def get_resource_template(
        self, uri: str, version: VersionSpec | None = None
    ) -> ResourceTemplate | None:
        template = await self._guard(
            super().get_resource_template(uri, version), None, "resources/templates/list"
        )
        return self._bounded(template)


def _reason(provider: UpstreamProvider, error: Exception, what: str) -> str:
    """Why ``provider``'s upstream failed, recorded in its health (logged once, not per
    request)."""
    health, label = provider.health, provider.label
    if isinstance(error, BackingOff):
        # Reported when the back-off began: the same reason, and no line of its own.
        if not error.whole:  # this client's headers' own failure, never another client's
            return _own_reason(error, what, provider.list_limit, health)
        known = health.unavailable.get(label)
        if known is not None:
            health.missed(label)
            return known
    scope = provider.listings.current_scope()
    _doubt(provider, error, scope)
    return health.failed(label, error, scope=scope)


def _answered_call(provider: UpstreamProvider) -> None:
    """``provider``'s upstream answered a client's call, prompt get or resource read: if it
    was failing, it is back (said once), and its listings are asked again."""
    if provider.probe is not None:
        provider.probe.answered()
    scope = provider.listings.current_scope()
    if provider.health.failing(provider.label, scope):
        _heard(provider, None, scope)


def _unreachable(provider: UpstreamProvider, error: BaseException) -> str | None:
    """The reason, when a call's ``error`` says ``provider``'s upstream could not be reached
    (then recorded as a failed handshake is: logged once, its listings backed off), else None."""
    scope = provider.listings.current_scope()
    if not isinstance(error, Exception) or heard(error, scope) != "silence":
        return None
    return _heard(provider, error, scope)


class _ShortWait:
    """How long a listing that can do without an upstream still waits for it: what is left of
    ``SHORT_WAIT`` since a listing of it began to wait and was not answered (the kinds a
    request lists one after another share one wait)."""

    def __init__(self) -> None:
        self._since: float | None = None

    def left(self, longest: float) -> float:
        """Seconds to wait now, at most ``longest`` (a moment at least: a kept listing
        answers within it)."""
        now = asyncio.get_running_loop().time()
        if self._since is None:
            self._since = now
        return min(max(self._since + SHORT_WAIT - now, _MOMENT), longest)

    def over(self) -> None:
        """A listing was answered, or failed: the next wait is whole."""
        self._since = None

    async def within(self, pending: Awaitable[_T], limit: float, what: str, *, short: bool) -> Any:
        """``pending``'s result; ``UpstreamTimeout`` after ``limit``; ``short``: ``_WENT_ON``
        once what is left of ``SHORT_WAIT`` is over (``pending`` goes on, shared)."""
        whole = limit + _GRACE
        wait = self.left(whole) if short else whole
        waited = asyncio.timeout(wait)
        try:
            async with waited:
                return await pending
        except TimeoutError:
            if short and waited.expired() and wait < whole:
                return _WENT_ON
            raise UpstreamTimeout(what, limit, "connect_timeout + list_timeout") from None
        finally:
            if not (short and waited.expired()):
                self.over()


class _Instructions:
    """An upstream's instructions, read once per scope (``listings.scope``: an upstream may
    say different things to different headers), the most recently read last; a read that a
    handshake stops waiting for goes on, kept when done."""

    def __init__(self) -> None:
        self.kept: OrderedDict[str, str | None] = OrderedDict()
        self._reading: dict[str, asyncio.Future[str | None]] = {}

    async def read(self, scope: str, read: Callable[[], Awaitable[Any]]) -> str | None:
        """``scope``'s instructions, waited for ``SHORT_WAIT`` at most (None meanwhile)."""
        reading = self._reading.get(scope)
        if reading is None:
            reading = asyncio.ensure_future(self._read_and_keep(scope, read))
            self._reading[scope] = reading
        try:
            # Shielded: the read goes on after this handshake stops waiting.
            return await asyncio.wait_for(asyncio.shield(reading), SHORT_WAIT)
        except TimeoutError:
            return None

    async def _read_and_keep(self, scope: str, read: Callable[[], Awaitable[Any]]) -> str | None:
        try:
            text = await read()
        finally:
            self._reading.pop(scope, None)
        if text is _UNREAD:
            return None
        keep_recent(self.kept, scope, text)
        return cast("str | None", text)


def _doubt(provider: UpstreamProvider, error: BaseException, scope: str) -> None:
    """A request with ``scope``'s headers was not answered (a stall, a reset): whether its
    headers or the upstream is to blame, ``provider.probe`` asks the upstream without them."""
    if provider.probe is not None and heard(error, scope) == "unanswered":
        provider.probe.start(provider)


async def _read_instructions(provider: UpstreamProvider, scope: str) -> Any:
    """The instructions ``provider``'s upstream gives ``scope`` when connected to
    (``_UNREAD`` when it could not be, recorded in its health and listings' news)."""
    text, failure = await _initialize(provider.client_factory, provider.timeouts.connect)
    _heard(provider, failure, scope)
    return _UNREAD if failure is not None else text


def _heard(provider: UpstreamProvider, failure: Exception | None, scope: str) -> str | None:
    """Record what a request other than a listing (a handshake, a call) heard of
    ``provider``'s upstream with ``scope``'s headers: an answer (``failure`` None) or a failure,
    whose reason is returned."""
    told = "answer" if failure is None else heard(failure, scope)
    if told == "answer":
        provider.listings.heard_outside(None)  # it answered: news a probe begun before lacks
    elif told == "silence":
        provider.listings.heard_outside(failure)
    if failure is None:
        provider.health.answered(provider.label, scope)
        return None
    _doubt(provider, failure, scope)
    return provider.health.failed(provider.label, failure, scope=scope)


async def _initialize(
    factory: ClientFactoryT, connect: float
) -> tuple[str | None, Exception | None]:
    """Connect to an upstream through ``factory`` (with this request's headers, if any)
    within ``connect`` seconds: its instructions, or why it could not be connected to."""
    try:
        async with asyncio.timeout(connect):
            made = factory()
            client = await made if inspect.isawaitable(made) else made
            async with client:
                return client.instructions, None
    except TimeoutError:
        return None, UpstreamTimeout("initialize", connect, "connect_timeout")
    except Exception as error:
        return None, error


class Probe:
    """Asks an upstream, with no client's headers, whether it answers anyone.

    A request that carried a client's headers and was reset or never answered may be
    that client's doing (a header the upstream will not read) or the upstream's (down
    for everyone). ``factory`` connects in a context of its own (no client request, so
    no client's headers forwarded; relaying nothing to any client), in the background,
    one at a time: no answer there is the upstream's, recorded for everyone (its back-off,
    ``unavailable`` in the log and for every handshake), and the next client's unanswered
    request once that back-off ends asks again; an answer ends a back-off, and no client's
    request starts a probe for ``_QUIET_AFTER_AN_ANSWER`` seconds after it (one client cannot
    make the gateway ask a healthy upstream more often). Only the newest news counts, and a
    call, prompt get or resource read the upstream answered while the probe was on its way
    is news that its silence yields to (the upstream answers someone).

    Example:
        ```python
        provider.probe = Probe(client_factory(transport, None, relay=False))
        ```
    """

    def __init__(self, factory: ClientFactoryT) -> None:
        self.factory = factory
        self._running: asyncio.Task[None] | None = None
        # Until when a client's unanswered request is its own doing without asking: the last
        # probe was answered. One that was not leaves the upstream backed off, and a failure
        # after that back-off is worth a probe again (the back-off paces them).
        self._quiet_until = -math.inf
        # Requests the upstream answered a client (calls, gets, reads): a probe that heard
        # nothing while this moved says nothing of the upstream.
        self._answers = 0

    def answered(self) -> None:
        """The upstream answered a client's call, prompt get or resource read."""
        self._answers += 1

    def start(self, provider: UpstreamProvider) -> None:
        """Ask ``provider``'s upstream in the background, unless a probe runs, or the last
        one was answered lately."""
        if self._running is not None and not self._running.done():
            return
        if provider.listings.clock() < self._quiet_until or provider.health.closing:
            return
        # A new context: FastMCP's proxy forwards the headers of the request in its context.
        self._running = asyncio.get_running_loop().create_task(
            self._run(provider), context=contextvars.Context()
        )

    def stop(self) -> None:
        """Cancel a probe on its way (the proxy stops): its outcome is no news."""
        if self._running is not None:
            self._running.cancel()

    async def _run(self, provider: UpstreamProvider) -> None:
        news, answers = provider.listings.news, self._answers
        _text, failure = await _initialize(self.factory, provider.timeouts.connect)
        silence = failure if failure is not None and heard(failure) != "answer" else None
        if silence is not None and self._answers != answers:
            return  # the upstream answered a client meanwhile: this silence is no news
        if silence is None:
            self._quiet_until = provider.listings.clock() + _QUIET_AFTER_AN_ANSWER
        if provider.health.closing or not provider.listings.heard_unasked(news, silence):
            return  # stopping, or newer news of the upstream came meanwhile
        if silence is None:
            provider.health.answered(provider.label)
        else:
            provider.health.failed(provider.label, silence)


_QUIET_AFTER_AN_ANSWER = 10.0
"""Seconds after a probe was answered in which clients' unanswered requests start none."""


def _own_reason(backing_off: BackingOff, what: str, limit: float, health: UpstreamHealth) -> str:
    """The reason a scope's back-off began, in the words its first failure was told."""
    cause = backing_off.__cause__
    if isinstance(cause, TimeoutError):
        return str(UpstreamTimeout(what, limit, "connect_timeout + list_timeout"))
    return health.reason_of(cause or backing_off)


class _Served:
    """The tools and prompts an upstream last served each scope (``Listings.scope``), as the
    proxy names them: what ``UpstreamProvider.shown`` judges.

    Only each scope's latest listing, of the ``MOST_KEPT`` most recently served scopes: an
    upstream renaming its tools, or clients sending new headers, cannot grow it.
    """

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, str], tuple[FastMCPComponent, ...]] = OrderedDict()

    def keep(self, kind: str, scope: str, components: Sequence[FastMCPComponent]) -> None:
        keep_recent(self._kept, (kind, scope), tuple(components), 2 * MOST_KEPT)

    def get(self, scope: str) -> list[FastMCPComponent] | None:
        """What ``scope`` was last served; None when it was never served anything."""
        kept = [self._kept.get((kind, scope)) for kind in ("tool", "prompt")]
        if all(listed is None for listed in kept):
            return None
        return [c for listed in kept for c in listed or ()]


def _bookkeeping() -> bool:
    """Whether this lookup is the package's own, made inside a client's request.

    Inside ``unrestricted()`` or a ``set_aside`` block the policy shows everything, so
    whether this client may see an upstream cannot be told there; nor did the client ask
    for the upstream. A failing upstream then contributes nothing to the lookup (with
    ``"raise"`` too): its failure reaches a client only through that client's own request,
    judged by its own policy. Outside a request (the operator's code, ``check``) every
    failure is still raised.

    Example:
        ```python
        with unrestricted():
            assert _bookkeeping() == (current_request() is not None)
        ```
    """
    scope = current_scope()
    return current_request() is not None and (scope.unrestricted or scope.set_aside is not None)


def _unavailable(label: str, reason: str, retry_in: float | None) -> str:
    """What a client whose request needs a failing upstream is told, and when it is asked."""
    message = f"upstream {label!r} is unavailable: {reason}"
    if retry_in is None:
        return message
    return f"{message}; the gateway asks it again {how_soon(retry_in)}"


class UpstreamInstructions(Announces):
    """Put each upstream's instructions in the handshake result, before the stack's own.

    The result's existing instructions (the configured ``instructions``) come
    first, then each upstream's: as-is with one upstream, under a ``## label``
    heading with several. Added last, so the package's middlewares append their
    paragraphs (search, progressive disclosure) after these, in both eras.

    Example:
        ```python
        server.add_middleware(UpstreamInstructions(providers))
        ```
    """

    def __init__(self, upstreams: Sequence[UpstreamProvider]) -> None:
        self.upstreams = list(upstreams)

    @override
    async def announced(self, context: MiddlewareContext[Any], result: _R) -> _R:
        if not isinstance(result, mt.InitializeResult | mt.DiscoverResult):
            return result  # a result FastMCP answered as a plain mapping
        # Read beside the listings that say who is shown: the handshake waits SHORT_WAIT once.
        reads = asyncio.gather(*(u.instructions() for u in self.upstreams))
        shown = await self._shown()
        read = dict(zip(self.upstreams, await reads, strict=True))
        upstreams = [u for u in self.upstreams if u in shown]
        texts = [read[u] for u in upstreams]
        sections: list[str]
        if len(self.upstreams) == 1:
            sections = [t for t in texts if t]
        else:
            sections = [f"## {u.label}\n\n{t}" for u, t in zip(upstreams, texts, strict=True) if t]
        if not sections:
            return result
        text = "\n\n".join([result.instructions, *sections] if result.instructions else sections)
        return cast("_R", result.model_copy(update={"instructions": text}))

    async def _shown(self) -> list[UpstreamProvider]:
        """The upstreams this client may see any tool or prompt of: only their instructions."""
        judged = [u for u in self.upstreams if u.audience is not None]
        # What each upstream serves now (its kept listings answer at once). The handshake
        # must succeed whatever an upstream does: one that cannot be listed is not shown.
        failures = await asyncio.gather(*(u.refresh() for u in judged), return_exceptions=True)
        for failure in failures:
            if failure is not None:
                logger.debug("could not list an upstream for the instructions: %s", failure)
        return [u for u in self.upstreams if await u.shown()]

"""What each upstream listed, kept until it says the list changed (or ``list_ttl`` passes).

Every client's listing through the gateway asks each upstream for its tools,
prompts, resources and templates; ``Listings`` keeps an upstream's latest
answers so a gateway listing costs about one upstream listing, not one per
upstream. A kind is listed again when the upstream sends its
``notifications/*/list_changed`` (``NoticesChanges`` puts the hook in the
upstream's connection) or after ``list_ttl`` seconds, for upstreams that never
notify. What is kept is what the upstream lists to the gateway, before any
client's policy: each client's request is still judged on its own. A listing
the upstream did not answer at all (``unanswered``: a timeout, a refused or
dropped connection, a process gone) is kept too, as a back-off: for
``backoff`` seconds, doubled on each such failure in a row up to
``backoff_max``, the upstream is not asked again and each request fails at once
(``BackingOff``), so a dead upstream costs one wait per back-off, not one per
request. An error the upstream answered (an HTTP status, a JSON-RPC error)
fails its own request only: it may answer one client's token and not another's.
Nor does a failure one client may have caused: when the listing carries a
client's forwarded headers (``forwarded``), only a connection that could not be
made counts as no answer (``unanswered(error, forwarded=True)``), and each
listing is kept for the headers it was asked with (``scope``): an upstream may
list by token, and what one client's token lists is not another client's.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import OrderedDict
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from fastmcp_filtering.core.errors import OptionError, UpstreamError
from fastmcp_filtering.gateway.upstreams.failures import Garbled, unanswered, unsendable

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

    from mcp.client.session import ClientSession

KINDS = ("tool", "prompt", "resource", "template")
# Which kept listings each notification makes stale (templates change with resources).
_STALE_AFTER = {
    "notifications/tools/list_changed": ("tool",),
    "notifications/prompts/list_changed": ("prompt",),
    "notifications/resources/list_changed": ("resource", "template"),
}

MOST_KEPT = 256
"""Listings kept at most, over every scope: a gateway whose clients forward many different
headers keeps the most recently used (memory stays bounded whoever connects)."""

LONGEST_BACKOFF = 86400.0
"""A day: the longest ``backoff`` or ``backoff_max`` taken, in seconds."""


_T = TypeVar("_T")
_K = TypeVar("_K")
_V = TypeVar("_V")

logger = logging.getLogger("fastmcp_filtering")


def keep_recent(kept: OrderedDict[_K, _V], key: _K, value: _V, most: int | None = None) -> bool:
    """Keep ``value`` under ``key`` as the most recently used; let the least recently used go
    past ``most`` (default ``MOST_KEPT``). Returns whether any went.

    Example:
        ```python
        keep_recent(self._kept, ("tool", scope), (now, listed))
        ```
    """
    kept[key] = value
    kept.move_to_end(key)
    limit = MOST_KEPT if most is None else most
    let_go = False
    while len(kept) > limit:
        kept.popitem(last=False)
        let_go = True
    return let_go


def how_soon(seconds: float) -> str:
    """When something ``seconds`` away happens, in words: whole seconds, rounded up.

    Example:
        ```python
        how_soon(3.2)  # "in 4 s"
        how_soon(0.3)  # "in under a second"
        ```
    """
    return "in under a second" if seconds < 1 else f"in {math.ceil(seconds)} s"


def changed_kinds(message: object) -> tuple[str, ...]:
    """The listing kinds an upstream's message says changed (none for any other message).

    Example:
        ```python
        changed_kinds(mt.ToolListChangedNotification())  # ("tool",)
        ```
    """
    # The MCP SDK 1.x wraps each notification in a ``root``; 2.x hands it over bare.
    notification = getattr(message, "root", message)
    method = getattr(notification, "method", None)
    return _STALE_AFTER.get(method, ()) if isinstance(method, str) else ()


class BackingOff(UpstreamError):
    """A listing not asked: the upstream did not answer lately and is left alone ``retry_in`` s.

    Its ``__cause__`` is the failure that started (or last extended) the back-off,
    so ``describe_failure`` gives the same reason the failure itself gave.

    Example:
        ```python
        try:
            tools = await listings.get("tool", fetch_tools, give_up_after=60)
        except BackingOff as backing_off:
            print(f"asked again in {backing_off.retry_in:.1f} s")
        ```
    """

    def __init__(self, retry_in: float, *, whole: bool = True) -> None:
        super().__init__(f"did not answer lately; asked again {how_soon(retry_in)}")
        self.retry_in = retry_in
        self.whole = whole
        """Whether the whole upstream is left alone; False: only this request's scope (its
        headers' own failure)."""


class _BackOff:
    """A run of listings in a row that were not answered: the latest failure, and until when
    not to ask again.

    Only the newest news counts: an outcome of a listing that began (at ``news``) before
    another outcome was recorded changes nothing.
    """

    __slots__ = ("delay", "failure", "news", "retry_at")

    def __init__(self) -> None:
        self.news = 0
        self.failure: Exception | None = None
        self.delay = 0.0
        self.retry_at: float | None = None

    def heard(self, news: int, silence: Exception | None, listings: Listings) -> None:
        """Record a listing begun at ``news``: answered (``silence`` None) or not.

        No answer starts the back-off, or doubles it (up to ``listings.backoff_max``); an
        answer ends it. Listings that failed together are one failure, one doubling.
        """
        if news != self.news:
            return
        self.news += 1
        self.record(silence, listings)

    def record(self, silence: Exception | None, listings: Listings) -> None:
        """Record an outcome whose news the caller has judged new: ends or extends the run."""
        if silence is None:
            self.failure, self.delay, self.retry_at = None, 0.0, None
            return
        self.failure = silence
        self.delay = min(self.delay * 2, listings.backoff_max) if self.delay else listings.backoff
        if self.delay > 0:
            self.retry_at = listings.clock() + self.delay

    def retry_in(self, now: float) -> float | None:
        """Seconds until the next listing may ask; None when it may now."""
        left = None if self.retry_at is None else self.retry_at - now
        return left if left is not None and left > 0 else None

    def end(self) -> None:
        """The upstream spoke: whatever failed, it is worth asking now (and older news is old)."""
        self.news += 1
        self.failure, self.delay, self.retry_at = None, 0.0, None


class Listings:
    """One upstream's latest listings by kind, each kept ``seconds`` or until forgotten.

    Concurrent requests for a listing that is not kept share one request to
    the upstream, which gives up after the ``give_up_after`` seconds each ``get`` is given.
    One entry per kind (and scope, below), so memory is bounded by what the upstream lists. A
    listing the upstream did not answer (``unanswered``: ``give_up_after``
    passing, a refused or dropped connection, a process gone) starts a back-off
    for the whole upstream: for ``backoff`` seconds a ``get`` that would ask it
    raises ``BackingOff`` at once instead (kept listings are still answered);
    each such failure in a row doubles the wait, up to ``backoff_max``. A listing
    the upstream answered, even with an error, or ``forget`` (the upstream said
    something changed) ends it: the upstream is alive. Only the newest news
    counts: a listing that began before another's outcome was recorded (or
    before a ``forget``) neither starts nor ends a back-off. ``backoff=0`` asks
    again on every request. ``clock`` is what ``seconds`` and the back-off are
    measured on. ``forwarded``: a listing carries the asking client's headers
    (an HTTP upstream behind a gateway without ``[auth]``), so only a connection
    that could not be made starts the upstream's back-off (``unanswered``), never
    ``give_up_after`` passing: that client may have made the upstream stall.
    ``scope``: called in each ``get``, it names whose listing this is (a digest
    of the headers the listing will carry); a listing is kept, and shared with
    concurrent callers, within its scope only, the ``MOST_KEPT`` most recently used.
    With ``forwarded`` and a ``scope``, a failure the headers may have caused (a
    reset, a dropped connection, ``give_up_after`` passing) backs off that scope
    alone (the ``MOST_KEPT`` most recently heard of), so a client whose headers
    break the upstream, or each client of an upstream that accepts and then
    stalls, waits once per back-off; the newest news counts there too.

    Example:
        ```python
        listings = Listings(seconds=60, backoff=1, backoff_max=30)
        tools = await listings.get("tool", fetch_tools, give_up_after=60)
        listings.forget(("tool",))  # the upstream said its tools changed
        ```
    """

    def __init__(
        self,
        *,
        seconds: float,
        backoff: float = 1.0,
        backoff_max: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        forwarded: bool = False,
        scope: Callable[[], str] | None = None,
    ) -> None:
        _check_times(seconds, backoff, backoff_max)
        self.forwarded = forwarded
        """Whether a listing carries a client's forwarded headers (set by the gateway)."""
        self.scope = scope
        """Whose listing a ``get`` asks for (set by the gateway with ``forwarded``); None: one
        listing for everyone."""
        self.seconds = seconds
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.clock = clock
        # Keyed by (kind, scope); the least recently used go first.
        self._kept: OrderedDict[tuple[str, str], tuple[float, Sequence[Any]]] = OrderedDict()
        self._pending: dict[tuple[str, str], asyncio.Future[Sequence[Any]]] = {}
        self._generation = dict.fromkeys(KINDS, 0)
        self._upstream = _BackOff()
        # Each scope's own (its ``news``: the tick of its latest outcome), most recent last.
        self._scoped: OrderedDict[str, _BackOff] = OrderedDict()
        # Outcomes recorded for any scope so far; the tick of the latest forget and of the
        # latest scope let go: a listing begun before either cannot tell what its scope heard.
        self._tick = self._forgot = self._evicted = 0
        self.garbled = Garbled.watch()
        """Told when the upstream sent what its MCP SDK cannot parse: listings on their way
        fail at once (the upstream is broken now, not slow)."""

    @property
    def news(self) -> int:
        """The upstream's latest news, for ``heard_unasked``."""
        return self._upstream.news

    def heard_outside(self, silence: Exception | None) -> None:
        """Record what a request other than a listing heard of the upstream (a handshake),
        as the newest news: no answer (``silence``) starts or extends the back-off, an answer
        ends it."""
        self._upstream.heard(self._upstream.news, silence, self)

    def heard_unasked(self, news: int, silence: Exception | None) -> bool:
        """Record what asking the upstream without any client's headers found, asked when its
        latest news was ``news``: no answer (``silence``) starts or extends the back-off for
        everyone, an answer ends it. Returns whether it counted (no newer news came).
        """
        if news != self._upstream.news:
            return False
        self._upstream.heard(news, silence, self)
        return True

    def current_scope(self) -> str:
        """Whose listings this request's are: ``scope()``, or "" (everyone's) without one."""
        return "" if self.scope is None else self.scope()

    def _backoffs(self) -> list[_BackOff]:
        """The back-offs this request's listing is under: the upstream's, then its scope's."""
        scoped = self._scoped.get(self.current_scope()) if self._scoped else None
        return [self._upstream] if scoped is None else [self._upstream, scoped]

    @property
    def failing(self) -> bool:
        """Whether the latest news of the upstream (for this request's scope) is a listing it
        did not answer."""
        return any(backing.failure is not None for backing in self._backoffs())

    def retry_in(self) -> float | None:
        """Seconds until the upstream is asked again for this request; None when the next
        request asks it."""
        now = self.clock()
        waits = [w for backing in self._backoffs() if (w := backing.retry_in(now)) is not None]
        return max(waits) if waits else None

    async def get(
        self, kind: str, fetch: Callable[[], Awaitable[Sequence[_T]]], *, give_up_after: float
    ) -> Sequence[_T]:
        """The kept listing of ``kind``, or ``fetch()``'s (shared with concurrent callers).

        Raises ``BackingOff`` instead of asking an upstream whose back-off runs.
        """
        key = (kind, self.current_scope())
        kept = self._kept.get(key)
        if kept is not None and self.clock() - kept[0] < self.seconds:
            self._kept.move_to_end(key)  # the least recently used go first
            return kept[1]
        pending = self._pending.get(key)
        if pending is None:
            now = self.clock()
            for backing in self._backoffs():
                retry_in = backing.retry_in(now)
                if retry_in is not None:
                    whole = backing is self._upstream
                    raise BackingOff(retry_in, whole=whole) from backing.failure
            pending = asyncio.ensure_future(self._fetch(key, fetch, give_up_after))
            self._pending[key] = pending
            pending.add_done_callback(partial(self._settled, key))
        # Shielded: one caller giving up must not cancel the others' listing.
        return await asyncio.shield(pending)

    async def _fetch(
        self,
        key: tuple[str, str],
        fetch: Callable[[], Awaitable[Sequence[_T]]],
        give_up_after: float,
    ) -> Sequence[_T]:
        kind, scope = key
        generation, news = self._generation[kind], self._upstream.news
        begun = self._tick
        try:
            async with asyncio.timeout(give_up_after):
                listed = await self.garbled.unless(fetch())
        except TimeoutError:
            silence = TimeoutError(f"did not answer within {give_up_after:g} s")
            # With a client's headers the stall may be that client's doing: its own back-off,
            # and no news of the upstream (asked without them: ``heard_unasked``).
            if self.forwarded:
                self._heard(None, None, scope, begun, silence)
            else:
                self._heard(news, silence, scope, begun, None)
            raise
        except Exception as error:
            if unanswered(error, forwarded=self.forwarded):
                self._heard(news, error, scope, begun, None)
            elif self.forwarded and (unsendable(error) or unanswered(error)):
                # Never sent, or reset after a client's headers: that client's headers back
                # off alone, and whether the upstream answers is not known from this.
                self._heard(None, None, scope, begun, error)
            else:
                self._heard(news, None, scope, begun, None)  # an answer, error or not
            raise
        self._heard(news, None, scope, begun, None)
        # A change announced while this listing was on its way makes it stale already.
        if generation == self._generation[kind] and self.seconds > 0:
            keep_recent(self._kept, key, (self.clock(), listed))
        return listed

    def _heard(
        self,
        news: int | None,
        silence: Exception | None,
        scope: str,
        begun: int,
        scope_silence: Exception | None,
    ) -> None:
        """Record a listing's outcome: for the upstream (``silence``: it did not answer; no
        ``news``: nothing of it was heard) and, with a ``scope`` function, for its scope
        (``scope_silence``: the scope's own failure).

        A scope's outcome counts only if the scope heard nothing since the listing began
        (``begun``, a tick): no other outcome, no forget, and it was not let go meanwhile.
        """
        if news is not None:
            self._upstream.heard(news, silence, self)
        if self.scope is None:
            return
        scoped = self._scoped.get(scope)
        latest = self._evicted if scoped is None else scoped.news
        if max(latest, self._forgot) > begun:
            return
        self._tick += 1
        scoped = scoped or _BackOff()
        scoped.news = self._tick
        scoped.record(scope_silence, self)
        if keep_recent(self._scoped, scope, scoped):
            self._evicted = self._tick

    def _settled(self, key: tuple[str, str], future: asyncio.Future[Sequence[Any]]) -> None:
        if self._pending.get(key) is future:
            del self._pending[key]
        if not future.cancelled():
            future.exception()  # retrieved: every caller may have given up already

    def forget(self, kinds: str | Sequence[str] = KINDS) -> None:
        """Drop the kept listings of ``kinds`` (one kind or several) and end any back-off.

        Every scope's listings go. The next request asks the upstream. A kind not in
        ``KINDS`` is a ``ValueError``.
        """
        chosen = (kinds,) if isinstance(kinds, str) else tuple(kinds)
        unknown = [kind for kind in chosen if kind not in KINDS]
        if unknown:
            raise OptionError(f"{unknown[0]!r} is not a kind of listing; give some of {KINDS}")
        for key in [key for key in self._kept if key[0] in chosen]:
            del self._kept[key]
        for key in [key for key in self._pending if key[0] in chosen]:
            del self._pending[key]
        for kind in chosen:
            self._generation[kind] += 1
        # The upstream spoke (a list_changed): whatever failed, it is worth asking now.
        self._upstream.end()
        self._scoped.clear()
        self._tick += 1
        self._forgot = self._tick


def _check_times(seconds: float, backoff: float, backoff_max: float) -> None:
    """Refuse a keeping time or back-off that is not a number of seconds, naming the fix."""
    _check_time("seconds", seconds, "a time to keep a listing", "0 (list on every request)", 60)
    left_alone = "a time to leave a failed upstream alone"
    _check_time("backoff", backoff, left_alone, "0 (ask it again on every request)", 1)
    _check_time("backoff_max", backoff_max, left_alone, "0 (with backoff=0)", 30)
    if backoff > 0 and not backoff_max >= backoff:
        raise OptionError(
            f"backoff_max={backoff_max!r} cannot cap backoff={backoff!r}; "
            "give a number of seconds at least backoff, such as 30"
        )
    for name, value in (("backoff", backoff), ("backoff_max", backoff_max)):
        if value > LONGEST_BACKOFF:
            raise OptionError(
                f"{name}={value!r} is longer than a day to leave a failed upstream alone; "
                f"give at most {LONGEST_BACKOFF:g} seconds, such as 30"
            )


def _check_time(name: str, value: object, what: str, zero: str, example: float) -> None:
    """Refuse ``value`` unless it is 0 or a finite positive number (not a bool), naming the fix."""
    # A bool is an int to Python, but True is no number of seconds.
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise OptionError(
            f"{name}={value!r} is not {what}; give {zero} or a positive number such as {example}"
        )


class NoticesChanges:
    """A client transport mixin: each session tells ``changed`` the listings the upstream
    says changed, then hands the message on to the client's own handler.

    Wraps the ``message_handler`` each session is opened with (a public argument of
    ``connect_session``), so it works for a kept-alive stdio session as for an
    HTTP session per request.

    Example:
        ```python
        class WatchedStdio(NoticesChanges, StdioTransport): ...
        transport.changed = listings.forget
        ```
    """

    changed: Callable[[Sequence[str]], None] | None = None
    garbled: Callable[[Exception], None] | None = None

    @asynccontextmanager
    async def connect_session(self, **session_kwargs: Any) -> AsyncIterator[ClientSession]:
        session_kwargs["message_handler"] = partial(
            _notice, self, session_kwargs.get("message_handler")
        )
        connect = super().connect_session  # type: ignore[misc]
        async with connect(**session_kwargs) as session:
            yield session


async def _notice(
    transport: NoticesChanges, handler: Callable[[Any], Awaitable[None]] | None, message: Any
) -> None:
    """Tell ``transport.changed`` what ``message`` makes stale (``transport.garbled`` that the
    SDK could not parse it), then run the client's handler."""
    if isinstance(message, Exception) and transport.garbled is not None:
        transport.garbled(message)
    kinds = changed_kinds(message)
    if kinds and transport.changed is not None:
        transport.changed(kinds)
    if handler is None:
        return
    try:
        await handler(message)
    except Exception as error:
        # Relaying is best effort: a notification that arrives while no client request is
        # running (init, check, a kept-alive upstream between requests) has no one to reach.
        logger.debug("an upstream's notification reached no client: %s", error)

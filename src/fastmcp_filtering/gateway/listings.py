"""What each upstream listed, kept until it says the list changed (or ``list_ttl`` passes).

Every client's listing through the gateway asks each upstream for its tools,
prompts, resources and templates; ``Listings`` keeps an upstream's latest
answers so a gateway listing costs about one upstream listing, not one per
upstream. A kind is listed again when the upstream sends its
``notifications/*/list_changed`` (``NoticesChanges`` puts the hook in the
upstream's connection) or after ``list_ttl`` seconds, for upstreams that never
notify. What is kept is what the upstream lists to the gateway, before any
client's policy: each client's request is still judged on its own. A failed
listing is kept too, as a back-off: for ``backoff`` seconds, doubled on each
failure in a row up to ``backoff_max``, the upstream is not asked again and
each request fails at once (``BackingOff``), so a dead upstream costs one wait
per back-off, not one per request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

    from mcp.client.session import ClientSession

__all__ = ["KINDS", "BackingOff", "Listings", "NoticesChanges", "changed_kinds"]

KINDS = ("tool", "prompt", "resource", "template")
# Which kept listings each notification makes stale (templates change with resources).
_STALE_AFTER = {
    "notifications/tools/list_changed": ("tool",),
    "notifications/prompts/list_changed": ("prompt",),
    "notifications/resources/list_changed": ("resource", "template"),
}

_T = TypeVar("_T")

logger = logging.getLogger("fastmcp_filtering")


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


class BackingOff(Exception):
    """A listing not asked: the upstream failed lately and is left alone ``retry_in`` seconds.

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

    def __init__(self, retry_in: float) -> None:
        super().__init__(f"failed lately; asked again in {retry_in:.1f} s")
        self.retry_in = retry_in


class Listings:
    """One upstream's latest listings by kind, each kept ``seconds`` or until forgotten.

    Concurrent requests for a listing that is not kept share one request to
    the upstream, which gives up after the ``give_up_after`` seconds each ``get`` is given.
    One entry per kind, so memory is bounded by what the upstream lists. A
    failed listing (an error or ``give_up_after`` passing) starts a back-off for
    the whole upstream: for ``backoff`` seconds a ``get`` that would ask it raises
    ``BackingOff`` at once instead (kept listings are still answered); each
    failure in a row doubles the wait, up to ``backoff_max``. A listing that
    succeeds, or ``forget`` (the upstream said something changed: it is alive),
    ends it. ``backoff=0`` asks again on every request. ``clock`` is what
    ``seconds`` and the back-off are measured on.

    Example:
        ```python
        listings = Listings(seconds=60, backoff=1, backoff_max=30)
        tools = await listings.get("tool", fetch_tools, give_up_after=60)
        listings.forget("tool")  # the upstream said its tools changed
        ```
    """

    def __init__(
        self,
        *,
        seconds: float,
        backoff: float = 1.0,
        backoff_max: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        _check_times(seconds, backoff, backoff_max)
        self.seconds = seconds
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.clock = clock
        self._kept: dict[str, tuple[float, Sequence[Any]]] = {}
        self._pending: dict[str, asyncio.Future[Sequence[Any]]] = {}
        self._generation = dict.fromkeys(KINDS, 0)
        self._failure: Exception | None = None
        self._failures = 0  # failures recorded so far: a listing's own is the first since it began
        self._delay = 0.0
        self._retry_at: float | None = None

    @property
    def failing(self) -> bool:
        """Whether the upstream's latest listing failed (none succeeded or was forgotten since)."""
        return self._failure is not None

    def retry_in(self) -> float | None:
        """Seconds until the upstream is asked again; None when the next request asks it."""
        if self._retry_at is None:
            return None
        left = self._retry_at - self.clock()
        return left if left > 0 else None

    async def get(
        self, kind: str, fetch: Callable[[], Awaitable[Sequence[_T]]], *, give_up_after: float
    ) -> Sequence[_T]:
        """The kept listing of ``kind``, or ``fetch()``'s (shared with concurrent callers).

        Raises ``BackingOff`` instead of asking an upstream whose back-off runs.
        """
        kept = self._kept.get(kind)
        if kept is not None and self.clock() - kept[0] < self.seconds:
            return kept[1]
        pending = self._pending.get(kind)
        if pending is None:
            retry_in = self.retry_in()
            if retry_in is not None:
                raise BackingOff(retry_in) from self._failure
            pending = asyncio.ensure_future(self._fetch(kind, fetch, give_up_after))
            self._pending[kind] = pending
            pending.add_done_callback(partial(self._settled, kind))
        # Shielded: one caller giving up must not cancel the others' listing.
        return await asyncio.shield(pending)

    async def _fetch(
        self, kind: str, fetch: Callable[[], Awaitable[Sequence[_T]]], give_up_after: float
    ) -> Sequence[_T]:
        generation, failures = self._generation[kind], self._failures
        try:
            async with asyncio.timeout(give_up_after):
                listed = await fetch()
        except TimeoutError:
            self._failed(TimeoutError(f"did not answer within {give_up_after:g} s"), failures)
            raise
        except Exception as error:
            self._failed(error, failures)
            raise
        self._failure, self._delay, self._retry_at = None, 0.0, None
        # A change announced while this listing was on its way makes it stale already.
        if generation == self._generation[kind] and self.seconds > 0:
            self._kept[kind] = (self.clock(), listed)
        return listed

    def _failed(self, error: Exception, failures_before: int) -> None:
        """Record a failed listing and start (or lengthen) the back-off."""
        self._failure = error
        # Listings that were on their way together failed together: one failure, one doubling.
        if failures_before == self._failures:
            self._failures += 1
            self._delay = min(self._delay * 2, self.backoff_max) if self._delay else self.backoff
        if self._delay > 0:
            self._retry_at = self.clock() + self._delay

    def _settled(self, kind: str, future: asyncio.Future[Sequence[Any]]) -> None:
        if self._pending.get(kind) is future:
            del self._pending[kind]
        if not future.cancelled():
            future.exception()  # retrieved: every caller may have given up already

    def forget(self, kinds: Sequence[str] = KINDS) -> None:
        """Drop the kept listings of ``kinds`` and end any back-off: the next request asks."""
        for kind in kinds:
            self._kept.pop(kind, None)
            self._pending.pop(kind, None)
            self._generation[kind] = self._generation.get(kind, 0) + 1
        # The upstream spoke (a list_changed): whatever failed, it is worth asking now.
        self._failure, self._delay, self._retry_at = None, 0.0, None


def _check_times(seconds: float, backoff: float, backoff_max: float) -> None:
    """Refuse a keeping time or back-off that is not a number of seconds, naming the fix."""
    infinite = float("inf")
    if not seconds >= 0 or seconds == infinite:
        raise ValueError(
            f"seconds={seconds!r} is not a time to keep a listing; "
            "give 0 (list on every request) or a positive number such as 60"
        )
    if not backoff >= 0 or backoff == infinite:
        raise ValueError(
            f"backoff={backoff!r} is not a time to leave a failed upstream alone; "
            "give 0 (ask it again on every request) or a positive number such as 1"
        )
    if backoff > 0 and (not backoff_max >= backoff or backoff_max == infinite):
        raise ValueError(
            f"backoff_max={backoff_max!r} cannot cap backoff={backoff!r}; "
            "give a number of seconds at least backoff, such as 30"
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
    """Tell ``transport.changed`` what ``message`` makes stale, then run the client's handler."""
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

"""What each upstream listed, kept until it says the list changed (or ``list_ttl`` passes).

Every client's listing through the gateway asks each upstream for its tools,
prompts, resources and templates; ``Listings`` keeps an upstream's latest
answers so a gateway listing costs about one upstream listing, not one per
upstream. A kind is listed again when the upstream sends its
``notifications/*/list_changed`` (``NoticesChanges`` puts the hook in the
upstream's connection) or after ``list_ttl`` seconds, for upstreams that never
notify. What is kept is what the upstream lists to the gateway, before any
client's policy: each client's request is still judged on its own.
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

__all__ = ["KINDS", "Listings", "NoticesChanges", "changed_kinds"]

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


class Listings:
    """One upstream's latest listings by kind, each kept ``seconds`` or until forgotten.

    Concurrent requests for a listing that is not kept share one request to
    the upstream, which gives up after the ``give_up_after`` seconds each ``get`` is given. A
    failed listing is not kept: the next request asks again. One entry per
    kind, so memory is bounded by what the upstream lists.

    Example:
        ```python
        listings = Listings(seconds=60)
        tools = await listings.get("tool", fetch_tools, give_up_after=60)
        listings.forget("tool")  # the upstream said its tools changed
        ```
    """

    def __init__(self, *, seconds: float) -> None:
        if not seconds >= 0 or seconds == float("inf"):
            raise ValueError(
                f"seconds={seconds!r} is not a time to keep a listing; "
                "give 0 (list on every request) or a positive number such as 60"
            )
        self.seconds = seconds
        self._kept: dict[str, tuple[float, Sequence[Any]]] = {}
        self._pending: dict[str, asyncio.Future[Sequence[Any]]] = {}
        self._generation = dict.fromkeys(KINDS, 0)

    async def get(
        self, kind: str, fetch: Callable[[], Awaitable[Sequence[_T]]], *, give_up_after: float
    ) -> Sequence[_T]:
        """The kept listing of ``kind``, or ``fetch()``'s (shared with concurrent callers)."""
        kept = self._kept.get(kind)
        if kept is not None and time.monotonic() - kept[0] < self.seconds:
            return kept[1]
        pending = self._pending.get(kind)
        if pending is None:
            pending = asyncio.ensure_future(self._fetch(kind, fetch, give_up_after))
            self._pending[kind] = pending
            pending.add_done_callback(partial(self._settled, kind))
        # Shielded: one caller giving up must not cancel the others' listing.
        return await asyncio.shield(pending)

    async def _fetch(
        self, kind: str, fetch: Callable[[], Awaitable[Sequence[_T]]], give_up_after: float
    ) -> Sequence[_T]:
        generation = self._generation[kind]
        async with asyncio.timeout(give_up_after):
            listed = await fetch()
        # A change announced while this listing was on its way makes it stale already.
        if generation == self._generation[kind] and self.seconds > 0:
            self._kept[kind] = (time.monotonic(), listed)
        return listed

    def _settled(self, kind: str, future: asyncio.Future[Sequence[Any]]) -> None:
        if self._pending.get(kind) is future:
            del self._pending[kind]
        if not future.cancelled():
            future.exception()  # retrieved: every caller may have given up already

    def forget(self, kinds: Sequence[str] = KINDS) -> None:
        """Drop the kept listings of ``kinds``: the next request asks the upstream."""
        for kind in kinds:
            self._kept.pop(kind, None)
            self._pending.pop(kind, None)
            self._generation[kind] = self._generation.get(kind, 0) + 1


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

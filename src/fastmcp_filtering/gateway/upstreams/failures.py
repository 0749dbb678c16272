"""What an upstream's failure was: no answer, no request sent, or an answer; and why, in words.

The gateway backs off an upstream that did not answer at all (``unanswered``), never one that
answered an error, which may be one client's doing. Failures are told apart by type where the
libraries give one (a refused socket, httpx2's ``ConnectError``, an HTTP status); the MCP SDK
gives a closed connection and its own timeout no type, only a code a peer may send too, so
``sdk_reason`` reads its words, the one place the package does. ``describe_failure`` says a
failure in one plain line for logs and clients, naming no Python class.

Example:
    ```python
    unanswered(httpx2.ConnectError("All connection attempts failed"))  # True: backed off
    describe_failure(RuntimeError("Client failed to connect: [Errno 111] ..."))
    ```
"""

from __future__ import annotations

import asyncio
import socket
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import httpx2
import mcp_types as mt
import pydantic
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.core.errors import UpstreamError

if TYPE_CHECKING:
    from collections.abc import Awaitable

_V = TypeVar("_V")


# FastMCP's wrappers around a transport failure, which repeat the root cause's text.
_WRAPPER_PREFIXES = ("Client failed to connect: ",)


# What a socket's failure is, in words: the libraries' own ("All connection attempts failed")
# hide it under a wrapper's text.
_SOCKET_WORDS: tuple[tuple[type[BaseException], str], ...] = (
    (ConnectionRefusedError, "connection refused"),
    (ConnectionResetError, "connection reset"),
    (socket.gaierror, "its host name does not resolve"),
)


def _socket_words(error: BaseException) -> str | None:
    """The plain words for the socket failure under ``error`` (its chain, as a traceback shows
    it), or None."""
    pending: list[BaseException] = [error]
    seen: set[int] = set()
    # Breadth first, each once: a cycle or a wide tree must not hang a request.
    while pending and len(seen) < 256:
        link = pending.pop(0)
        if id(link) in seen:
            continue
        seen.add(id(link))
        for kind, words in _SOCKET_WORDS:
            if isinstance(link, kind):
                return words
        if isinstance(link, BaseExceptionGroup):
            pending.extend(link.exceptions)
        # The cause, else the context it was raised in (httpcore maps errors from a context).
        under = link.__cause__ or link.__context__
        if under is not None:
            pending.append(under)
    return None


def describe_failure(error: BaseException) -> str:
    """The reason an upstream failed, one line: the root cause, not its wrappers; a socket's
    failure in plain words (``connection refused``).

    Example:
        ```python
        describe_failure(RuntimeError("Client failed to connect: [Errno 2] ..."))
        ```
    """
    words = _socket_words(error)
    if words is not None:
        return words
    root = error
    while root.__cause__ is not None:
        root = root.__cause__
    if isinstance(root, BaseExceptionGroup) and len(root.exceptions) == 1:
        return describe_failure(root.exceptions[0])
    text = str(root).strip()
    while text.startswith(_WRAPPER_PREFIXES):
        text = text.split(": ", 1)[1]
    return (text.splitlines()[0] if text else type(root).__name__)[:300]


# Failures in which the upstream did not answer: its process cannot start or is gone, its
# address refuses, resets or drops the connection, or time ran out. TimeoutError and every
# ConnectionError are OSErrors; httpx2 wraps them in the three of its own below. Its
# LocalProtocolError (a request this end could not send) is left out: one client's forwarded
# header may cause it.
class Garbled(UpstreamError):
    """The upstream sent a message its MCP SDK cannot parse (a schema nested past what a JSON
    parser reads, say): the request it answered never completes, so it is failed at once.

    ``Garbled.watch()`` makes the watcher a ``Listings`` keeps; ``heard(error)`` (the
    transport's ``garbled`` hook) fails what ``unless`` waits for.

    Example:
        ```python
        watcher = Garbled.watch()
        listed = await watcher.unless(fetch())  # raises Garbled once watcher.heard(error)
        ```
    """

    @staticmethod
    def watch() -> _GarbleWatch:
        return _GarbleWatch()


class _GarbleWatch:
    def __init__(self) -> None:
        self._next: asyncio.Future[str] | None = None

    def heard(self, error: Exception) -> None:
        """The upstream's SDK could not parse a message: each wait on its way fails."""
        if self._next is not None and not self._next.done():
            self._next.set_result(_parse_failure(error))
        self._next = None

    async def unless(self, pending: Awaitable[_V]) -> _V:
        """``pending``'s result, or ``Garbled`` as soon as ``heard`` is told (``pending``
        then cancelled: its answer will never come)."""
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        garbled = self._next
        task = asyncio.ensure_future(pending)
        try:
            either: set[asyncio.Future[Any]] = {task, garbled}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not task.done():
                task.cancel()
        if task.done() and not task.cancelled():
            return task.result()
        raise Garbled(f"sent a message its MCP SDK cannot parse ({garbled.result()})")


def _parse_failure(error: Exception) -> str:
    """What the SDK could not parse, in its parser's words (pydantic's first error: ``Invalid
    JSON: recursion limit exceeded at line 1 column 4025``), not the message's bytes."""
    if isinstance(error, pydantic.ValidationError) and error.errors():
        return str(error.errors()[0]["msg"])[:200]
    lines = str(error).strip().splitlines()
    return lines[0][:200] if lines else "an unreadable message"


_NO_ANSWER: tuple[type[BaseException], ...] = (
    Garbled,  # broken, not slow: backed off as silence is
    OSError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
    httpx2.NetworkError,
    httpx2.RemoteProtocolError,
    httpx2.TimeoutException,
)
# Failures before any request byte was sent (nothing could be connected to: refused, no such
# host, connect timed out): the only ones no client's forwarded headers can have caused.
# httpx2 wraps a refused connection or a DNS failure in its ConnectError.
_NOT_SENT: tuple[type[BaseException], ...] = (
    ConnectionRefusedError,
    socket.gaierror,
    httpx2.ConnectError,
    httpx2.ConnectTimeout,
)
# Raised while a request is built from its own bytes, before any is sent (a header value
# that is not ASCII, one h11 will not write): that request's doing, and no news of the
# upstream, answered or not.
_UNSENDABLE: tuple[type[BaseException], ...] = (UnicodeError, httpx2.LocalProtocolError)
# What the SDK raises when the connection closed before the answer came (a stdio upstream's
# process exited). A peer may send the same code with its own words, so the words count too.
_CLOSED = mt.ErrorData(code=mt.CONNECTION_CLOSED, message="Connection closed")


def unanswered(error: BaseException, *, forwarded: bool = False) -> bool:
    """Whether ``error`` says the upstream did not answer at all: the one failure backed off.

    Follows ``error``'s causes (FastMCP wraps a transport's failure in a
    ``RuntimeError``, then an ``MCPError``). Not answering is a timeout, a refused,
    reset or dropped connection, a command that cannot start, or the SDK's own
    ``Connection closed`` (a stdio upstream's process gone). Anything else is an
    answer, error or not: an HTTP status (401 to one client's forwarded token,
    500), a JSON-RPC error, a reply the SDK could not read, or a failure not
    known here. An upstream that answers is alive, and what it answered one
    request must not be what every other client gets.

    ``forwarded``: the listing carried a client's forwarded HTTP headers. Then
    only a connection that could not be made counts (refused, no such host, a
    connect timeout): a reset, a read error or timeout, a dropped or closed
    connection may be the upstream's (or a proxy's) answer to that client's
    bytes (a header too large to read), so it counts as an answer too.

    Example:
        ```python
        unanswered(httpx2.ConnectError("All connection attempts failed"))  # True
        unanswered(httpx2.ReadError("reset"))  # True
        unanswered(httpx2.ReadError("reset"), forwarded=True)  # False
        unanswered(MCPError(code=-32603, message="Server returned an error response"))  # False
        ```
    """
    link: BaseException | None = error
    innermost = error
    for _ in range(64):  # a cause chain is short; a cycle must not hang a request
        if link is None:
            break
        if isinstance(link, httpx2.HTTPStatusError):
            return False  # it answered, with a status
        if isinstance(link, _NOT_SENT):
            return True
        if isinstance(link, _NO_ANSWER):
            return not forwarded  # sent: what broke may be the client's bytes' doing
        if isinstance(link, BaseExceptionGroup):
            return all(unanswered(inner, forwarded=forwarded) for inner in link.exceptions)
        innermost, link = link, link.__cause__
    # Over HTTP (the only forwarding kind) a closed connection may follow a reset.
    closed = isinstance(innermost, MCPError) and sdk_reason(innermost) == "closed"
    return closed and not forwarded


def sdk_reason(error: MCPError) -> Literal["closed", "timed out"] | None:
    """What the MCP SDK itself said went wrong, when ``error`` is its own: ``"closed"`` (the
    connection closed before the answer), ``"timed out"`` (its request timeout); None for a
    peer's error, even one that carries the same code with its own words.

    The SDK gives these no type of their own, only a code a peer may send too: this is the
    one place the package reads the SDK's words.

    Example:
        ```python
        sdk_reason(MCPError(code=-32000, message="Connection closed"))  # "closed"
        sdk_reason(MCPError(code=-32001, message="Request 'tools/call' timed out"))  # "timed out"
        sdk_reason(MCPError(code=-32001, message="Not found: 'nope'"))  # None
        ```
    """
    if error.error == _CLOSED:
        return "closed"
    message = error.error.message
    if (
        error.error.code == mt.REQUEST_TIMEOUT
        and message.startswith("Request ")
        and message.endswith(" timed out")
    ):
        return "timed out"
    return None


def unsendable(error: BaseException) -> bool:
    """Whether ``error`` says the request could not be made from its own bytes: nothing was
    sent, so the upstream neither answered nor failed to (follows causes, as ``unanswered``).

    Example:
        ```python
        unsendable(UnicodeEncodeError("ascii", "caf\xe9", 3, 4, "not ASCII"))  # True
        unsendable(httpx2.ConnectError("refused"))  # False
        ```
    """
    link: BaseException | None = error
    for _ in range(64):  # a cause chain is short; a cycle must not hang a request
        if link is None:
            return False
        if isinstance(link, _UNSENDABLE):
            return True
        if isinstance(link, BaseExceptionGroup):
            return any(unsendable(inner) for inner in link.exceptions)
        link = link.__cause__
    return False

"""A stdio upstream the operator can follow: its exit and restart logged by name, its stderr
prefixed by its name and rate-limited.

FastMCP's ``StdioTransport`` starts the subprocess again, at the next request, when it has
exited, and passes its stderr through as it is: with several upstreams, a crash is then
silent, and a line such as ``Error: missing API key`` names no one. ``NamedStdio`` says both.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO, cast

if TYPE_CHECKING:
    from fastmcp.client.transports import StdioTransport

logger = logging.getLogger("fastmcp_filtering")

LINES_PER_SECOND = 20.0
"""Lines of one upstream's stderr passed on per second, after a burst of ``_BURST``: an
upstream that loops on an error must not drown the gateway's own log."""
_BURST = 200.0
_LONGEST_LINE = 2000


class StderrRelay:
    """One upstream's stderr, each line prefixed ``[label]``, passed on to ``sink`` (None:
    this process's stderr, as it is when written) at ``LINES_PER_SECOND`` at most.

    ``open()`` gives the file the subprocess writes to (a pipe, kept across restarts);
    ``close()`` lets the reader end once the subprocess has exited too.

    Example:
        ```python
        relay = StderrRelay("memory", None)
        transport.log_file = relay.open()
        ...
        await relay.close()
        ```
    """

    def __init__(self, label: str, sink: Path | TextIO | None) -> None:
        self.label = label
        self._sink = sink
        self._writer: TextIO | None = None
        self._reader: threading.Thread | None = None
        self._tokens = _BURST
        self._at = time.monotonic()
        self._left_out = 0

    def open(self) -> TextIO:
        """The write end of the pipe (made at the first call after ``close``)."""
        if self._writer is None:
            read_fd, write_fd = os.pipe()
            self._writer = cast("TextIO", os.fdopen(write_fd, "w", encoding="utf-8"))
            reader = os.fdopen(read_fd, "rb")
            # A thread, not a task: the pipe outlives any one event loop's requests.
            self._reader = threading.Thread(target=self._relay, args=(reader,), daemon=True)
            self._reader.start()
        return self._writer

    async def close(self, *, drain: float = 1.0) -> None:
        """Close this process's copy of the write end, then wait ``drain`` seconds at most
        for the reader to pass on what the exited subprocess wrote (``init`` reads the log
        next; a grandchild still holding the pipe is not waited for longer)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._reader is not None:
            await asyncio.to_thread(self._reader.join, drain)
            self._reader = None

    def _relay(self, reader: IO[bytes]) -> None:
        with reader:
            for raw in reader:
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")[:_LONGEST_LINE]
                if self._admit():
                    self._write(line)
        if self._left_out:
            self._write(f"... {self._left_out} more lines left out")
            self._left_out = 0

    def _admit(self) -> bool:
        """Whether a line may pass now; when it may after some were left out, say so first."""
        now = time.monotonic()
        self._tokens = min(_BURST, self._tokens + (now - self._at) * LINES_PER_SECOND)
        self._at = now
        if self._tokens < 1:
            self._left_out += 1
            return False
        self._tokens -= 1
        if self._left_out:
            left_out, self._left_out = self._left_out, 0
            self._write(f"... {left_out} lines left out (over {LINES_PER_SECOND:g} a second)")
        return True

    def _write(self, line: str) -> None:
        text = f"[{self.label}] {line}\n"
        try:
            if isinstance(self._sink, Path):
                with self._sink.open("a", encoding="utf-8") as sink:
                    sink.write(text)
                return
            sink_file = self._sink if self._sink is not None else sys.stderr
            sink_file.write(text)
            sink_file.flush()
        except (OSError, ValueError):
            pass  # the log is gone (closed at exit): nothing left to tell


class NamedStdio:
    """A ``StdioTransport`` mixin: logs, by ``label``, that its subprocess exited and is
    started again, and relays its stderr through ``relay`` (None: as FastMCP does).

    One line per exit of a process that was serving (its handshake done); none for one that
    exits before (the failed listing is logged, once, as an upstream that cannot start is):
    an upstream whose every start exits at once is not a line per request.

    Example:
        ```python
        class Upstream(NamedStdio, StdioTransport): ...
        transport.label, transport.relay = "memory", StderrRelay("memory", None)
        ```
    """

    label: str = "upstream"
    relay: StderrRelay | None = None
    _told_exit: Any = None
    _exit_unsaid: bool = False

    async def connect(self, **kwargs: Any) -> Any:
        self._note_exit()
        self._say_exit()
        if self.relay is not None:
            transport: StdioTransport = self  # type: ignore[assignment]
            transport.log_file = self.relay.open()
        try:
            return await super().connect(**kwargs)  # type: ignore[misc]
        finally:
            # FastMCP checks again under its lock, where the exit may first show.
            self._say_exit()

    async def disconnect(self) -> None:
        # FastMCP tears a dead connection down on more paths than the next connect (a client
        # whose connect was cancelled closes the transport): the exit is noted before it goes,
        # and said when the process is started again (never at shutdown, when it is not).
        self._note_exit()
        await super().disconnect()  # type: ignore[misc]

    def _note_exit(self) -> None:
        """Note, once per process, that a process which was serving has ended."""
        transport: StdioTransport = self  # type: ignore[assignment]
        task = transport._connect_task
        session = transport._session
        exited = (
            task is not None
            and task is not self._told_exit
            and session is not None
            # An SDK without the property: every exit is said.
            and getattr(session, "protocol_version", "") is not None
            and (task.done() or transport._is_session_dead())
        )
        if exited:
            self._told_exit = task  # said once, however many requests find it gone
            self._exit_unsaid = True

    def _say_exit(self) -> None:
        if self._exit_unsaid:
            self._exit_unsaid = False
            logger.warning("upstream %r exited (its process ended); starting it again", self.label)

    async def close(self) -> None:
        await super().close()  # type: ignore[misc]
        if self.relay is not None:
            await self.relay.close()

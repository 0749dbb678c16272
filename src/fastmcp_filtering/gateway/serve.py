"""Running the proxy from the command line: log levels, quiet upstreams, and a clean stop.

``configure_logs`` sets the package's and FastMCP's log level (``--log-level``,
``--quiet``); ``upstream_log`` is where the upstreams' stderr goes;
``serve_stdio`` and ``serve_http`` serve until SIGTERM or SIGINT (or, over
stdio, the end of stdin), then stop the stdio upstreams (close their stdin, then
terminate), so no upstream is left running or writing to a closed pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import warnings
from typing import TYPE_CHECKING, Any, TextIO

from typing_extensions import override

from fastmcp_filtering.gateway.upstreams.failures import describe_failure

if TYPE_CHECKING:
    from types import FrameType

    from fastmcp_filtering.gateway.proxy import _Proxy

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# The SDK gives a stdio upstream 2 s to exit once its stdin closes, then 2 s after SIGTERM.
_STOP_TIMEOUT = 10.0

logger = logging.getLogger("fastmcp_filtering")


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record is logged, one line each."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(levelname)s fastmcp-filtering: %(message)s"))

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


class _OneLine(logging.Filter):
    """Keeps a record's exception as its one-line reason: tracebacks are for DEBUG."""

    @override
    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            record.msg = f"{record.getMessage()}: {describe_failure(record.exc_info[1])}"
            record.args = None
            record.exc_info = record.exc_text = None
        return True


class _Others(_Stderr):
    """Every other library's records (the MCP SDK's, uvicorn's errors), one line each."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        # The package's own records have their handler; they propagate here too.
        self.addFilter(lambda record: not record.name.startswith("fastmcp_filtering"))
        self.addFilter(_OneLine())


def configure_logs(level: str | None, *, quiet: bool) -> str:
    """Log the package and FastMCP at ``level`` (default INFO, WARNING when quiet); returns it.

    The package's records go to stderr one line each (``WARNING fastmcp-filtering:
    ...``); below DEBUG, other libraries' warnings and errors that reach the root
    logger (the MCP SDK's, uvicorn's) are one line each too, their exception as
    its reason, no traceback. Quiet also silences Python warnings (FastMCP's deprecation notices),
    which say nothing an operator can act on.

    Example:
        ```python
        level = configure_logs(None, quiet=True)  # "WARNING"
        ```
    """
    chosen = level or ("WARNING" if quiet else "INFO")
    logger.handlers[:] = [h for h in logger.handlers if not isinstance(h, _Stderr)] + [_Stderr()]
    logger.setLevel(chosen)
    logging.getLogger("fastmcp").setLevel(chosen)
    root = logging.getLogger()
    root.handlers[:] = [h for h in root.handlers if not isinstance(h, _Others)]
    if chosen != "DEBUG":
        others = _Others()
        others.setLevel("WARNING")
        root.addHandler(others)
    if quiet:
        warnings.simplefilter("ignore")
    return chosen


def upstream_log(*, quiet: bool) -> TextIO | None:
    """Where stdio upstreams write their stderr: nowhere when quiet, else this process's stderr."""
    # Kept open for the life of the process: every upstream (re)start writes to it.
    return open(os.devnull, "w", encoding="utf-8") if quiet else None


def serve_stdio(proxy: _Proxy, *, log_level: str) -> None:
    """Serve ``proxy`` over stdio until stdin ends or a SIGTERM / SIGINT arrives.

    Example:
        ```python
        serve_stdio(_build(config), log_level="WARNING")
        ```
    """
    if asyncio.run(_serve(proxy, log_level)):
        # Stopped by a signal with the upstreams closed. The stdio server reads stdin
        # in a worker thread that only returns when a line or EOF arrives, and Python
        # waits for that thread at exit; nothing is left to clean up, so leave now.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


async def _serve(proxy: _Proxy, log_level: str) -> bool:
    """Serve; True when a signal stopped the server (its upstreams closed), False at EOF."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        # Not on Windows' event loop: there Python's own handling stays.
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stopping.set)
    serving = asyncio.ensure_future(
        proxy.server.run_async("stdio", show_banner=False, log_level=log_level)
    )
    stopped = asyncio.ensure_future(stopping.wait())
    await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if serving.done():
        stopped.cancel()
        serving.result()
        return False
    logger.info("stopping: closing the upstreams")
    try:
        await asyncio.wait_for(proxy.close(), _STOP_TIMEOUT)
    except TimeoutError:
        logger.warning("an upstream did not stop within %.0f s", _STOP_TIMEOUT)
    return True


def serve_http(proxy: _Proxy, **options: Any) -> None:
    """Serve ``proxy`` over streamable HTTP until SIGTERM / SIGINT, then close the upstreams.

    ``options`` are ``FastMCP.run``'s HTTP options (host, port, path, log_level).

    Example:
        ```python
        serve_http(_build(config), host="127.0.0.1", port=8000, path="/mcp")
        ```
    """

    def stop_quietly(_signum: int, _frame: FrameType | None) -> None:
        """Uvicorn stops on the signal, then raises it again for the previous handler."""

    # With Python's own handlers the repeated signal would end the process (SIGTERM) or
    # raise KeyboardInterrupt (SIGINT) before the server's lifespan closes the upstreams.
    previous = {s: signal.signal(s, stop_quietly) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        proxy.server.run(transport="http", show_banner=False, **options)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

"""The ``fastmcp-filtering`` command as a subprocess: served over HTTP or stdio."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from .._servers import free_port, wait_for_http
from ..conftest import ERAS
from .standin import EXAMPLE_CONFIG

CLI = [sys.executable, "-m", "fastmcp_filtering"]


# The subprocesses import the package under test, whatever is installed in the environment.
SRC = {"PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}


@contextmanager
def serve_http(
    config: Path = EXAMPLE_CONFIG, *flags: str
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``fastmcp-filtering serve --http`` on a free loopback port; yields its URL and process."""
    port = free_port()
    process = subprocess.Popen(
        [*CLI, "serve", str(config), "--http", "--port", str(port), *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **SRC},
    )
    try:
        wait_for_http(process, port)
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def proxy_client(config: Path, *flags: str, log: Path, era: str) -> Client[Any]:
    """A client of ``fastmcp-filtering serve CONFIG`` over stdio, its stderr written to ``log``."""
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "fastmcp_filtering", "serve", str(config), *flags],
        env=SRC,
        log_file=log,
        keep_alive=False,
    )
    return Client(transport, **ERAS[era])


def wait_gone(pid: int) -> None:
    """Return once process ``pid`` has exited; fail after 30 s."""
    deadline = time.monotonic() + 30
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        assert time.monotonic() < deadline, f"process {pid} still runs"
        time.sleep(0.05)

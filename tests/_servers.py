"""Run the example servers as real subprocesses, over streamable HTTP on loopback."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, NamedTuple

import httpx

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_SERVER = ROOT / "examples" / "github_server.py"


class RunningServer(NamedTuple):
    url: str
    pid: int


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_http(
    process: subprocess.Popen[bytes], port: int, log: IO[bytes] | None = None
) -> None:
    """Return once ``process`` answers HTTP on ``port``; raise with its log if it died."""
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            if log is not None:
                log.seek(0)
                output = log.read()
            else:
                output = process.stderr.read() if process.stderr else b""
            raise RuntimeError(f"server exited: {output.decode(errors='replace')[-2000:]}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise TimeoutError("server did not start within 30 s") from None
            time.sleep(0.1)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@contextmanager
def serve_http(script: Path, *args: str) -> Iterator[RunningServer]:
    """Start ``script --http --port N *args`` on a free loopback port; stop it afterwards."""
    # A file, not a pipe: under load the server's log would fill a pipe nobody reads and stall it.
    with tempfile.TemporaryFile() as log:
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, str(script), "--http", "--port", str(port), *args],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            wait_for_http(process, port, log)
            yield RunningServer(url=f"http://127.0.0.1:{port}/mcp", pid=process.pid)
        finally:
            stop(process)


@contextmanager
def http_server(*args: str) -> Iterator[str]:
    """The example server over streamable HTTP; yields its MCP URL."""
    with serve_http(EXAMPLE_SERVER, *args) as running:
        yield running.url

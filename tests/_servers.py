"""Run the example server as a real subprocess, over stdio or streamable HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_SERVER = ROOT / "examples" / "github_server.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_server(*args: str) -> Iterator[str]:
    """Start the example server over streamable HTTP on loopback; yield its MCP URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE_SERVER), "--http", "--port", str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited: {process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise TimeoutError("server did not start within 30 s") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()

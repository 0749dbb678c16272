"""Run ``examples/progressive_server.py`` (and ``redis-server``) as real subprocesses."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from ._servers import free_port, serve_http, stop

ROOT = Path(__file__).resolve().parents[1]
PROGRESSIVE_SERVER = ROOT / "examples" / "progressive_server.py"


@contextmanager
def progressive_http_server(*args: str) -> Iterator[str]:
    """Start the progressive example over streamable HTTP on loopback; yield its MCP URL."""
    with serve_http(PROGRESSIVE_SERVER, *args) as running:
        yield running.url


def redis_server_binary() -> str:
    """``redis-server``'s path; skips when absent, fails under CI (.ci/run installs it)."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("redis-server is not installed; .ci/run installs Debian's redis-server")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    return binary


@contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway ``redis-server`` on a free loopback port, no persistence; yield its URL."""
    binary = redis_server_binary()
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            if process.poll() is not None:
                raise RuntimeError("redis-server exited at startup")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("redis-server did not start within 15 s")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(process)


async def redis_keys(url: str, pattern: str) -> list[bytes]:
    """The keys of the Redis at ``url`` that match ``pattern``."""
    client = aioredis.Redis.from_url(url)
    try:
        return [key async for key in client.scan_iter(match=pattern)]
    finally:
        await client.aclose()

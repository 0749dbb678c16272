"""Test doubles for an upstream that fails: a fake clock, listings held or counted, an
in-memory upstream that goes down on cue, FastMCP's wrapping of its errors, and an HTTP
upstream (and a relay in front of one) that refuses or resets."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as mt
import pytest
from fastmcp import FastMCP
from fastmcp.client.transports import FastMCPTransport
from fastmcp.server.middleware import Middleware, MiddlewareContext
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.gateway import proxy as proxy_module
from fastmcp_filtering.gateway.upstreams.listings import NoticesChanges


def listings_asked(count: Path, method: str = "tools/list") -> int:
    """How many ``method`` listings the upstream counting in ``count`` was asked."""
    return count.read_text().splitlines().count(method) if count.exists() else 0


class Clock:
    """A monotonic clock that moves only when a test moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def through_fastmcp(error: BaseException) -> MCPError:
    """``error`` as FastMCP's proxy hands it over: in a ``RuntimeError``, in an ``MCPError``."""
    try:
        try:
            raise RuntimeError(f"Client failed to connect: {error}") from error
        except RuntimeError as wrapped:
            raise MCPError(code=mt.INTERNAL_ERROR, message=str(wrapped)) from wrapped
    except MCPError as proxied:
        return proxied


def answered_error(message: str, code: int = mt.INTERNAL_ERROR) -> MCPError:
    return MCPError(code=code, message=message)


class Gate:
    """A listing that waits for ``release()``, then answers ``["echo"]`` or raises ``outcome``."""

    def __init__(self, outcome: Exception | None = None) -> None:
        self.outcome = outcome
        self.released = asyncio.Event()
        self.asked = asyncio.Event()

    async def __call__(self) -> list[str]:
        self.asked.set()
        await self.released.wait()
        if self.outcome is not None:
            raise self.outcome
        return ["echo"]

    async def settle(self, waiting: asyncio.Task[Any]) -> None:
        self.released.set()
        await asyncio.gather(waiting, return_exceptions=True)


class Outage(Middleware):
    """An upstream that refuses connections while ``down`` (no answer: its process gone, its
    port closed) and answers each tool listing with a JSON-RPC error while ``erring``;
    ``asked`` counts the connections refused and the tool listings asked."""

    def __init__(self) -> None:
        self.down = False
        self.erring = False
        self.asked = 0

    async def on_list_tools(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        self.asked += 1
        if self.erring:
            raise MCPError(code=mt.INTERNAL_ERROR, message="backend down")
        return await call_next(context)


class _Memory(NoticesChanges, FastMCPTransport):
    """An in-memory upstream whose connections its ``outage`` may refuse."""

    outage: Outage | None = None

    @asynccontextmanager
    async def connect_session(self, **session_kwargs: Any) -> AsyncIterator[ClientSession]:
        if self.outage is not None and self.outage.down:
            self.outage.asked += 1
            raise ConnectionRefusedError("backend down")
        async with super().connect_session(**session_kwargs) as session:
            yield session


def flaky_upstream(outage: Outage) -> FastMCP:
    server = FastMCP("flaky")

    @server.tool
    def echo(text: str = "") -> str:
        """Say it back."""
        return text

    server.add_middleware(outage)
    return server


def in_memory(
    monkeypatch: pytest.MonkeyPatch, servers: dict[str, FastMCP], outage: Outage | None = None
) -> None:
    """Each configured upstream named in ``servers`` is reached in memory, "flaky" through
    ``outage``."""

    def transport(upstream: Any, **_: Any) -> Any:
        reached = _Memory(servers[upstream.label])
        reached.outage = outage if upstream.label == "flaky" else None
        return reached

    monkeypatch.setattr(proxy_module, "upstream_transport", transport)


def gateway_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "fastmcp_filtering"]


TENANT = '''"""An HTTP upstream that serves only the bearer token 'good' (401 to any other)."""
import argparse

from fastmcp import FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

mcp = FastMCP(
    "tenant",
    instructions="Say it back.",
    auth=StaticTokenVerifier(tokens={"good": {"client_id": "u", "scopes": []}}),
)


@mcp.tool
def echo(text: str = "") -> str:
    """Say it back."""
    return text


parser = argparse.ArgumentParser()
parser.add_argument("--http", action="store_true")
parser.add_argument("--port", type=int)
mcp.run(transport="http", port=parser.parse_args().port, show_banner=False)
'''


RESET_MARK = b"x-reset-me:"
"""The header whose request ``resetting`` answers with a reset (lower case, as sent upstream)."""


STALL_MARK = b"x-stall-me:"
"""The header whose request ``resetting`` never answers (it reads until the gateway gives up)."""


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy ``source`` to ``sink`` until either end closes."""
    try:
        while chunk := await source.read(65536):
            sink.write(chunk)
            await sink.drain()
    except ConnectionError:
        pass  # the other end went: the relay ends with it
    finally:
        sink.close()


@asynccontextmanager
async def resetting(url: str) -> AsyncIterator[str]:
    """A TCP relay in front of the upstream at ``url``; yields the URL that reaches it through.

    A connection whose first request carries ``X-Reset-Me`` is reset (an RST, nothing
    answered), as a server or a proxy in front of it may reset on a header it will not
    read (uvicorn on a 200 KB one); one that carries ``X-Stall-Me`` is never answered;
    every other connection is relayed byte for byte.
    """
    target = httpx2.URL(url)
    opened: list[asyncio.StreamWriter] = []

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        opened.append(writer)
        head = await reader.readuntil(b"\r\n\r\n")
        if RESET_MARK in head.lower():
            # Linger 0: closing sends a reset, as a server giving up on the request does.
            linger = struct.pack("ii", 1, 0)
            writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            writer.transport.abort()
            return
        if STALL_MARK in head.lower():
            await reader.read()  # never answered: until the gateway gives up and closes it
            return
        upstream_reader, upstream_writer = await asyncio.open_connection(target.host, target.port)
        opened.append(upstream_writer)
        upstream_writer.write(head)
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}{target.path}"
    finally:
        server.close()
        for writer in opened:  # a kept-alive connection would outlive the test otherwise
            writer.transport.abort()
        await server.wait_closed()

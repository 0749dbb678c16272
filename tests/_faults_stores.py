"""State stores that fail on demand, and a ``redis-server`` a test can kill and restart."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal, SupportsFloat

import pytest
from key_value.aio.protocols.key_value import AsyncKeyValue
from key_value.aio.stores.memory import MemoryStore
from key_value.aio.wrappers.base import BaseWrapper
from typing_extensions import override

from ._progressive_servers import redis_server_binary
from ._servers import free_port

OUR_PREFIX = "fastmcp-filtering:"

Fault = Literal["up", "raise", "hang"]


class StoreDown(ConnectionError):
    """What the faulty store raises while it is down."""


def outage_log(caplog: pytest.LogCaptureFixture, who: str) -> list[tuple[str, str]]:
    """What ``who`` (a layer's log prefix) logged at INFO and above, level and message."""
    return [
        (r.levelname, r.getMessage())
        for r in caplog.records
        if r.getMessage().startswith(f"{who}:") and r.levelno >= logging.INFO
    ]


class FaultyStore(BaseWrapper):
    """A store that works, raises, or hangs, for every key or only for this package's keys.

    ``only_ours=False`` is a store that is down for everyone: FastMCP reads the same
    store for its own per-session visibility rules, so FastMCP fails too.
    """

    def __init__(self, key_value: AsyncKeyValue | None = None, *, only_ours: bool = True) -> None:
        self.key_value = key_value if key_value is not None else MemoryStore()
        self.only_ours = only_ours
        self.fault: Fault = "up"
        self.failures = 0
        self._released = asyncio.Event()
        self.holding = asyncio.Event()
        """Set once an operation is waiting on the hung store."""
        super().__init__()

    def set(self, fault: Fault) -> None:
        self.fault = fault
        if fault == "hang":
            self._released = asyncio.Event()
        else:
            # Hung operations complete (and then succeed or fail as the store now does).
            self._released.set()

    async def _gate(self, key: str) -> None:
        if self.only_ours and not key.startswith(OUR_PREFIX):
            return
        if self.fault == "hang":
            self.failures += 1
            self.holding.set()
            await self._released.wait()
        if self.fault == "raise":
            self.failures += 1
            raise StoreDown("session state store is down")

    @override
    async def get(self, key: str, *, collection: str | None = None) -> dict[str, Any] | None:
        await self._gate(key)
        return await self.key_value.get(key=key, collection=collection)

    @override
    async def ttl(
        self, key: str, *, collection: str | None = None
    ) -> tuple[dict[str, Any] | None, float | None]:
        await self._gate(key)
        return await self.key_value.ttl(key=key, collection=collection)

    @override
    async def put(
        self,
        key: str,
        value: Mapping[str, Any],
        *,
        collection: str | None = None,
        ttl: SupportsFloat | None = None,
    ) -> None:
        await self._gate(key)
        await self.key_value.put(key=key, value=value, collection=collection, ttl=ttl)

    @override
    async def delete(self, key: str, *, collection: str | None = None) -> bool:
        await self._gate(key)
        return await self.key_value.delete(key=key, collection=collection)

    @override
    async def get_many(
        self, keys: Sequence[str], *, collection: str | None = None
    ) -> list[dict[str, Any] | None]:
        for key in keys:
            await self._gate(key)
        return await self.key_value.get_many(keys=keys, collection=collection)


class RedisProcess:
    """A throwaway ``redis-server`` on one loopback port that a test can kill and restart."""

    def __init__(self) -> None:
        self.binary = redis_server_binary()
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 15
        while True:
            if self.process.poll() is not None:
                raise RuntimeError("redis-server exited at startup")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("redis-server did not start within 15 s")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL, as a crash would: no shutdown, the data (kept in memory only) is lost."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None

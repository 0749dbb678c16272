"""Shared fixtures: every feature is exercised in both protocol eras."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from fastmcp import Client, FastMCP

ERAS = {"modern": {}, "legacy": {"mode": "legacy"}}
"""2026-07-28 (stateless, server/discover) is FastMCP's default; 2025-11-25 is "legacy"."""

Connect = Callable[..., Any]


@pytest.fixture(params=list(ERAS), ids=list(ERAS))
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def connect(era: str) -> Connect:
    """Open an in-memory ``Client`` on a server in the era under test."""

    @asynccontextmanager
    async def _connect(server: FastMCP, **kwargs: Any) -> AsyncIterator[Client[Any]]:
        async with Client(server, **ERAS[era], **kwargs) as client:
            yield client

    return _connect

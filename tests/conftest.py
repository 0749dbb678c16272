"""Shared fixtures: every feature is exercised in both protocol eras."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from fastmcp import Client, FastMCP

from fastmcp_filtering import install
from fastmcp_filtering._hooks import ListHooks

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


def use(server: FastMCP, *middlewares: Any) -> None:
    """Add middlewares in order: the package's through ``install``, others as FastMCP does."""
    for middleware in middlewares:
        if isinstance(middleware, ListHooks):
            install(server, middleware)
        else:
            server.add_middleware(middleware)

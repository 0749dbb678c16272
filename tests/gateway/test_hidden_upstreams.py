"""An upstream a client may not see contributes nothing to that client: not its instructions,
not its name, not its failure."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.utilities.tests import asgi_server
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.gateway.config import FilteringConfig
from fastmcp_filtering.gateway.proxy import build_proxy

from ..conftest import ERAS

MISBEHAVING = Path(__file__).parent / "misbehaving.py"
QUICK = {"connect_timeout": 5, "list_timeout": 5, "call_timeout": 5}


def proxy(*, payroll_args: tuple[str, ...] = (), on_error: str = "warn") -> Any:
    """A ``public`` upstream and a ``payroll`` one whose every tool is in a group only
    ``github:admin`` tokens may use, each with its own instructions."""
    payroll = ["--tools", "run_payroll", "--instructions", "PAYROLL-INTERNAL: ask Bob"]
    config = FilteringConfig.model_validate(
        {
            "upstreams": [
                {
                    "name": "public",
                    "namespace": "pub",
                    "command": sys.executable,
                    "args": [str(MISBEHAVING), "--tools", "echo", "--instructions", "Be nice."],
                    **QUICK,
                },
                {
                    "name": "payroll-secret",
                    "namespace": "pay",
                    "command": sys.executable,
                    "args": [str(MISBEHAVING), *payroll, *payroll_args],
                    # Asked on every listing: its failure shows at once, not after list_ttl.
                    "list_ttl": 0,
                    **QUICK,
                },
            ],
            "groups": [
                {"name": "payroll", "tools": ["pay_*"], "access": {"scopes": ["github:admin"]}}
            ],
            "on_upstream_error": on_error,
            "auth": {
                "type": "static",
                "tokens": [
                    {"token": "admin-token", "client_id": "admin", "scopes": ["github:admin"]},
                    {"token": "reader-token", "client_id": "reader", "scopes": []},
                ],
            },
        }
    )
    return build_proxy(config)


@asynccontextmanager
async def clients(server: Any, era: str, *who: str) -> AsyncIterator[list[Client[Any]]]:
    """A client per token name in ``who``, over streamable HTTP (tokens reach ``initialize``)."""
    async with asgi_server(server) as running, AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(running.client(**ERAS[era], auth=f"{w}-token"))
            for w in who
        ]


@pytest.mark.slow
@pytest.mark.parametrize("era", list(ERAS))
class TestHiddenUpstreams:
    async def test_its_instructions_reach_only_who_may_see_it(self, era: str) -> None:
        async with clients(proxy(), era, "reader", "admin") as (reader, admin):
            assert "Be nice." in (reader.instructions or "")
            assert "PAYROLL" not in (reader.instructions or "")
            assert "payroll-secret" not in (reader.instructions or "")
            assert "PAYROLL-INTERNAL: ask Bob" in (admin.instructions or "")

    async def test_its_failure_reaches_only_who_may_see_it(self, era: str, tmp_path: Path) -> None:
        """In ``raise`` mode: once it listed, a reader is served without it and never hears
        of it; an admin gets the error naming it."""
        down = tmp_path / "down"
        server = proxy(payroll_args=("--fail-when", str(down)), on_error="raise")
        async with clients(server, era, "admin", "reader") as (admin, reader):
            assert "pay_run_payroll" in {t.name for t in await admin.list_tools()}
            down.touch()
            with pytest.raises(MCPError, match="payroll-secret"):
                await admin.list_tools()
            assert {t.name for t in await reader.list_tools()} == {"pub_echo", "search_tools"}

    async def test_a_failure_never_seen_listing_names_nothing(self, era: str) -> None:
        """Dead from the start, nothing says who may see it: the error names no upstream."""
        server = proxy(payroll_args=("--exit",), on_error="raise")
        async with clients(server, era, "reader") as (reader,):
            with pytest.raises(MCPError) as failed:
                await reader.list_tools()
        assert "payroll" not in str(failed.value)
        assert "unavailable" in str(failed.value)

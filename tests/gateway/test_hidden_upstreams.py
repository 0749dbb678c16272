"""An upstream a client may not see contributes nothing to that client: not its instructions,
not its name, not its failure."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.utilities.tests import asgi_server
from mcp.shared.exceptions import MCPError
from mcp_types import TextContent

from fastmcp_filtering.gateway import proxy as proxy_module
from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.proxy import build_proxy

from .._support.backoff import Outage, _Memory
from ..conftest import ERAS

MISBEHAVING = Path(__file__).parent / "misbehaving.py"
QUICK = {"connect_timeout": 5, "list_timeout": 5, "call_timeout": 5}


def proxy(*, payroll_args: tuple[str, ...] = (), on_error: str = "warn", grow: bool = False) -> Any:
    """A ``public`` upstream and a ``payroll`` one whose every tool is in a group only
    ``github:admin`` tokens may use, each with its own instructions (``grow``: public's
    ``grow`` tool adds a tool)."""
    payroll = ["--tools", "run_payroll", "--instructions", "PAYROLL-INTERNAL: ask Bob"]
    config = FilteringConfig.model_validate(
        {
            "upstreams": [
                {
                    "name": "public",
                    "namespace": "pub",
                    "command": sys.executable,
                    "args": [
                        str(MISBEHAVING),
                        *("--tools", "echo", "--instructions", "Be nice."),
                        *(("--grow",) if grow else ()),
                    ],
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

    async def test_its_failure_reaches_no_bookkeeping_of_a_reader(
        self, era: str, tmp_path: Path
    ) -> None:
        """A new tool makes the gateway read its whole catalog again (``unrestricted``) on the
        reader's listing: the failing hidden upstream is left out of it, the reader served."""
        down = tmp_path / "down"
        server = proxy(payroll_args=("--fail-when", str(down)), on_error="raise", grow=True)
        async with clients(server, era, "admin", "reader") as (admin, reader):
            assert "pay_run_payroll" in {t.name for t in await admin.list_tools()}
            down.touch()
            assert not (await reader.call_tool_mcp("pub_grow", {})).is_error
            listed = {t.name for t in await reader.list_tools()}
            assert listed == {"pub_echo", "pub_grow", "pub_grown_1", "search_tools"}
            with pytest.raises(MCPError, match=r"^upstream 'payroll-secret' is unavailable: "):
                await admin.list_tools()


# -- the same, in memory: the package's own lookups, which set the policy aside ---------------

PAYROLL_DOWN = r"^upstream 'payroll-secret' is unavailable: (backend down|connection refused)"


def reached_in_memory(
    monkeypatch: pytest.MonkeyPatch, servers: dict[str, FastMCP], outage: Outage
) -> None:
    """Each configured upstream is the in-memory server of its name in ``servers``; the
    payroll one refuses connections while ``outage`` is down."""

    def transport(upstream: Any, **_: Any) -> Any:
        reached = _Memory(servers[upstream.label])
        reached.outage = outage if upstream.label == "payroll-secret" else None
        return reached

    monkeypatch.setattr(proxy_module, "upstream_transport", transport)


def in_memory_gateway(
    monkeypatch: pytest.MonkeyPatch, outage: Outage, *, progressive: bool
) -> tuple[FastMCP, FastMCP]:
    """A ``public`` upstream (listed on every request) and a ``payroll-secret`` one behind
    ``outage``, whose tools only ``github:admin`` may use; returns the gateway and ``public``."""
    public = FastMCP("public")
    for name in ("echo", "shout"):
        public.tool(lambda: "ok", name=name)
    payroll = FastMCP("payroll")
    payroll.tool(lambda: "paid", name="run_payroll")
    payroll.add_middleware(outage)
    reached_in_memory(monkeypatch, {"public": public, "payroll-secret": payroll}, outage)
    groups = [
        {"name": "payroll", "tools": ["pay_*"], "access": {"scopes": ["github:admin"]}},
        {"name": "basic", "tools": ["pub_echo", "pub_grown"]},
        {"name": "loud", "tools": ["pub_shout"]},
    ]
    config: dict[str, Any] = {
        "upstreams": [
            {"name": "public", "namespace": "pub", "command": "x", "list_ttl": 0},
            {"name": "payroll-secret", "namespace": "pay", "command": "x", "list_ttl": 0},
        ],
        "groups": groups,
        "on_upstream_error": "raise",
        "auth": {
            "type": "static",
            "tokens": [
                {"token": "admin-token", "client_id": "admin", "scopes": ["github:admin"]},
                {"token": "reader-token", "client_id": "reader", "scopes": []},
            ],
        },
    }
    if progressive:
        config["progressive"] = {"initial_groups": ["basic", "payroll"], "max_tools": 5}
    return build_proxy(FilteringConfig.model_validate(config)), public


def mentions_it(text: str) -> bool:
    """Whether ``text`` tells of the hidden upstream: its name, its failure or its reason."""
    told = ("payroll-secret", "unavailable", "backend down", "connection refused")
    return any(word in text for word in told)


@asynccontextmanager
async def payroll_failing(
    gateway: tuple[FastMCP, FastMCP], outage: Outage, outage_kind: str, era: str
) -> AsyncIterator[list[Client[Any]]]:
    """The admin and the reader, each having listed while payroll answered; then it fails
    (``outage_kind``: it answers an error, or refuses connections)."""
    async with clients(gateway[0], era, "admin", "reader") as (admin, reader):
        assert "pay_run_payroll" in {t.name for t in await admin.list_tools()}
        assert "pay_run_payroll" not in {t.name for t in await reader.list_tools()}
        setattr(outage, outage_kind, True)
        yield [admin, reader]


class TestHiddenUpstreamBookkeeping:
    """With ``"raise"``, a failing upstream the reader may not see: the package's own lookups
    (the catalog read again, a group's members, what the client could reach) leave it out,
    so none of the reader's requests fails or names it; the admin still gets its error."""

    @pytest.mark.parametrize("outage_kind", ["erring", "down"])
    async def test_a_plain_listing_after_a_new_tool(
        self, era: str, monkeypatch: pytest.MonkeyPatch, outage_kind: str
    ) -> None:
        outage = Outage()
        gateway = in_memory_gateway(monkeypatch, outage, progressive=False)
        async with payroll_failing(gateway, outage, outage_kind, era) as (admin, reader):
            called = await reader.call_tool_mcp("pay_run_payroll", {})
            # As if it did not exist: the lookup that says why a tool is hidden left it out.
            assert called.is_error
            assert [c.text for c in called.content if isinstance(c, TextContent)] == [
                "Unknown tool: 'pay_run_payroll'"
            ]
            gateway[1].tool(lambda: "new", name="grown")  # the catalog must be read again
            listed = {t.name for t in await reader.list_tools()}
            assert listed == {"pub_echo", "pub_shout", "pub_grown", "search_tools"}
            with pytest.raises(MCPError, match=PAYROLL_DOWN):
                await admin.list_tools()

    @pytest.mark.parametrize("outage_kind", ["erring", "down"])
    async def test_the_meta_tools(
        self, era: str, monkeypatch: pytest.MonkeyPatch, outage_kind: str
    ) -> None:
        outage = Outage()
        gateway = in_memory_gateway(monkeypatch, outage, progressive=True)
        async with payroll_failing(gateway, outage, outage_kind, era) as (admin, reader):
            calls = [
                ("enable_tools", {"groups": ["loud"]}, "pub_shout"),
                ("search_tools", {"query": "shout"}, "pub_shout"),
                ("disable_tools", {"groups": ["basic"]}, '"disabled":["basic"]'),
            ]
            wrong = []  # each meta-tool judged, so each one's fault is told
            for tool, arguments, expected in calls:
                result = await reader.call_tool_mcp(tool, arguments)
                text = str(result.content)
                if result.is_error or expected not in text or mentions_it(text):
                    wrong.append((tool, text))
            assert wrong == []
            listed = {t.name for t in await reader.list_tools()}
            if era == "legacy":
                assert listed == {"pub_shout", "search_tools", "enable_tools", "disable_tools"}
            else:
                # A 2026-07-28 list: the initial group, whatever the calls before it did.
                assert listed == {
                    "pub_echo",
                    "search_tools",
                    "enable_tools",
                    "disable_tools",
                    "call_tool",
                }
            with pytest.raises(MCPError, match=PAYROLL_DOWN):
                await admin.list_tools()

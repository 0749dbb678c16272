"""Cache hints (SEP-2549, 2026-07-28 era) on answers shaped per client: never public, and never
kept longer than the client's own calls leave them true."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.server.auth import require_scopes
from fastmcp.tools import Tool
from fastmcp.utilities.tests import asgi_server
from inline_snapshot import snapshot

from fastmcp_filtering import (
    Catalog,
    Concern,
    ConcernMiddleware,
    Group,
    ProgressiveDisclosureMiddleware,
    add_filtering,
    concerns,
    filtering_stack,
    in_group,
    install,
)
from fastmcp_filtering.client import call_method
from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.proxy import build_proxy

from .._principals import PrincipalByClientName, as_principal, guarded_server

UPSTREAM = Path(__file__).parents[1] / "_cached_upstream.py"

# Every cacheable answer of the 2026-07-28 era, and the package's own lists.
REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("server/discover", {}),
    ("tools/list", {}),
    ("tools/list", {"query": "hello"}),
    ("tools/list", {"filter": {"groups": ["basic"]}}),
    ("prompts/list", {}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "data://note"}),
    ("groups/list", {}),
    ("tags/list", {}),
]


RISK = Concern("risk", values=["safe", "destructive"])


def cached_server(**stack: Any) -> FastMCP:
    """A server that lets every cache keep its answers for five minutes, with ``stack``."""
    mcp = FastMCP("cached", cache_ttl=300, cache_scope="public")
    mcp.add_tool(in_group("basic")(concerns(risk="safe")(_tool("hello"))))
    mcp.add_tool(in_group("admin")(concerns(risk="destructive")(_tool("wipe"))))

    @in_group("basic")
    @mcp.prompt
    def brief() -> str:
        return "brief"

    @in_group("basic")
    @mcp.resource("data://note")
    def note() -> str:
        return "note"

    @in_group("basic")
    @mcp.resource("data://{name}/note")
    def named(name: str) -> str:
        return name

    add_filtering(mcp, groups=[Group("basic"), Group("admin")], **stack)
    return mcp


def _tool(name: str) -> Tool:
    return Tool.from_function(lambda: name, name=name)


async def hints(client: Client[Any]) -> dict[str, tuple[Any, Any]]:
    """The hints on each answer of ``REQUESTS``, keyed by the method and its parameters."""
    found: dict[str, tuple[Any, Any]] = {}
    for method, params in REQUESTS:
        result = await call_method(client, method, params)
        key = f"{method} {','.join(params)}".strip()
        found[key] = (result.get("ttlMs"), result.get("cacheScope"))
    return found


@asynccontextmanager
async def in_memory(server: FastMCP) -> AsyncIterator[Client[Any]]:
    async with Client(server) as client:
        yield client


@asynccontextmanager
async def over_http(server: FastMCP) -> AsyncIterator[Client[Any]]:
    async with asgi_server(server, stateless_http=True) as running, running.client() as client:
        yield client


TRANSPORTS = {"memory": in_memory, "http": over_http}


@pytest.mark.parametrize("transport", list(TRANSPORTS))
class TestEveryCacheableAnswer:
    async def test_progressive_disclosure_makes_them_private_with_the_servers_lifetime(
        self, transport: str
    ) -> None:
        # No call of the client's changes a 2026-07-28 list: a private cache may keep it.
        async with TRANSPORTS[transport](
            cached_server(progressive={"initial_groups": ["basic"]})
        ) as client:
            assert await hints(client) == snapshot(
                {
                    "server/discover": (300000, "private"),
                    "tools/list": (300000, "private"),
                    "tools/list query": (300000, "private"),
                    "tools/list filter": (300000, "private"),
                    "prompts/list": (300000, "private"),
                    "resources/list": (300000, "private"),
                    "resources/templates/list": (300000, "private"),
                    "resources/read uri": (300000, "private"),
                    "groups/list": (300000, "private"),
                    "tags/list": (300000, "private"),
                }
            )

    async def test_concerns_make_them_private_with_the_servers_lifetime(
        self, transport: str
    ) -> None:
        async with TRANSPORTS[transport](cached_server(concerns=[RISK])) as client:
            assert set((await hints(client)).values()) == {(300_000, "private")}

    @pytest.mark.parametrize("layer", ["progressive", "concerns"])
    async def test_lists_that_calls_change_are_unkept(self, transport: str, layer: str) -> None:
        # The opt-in that lets enable_tools or concerns/update change later lists: no client
        # could tell a kept answer went stale (2026-07-28 sends no list_changed).
        if layer == "progressive":
            server = cached_server(
                progressive={"initial_groups": ["basic"], "side_effect_lists": True}
            )
        else:
            server = cached_server()
            install(server, ConcernMiddleware(concerns=[RISK], side_effect_lists=True))
        async with TRANSPORTS[transport](server) as client:
            assert set((await hints(client)).values()) == {(0, "private")}

    async def test_groups_tags_and_search_alone_keep_the_servers_hints(
        self, transport: str
    ) -> None:
        # The answers depend on the request's own parameters, not on who sends it.
        async with TRANSPORTS[transport](cached_server()) as client:
            found = await hints(client)
        assert set(found.values()) == {(300_000, "public")}


async def test_2025_11_25_has_no_hints_on_the_packages_lists_as_on_fastmcps() -> None:
    async with Client(cached_server(progressive={"initial_groups": ["basic"]}), mode="legacy") as c:
        for method in ("tools/list", "groups/list", "tags/list"):
            result = await call_method(c, method)
            assert {"ttlMs", "cacheScope"}.isdisjoint(result), method


class TestMountedServers:
    @pytest.mark.parametrize("how", ["install", "add_middleware"])
    @pytest.mark.parametrize("side_effect_lists", [False, True])
    async def test_a_parent_without_layers_holds_a_mounted_servers_shaped_answers(
        self, how: str, side_effect_lists: bool
    ) -> None:
        child = FastMCP("child")
        child.add_tool(in_group("basic")(_tool("hello")))
        child.add_tool(in_group("admin")(_tool("wipe")))
        stack = filtering_stack(
            groups=[Group("basic"), Group("admin")],
            progressive={"initial_groups": ["basic"], "side_effect_lists": side_effect_lists},
        )
        if how == "install":
            install(child, *stack)
        else:
            for middleware in stack:
                child.add_middleware(middleware)
        parent = FastMCP("parent", cache_ttl=300, cache_scope="public")
        parent.mount(child, namespace="c")
        async with Client(parent) as client:
            listed = await call_method(client, "tools/list")
        assert "c_wipe" not in [t["name"] for t in listed["tools"]]
        ttl = 0 if side_effect_lists else 300_000
        assert (listed["ttlMs"], listed["cacheScope"]) == (ttl, "private")

    @pytest.mark.parametrize("side_effect_lists", [False, True])
    async def test_a_server_mounted_under_the_stack_keeps_as_the_parents_layers_say(
        self, side_effect_lists: bool
    ) -> None:
        # The mounted server answers to the parent's policy (a layer of its own): its
        # answers are kept as long as the parent's layers allow, no shorter.
        child = FastMCP("child", cache_ttl=300, cache_scope="public")
        child.add_tool(_tool("hello"))
        child.add_tool(_tool("wipe"))
        parent = FastMCP("parent", cache_ttl=300, cache_scope="public")
        parent.mount(child, namespace="c")
        add_filtering(
            parent,
            groups=[Group("basic", tools=["c_hello"]), Group("admin", tools=["c_wipe"])],
            progressive={"initial_groups": ["basic"], "side_effect_lists": side_effect_lists},
        )
        async with Client(parent) as client:
            listed = await call_method(client, "tools/list")
        assert "c_wipe" not in [t["name"] for t in listed["tools"]]
        ttl = 0 if side_effect_lists else 300_000
        assert (listed["ttlMs"], listed["cacheScope"]) == (ttl, "private")


class TestAccessControl:
    async def test_private_with_the_servers_lifetime(self) -> None:
        # What a principal may use is the same until its token changes: a private cache may
        # keep it as long as the server says, and no shared cache may hand it to another.
        mcp = FastMCP("guarded", cache_ttl=300, cache_scope="public")
        mcp.add_middleware(PrincipalByClientName())
        mcp.add_tool(_tool("ping"))
        mcp.add_tool(_tool("drop_table"))
        admin = Group("admin", tools=["drop_*"], access=require_scopes("github:admin"))
        add_filtering(mcp, groups=[admin])
        for principal in ("reader", "admin"):
            async with Client(mcp, **as_principal(principal)) as client:
                listed = await call_method(client, "tools/list")
                assert (listed["ttlMs"], listed["cacheScope"]) == (300_000, "private")

    async def test_a_server_without_hints_keeps_the_defaults(self) -> None:
        # The SDK's defaults already say: keep nothing, share nothing.
        mcp, admin = guarded_server("plain")
        add_filtering(mcp, groups=[admin], progressive=True)
        async with Client(mcp, **as_principal("reader")) as client:
            listed = await call_method(client, "tools/list")
        assert (listed["ttlMs"], listed["cacheScope"]) == (0, "private")


@pytest.mark.slow
class TestTheGateway:
    async def test_an_upstreams_public_hints_do_not_pass_through(self) -> None:
        config = FilteringConfig.model_validate(
            {
                "upstreams": [{"command": sys.executable, "args": [str(UPSTREAM)]}],
                "groups": [
                    {"name": "reading", "tools": ["read_*"]},
                    {"name": "admin", "tools": ["delete_*"]},
                ],
                "progressive": {"initial_groups": ["reading"]},
            }
        )
        async with Client(build_proxy(config)) as client:
            for method, params in [
                ("tools/list", {}),
                ("resources/read", {"uri": "reports://latest"}),
            ]:
                result = await call_method(client, method, params)
                assert result.get("cacheScope") != "public", (method, result)
                assert result.get("ttlMs") in (None, 0), (method, result)


def test_a_layer_says_whether_the_clients_own_calls_change_it() -> None:
    from fastmcp_filtering.policy.access import AccessLayer, access_of

    access = AccessLayer(access_of(Catalog(groups=[Group("basic")])))
    fixed = ProgressiveDisclosureMiddleware(groups=[Group("basic")]).policy_layer
    opted = ProgressiveDisclosureMiddleware(
        groups=[Group("basic")], side_effect_lists=True
    ).policy_layer
    concerns_fixed = ConcernMiddleware(concerns=[RISK]).policy_layer
    concerns_opted = ConcernMiddleware(concerns=[RISK], side_effect_lists=True).policy_layer
    layers = [access, fixed, opted, concerns_fixed, concerns_opted]
    assert [layer.changes_with(modern=True) for layer in layers] == [
        False,
        False,
        True,
        False,
        True,
    ]
    assert [layer.changes_with(modern=False) for layer in layers] == [False, True, True, True, True]

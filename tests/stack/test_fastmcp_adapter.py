"""Each private FastMCP or MCP SDK attribute the package uses (``_fastmcp.py``), checked.

These fail when FastMCP renames or changes what the adapter relies on, before any
behaviour built on it silently breaks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.apps.app import FastMCPApp
from fastmcp.prompts import Prompt
from fastmcp.server.middleware.tool_injection import ToolInjectionMiddleware
from fastmcp.server.providers import LocalProvider
from fastmcp.server.providers.addressing import hash_tool
from fastmcp.tools import Tool
from fastmcp.utilities.tests import asgi_server

from fastmcp_filtering._fastmcp import (
    auth_middleware_checks,
    catalog_generation,
    check_headers_as_listed,
    client_identity,
    current_request,
    list_cache_hint,
    list_page_size,
    lists_its_storage,
    mount_paths,
    mounted_servers,
    proxy_client_factory,
    renderer_alias_hash,
    request_connection,
    request_method_and_params,
    request_token,
    sdk_middleware,
    serving_server,
    state_store,
)
from fastmcp_filtering.client import call_method

from ..conftest import ERAS, Connect


def probe_server(**kwargs: Any) -> FastMCP:
    mcp = FastMCP("probe", **kwargs)

    @mcp.tool
    async def probe(ctx: Context) -> str:
        request = current_request()
        assert request is not None
        method, params = request_method_and_params(request)
        return json.dumps(
            {
                "method": method,
                "argument": params.get("arguments", {}).get("marker"),
                "connection": request_connection(request) is not None,
                "identity": client_identity(ctx),
            }
        )

    @mcp.tool
    def marker(marker: str = "") -> str:
        return marker

    return mcp


async def probe(client: Client[Any]) -> dict[str, Any]:
    result = await client.call_tool("probe", {})
    return dict(json.loads(result.data))


class TestRequest:
    async def test_no_request_outside_a_handler(self) -> None:
        assert current_request() is None

    async def test_the_wire_request_and_its_connection(self, connect: Connect) -> None:
        async with connect(probe_server()) as client:
            seen = await probe(client)
        assert seen["method"] == "tools/call"
        assert seen["connection"] is True


class TestIdentity:
    async def test_in_memory_each_era(self, era: str) -> None:
        async with Client(probe_server(), **ERAS[era]) as client:
            first = (await probe(client))["identity"]
            second = (await probe(client))["identity"]
        assert first is not None
        # One client, one identity across requests: the session, or (2026-07-28) the process.
        assert first == second
        if era == "modern":
            assert first == "process"

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_stateless_http_without_auth_has_none(self, era: str) -> None:
        async with (
            asgi_server(probe_server(), stateless_http=True) as server,
            server.client(**ERAS[era], headers={"mcp-session-id": "chosen"}) as client,
        ):
            assert (await probe(client))["identity"] is None

    async def test_a_session_the_server_issued_is_one(self) -> None:
        async with asgi_server(probe_server()) as server, server.client(mode="legacy") as client:
            identity = (await probe(client))["identity"]
            again = (await probe(client))["identity"]
        assert identity is not None
        assert identity == again
        assert identity != "chosen"

    async def test_an_authenticated_principal_is_one_in_both_eras(self) -> None:
        """FastMCP's own 2026-07-28 key for a user, kept for 2025-11-25 sessions too."""
        from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

        tokens = {
            "alice-token": {"client_id": "agent", "sub": "alice", "scopes": []},
            "bob-token": {"client_id": "agent", "sub": "bob", "scopes": []},
        }
        seen: dict[tuple[str, str], Any] = {}
        async with asgi_server(probe_server(auth=StaticTokenVerifier(tokens=tokens))) as server:
            for era in ERAS:
                for token in tokens:
                    async with server.client(**ERAS[era], auth=token) as client:
                        seen[era, token] = (await probe(client))["identity"]
        assert seen["legacy", "alice-token"] == seen["modern", "alice-token"]
        assert seen["legacy", "bob-token"] == seen["modern", "bob-token"]
        assert seen["modern", "alice-token"] != seen["modern", "bob-token"]
        assert str(seen["modern", "alice-token"]).startswith("user:")


class TestServerInternals:
    async def test_the_list_cache_hint_is_the_servers(self) -> None:
        assert list_cache_hint(FastMCP("unhinted")) is None
        hinted = FastMCP("hinted", cache_ttl=5, cache_scope="public")
        assert list_cache_hint(hinted) == (5000, "public")
        hinted.tool(lambda: "ok", name="a")
        async with Client(hinted) as client:
            # FastMCP gives its own lists the same hint.
            listed = await call_method(client, "tools/list")
        assert (listed["ttlMs"], listed["cacheScope"]) == (5000, "public")

    async def test_the_list_page_size_is_the_servers(self, connect: Connect) -> None:
        assert list_page_size(FastMCP("unpaged")) is None
        paged = FastMCP("paged", list_page_size=2)
        assert list_page_size(paged) == 2
        for name in ("a", "b", "c"):
            paged.tool(lambda: "ok", name=name)
        async with connect(paged) as client:
            # FastMCP pages its own lists with the same size.
            first = await client.list_tools_mcp()
        assert len(first.tools) == 2
        assert first.next_cursor is not None

    async def test_a_starting_server_asks_tool_injection_middleware_with_itself_current(
        self,
    ) -> None:
        seen: list[tuple[FastMCP | None, bool]] = []

        class Probe(ToolInjectionMiddleware):
            @property
            def injected_tools(self) -> list[Any]:
                seen.append((serving_server(), current_request() is None))
                return []

        mcp = FastMCP("starting")
        mcp.add_middleware(Probe([]))
        async with asgi_server(mcp, stateless_http=True):
            # Started, and no request yet: asked once, with the server current.
            assert (mcp, True) in seen
        assert serving_server() is None

    def test_mounted_servers_are_found_however_they_are_mounted(self) -> None:
        parent = FastMCP("parent")
        plain, spaced, renamed = FastMCP("plain"), FastMCP("spaced"), FastMCP("renamed")
        parent.mount(plain)
        parent.mount(spaced, namespace="ops")
        parent.mount(renamed, namespace="x", tool_names={"a": "b"})
        assert mounted_servers(parent) == [plain, spaced, renamed]
        assert mounted_servers(plain) == []
        # Each with the transforms its components pass into the parent, innermost first.
        paths = [
            (child, [type(t).__name__ for t in renames]) for child, renames in mount_paths(parent)
        ]
        assert paths == [
            (plain, []),
            (spaced, ["Namespace"]),
            (renamed, ["ToolTransform", "Namespace"]),
        ]

    def test_header_checks_read_the_callers_listing(self) -> None:
        """FastMCP 4.2 hands the MCP SDK a schema cache for Mcp-Param-* checks; once it is
        taken away the SDK lists tools for the request it checks (4.1 has neither)."""
        mcp = FastMCP("headers")
        low_level: Any = mcp._mcp_server
        had = getattr(low_level, "get_tool_input_schema", None)
        check_headers_as_listed(mcp)
        assert getattr(low_level, "get_tool_input_schema", None) is None
        if had is not None:
            assert hasattr(low_level, "get_request_handler")

    def test_auth_middleware_checks_are_none_over_stdio(self) -> None:
        """FastMCP's ``AuthMiddleware`` checks nothing when the request came over stdio (its
        ``_current_transport``); elsewhere its ``auth`` checks judge."""
        from fastmcp.server.auth import require_scopes
        from fastmcp.server.context import _current_transport
        from fastmcp.server.middleware.authorization import AuthMiddleware

        check = require_scopes("github:admin")
        mcp = FastMCP("gated", middleware=[AuthMiddleware(auth=check)])
        assert auth_middleware_checks(mcp) == (check,)
        token = _current_transport.set("stdio")
        try:
            assert auth_middleware_checks(mcp) == ()
        finally:
            _current_transport.reset(token)
        assert request_token() is None

    async def test_the_state_store_round_trips(self) -> None:
        from fastmcp.server.server import StateValue

        store = state_store(FastMCP("store"))
        await store.put(key="adapter-probe", value=StateValue(value={"a": 1}), ttl=60)
        stored = await store.get(key="adapter-probe")
        assert stored is not None
        assert stored.value == {"a": 1}

    async def test_sdk_middleware_runs_outermost(self, connect: Connect) -> None:
        mcp = probe_server()
        seen: list[str] = []

        async def spy(ctx: Any, call_next: Any) -> Any:
            seen.append(ctx.method)
            return await call_next(ctx)

        sdk_middleware(mcp).insert(0, spy)
        async with connect(mcp) as client:
            await client.list_tools()
        assert "tools/list" in seen


class TestCatalogGeneration:
    """``LocalProvider._components``: every way FastMCP adds, replaces or removes a component."""

    def test_every_change_to_the_local_provider_counts(self) -> None:
        mcp = FastMCP("generation", on_duplicate="replace")
        provider = mcp.local_provider
        start = catalog_generation(provider)
        assert start is not None
        seen = [start]

        def changed() -> bool:
            now = catalog_generation(provider)
            assert now is not None
            grew = now > seen[-1]
            seen.append(now)
            return grew

        mcp.tool(lambda: "a", name="a")
        assert changed()
        mcp.tool(lambda: "b", name="a")  # replaced under the same key
        assert changed()
        mcp.add_prompt(Prompt.from_function(lambda: "p", name="p"))
        assert changed()
        mcp.local_provider.remove_tool("a")
        assert changed()
        mcp.local_provider.remove_prompt("p")
        assert changed()
        assert not changed()

    async def test_the_provider_still_lists_from_its_storage(self) -> None:
        mcp = FastMCP("storage")
        mcp.tool(lambda: "a", name="a")
        assert catalog_generation(mcp.local_provider) is not None
        mcp.tool(lambda: "b", name="b")
        assert sorted(t.name for t in await mcp.list_tools()) == ["a", "b"]
        assert (await mcp.get_tool("b")) is not None

    def test_unknown_storage_is_none(self) -> None:
        mcp = FastMCP("odd")
        mcp.local_provider._components = ()  # type: ignore[assignment]
        assert catalog_generation(mcp.local_provider) is None


class TestRendererAliasHash:
    """``prefab_synthesis._get_tool_hash``: the per-tool renderer URI FastMCP reads."""

    async def test_the_per_tool_uri_of_each_listed_prefab_tool_is_readable(
        self, connect: Connect
    ) -> None:
        mcp = FastMCP("prefab")

        @mcp.tool(app=True)
        def dashboard() -> str:
            return "x"

        app = FastMCPApp("deploys")

        @app.ui()
        def deploy_ui() -> str:
            return "x"

        mcp.add_provider(app)
        aliases = {t.name: renderer_alias_hash(t) for t in await mcp.list_tools()}
        assert aliases == {
            "dashboard": hash_tool("", "dashboard"),
            "deploy_ui": hash_tool("deploys", "deploy_ui"),
        }
        async with connect(mcp) as client:
            for digest in aliases.values():
                assert await client.read_resource(f"ui://prefab/tool/{digest}/renderer.html")


class TestListsItsStorage:
    """``LocalProvider._list_tools``, ``_get_tool``, ``_get_tool_by_hash``: the readers of its
    storage, which a subclass of FastMCP's or one's own may override."""

    def test_the_readers_exist(self) -> None:
        from fastmcp_filtering._fastmcp import _TOOL_READERS

        for name in _TOOL_READERS:
            assert callable(getattr(LocalProvider, name, None)), name

    async def test_a_servers_own_provider_lists_its_storage(self) -> None:
        # FastMCP 4.2 gives each server a LocalProvider subclass of its own.
        mcp = FastMCP("own")
        mcp.tool(lambda: "a", name="a")
        provider = mcp.local_provider
        assert lists_its_storage(provider)
        stored = [c for c in provider._components.values() if isinstance(c, Tool)]
        assert [t.name for t in await provider.list_tools()] == [t.name for t in stored]

    def test_a_subclass_that_only_registers_differently(self) -> None:
        class Noting(LocalProvider):
            def add_tool(self, tool: Any) -> Tool:
                return super().add_tool(tool)

        assert lists_its_storage(Noting())

    @pytest.mark.parametrize("reader", ["_list_tools", "list_tools", "get_tool", "_get_tool"])
    def test_a_subclass_with_a_reader_of_its_own(self, reader: str) -> None:
        async def elsewhere(self: LocalProvider, *args: Any) -> Any:
            return None

        live = type("Live", (type(FastMCP("x").local_provider),), {reader: elsewhere})
        assert not lists_its_storage(object.__new__(live))

    def test_other_providers(self) -> None:
        from fastmcp.server.providers import FastMCPProvider

        assert not lists_its_storage(FastMCPProvider(FastMCP("child")))
        assert not lists_its_storage(object())


class TestProxyClientFactory:
    """``ProxyTool._client_factory`` (and its kin's): which upstream a proxied component is."""

    async def test_each_kind_keeps_its_factory_through_a_rename(self) -> None:
        from fastmcp.server import create_proxy
        from fastmcp.server.providers.proxy import ProxyProvider

        upstream = FastMCP("upstream")
        upstream.tool(lambda: "ok", name="echo")
        upstream.prompt(name="greet")(lambda: "hello")
        upstream.resource("memo://note", name="note")(lambda: "note")
        upstream.resource("memo://notes/{key}", name="notes")(lambda key: key)
        proxy = create_proxy(upstream)
        [provider] = [p for p in proxy.providers if isinstance(p, ProxyProvider)]
        factory = provider.client_factory
        components = [
            *await provider.list_tools(),
            *await provider.list_prompts(),
            *await provider.list_resources(),
            *await provider.list_resource_templates(),
        ]
        assert len(components) == 4
        for component in components:
            assert proxy_client_factory(component) is factory
            renamed = component.model_copy(update={"name": f"ns_{component.name}"})
            assert proxy_client_factory(renamed) is factory

    def test_any_other_component_has_none(self) -> None:
        assert proxy_client_factory(Tool.from_function(lambda: "ok", name="local")) is None
        assert proxy_client_factory(object()) is None

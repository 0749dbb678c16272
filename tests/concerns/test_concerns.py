"""Concern filtering in both eras: declaration, every configuration path, the rule, refusals."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import mcp_types as mt
import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from fastmcp.tools.base import Tool
from fastmcp.utilities.tests import asgi_server
from inline_snapshot import snapshot
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict

from fastmcp_filtering import FilterMiddleware, Group, install
from fastmcp_filtering.client import (
    CONCERNS_META_KEY,
    WARNINGS_META_KEY,
    call_method,
    concerns_meta,
    list_concerns,
    list_tools,
    update_concerns,
)
from fastmcp_filtering.concern.middleware import Concern, ConcernMiddleware, concerns
from fastmcp_filtering.core.concerns import MAX_CONFIG_ENTRIES
from fastmcp_filtering.core.declarations import CONCERNS_META_ALIAS, GROUPS_META_KEY
from fastmcp_filtering.server.wire import _scope_of

from .._faults_stores import outage_log
from .._servers import serve_http
from .._support.concerns import (
    FlakyStore,
    _Raw,
    declared,
    handshake,
    make_server,
    names,
)
from ..conftest import ERAS, Connect


async def visible(client: Client[Any]) -> dict[str, list[str]]:
    return {
        "tools": names(await client.list_tools()),
        "prompts": names(await client.list_prompts()),
        "resources": sorted(str(r.uri) for r in await client.list_resources()),
        "templates": sorted(t.uri_template for t in await client.list_resource_templates()),
    }


class _Any(BaseModel):
    model_config = ConfigDict(extra="allow")


async def wait_for(received: list[str], *wanted: str) -> None:
    for _ in range(100):
        if all(w in received for w in wanted):
            return
        await asyncio.sleep(0.01)


DEFAULT_VIEW = {
    "tools": ["archive", "log_data", "validate_data"],
    "prompts": ["summarize"],
    "resources": ["notes://today"],
    "templates": ["logs://{day}"],
}
"""What the defaults (security=medium) show."""

FULL_VIEW = {
    "tools": ["archive", "dump_plaintext", "encrypt_data", "log_data", "validate_data"],
    "prompts": ["secure_review", "summarize"],
    "resources": ["notes://today", "vault://key"],
    "templates": ["logs://{day}"],
}
"""Everything: what a client that stated no concern sees."""


class TestDeclaration:
    async def test_capabilities_in_initialize_and_discover(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            capabilities = client.server_capabilities
        assert capabilities is not None
        assert capabilities.experimental == snapshot(
            {
                "concerns": {
                    "concerns": [
                        {
                            "name": "security",
                            "description": "Security level required",
                            "values": ["high", "medium", "low"],
                            "default": "medium",
                        },
                        {"name": "cost", "values": ["minimal", "moderate", "high"]},
                    ]
                }
            }
        )

    async def test_concerns_list_returns_the_same_list(self, connect: Connect) -> None:
        server, _ = make_server(ordered=True)
        async with connect(server) as client:
            raw = await call_method(client, "concerns/list")
            typed = await list_concerns(client)
            capabilities = client.server_capabilities
        assert capabilities is not None
        assert capabilities.experimental is not None
        assert raw["concerns"] == capabilities.experimental["concerns"]["concerns"]
        assert raw["concerns"][0] == snapshot(
            {
                "name": "security",
                "description": "Security level required",
                "values": ["high", "medium", "low"],
                "default": "medium",
                "ordered": True,
            }
        )
        assert [(c.name, c.default, c.ordered) for c in typed] == [
            ("security", "medium", True),
            ("cost", None, False),
        ]

    async def test_the_proposals_method_names_are_aliases(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            listed = await call_method(client, "concerns/list")
            assert await call_method(client, "listConcerns") == listed
            updated = await call_method(client, "updateConcerns", {"concerns": {"cost": "high"}})
            assert updated == await call_method(
                client, "concerns/update", {"concerns": {"cost": "high"}}
            )
            assert updated["concerns"]["cost"] == "high"


@pytest.mark.side_effect_lists
class TestFilteringRule:
    async def test_a_client_that_states_no_concern_is_not_filtered(self, connect: Connect) -> None:
        # The proposal: clients that ignore concerns receive the full set of primitives.
        server, _ = make_server(apply_defaults="configured")
        async with connect(server) as client:
            assert await visible(client) == FULL_VIEW
            result = await client.call_tool("dump_plaintext", {"data": "x"})
            prompt = await client.get_prompt("secure_review", {"code": "c"})
            resource = await client.read_resource("vault://key")
        assert result.data == "x"
        assert prompt.messages
        assert resource

    async def test_defaults_apply_once_a_client_states_any_concern(self, connect: Connect) -> None:
        server, _ = make_server(apply_defaults="configured")
        async with connect(server) as client:
            await update_concerns(client, {})
            assert await visible(client) == DEFAULT_VIEW
            with pytest.raises(ToolError, match="excluded by concern 'security'"):
                await client.call_tool("dump_plaintext", {"data": "x"})

    async def test_apply_defaults_all_filters_every_client(self, connect: Connect) -> None:
        server, _ = make_server(apply_defaults="all")
        async with connect(server) as client:
            assert await visible(client) == DEFAULT_VIEW

    async def test_a_one_request_override_states_concerns_for_that_request(
        self, connect: Connect
    ) -> None:
        server, _ = make_server(apply_defaults="configured")
        async with connect(server) as client:
            # {} states "the defaults" for this request; the next one states nothing again.
            stated = await list_tools(client, meta=concerns_meta({}))
            plain = await client.list_tools()
        assert names(stated.tools) == DEFAULT_VIEW["tools"]
        assert names(plain) == FULL_VIEW["tools"]

    async def test_concerns_stated_at_initialize_bring_the_defaults(self) -> None:
        server, _ = make_server(apply_defaults="configured")
        initialize = {"capabilities": {"concerns": {}}}
        async with handshake(server, initialize=initialize) as client:
            assert names(await client.list_tools()) == DEFAULT_VIEW["tools"]
        async with handshake(server) as client:
            assert names(await client.list_tools()) == FULL_VIEW["tools"]

    async def test_one_client_stating_concerns_leaves_another_unfiltered(self) -> None:
        server, _ = make_server(apply_defaults="configured")
        async with Client(server, mode="legacy") as first, Client(server, mode="legacy") as second:
            await update_concerns(first, {"cost": "minimal"})
            # The default security=medium fills in for the first client only.
            assert names(await first.list_tools()) == ["log_data", "validate_data"]
            assert names(await second.list_tools()) == FULL_VIEW["tools"]

    def test_apply_defaults_is_validated(self) -> None:
        with pytest.raises(ValueError, match=r"apply_defaults='some' is not an option"):
            ConcernMiddleware(concerns=declared(), apply_defaults="some")  # type: ignore[arg-type]

    async def test_configured_values_filter_every_kind(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            await update_concerns(client, {"security": "high", "cost": "minimal"})
            view = await visible(client)
        # validate_data, summarize and notes://today map no concern: they match every value.
        assert view == snapshot(
            {
                "tools": ["encrypt_data", "validate_data"],
                "prompts": ["secure_review", "summarize"],
                "resources": ["notes://today", "vault://key"],
                "templates": [],
            }
        )

    async def test_unconfigured_concern_without_default_matches_everything(
        self, connect: Connect
    ) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            await update_concerns(client, {"security": "high"})
            tools = names(await client.list_tools())
        # archive is cost=moderate, encrypt_data cost=minimal: cost is not configured.
        assert tools == ["archive", "encrypt_data", "validate_data"]

    async def test_update_replaces_the_whole_configuration(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            first = await update_concerns(client, {"security": "low", "cost": "high"})
            assert names(await client.list_tools()) == ["dump_plaintext", "validate_data"]
            second = await update_concerns(client, {"cost": "moderate"})
            # security is back to its default (medium); cost=high no longer applies.
            assert names(await client.list_tools()) == ["archive", "log_data", "validate_data"]
            cleared = await update_concerns(client, {})
            assert await visible(client) == DEFAULT_VIEW
        assert first.concerns == {"security": "low", "cost": "high"}
        # The reply is the effective configuration: the default fills the unset concern.
        assert second.concerns == {"security": "medium", "cost": "moderate"}
        assert cleared.concerns == {"security": "medium"}
        assert second.warnings == []

    async def test_outside_a_request_nothing_is_shown(self) -> None:
        server, _ = make_server()
        # No client to judge for: every component is concealed (fail closed).
        assert await server.list_tools(run_middleware=False) == []


@pytest.mark.side_effect_lists
class TestOrdered:
    async def test_a_looser_value_also_gets_stricter_components(self, connect: Connect) -> None:
        server, _ = make_server(ordered=True)
        async with connect(server) as client:
            by_level = {}
            for level in ("high", "medium", "low"):
                await update_concerns(client, {"security": level})
                by_level[level] = names(await client.list_tools())
        assert by_level == snapshot(
            {
                "high": ["archive", "encrypt_data", "validate_data"],
                "medium": ["archive", "encrypt_data", "log_data", "validate_data"],
                "low": ["archive", "dump_plaintext", "encrypt_data", "log_data", "validate_data"],
            }
        )

    async def test_default_is_ordered_too(self, connect: Connect) -> None:
        server, _ = make_server(ordered=True, apply_defaults="all")
        async with connect(server) as client:
            assert names(await client.list_tools()) == [
                "archive",
                "encrypt_data",
                "log_data",
                "validate_data",
            ]
            with pytest.raises(ToolError) as refused:
                await client.call_tool("dump_plaintext", {"data": "x"})
        assert str(refused.value) == snapshot(
            "tool 'dump_plaintext' is excluded by concern 'security': it is security='low' and "
            "this client's concerns ask security='medium' (which accepts ['high', 'medium']). "
            "Concerns are a preference filter, not a permission: to use it, send concerns/update "
            "with security: 'low' (it replaces your whole configuration) or set "
            "params._meta['io.github.fastmcp-filtering/concerns'] to {'security': 'low'} on this "
            "request"
        )


class TestValuesOnTheWire:
    """The proposal's ``_meta.concerns`` on every listed primitive that has values."""

    async def test_listed_primitives_carry_their_concern_values(self, connect: Connect) -> None:
        server, _ = make_server(apply_defaults="configured")
        async with connect(server) as client:
            tools = {t.name: (t.meta or {}).get("concerns") for t in await client.list_tools()}
            prompts = {p.name: (p.meta or {}).get("concerns") for p in await client.list_prompts()}
            resources = {
                str(r.uri): (r.meta or {}).get("concerns") for r in await client.list_resources()
            }
            templates = {
                t.uri_template: (t.meta or {}).get("concerns")
                for t in await client.list_resource_templates()
            }
        # From mapping, @concerns and meta alike; nothing for a component without values.
        assert (tools, prompts, resources, templates) == snapshot(
            (
                {
                    "archive": {"cost": "moderate"},
                    "dump_plaintext": {"security": "low", "cost": "high"},
                    "encrypt_data": {"security": "high", "cost": "minimal"},
                    "log_data": {"security": "medium"},
                    "validate_data": None,
                },
                {"secure_review": {"security": "high"}, "summarize": None},
                {"notes://today": None, "vault://key": {"security": "high"}},
                {"logs://{day}": {"security": "medium", "cost": "moderate"}},
            )
        )

    async def test_values_sit_beside_the_group_marks(self, connect: Connect) -> None:
        server, _ = make_server(apply_defaults="configured")
        install(server, FilterMiddleware(groups=[Group("crypto", tools=["encrypt_data"])]))
        async with connect(server) as client:
            tool = next(t for t in await client.list_tools() if t.name == "encrypt_data")
        assert tool.meta is not None
        assert tool.meta["concerns"] == {"security": "high", "cost": "minimal"}
        assert tool.meta[GROUPS_META_KEY] == ["crypto"]


@pytest.mark.side_effect_lists
class TestRequestOverride:
    async def test_the_former_reserved_key_is_an_alias(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            old = await list_tools(client, meta={CONCERNS_META_ALIAS: {"security": "low"}})
            new = await list_tools(client, meta=concerns_meta({"security": "low"}))
            same = await list_tools(
                client,
                meta={
                    CONCERNS_META_ALIAS: {"security": "low"},
                    **concerns_meta({"security": "low"}),
                },
            )
            with pytest.raises(MCPError) as both:
                await list_tools(
                    client,
                    meta={CONCERNS_META_ALIAS: {"security": "low"}, **concerns_meta({})},
                )
        assert names(old.tools) == names(new.tools) == names(same.tools)
        assert "dump_plaintext" in names(old.tools)
        assert both.value.error.code == mt.INVALID_PARAMS
        assert both.value.error.message == snapshot(
            "_meta has both 'io.github.fastmcp-filtering/concerns' and "
            "'io.modelcontextprotocol/concerns' with different concerns; send only "
            "'io.github.fastmcp-filtering/concerns'"
        )

    async def test_meta_override_applies_to_one_request(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            low = await list_tools(client, meta=concerns_meta({"security": "low"}))
            assert names(low.tools) == ["archive", "dump_plaintext", "validate_data"]
            # Nothing was stored: the next plain request is back to the defaults.
            assert names(await client.list_tools()) == DEFAULT_VIEW["tools"]
            raw = await call_method(
                client, "prompts/list", {"_meta": concerns_meta({"security": "high"})}
            )
            assert [p["name"] for p in raw["prompts"]] == ["secure_review", "summarize"]

    async def test_meta_override_replaces_the_stored_configuration(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            await update_concerns(client, {"security": "high", "cost": "minimal"})
            result = await list_tools(client, meta=concerns_meta({"cost": "moderate"}))
            assert names(result.tools) == ["archive", "log_data", "validate_data"]
            assert names(await client.list_tools()) == ["encrypt_data", "validate_data"]

    async def test_meta_override_lets_a_call_through(self, connect: Connect) -> None:
        server, _ = make_server(apply_defaults="all")
        async with connect(server) as client:
            with pytest.raises(ToolError):
                await client.call_tool("encrypt_data", {"data": "ab"})
            result = await client.call_tool(
                "encrypt_data", {"data": "ab"}, meta=concerns_meta({"security": "high"})
            )
        assert result.data == "ba"

    async def test_meta_override_unknown_names_are_warned_in_the_list_reply(
        self, connect: Connect
    ) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            raw = await call_method(
                client,
                "tools/list",
                {"_meta": {CONCERNS_META_KEY: {"security": "low", "latency": "fast"}}},
            )
        assert sorted(t["name"] for t in raw["tools"]) == [
            "archive",
            "dump_plaintext",
            "validate_data",
        ]
        assert "warnings" not in raw
        assert raw["_meta"][WARNINGS_META_KEY] == snapshot(
            ["unknown concern 'latency' ignored; this server declares ['cost', 'security']"]
        )

    async def test_null_meta_override_is_no_override(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            await update_concerns(client, {"security": "low"})
            result = await list_tools(client, meta={CONCERNS_META_KEY: None})
        assert names(result.tools) == ["archive", "dump_plaintext", "validate_data"]


class TestHandshakeConfiguration:
    """2025-11-25: concerns in ``initialize`` and in ``notifications/initialized``."""

    async def test_initialize_capabilities_concerns(self) -> None:
        server, _ = make_server()
        initialize = {"capabilities": {"concerns": {"security": "low"}}}
        async with handshake(server, initialize=initialize) as client:
            assert names(await client.list_tools()) == [
                "archive",
                "dump_plaintext",
                "validate_data",
            ]

    async def test_initialize_params_concerns(self) -> None:
        server, _ = make_server()
        async with handshake(server, initialize={"concerns": {"security": "high"}}) as client:
            assert names(await client.list_tools()) == ["archive", "encrypt_data", "validate_data"]

    async def test_initialized_notification_concerns_win(self) -> None:
        server, _ = make_server()
        async with handshake(
            server,
            initialize={"concerns": {"security": "low"}},
            initialized={"concerns": {"security": "high", "cost": "minimal"}},
        ) as client:
            assert names(await client.list_tools()) == ["encrypt_data", "validate_data"]

    async def test_bad_initialize_value_is_invalid_params(self) -> None:
        server, _ = make_server()
        with pytest.raises(MCPError) as refused:
            async with handshake(server, initialize={"concerns": {"security": "extreme"}}):
                pass
        assert refused.value.error.code == mt.INVALID_PARAMS
        assert refused.value.error.data == {
            "field": "concerns.security",
            "concern": "security",
            "allowed": ["high", "medium", "low"],
        }

    async def test_initialize_concerns_no_identity_can_keep_are_refused(self) -> None:
        """A stateless HTTP server issues no session: nothing could keep them."""
        server, _ = make_server()
        async with asgi_server(server, stateless_http=True) as running:
            client = running.client(mode="legacy", auto_initialize=False)
            initialize = {"concerns": {"security": "high"}}
            with pytest.raises(MCPError) as refused:
                async with handshake(server, initialize=initialize, client=client):
                    pass
            again = running.client(mode="legacy", auto_initialize=False)
            async with handshake(server, client=again) as unstated:
                assert "validate_data" in names(await unstated.list_tools())
        assert refused.value.error.code == mt.INVALID_REQUEST
        assert refused.value.error.message.startswith(
            "cannot store concerns for this client (this client has no session or "
            "authenticated principal); send them with each request instead"
        )
        assert refused.value.error.message.endswith(
            "; a stateless connection keeps state only for an authenticated client"
        )

    async def test_bad_initialized_notification_keeps_the_previous_configuration(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        server, _ = make_server()
        with caplog.at_level(logging.WARNING, logger="fastmcp_filtering"):
            async with handshake(
                server,
                initialize={"concerns": {"security": "high"}},
                initialized={"concerns": {"security": "extreme"}},
            ) as client:
                tools = names(await client.list_tools())
        assert tools == ["archive", "encrypt_data", "validate_data"]
        assert "notifications/initialized concerns ignored" in caplog.text


@pytest.mark.side_effect_lists
class TestListChanged:
    async def test_sent_only_when_the_visible_set_changes(self, connect: Connect) -> None:
        server, _ = make_server()
        received: list[str] = []

        async def handler(message: Any) -> None:
            received.append(type(message).__name__)

        async with connect(server, message_handler=handler) as client:
            await client.list_tools()
            # security=medium is already the default: nothing changes, nothing is sent.
            await update_concerns(client, {"security": "medium"})
            await asyncio.sleep(0.05)
            assert received == []

            await update_concerns(client, {"security": "high"})
            await wait_for(
                received,
                "ToolListChangedNotification",
                "PromptListChangedNotification",
                "ResourceListChangedNotification",
            )
            assert sorted(received) == [
                "PromptListChangedNotification",
                "ResourceListChangedNotification",
                "ToolListChangedNotification",
            ]

            received.clear()
            # Only archive (cost=moderate) leaves: tools changed, prompts and resources did not.
            await update_concerns(client, {"security": "high", "cost": "minimal"})
            await wait_for(received, "ToolListChangedNotification")
            await asyncio.sleep(0.05)
            assert received == ["ToolListChangedNotification"]


@pytest.mark.side_effect_lists
class TestRefusal:
    async def test_call_to_an_excluded_tool_names_the_concern(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            await update_concerns(client, {"security": "high"})
            with pytest.raises(ToolError) as refused:
                await client.call_tool("log_data", {"line": "x"})
            assert (await client.call_tool("encrypt_data", {"data": "ab"})).data == "ba"
        assert str(refused.value) == snapshot(
            "tool 'log_data' is excluded by concern 'security': it is security='medium' and this "
            "client's concerns ask security='high'. Concerns are a preference filter, not a "
            "permission: to use it, send concerns/update with security: 'medium' (it replaces "
            "your whole configuration) or set "
            "params._meta['io.github.fastmcp-filtering/concerns'] to {'security': 'medium'} on "
            "this request"
        )

    async def test_prompts_and_resources_are_refused_too(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            with pytest.raises(MCPError, match="excluded by concern 'security'"):
                await client.get_prompt("secure_review", {"code": "x"})
            with pytest.raises(MCPError, match="excluded by concern 'security'"):
                await client.read_resource("vault://key")
            await update_concerns(client, {"cost": "minimal"})
            with pytest.raises(MCPError, match="excluded by concern 'cost'"):
                await client.read_resource("logs://monday")


@pytest.mark.side_effect_lists
class TestBadInput:
    async def test_unknown_names_are_ignored_with_a_warning(self, connect: Connect) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            reply = await call_method(
                client, "concerns/update", {"concerns": {"security": "high", "latency": "fast"}}
            )
            tools = names(await client.list_tools())
        reply.pop("resultType", None)
        assert reply == snapshot(
            {
                "concerns": {"security": "high"},
                "warnings": [
                    "unknown concern 'latency' ignored; this server declares ['cost', 'security']"
                ],
            }
        )
        assert tools == ["archive", "encrypt_data", "validate_data"]

    async def test_value_outside_values_names_the_concern_and_allowed_values(
        self, connect: Connect
    ) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            await update_concerns(client, {"security": "high"})
            with pytest.raises(MCPError) as refused:
                await update_concerns(client, {"security": "high", "cost": "free"})
            # The refused update changed nothing.
            assert names(await client.list_tools()) == ["archive", "encrypt_data", "validate_data"]
        assert refused.value.error.code == mt.INVALID_PARAMS
        assert refused.value.error.message == snapshot(
            "concerns.cost: 'free' is not a value of concern 'cost'; "
            "allowed values: ['minimal', 'moderate', 'high']"
        )
        assert refused.value.error.data == {
            "field": "concerns.cost",
            "concern": "cost",
            "allowed": ["minimal", "moderate", "high"],
        }

    @pytest.mark.parametrize(
        "params",
        [
            {},
            {"concerns": "high"},
            {"concerns": ["security", "high"]},
            {"concerns": None},
            {"concerns": {"security": 3}},
            {"concerns": {"security": None}},
            {"concerns": {"security": ["high"]}},
        ],
        ids=["missing", "string", "list", "null", "number", "null-value", "list-value"],
    )
    async def test_malformed_updates_are_invalid_params(
        self, connect: Connect, params: dict[str, Any]
    ) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            with pytest.raises(MCPError) as refused:
                await call_method(client, "concerns/update", params)
            assert names(await client.list_tools()) == DEFAULT_VIEW["tools"]
        assert refused.value.error.code == mt.INVALID_PARAMS

    async def test_huge_payloads_are_invalid_params_and_not_echoed(self, connect: Connect) -> None:
        server, _ = make_server()
        many = {f"c{i}": "x" for i in range(MAX_CONFIG_ENTRIES + 1)}
        huge_value = {"security": "h" * 1_000_000}
        async with connect(server) as client:
            with pytest.raises(MCPError) as too_many:
                await update_concerns(client, many)
            with pytest.raises(MCPError) as too_long:
                await update_concerns(client, huge_value)
            with pytest.raises(MCPError) as in_meta:
                await list_tools(client, meta=concerns_meta(many))
            assert names(await client.list_tools()) == DEFAULT_VIEW["tools"]
        for refused in (too_many, too_long, in_meta):
            assert refused.value.error.code == mt.INVALID_PARAMS
            assert len(refused.value.error.message) < 300
        assert "65 entries; at most 64" in too_many.value.error.message

    async def test_bad_meta_override_is_invalid_params_on_lists_and_calls(
        self, connect: Connect
    ) -> None:
        server, _ = make_server()
        async with connect(server) as client:
            with pytest.raises(MCPError) as on_list:
                await list_tools(client, meta={CONCERNS_META_KEY: "high"})
            with pytest.raises(MCPError) as on_call:
                await client.call_tool(
                    "log_data", {"line": "x"}, meta=concerns_meta({"security": "top"})
                )
        assert on_list.value.error.code == mt.INVALID_PARAMS
        assert on_call.value.error.code == mt.INVALID_PARAMS
        assert on_call.value.error.message == snapshot(
            "_meta['io.github.fastmcp-filtering/concerns'].security: 'top' is not a value of "
            "concern 'security'; allowed values: ['high', 'medium', 'low']"
        )


class TestIsolation:
    async def test_two_sessions_keep_their_own_configuration(self) -> None:
        server, _ = make_server()
        async with Client(server, mode="legacy") as a, Client(server, mode="legacy") as b:
            await update_concerns(a, {"security": "low"})
            await update_concerns(b, {"security": "high"})
            assert names(await a.list_tools()) == ["archive", "dump_plaintext", "validate_data"]
            assert names(await b.list_tools()) == ["archive", "encrypt_data", "validate_data"]
            async with Client(server, mode="legacy") as c:
                assert names(await c.list_tools()) == DEFAULT_VIEW["tools"]


@pytest.mark.side_effect_lists
class TestStateFailure:
    async def test_an_outage_is_logged_once_and_its_end_once(
        self, connect: Connect, caplog: pytest.LogCaptureFixture
    ) -> None:
        store = FlakyStore()
        server, _ = make_server(store=store)
        caplog.set_level(logging.DEBUG, logger="fastmcp_filtering")
        async with connect(server) as client:
            await update_concerns(client, {"security": "low"})
            store.broken = True
            for _ in range(3):
                assert names(await client.list_tools()) == ["validate_data"]
            store.broken = False
            for _ in range(2):
                assert "dump_plaintext" in names(await client.list_tools())
            store.broken = True
            await client.list_tools()
        down = (
            "WARNING",
            "ConcernMiddleware: the session state store failed: ConnectionError; hiding every "
            "component with concern values (logged once until the store answers again)",
        )
        assert outage_log(caplog, "ConcernMiddleware") == [
            down,
            ("INFO", "ConcernMiddleware: the session state store answers again"),
            down,
        ]

    async def test_a_failing_store_hides_what_any_configuration_could(
        self, connect: Connect
    ) -> None:
        store = FlakyStore()
        server, _ = make_server(store=store)
        async with connect(server) as client:
            await update_concerns(client, {"security": "low"})
            assert names(await client.list_tools()) == [
                "archive",
                "dump_plaintext",
                "validate_data",
            ]
            store.broken = True
            # The configuration is unknown: only components without concern values remain.
            assert names(await client.list_tools()) == ["validate_data"]
            with pytest.raises(MCPError) as refused:
                await update_concerns(client, {"security": "high"})
            # The per-request override needs no state and still works.
            result = await list_tools(client, meta=concerns_meta({"security": "high"}))
        assert names(result.tools) == ["archive", "encrypt_data", "validate_data"]
        assert refused.value.error.code == mt.INTERNAL_ERROR
        assert refused.value.error.message.startswith(
            "cannot store concerns for this client (the session state store failed: "
        )
        assert "params._meta['io.github.fastmcp-filtering/concerns']" in refused.value.error.message


class TestCursors:
    def test_the_meta_override_is_part_of_the_cursor_scope(self) -> None:
        plain = _scope_of({})
        high = _scope_of({"_meta": {CONCERNS_META_KEY: {"security": "high"}}})
        low = _scope_of({"_meta": {CONCERNS_META_KEY: {"security": "low"}}})
        other_meta = _scope_of({"_meta": {"progressToken": 1}})
        assert plain == other_meta == ""
        assert high
        assert low
        assert high != low
        assert _scope_of({"_meta": {CONCERNS_META_KEY: None}}) == ""

    async def test_a_cursor_pages_only_the_listing_it_came_from(self, connect: Connect) -> None:
        server, _ = make_server(page_size=2)
        low = concerns_meta({"security": "low"})
        async with connect(server) as client:
            first = await list_tools(client, meta=low)
            assert first.next_cursor is not None
            second = await list_tools(client, meta=low, cursor=first.next_cursor)
            with pytest.raises(MCPError) as refused:
                await list_tools(
                    client, meta=concerns_meta({"security": "high"}), cursor=first.next_cursor
                )
        assert names([*first.tools, *second.tools]) == [
            "archive",
            "dump_plaintext",
            "validate_data",
        ]
        assert refused.value.error.code == mt.INVALID_PARAMS


class TestServerDeclarations:
    def test_concern_is_validated(self) -> None:
        with pytest.raises(ValueError, match="default 'top' is not one of its values"):
            Concern("security", values=["high", "low"], default="top")
        with pytest.raises(ValueError, match="values must be a list of strings"):
            Concern("security", values="high")
        with pytest.raises(ValueError, match="needs at least one value"):
            Concern("security", values=[])
        with pytest.raises(ValueError, match=r"repeats value\(s\) \['high'\]"):
            Concern("security", values=["high", "high"])
        with pytest.raises(ValueError, match="invalid concern name"):
            Concern("has space", values=["a"])

    def test_middleware_options_are_validated(self) -> None:
        security = Concern("security", values=["high", "low"])
        with pytest.raises(ValueError, match="declared twice"):
            ConcernMiddleware(concerns=[security, security])
        with pytest.raises(ValueError, match="at least one Concern"):
            ConcernMiddleware(concerns=[])
        with pytest.raises(ValueError, match="must be a list of Concern"):
            ConcernMiddleware(concerns=security)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="concern 'speed', which is not declared"):
            ConcernMiddleware(concerns=[security], mapping={"t": {"speed": "fast"}})
        with pytest.raises(ValueError, match="value 'mid', which is not one of its values"):
            ConcernMiddleware(concerns=[security], mapping={"t": {"security": "mid"}})
        with pytest.raises(ValueError, match=r"mapping\['t'\] must be an object"):
            ConcernMiddleware(concerns=[security], mapping={"t": "high"})  # type: ignore[dict-item]

    def test_decorator_conflicts_are_refused_at_registration(self) -> None:
        tool = Tool.from_function(lambda: "x", name="t", meta={"concerns": {"security": "high"}})
        with pytest.raises(ValueError, match="concern 'security' is 'high'") as conflict:
            concerns(security="low")(tool)
        assert str(conflict.value) == snapshot(
            "tool 't': concern 'security' is 'high' in its _meta['concerns'] but 'low' in "
            "@concerns; give each concern one value per component"
        )
        with pytest.raises(ValueError, match="needs at least one value"):
            concerns()

        def fn() -> str:
            return "x"

        concerns(security="low")(fn)
        with pytest.raises(ValueError, match="'low' in @concerns but 'high' in @concerns"):
            concerns(security="high")(fn)

    async def test_mapping_and_meta_conflict_is_a_value_error(self) -> None:
        mcp = FastMCP("conflict")

        @mcp.tool(meta={"concerns": {"security": "low"}})
        def encrypt_data() -> str:
            return "x"

        middleware = ConcernMiddleware(
            concerns=[Concern("security", values=["high", "low"])],
            mapping={"encrypt_data": {"security": "high"}},
        )
        with pytest.raises(ValueError, match="concern 'security' is 'high'") as conflict:
            await middleware.check(mcp)
        assert str(conflict.value) == snapshot(
            "tool 'encrypt_data': concern 'security' is 'high' in mapping['encrypt_data'] but "
            "'low' in _meta['concerns']; give each concern one value per component"
        )

    async def test_undeclared_concern_hides_the_component_and_fails_check(self) -> None:
        mcp = FastMCP("typo")

        @concerns(securty="high")
        @mcp.tool
        def encrypt_data() -> str:
            return "x"

        middleware = ConcernMiddleware(concerns=[Concern("security", values=["high", "low"])])
        install(mcp, middleware)
        async with Client(mcp, mode="legacy") as client:
            # Serving goes on; the component with the bad declaration is hidden, loudly.
            assert await client.list_tools() == []
            with pytest.raises(ToolError, match="concern values for it are invalid"):
                await client.call_tool("encrypt_data", {})
        with pytest.raises(ValueError, match="uses concern 'securty', which is not declared"):
            await middleware.check(mcp)

    def test_repr(self) -> None:
        middleware = ConcernMiddleware(
            concerns=[Concern("cost", values=["low", "high"], default="low")],
            mapping={"t": {"cost": "high"}},
        )
        assert repr(middleware) == snapshot(
            "ConcernMiddleware(concerns=[Concern(name='cost', values=('low', 'high'), "
            "description=None, default='low', ordered=False)], mapping={'t': {'cost': 'high'}}, "
            "apply_defaults='configured')"
        )


# -- subprocesses: stdio, streamable HTTP, and the MCP SDK's own ClientSession ----------------

SERVER_SCRIPT = Path(__file__).resolve().parents[1] / "_concerns_server.py"


def stdio_transport() -> StdioTransport:
    return StdioTransport(command=sys.executable, args=[str(SERVER_SCRIPT)])


@contextmanager
def http_concerns_server(*, stateless: bool = False) -> Iterator[str]:
    """Start ``_concerns_server.py`` over streamable HTTP on loopback; yield its MCP URL."""
    with serve_http(SERVER_SCRIPT, *(["--stateless"] if stateless else [])) as running:
        yield running.url


@pytest.mark.slow
class TestSubprocess:
    @pytest.mark.parametrize("era", list(ERAS))
    async def test_stdio_fastmcp_client(self, era: str) -> None:
        async with Client(stdio_transport(), **ERAS[era]) as client:
            assert [c.name for c in await list_concerns(client)] == ["security", "cost"]
            assert names(await client.list_tools()) == ["log_data", "validate_data"]
            update = await update_concerns(client, {"security": "high", "cost": "minimal"})
            assert update.concerns == {"security": "high", "cost": "minimal"}
            # 2025-11-25 stores it; 2026-07-28 answers the _meta to send with each request.
            assert update.stored is (era == "legacy")
            meta = update.request_meta or {}
            assert meta == ({} if era == "legacy" else concerns_meta(update.concerns))
            listed = await list_tools(client, meta=meta)
            assert names(listed.tools) == ["encrypt_data", "validate_data"]
            with pytest.raises(ToolError, match="excluded by concern 'security'"):
                await client.call_tool("log_data", {"line": "x"}, meta=meta)
            low = await list_tools(client, meta=concerns_meta({"security": "low"}))
            assert names(low.tools) == ["dump_plaintext", "validate_data"]

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_mcp_sdk_client_session_raw_jsonrpc(self, era: str) -> None:
        """The MCP Python SDK's ClientSession, sending every concerns message as plain JSON-RPC."""
        params = StdioServerParameters(command=sys.executable, args=[str(SERVER_SCRIPT)])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            if era == "legacy":
                initialize = _Raw(
                    method="initialize",
                    params={
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"concerns": {"security": "low"}},
                        "clientInfo": {"name": "raw", "version": "0"},
                    },
                )
                raw_init = await session.send_request(initialize, _Any)  # type: ignore[arg-type]
                capabilities = raw_init.model_dump()["capabilities"]
                session.adopt(mt.InitializeResult.model_validate(raw_init.model_dump()))
                tools = await session.send_request(_Raw(method="tools/list"), _Any)  # type: ignore[arg-type]
                assert sorted(t["name"] for t in tools.model_dump()["tools"]) == [
                    "dump_plaintext",
                    "validate_data",
                ]
                initialized = _Raw(
                    method="notifications/initialized",
                    params={"concerns": {"security": "high", "cost": "minimal"}},
                )
                await session.send_notification(initialized)  # type: ignore[arg-type]
            else:
                capabilities = (await session.send_discover("2026-07-28"))["capabilities"]
                await session.discover()
                update = _Raw(
                    method="concerns/update",
                    params={"concerns": {"security": "high", "cost": "minimal", "x": "y"}},
                )
                reply = (await session.send_request(update, _Any)).model_dump()  # type: ignore[arg-type]
                assert reply["concerns"] == {"security": "high", "cost": "minimal"}
                assert reply["warnings"] == [
                    "unknown concern 'x' ignored; this server declares ['cost', 'security']"
                ]
                # Nothing stored on 2026-07-28: the reply's requestMeta goes on each request.
                assert reply["stored"] is False
                request_meta = reply["requestMeta"]
            listed = await session.send_request(_Raw(method="concerns/list"), _Any)  # type: ignore[arg-type]
            stated = {} if era == "legacy" else {"_meta": request_meta}
            tools = await session.send_request(_Raw(method="tools/list", params=stated), _Any)  # type: ignore[arg-type]
            override = _Raw(
                method="tools/list", params={"_meta": {CONCERNS_META_KEY: {"security": "low"}}}
            )
            low = await session.send_request(override, _Any)  # type: ignore[arg-type]
            bad = _Raw(method="concerns/update", params={"concerns": {"security": "max"}})
            with pytest.raises(MCPError) as refused:
                await session.send_request(bad, _Any)  # type: ignore[arg-type]
        assert capabilities["concerns"] == listed.model_dump()["concerns"]
        assert [c["name"] for c in capabilities["concerns"]] == ["security", "cost"]
        assert sorted(t["name"] for t in tools.model_dump()["tools"]) == [
            "encrypt_data",
            "validate_data",
        ]
        assert sorted(t["name"] for t in low.model_dump()["tools"]) == [
            "dump_plaintext",
            "validate_data",
        ]
        assert refused.value.error.code == mt.INVALID_PARAMS
        assert refused.value.error.data == {
            "field": "concerns.security",
            "concern": "security",
            "allowed": ["high", "medium", "low"],
        }

    async def test_stateless_http_without_a_principal_uses_the_meta_override(self) -> None:
        """2026-07-28 without a token: the update answers the _meta to send, stores nothing."""
        with http_concerns_server() as url:
            async with Client(url) as client:
                update = await update_concerns(client, {"security": "high"})
                assert names(await client.list_tools()) == ["log_data", "validate_data"]
                high = concerns_meta({"security": "high"})
                listed = await list_tools(client, meta=high)
                called = await client.call_tool("encrypt_data", {"data": "ab"}, meta=high)
        assert update.stored is False
        assert update.request_meta == high
        assert names(listed.tools) == ["encrypt_data", "validate_data"]
        assert called.data == "ba"

    async def test_stateless_http_2025_without_a_session_is_told_to_send_meta(self) -> None:
        """2025-11-25 over stateless HTTP keeps no state for an anonymous client: refused."""
        with http_concerns_server(stateless=True) as url:
            async with Client(url, **ERAS["legacy"]) as client:
                with pytest.raises(MCPError) as refused:
                    await update_concerns(client, {"security": "high"})
        assert refused.value.error.code == mt.INVALID_REQUEST
        assert refused.value.error.message == snapshot(
            "cannot store concerns for this client (this client has no session or authenticated "
            "principal); send them with each request instead: "
            "params._meta['io.github.fastmcp-filtering/concerns'] = {'security': 'high', ...} on "
            "tools/list, tools/call and the other list and get requests; a stateless connection "
            "keeps state only for an authenticated client"
        )

    async def test_http_sessions_are_isolated_and_initialize_is_raw_json(self) -> None:
        """2025-11-25 over HTTP: raw initialize with concerns, then a second session."""
        headers = {"Accept": "application/json, text/event-stream"}
        with http_concerns_server() as url:
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"concerns": {"security": "low"}},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            }
            async with httpx.AsyncClient(timeout=10) as http:
                response = await http.post(url, json=init, headers=headers)
                capabilities = _first_result(response)["capabilities"]
                session = {
                    **headers,
                    "Mcp-Session-Id": response.headers["mcp-session-id"],
                    "MCP-Protocol-Version": "2025-11-25",
                }
                initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                await http.post(url, json=initialized, headers=session)
                tools_list = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
                raw_tools = _first_result(await http.post(url, json=tools_list, headers=session))
            async with Client(url, mode="legacy") as other:
                other_tools = names(await other.list_tools())
        assert [c["name"] for c in capabilities["concerns"]] == ["security", "cost"]
        assert capabilities["experimental"]["concerns"]["concerns"] == capabilities["concerns"]
        assert sorted(t["name"] for t in raw_tools["tools"]) == ["dump_plaintext", "validate_data"]
        assert other_tools == ["log_data", "validate_data"]


def _first_result(response: httpx.Response) -> dict[str, Any]:
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = next(d for d in data if d)
    message = json.loads(text)
    assert "result" in message, message
    return dict(message["result"])


class TestConcernsFirstRequests:
    async def test_clients_arriving_together_install_once(self) -> None:
        mcp = FastMCP("race")
        mcp.tool(lambda: "x", name="ping")
        install(mcp, ConcernMiddleware(concerns=[Concern("risk", values=["a", "b"])]))

        async def one() -> None:
            async with Client(mcp, mode="legacy") as client:
                await client.list_tools()

        await asyncio.gather(*(one() for _ in range(4)))
        installed = [type(m).__name__ for m in mcp._mcp_server.middleware]
        assert installed.count("Wire") == 1

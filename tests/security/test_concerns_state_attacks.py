"""Attacks on concerns' stored and stated state: unreadable entries, a store that is down, and
both spellings of the request override."""

from __future__ import annotations

import asyncio

import mcp_types as mt
import pytest
from fastmcp import Context
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.client import list_tools, update_concerns
from fastmcp_filtering.core.declarations import CONCERNS_META_ALIAS, CONCERNS_META_KEY
from fastmcp_filtering.core.request import save_state
from fastmcp_filtering.policy.concerns import STATE_NAMESPACE

from ..concerns.test_concerns import FlakyStore, handshake, make_server, names
from ..conftest import Connect

# Known gap (docs/known-gaps.md), a strict xfail: it fails the day the gap is closed.
NOTIFIED_UNSTORED = (
    "known gap: a notification has no reply, so concerns notifications/initialized states "
    "while the store is down are logged as not stored and lost: once the store is back the "
    "client counts as one that stated none"
)

STORE_DOWN = "the session state store failed: ConnectionError"

# Every test here runs on servers set up by install and by mcp.add_middleware alone.
pytestmark = pytest.mark.usefixtures("setup_way")


class TestUnreadableStoredConcerns:
    """A stored configuration that is no configuration is unknown, not "stated none"."""

    async def test_an_unreadable_configuration_hides_what_any_configuration_could(
        self, connect: Connect
    ) -> None:
        server, _ = make_server(apply_defaults="configured")

        @server.tool
        async def corrupt(ctx: Context) -> str:
            # What a corrupted entry, or another version's format, looks like to the reader.
            await save_state(ctx, STATE_NAMESPACE, ["security", "high"])
            return "done"

        async with connect(server) as client:
            await update_concerns(client, {"security": "high"})
            assert "dump_plaintext" not in names(await client.list_tools())
            await client.call_tool("corrupt", {})
            listed = names(await client.list_tools())
            # concerns/update overwrites it: the client is not stuck.
            await update_concerns(client, {"security": "high"})
            again = names(await client.list_tools())
        # Before: read as a client that never stated a concern, so it saw every tool.
        assert listed == ["corrupt", "validate_data"]
        assert again == ["archive", "corrupt", "encrypt_data", "validate_data"]


class TestConcernsStatedWhileTheStoreIsDown:
    """Concerns a client states in its handshake are kept, or it is told they are not."""

    async def test_initialize_is_refused_and_says_what_to_do_instead(self) -> None:
        store = FlakyStore()
        server, _ = make_server(store=store, apply_defaults="configured")
        store.broken = True
        with pytest.raises(MCPError) as refused:
            async with handshake(server, initialize={"concerns": {"security": "high"}}):
                pass
        assert refused.value.error.code == mt.INTERNAL_ERROR
        # The hint that follows is concerns/update's (tests/concerns/test_concerns.py).
        hint = "; send them with each request instead: params._meta["
        assert refused.value.error.message.startswith(
            f"cannot store concerns for this client ({STORE_DOWN}){hint}"
        )
        store.broken = False
        async with handshake(server, initialize={"concerns": {"security": "high"}}) as client:
            assert "dump_plaintext" not in names(await client.list_tools())

    async def test_a_handshake_that_states_none_is_not_refused(self) -> None:
        store = FlakyStore()
        server, _ = make_server(store=store, apply_defaults="configured")
        store.broken = True
        async with handshake(server) as client:
            # Unknown while the store is down: every component with concern values hidden.
            assert names(await client.list_tools()) == ["validate_data"]

    @pytest.mark.xfail(strict=True, reason=NOTIFIED_UNSTORED)
    async def test_concerns_stated_in_initialized_never_widen_once_the_store_is_back(
        self,
    ) -> None:
        store = FlakyStore()
        server, _ = make_server(store=store, apply_defaults="configured")
        store.broken = True
        async with handshake(server, initialized={"concerns": {"security": "high"}}) as client:
            await asyncio.sleep(0.05)  # the notification is handled
            store.broken = False
            listed = names(await client.list_tools())
        assert "dump_plaintext" not in listed


class TestRobust:
    """Behaviour that held under attack, not covered elsewhere."""

    async def test_a_null_key_leaves_the_other_spelling_in_force(self, connect: Connect) -> None:
        server, _ = make_server(apply_defaults="configured")
        high = {"security": "high"}
        async with connect(server) as client:
            both = [
                names((await list_tools(client, meta=meta)).tools)
                for meta in (
                    {CONCERNS_META_KEY: None, CONCERNS_META_ALIAS: high},
                    {CONCERNS_META_KEY: high, CONCERNS_META_ALIAS: None},
                )
            ]
            unstated = names(await client.list_tools())
        assert both[0] == both[1] == ["archive", "encrypt_data", "validate_data"]
        assert "dump_plaintext" in unstated

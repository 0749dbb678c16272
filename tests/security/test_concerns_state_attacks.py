"""Attacks on concerns' stored and stated state: unreadable entries, a store that is down, and
both spellings of the request override."""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client, Context
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.client import list_tools, update_concerns
from fastmcp_filtering.concern.rules import STATE_NAMESPACE
from fastmcp_filtering.core.declarations import CONCERNS_META_ALIAS, CONCERNS_META_KEY
from fastmcp_filtering.core.request import save_state

from .._support.concerns import FlakyStore, _Raw, handshake, make_server, names
from ..conftest import Connect

# Known gap (docs/known-gaps.md), a strict xfail: it fails the day the gap is closed.
NOTIFIED_UNSTORED = (
    "known gap: a notification has no reply, so concerns notifications/initialized states "
    "while the store is down are logged as not stored and lost: once the store is back the "
    "client keeps what it stated before (at initialize, or none), wider than it last asked"
)

STORE_DOWN = "the session state store failed: ConnectionError"

# Every test here runs on servers set up by install and by mcp.add_middleware alone.
pytestmark = pytest.mark.usefixtures("setup_way")


@pytest.mark.side_effect_lists
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

    @pytest.mark.xfail(strict=True, raises=AssertionError, reason=NOTIFIED_UNSTORED)
    @pytest.mark.parametrize("before", [None, {"security": "low"}], ids=["none", "initialize"])
    async def test_concerns_stated_in_initialized_never_widen_once_the_store_is_back(
        self, before: dict[str, str] | None
    ) -> None:
        store = BreaksAfterFirstPut()
        server, _ = make_server(store=store, apply_defaults="configured")
        store.broken = before is None
        initialize = {"concerns": before} if before else None
        # initialize stores its own concerns; the notification comes while the store is down.
        async with handshake(
            server, initialize=initialize, initialized={"concerns": {"security": "high"}}
        ) as client:
            await asyncio.sleep(0.05)  # the notification is handled
            store.broken = False
            listed = names(await client.list_tools())
        assert "dump_plaintext" not in listed

    async def test_a_handshake_refused_further_in_stores_nothing(self) -> None:
        server, _ = make_server(apply_defaults="configured")
        server.add_middleware(RefusesFirstInitialize())
        async with Client(server, mode="legacy", auto_initialize=False) as client:
            params = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            }
            stating = _Raw(method="initialize", params={**params, "concerns": {"security": "high"}})
            with pytest.raises(MCPError, match=r"^not now$"):
                await client.session.send_request(stating, mt.InitializeResult)  # type: ignore[arg-type]
            # The same session again, stating none: nothing the refused handshake said holds.
            plain = _Raw(method="initialize", params=params)
            client.session.adopt(await client.session.send_request(plain, mt.InitializeResult))  # type: ignore[arg-type]
            assert "dump_plaintext" in names(await client.list_tools())


class RefusesFirstInitialize(Middleware):
    """A layer after the concern layer that refuses the first ``initialize`` (a rate limit)."""

    def __init__(self) -> None:
        self.refused = False

    async def on_request(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if context.method == "initialize" and not self.refused:
            self.refused = True
            raise MCPError(code=mt.INVALID_REQUEST, message="not now")
        return await call_next(context)


class BreaksAfterFirstPut(FlakyStore):
    """The default state store until it has stored something; then down for concerns."""

    async def put(self, key: str, value: Any, **kwargs: Any) -> None:
        await super().put(key, value, **kwargs)
        self.broken = True


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

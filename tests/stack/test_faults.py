"""The session state store fails: the server keeps answering, fails closed, and recovers.

"Fail closed" is what a client with no stored state gets: the initial groups and the
default concerns, never more. Two kinds of failure differ in what the client sees:

- The store fails only for this package's keys: every request is answered, lists are
  the fail-closed lists, changes (``enable_tools``, ``concerns/update``) are refused.
- The store is down for everyone: FastMCP reads the same store for its own
  per-session visibility rules on every list, call, read and get, and fails the
  request before any middleware of this package runs. The client gets an error
  response: -32603 "Internal server error" in the 2026-07-28 era, and an error with
  code 0 and the store exception's text (e.g. redis' "Error 111 connecting to
  127.0.0.1:PORT") in the 2025-11-25 era. ``groups/list`` and ``concerns/list`` need
  no store and keep answering. Never a list wider than the fail-closed one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as mt
import pytest
from fastmcp import Client
from key_value.aio.stores.redis import RedisStore
from key_value.aio.wrappers.timeout import TimeoutWrapper
from mcp.shared.exceptions import MCPError
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from fastmcp_filtering.client import CONCERNS_META_KEY, call_method

from .._faults_stack import ClientState, allowed, make_stack
from .._faults_stores import FaultyStore, RedisProcess
from ..conftest import ERAS, Connect

BOUND = 20.0
"""Longest any one request may take; a store timeout costs each store read 0.2 s."""

STORE_TIMEOUT = 0.2
KINDS = ("tool", "prompt", "resource", "template")
LIST_METHOD = {
    "tool": "tools/list",
    "prompt": "prompts/list",
    "resource": "resources/list",
    "template": "resources/templates/list",
}
_RESULT_FIELD = {
    "tool": ("tools", "name"),
    "prompt": ("prompts", "name"),
    "resource": ("resources", "uri"),
    "template": ("resourceTemplates", "uriTemplate"),
}
WIDENED = ClientState(
    enabled=frozenset({"issues", "code", "repos", "admin"}), configured={"security": "low"}
)
"""The state a client reaches before the store fails: everything its state can open."""
FAIL_CLOSED = ClientState(concerns_unknown=True)
"""What a client whose state cannot be read may see: initial groups, default concerns."""


async def request(
    client: Client[Any], method: str, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    with anyio.fail_after(BOUND):
        return await call_method(client, method, params)


async def listing(client: Client[Any], kind: str, params: dict[str, Any] | None = None) -> set[str]:
    field, key = _RESULT_FIELD[kind]
    result = await request(client, LIST_METHOD[kind], params)
    return {str(item[key]) for item in result[field]}


async def tool_call(client: Client[Any], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return await request(client, "tools/call", {"name": name, "arguments": arguments})


async def widen(client: Client[Any]) -> None:
    """Enable every group and ask for every security level, with valid requests."""
    reply = await tool_call(client, "enable_tools", {"groups": ["code", "repos", "admin"]})
    assert not reply.get("isError"), reply
    await request(client, "concerns/update", {"concerns": {"security": "low"}})
    for kind in KINDS:
        assert await listing(client, kind) == allowed(kind, WIDENED)


async def assert_fail_closed(client: Client[Any]) -> None:
    """Every request is answered, and with no more than the initial groups and defaults."""
    for kind in KINDS:
        assert await listing(client, kind) == allowed(kind, FAIL_CLOSED), kind
    # The per-request override needs no state: it still works, and still adds no group.
    override = {"_meta": {CONCERNS_META_KEY: {"security": "low"}}}
    assert await listing(client, "tool", override) == allowed(
        "tool", FAIL_CLOSED, override={"security": "low"}
    )
    for name, arguments in (("delete_repo", {"name": "x"}), ("dump_plaintext", {"data": "x"})):
        assert (await tool_call(client, name, arguments)).get("isError"), name
        proxied = await tool_call(client, "call_tool", {"name": name, "arguments": arguments})
        assert proxied.get("isError"), name
    found = await tool_call(client, "search_tools", {"query": "delete dump plaintext repo"})
    assert {t["name"] for t in found["structuredContent"]["tools"]} <= allowed("tool", FAIL_CLOSED)
    with pytest.raises(MCPError) as read:
        await request(client, "resources/read", {"uri": "secret://dump"})
    # With the configuration unknown, it is concealed: as if it did not exist.
    assert read.value.error.code == mt.INVALID_PARAMS
    assert read.value.error.message == "Resource not found: 'secret://dump'"

    refused = await tool_call(client, "enable_tools", {"groups": ["code"]})
    assert refused.get("isError")
    assert "could not read its session state store" in refused["content"][0]["text"]
    with pytest.raises(MCPError) as update:
        await request(client, "concerns/update", {"concerns": {"security": "high"}})
    assert update.value.error.code == mt.INTERNAL_ERROR
    assert isinstance(update.value.error.data, dict)
    assert update.value.error.data["metaKey"] == CONCERNS_META_KEY


STORE_DOWN_CODES = {mt.INTERNAL_ERROR, 0}
"""-32603 on 2026-07-28; the SDK's 2025-11-25 path answers an unexpected exception with code 0."""


async def answer_or_error(
    client: Client[Any], method: str, params: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The result, or None after checking the error is the store-down error response."""
    error: MCPError | None = None
    try:
        return await request(client, method, params)
    except MCPError as raised:
        error = raised
    assert error.error.code in STORE_DOWN_CODES, error.error
    return None


async def assert_errors_never_wider(client: Client[Any]) -> None:
    """Store down for everyone: each request is an error response or no wider than fail-closed."""
    for kind in KINDS:
        listed = await answer_or_error(client, LIST_METHOD[kind])
        if listed is not None:
            field, key = _RESULT_FIELD[kind]
            assert {str(item[key]) for item in listed[field]} <= allowed(kind, FAIL_CLOSED)
    for name, arguments in (
        ("delete_repo", {"name": "x"}),
        ("call_tool", {"name": "delete_repo", "arguments": {"name": "x"}}),
        ("enable_tools", {"groups": ["admin"]}),
    ):
        reply = await answer_or_error(client, "tools/call", {"name": name, "arguments": arguments})
        assert reply is None or reply.get("isError"), (name, reply)
    search = {"name": "search_tools", "arguments": {"query": "delete repo"}}
    found = await answer_or_error(client, "tools/call", search)
    if found is not None and not found.get("isError"):
        names = {t["name"] for t in found["structuredContent"]["tools"]}
        assert names <= allowed("tool", FAIL_CLOSED)
    # Declarations need no state.
    assert [g["name"] for g in (await request(client, "groups/list"))["groups"]]
    assert [c["name"] for c in (await request(client, "concerns/list"))["concerns"]]


async def assert_recovered(client: Client[Any], state: ClientState) -> None:
    for kind in KINDS:
        assert await listing(client, kind) == allowed(kind, state), kind
    reply = await tool_call(client, "disable_tools", {"groups": ["admin"]})
    assert not reply.get("isError"), reply
    state.disable(["admin"])
    assert await listing(client, "tool") == allowed("tool", state)


@pytest.mark.side_effect_lists
class TestStoreRaises:
    async def test_our_keys_failing_fails_closed_and_recovers(self, connect: Connect) -> None:
        store = FaultyStore()
        async with connect(make_stack(store=store)) as client:
            await widen(client)
            store.set("raise")
            await assert_fail_closed(client)
            assert store.failures
            store.set("up")
            await assert_recovered(client, WIDENED.copy())

    async def test_a_store_down_for_everyone_gives_errors_never_a_wider_list(
        self, connect: Connect
    ) -> None:
        store = FaultyStore(only_ours=False)
        async with connect(make_stack(store=store)) as client:
            await widen(client)
            store.set("raise")
            with pytest.raises(MCPError) as refused:
                await listing(client, "tool")
            assert refused.value.error.code in STORE_DOWN_CODES
            await assert_errors_never_wider(client)
            store.set("up")
            await assert_recovered(client, WIDENED.copy())


@pytest.mark.slow
@pytest.mark.side_effect_lists
class TestStoreTimesOut:
    async def test_our_keys_timing_out_fails_closed_and_recovers(self, connect: Connect) -> None:
        store = FaultyStore()
        server = make_stack(store=TimeoutWrapper(store, timeout=STORE_TIMEOUT))
        async with connect(server) as client:
            await widen(client)
            store.set("hang")
            await assert_fail_closed(client)
            store.set("up")
            await assert_recovered(client, WIDENED.copy())

    async def test_a_store_timing_out_for_everyone_gives_errors_never_a_wider_list(
        self, connect: Connect
    ) -> None:
        store = FaultyStore(only_ours=False)
        server = make_stack(store=TimeoutWrapper(store, timeout=STORE_TIMEOUT))
        async with connect(server) as client:
            await widen(client)
            store.set("hang")
            await assert_errors_never_wider(client)
            store.set("up")
            await assert_recovered(client, WIDENED.copy())

    async def test_a_store_without_timeout_holds_only_the_requests_that_need_it(
        self, connect: Connect
    ) -> None:
        """With no timeout, a request waits for the store; others keep being answered."""
        store = FaultyStore()
        async with connect(make_stack(store=store)) as client:
            await widen(client)
            store.set("hang")
            results: dict[str, set[str]] = {}

            async def list_tools() -> None:
                results["tools"] = await listing(client, "tool")

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(list_tools)
                with anyio.fail_after(BOUND):
                    await store.holding.wait()
                assert "tools" not in results
                assert [g["name"] for g in (await request(client, "groups/list"))["groups"]]
                assert (await request(client, "concerns/list"))["concerns"]
                store.set("up")
            # The held request completes with the client's own state, read once the store is back.
            assert results["tools"] == allowed("tool", WIDENED)
            await assert_recovered(client, WIDENED.copy())


@asynccontextmanager
async def redis_client(era: str, redis: RedisProcess) -> AsyncIterator[Client[Any]]:
    # Fail fast while redis is down instead of retrying with backoff: no retries, 1 s timeouts.
    connection = Redis.from_url(
        redis.url,
        decode_responses=True,
        socket_timeout=1,
        socket_connect_timeout=1,
        retry=Retry(NoBackoff(), 0),
    )
    server = make_stack(store=RedisStore(client=connection))
    try:
        async with Client(server, **ERAS[era]) as client:
            yield client
    finally:
        await connection.aclose()


@pytest.mark.slow
@pytest.mark.side_effect_lists
@pytest.mark.parametrize("era", list(ERAS))
class TestRedis:
    async def test_killed_redis_gives_errors_and_a_restarted_one_serves_again(
        self, era: str
    ) -> None:
        redis = RedisProcess()
        redis.start()
        try:
            async with redis_client(era, redis) as client:
                await widen(client)
                redis.kill()
                # FastMCP reads its own visibility rules from redis first: an error response.
                with pytest.raises(MCPError) as refused:
                    await listing(client, "tool")
                assert refused.value.error.code in STORE_DOWN_CODES
                await assert_errors_never_wider(client)

                redis.start()
                # SIGKILL lost the in-memory data: the client is back to the fail-closed view,
                # not to anything a replica might have cached.
                state = ClientState()
                for kind in ("tool", "prompt", "resource", "template"):
                    assert await listing(client, kind) == allowed(kind, state), kind
                reply = await tool_call(client, "enable_tools", {"groups": ["admin"]})
                assert not reply.get("isError"), reply
                state.enable(["admin"])
                assert await listing(client, "tool") == allowed("tool", state)
        finally:
            redis.kill()

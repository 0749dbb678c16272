"""Two server replicas on one Redis: a user's enabled groups follow it, another user's do not."""

from __future__ import annotations

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from .._progressive_servers import progressive_http_server, redis_keys, redis_server
from .._support.progressive import call, names

# Two server subprocesses on a redis-server.
pytestmark = pytest.mark.slow

LISTS = ("--side-effect-lists",)


async def test_two_replicas_share_state_per_principal() -> None:
    with (
        redis_server() as redis_url,
        # Lists that change with the state: the 2026-07-28 opt-in, to see the state move.
        progressive_http_server("--redis-url", redis_url, "--auth", *LISTS) as replica_a,
        progressive_http_server("--redis-url", redis_url, "--auth", *LISTS) as replica_b,
    ):
        async with Client(replica_a, auth="alice-token") as alice_a:
            reply = await call(alice_a, "enable_tools", groups=["code", "repos"])
            assert reply["enabled"] == ["code", "repos"]

        async with (
            Client(replica_b, auth="alice-token") as alice_b,
            Client(replica_b, auth="bob-token") as bob_b,
        ):
            assert "create_repo" in await names(alice_b)
            assert (await alice_b.call_tool("create_repo", {"name": "x"})).data == "created x"
            assert "create_repo" not in await names(bob_b)
            with pytest.raises(ToolError, match=r"Call enable_tools"):
                await bob_b.call_tool("create_repo", {"name": "x"})
            # A change on B is seen on A.
            await call(alice_b, "disable_tools", groups=["repos"])
            await call(bob_b, "enable_tools", groups=["admin"])

        async with (
            Client(replica_a, auth="alice-token") as alice_a,
            Client(replica_a, auth="bob-token") as bob_a,
        ):
            assert "create_repo" not in await names(alice_a)
            assert "delete_repo" not in await names(alice_a)
            assert "delete_repo" in await names(bob_a)

        # The state is in Redis, one entry per principal, not in either process.
        assert len(await redis_keys(redis_url, "*fastmcp-filtering:progressive:*")) == 2

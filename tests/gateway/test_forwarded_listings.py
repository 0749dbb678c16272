"""An upstream that gets each client's headers lists for each client: its listing is theirs.

Without ``[auth]`` the gateway forwards each client's HTTP headers (its ``Authorization``
too) to an HTTP upstream, which may list by them (a token's scopes, a toolset header). Kept
listings are then kept per set of forwarded headers: a client never gets, nor can call, what
another client's token listed, and clients that send the same headers share one listing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import FastMCPTransport
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import Middleware
from fastmcp.server.middleware.error_handling import ErrorHandlingMiddleware
from fastmcp.server.middleware.rate_limiting import RateLimitError
from fastmcp.utilities.tests import asgi_server
from inline_snapshot import snapshot
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.client import list_tools
from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.proxy import build_proxy, forwarded_scope
from fastmcp_filtering.gateway.upstreams import listings as listings_module
from fastmcp_filtering.gateway.upstreams.health import UpstreamHealth
from fastmcp_filtering.gateway.upstreams.limits import UpstreamTimeout
from fastmcp_filtering.gateway.upstreams.listings import MOST_KEPT, BackingOff, Listings
from fastmcp_filtering.gateway.upstreams.provider import (
    Probe,
    UpstreamProvider,
    _doubt,
    client_factory,
)

from .._servers import RunningServer, serve_http
from .._support.backoff import (
    TENANT,
    Clock,
    Gate,
    answered_error,
    gateway_logs,
    resetting,
    through_fastmcp,
)
from .._support.recorder import Recorder
from ..conftest import ERAS

_ASKING: ContextVar[str] = ContextVar("asking", default="alice")


class Scoped:
    """Who asks (as a request's headers would say: per task, in a context variable), and a
    fetch that lists what they may see, counting whom it was asked for."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.release: asyncio.Event | None = None

    @property
    def scope(self) -> str:
        return _ASKING.get()

    @scope.setter
    def scope(self, who: str) -> None:
        _ASKING.set(who)

    def __call__(self) -> str:
        return _ASKING.get()

    async def fetch(self) -> list[str]:
        asked_for = _ASKING.get()
        self.asked.append(asked_for)
        if self.release is not None:
            await self.release.wait()
        return [f"{asked_for}_tool"]


class TestListingsPerScope:
    """The keeper itself, in memory: one listing per scope."""

    async def test_each_scope_gets_its_own_listing_and_keeps_it(self) -> None:
        scoped = Scoped()
        listings = Listings(seconds=60, scope=scoped)
        for who in ("alice", "bob", "alice", "bob"):
            scoped.scope = who
            assert await listings.get("tool", scoped.fetch, give_up_after=5) == [f"{who}_tool"]
        assert scoped.asked == ["alice", "bob"]

    async def test_concurrent_requests_share_a_fetch_only_within_their_scope(self) -> None:
        scoped = Scoped()
        scoped.release = asyncio.Event()
        listings = Listings(seconds=60, scope=scoped)

        async def request(who: str) -> Sequence[str]:
            scoped.scope = who  # this task's own, as its request's headers are
            return await listings.get("tool", scoped.fetch, give_up_after=5)

        waiting = [asyncio.create_task(request(w)) for w in ("alice", "bob", "alice", "bob")]
        await asyncio.sleep(0.01)
        scoped.release.set()
        got = [list(listed) for listed in await asyncio.gather(*waiting)]
        assert got == [["alice_tool"], ["bob_tool"], ["alice_tool"], ["bob_tool"]]
        assert scoped.asked == ["alice", "bob"]

    async def test_forget_drops_every_scopes_listing(self) -> None:
        scoped = Scoped()
        listings = Listings(seconds=60, scope=scoped)
        for who in ("alice", "bob"):
            scoped.scope = who
            await listings.get("tool", scoped.fetch, give_up_after=5)
        listings.forget("tool")
        for who in ("alice", "bob"):
            scoped.scope = who
            await listings.get("tool", scoped.fetch, give_up_after=5)
        assert scoped.asked == ["alice", "bob", "alice", "bob"]

    async def test_memory_is_bounded_the_oldest_scope_is_asked_again(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(listings_module, "MOST_KEPT", 3)
        scoped = Scoped()
        listings = Listings(seconds=60, scope=scoped)
        for who in ("b", "a", "c", "b", "d", "b", "a"):
            scoped.scope = who
            await listings.get("tool", scoped.fetch, give_up_after=5)
        # "b", asked first, was kept by being used since; "a", the least recently used, went
        # when "d" came.
        assert scoped.asked == ["b", "a", "c", "d", "a"]

    def test_without_a_client_request_the_scope_is_everyones(self) -> None:
        assert forwarded_scope() == ""


class Breaks:
    """A forwarded listing that fails as ``failure`` for the scopes in ``broken`` (a reset
    by default: the upstream's answer to those headers), counting whom it was asked for."""

    def __init__(self, failure: BaseException | None = None, *broken: str) -> None:
        self.failure = failure or through_fastmcp(httpx2.ReadError("reset"))
        self.broken = set(broken)
        self.asked: list[str] = []

    async def __call__(self) -> list[str]:
        who = _ASKING.get()
        self.asked.append(who)
        if who in self.broken:
            raise self.failure
        return [f"{who}_tool"]


async def ask(listings: Listings, fetch: Breaks, who: str) -> str:
    """What ``who``'s tool listing gives: its tools, or the name of what it raised."""
    _ASKING.set(who)
    try:
        return ",".join(await listings.get("tool", fetch, give_up_after=5))
    except (BackingOff, MCPError, OSError) as error:
        return type(error).__name__


def forwarding(clock: Clock, **options: Any) -> Listings:
    """The listings of an upstream that gets each client's headers (scoped by ``_ASKING``)."""
    return Listings(seconds=0, clock=clock, forwarded=True, scope=_ASKING.get, **options)


async def alice_resets_later() -> tuple[Listings, Gate, asyncio.Task[Any]]:
    """Alice's tool listing on its way (``backoff=10``), to reset when its gate settles."""
    _ASKING.set("alice")
    listings = forwarding(Clock(), backoff=10, backoff_max=30)
    gate = Gate(through_fastmcp(httpx2.ReadError("reset")))
    waiting = asyncio.create_task(listings.get("tool", gate, give_up_after=60))
    await gate.asked.wait()
    return listings, gate, waiting


class TestBackOffPerScope:
    """With each client's headers forwarded, a failure they may have caused backs off only
    the listings asked with them; one no headers can cause, every listing."""

    async def test_a_reset_backs_off_that_clients_headers_alone(self) -> None:
        clock, fetch = Clock(), Breaks(None, "alice")
        listings = forwarding(clock, backoff=2, backoff_max=8)
        assert await ask(listings, fetch, "alice") == "MCPError"
        assert await ask(listings, fetch, "alice") == "BackingOff"  # not asked again
        assert await ask(listings, fetch, "bob") == "bob_tool"
        assert listings.retry_in() is None  # bob's request: nothing to wait for
        _ASKING.set("alice")
        assert listings.retry_in() == 2
        clock.now += 2
        assert await ask(listings, fetch, "alice") == "MCPError"  # asked again: doubled
        clock.now += 2
        assert await ask(listings, fetch, "alice") == "BackingOff"
        fetch.broken.clear()
        clock.now += 2
        assert await ask(listings, fetch, "alice") == "alice_tool"  # answered: over
        assert fetch.asked == ["alice", "bob", "alice", "alice"]

    async def test_a_stall_backs_off_that_clients_headers_alone(self) -> None:
        clock, never = Clock(), asyncio.Event()

        async def stalls_for_alice() -> list[str]:
            if _ASKING.get() == "alice":
                await never.wait()
            return ["ok"]

        listings = forwarding(clock, backoff=1, backoff_max=30)
        _ASKING.set("alice")
        with pytest.raises(TimeoutError):
            await listings.get("tool", stalls_for_alice, give_up_after=0.01)
        with pytest.raises(BackingOff, match="asked again in 1 s") as backing_off:
            await listings.get("tool", stalls_for_alice, give_up_after=0.01)
        assert str(backing_off.value.__cause__) == "did not answer within 0.01 s"
        _ASKING.set("bob")
        assert await listings.get("tool", stalls_for_alice, give_up_after=0.01) == ["ok"]

    async def test_a_refused_connection_backs_off_everyone(self) -> None:
        refused = through_fastmcp(httpx2.ConnectError("All connection attempts failed"))
        clock, fetch = Clock(), Breaks(refused, "alice")
        listings = forwarding(clock)
        assert await ask(listings, fetch, "alice") == "MCPError"
        assert await ask(listings, fetch, "bob") == "BackingOff"
        assert fetch.asked == ["alice"]

    @pytest.mark.parametrize(
        "failure",
        [httpx2.ReadError("reset"), httpx2.ReadTimeout("stalled")],
        ids=["reset", "read timeout"],
    )
    async def test_a_clients_unanswered_request_is_no_news_of_the_upstream(
        self, failure: Exception
    ) -> None:
        """Only a probe without the client's headers tells (``heard_unasked``): a reset does
        not end the upstream's back-off, whose next refusal doubles it."""
        refused = through_fastmcp(httpx2.ConnectError("All connection attempts failed"))
        clock = Clock()
        listings = forwarding(clock, backoff=1, backoff_max=8)
        assert await ask(listings, Breaks(refused, "alice"), "alice") == "MCPError"
        clock.now += 1
        assert await ask(listings, Breaks(through_fastmcp(failure), "eve"), "eve") == "MCPError"
        assert await ask(listings, Breaks(refused, "alice"), "alice") == "MCPError"
        assert listings.retry_in() == 2

    async def test_headers_that_cannot_be_sent_are_no_news_of_the_upstream(self) -> None:
        """A header value that is not ASCII fails before anything is sent: it neither ends
        the upstream's back-off (the next refusal still doubles it) nor starts one."""
        refused = through_fastmcp(httpx2.ConnectError("All connection attempts failed"))
        unsendable = through_fastmcp(UnicodeEncodeError("ascii", "caf\xe9", 3, 4, "not ASCII"))
        clock = Clock()
        listings = forwarding(clock, backoff=1, backoff_max=8)
        assert await ask(listings, Breaks(refused, "alice"), "alice") == "MCPError"
        clock.now += 1  # the back-off is over
        mallorys = Breaks(unsendable, "mallory")
        assert await ask(listings, mallorys, "mallory") == "MCPError"
        assert await ask(listings, mallorys, "mallory") == "BackingOff"  # its own headers'
        assert await ask(listings, Breaks(refused, "alice"), "alice") == "MCPError"
        assert listings.retry_in() == 2  # doubled: mallory's request was no answer
        assert mallorys.asked == ["mallory"]

    async def test_no_answer_without_anyones_headers_backs_off_everyone(self) -> None:
        clock, fetch = Clock(), Breaks(None, "alice")
        listings = forwarding(clock, backoff=2, backoff_max=8)
        news = listings.news
        assert await ask(listings, fetch, "alice") == "MCPError"  # a reset: alice's alone
        assert await ask(listings, fetch, "bob") == "bob_tool"
        assert not listings.heard_unasked(news, TimeoutError())  # older than bob's answer
        assert listings.heard_unasked(listings.news, TimeoutError())
        assert await ask(listings, fetch, "bob") == "BackingOff"
        assert listings.retry_in() == 2
        assert listings.heard_unasked(listings.news, None)  # it answered: over
        assert await ask(listings, fetch, "bob") == "bob_tool"

    async def test_an_answered_error_backs_off_no_one(self) -> None:
        clock, fetch = Clock(), Breaks(MCPError(code=-32603, message="Unauthorized"), "alice")
        listings = forwarding(clock)
        assert await ask(listings, fetch, "alice") == "MCPError"
        assert await ask(listings, fetch, "alice") == "MCPError"
        assert fetch.asked == ["alice", "alice"]

    async def test_a_list_changed_ends_every_clients_back_off(self) -> None:
        clock, fetch = Clock(), Breaks(None, "alice", "bob")
        listings = forwarding(clock)
        for who in ("alice", "bob"):
            assert await ask(listings, fetch, who) == "MCPError"
        fetch.broken.clear()
        listings.forget("tool")
        for who in ("alice", "bob"):
            assert await ask(listings, fetch, who) == f"{who}_tool"

    async def test_a_stale_failure_after_a_list_changed_starts_no_back_off(self) -> None:
        listings, stale, waiting = await alice_resets_later()
        listings.forget()  # the upstream said its lists changed
        await stale.settle(waiting)
        assert isinstance(waiting.exception(), MCPError)
        assert listings.retry_in() is None
        assert not listings.failing

    async def test_an_older_failure_after_a_newer_answer_starts_none(self) -> None:
        listings, older, waiting = await alice_resets_later()
        assert await listings.get("prompt", Breaks(), give_up_after=60) == ["alice_tool"]
        await older.settle(waiting)
        assert isinstance(waiting.exception(), MCPError)
        assert listings.retry_in() is None

    async def test_an_older_success_does_not_end_a_newer_back_off(self) -> None:
        _ASKING.set("alice")
        clock, fails = Clock(), Breaks(None, "alice")
        listings = forwarding(clock, backoff=10, backoff_max=30)
        assert await ask(listings, fails, "alice") == "MCPError"
        clock.now += 10  # that back-off passed
        older = Gate()
        waiting = asyncio.create_task(listings.get("tool", older, give_up_after=60))
        await older.asked.wait()
        listings.forget()
        with pytest.raises(MCPError):
            await listings.get("prompt", fails, give_up_after=60)  # newer: a back-off
        assert listings.retry_in() == 10
        await older.settle(waiting)  # the older success arrives late
        assert listings.retry_in() == 10

    async def test_memory_is_bounded_the_oldest_back_off_goes(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(listings_module, "MOST_KEPT", 2)
        clock, fetch = Clock(), Breaks(None, "a", "b", "c")
        listings = forwarding(clock)
        for who in ("a", "b", "c"):
            assert await ask(listings, fetch, who) == "MCPError"
        assert await ask(listings, fetch, "a") == "MCPError"  # forgotten: asked again
        assert await ask(listings, fetch, "c") == "BackingOff"


# -- a real HTTP upstream that lists by the bearer token it is sent ---------------------------

REFUSED = "Server returned an error response"


class TestHealthPerScope:
    """``UpstreamHealth``: what one client's forwarded headers may have caused is that
    client's news, not the upstream's: the log says it once, nobody else hears of it."""

    @pytest.fixture
    def logs(self, caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
        caplog.set_level(logging.DEBUG, logger="fastmcp_filtering")
        return caplog

    def test_an_error_answered_to_one_client_is_that_clients_alone(
        self, logs: pytest.LogCaptureFixture
    ) -> None:
        health = UpstreamHealth()
        for _ in range(3):
            assert health.failed("up", answered_error(REFUSED), scope="mallory") == REFUSED
        assert health.unavailable == {}
        assert health.failing("up", "mallory")
        assert not health.failing("up", "alice")
        assert not health.failing("up")
        health.answered("up", "alice")
        assert health.failing("up", "mallory")
        health.answered("up", "mallory")
        assert not health.failing("up", "mallory")
        assert gateway_logs(logs) == snapshot(
            [
                "upstream 'up' failed a request carrying one client's forwarded headers: Server "
                "returned an error response; until it answers them that client is served the "
                "other upstreams without it (the others are served as before)",
                "upstream 'up' answers a client's forwarded headers again",
            ]
        )

    @pytest.mark.parametrize(
        "error",
        [
            httpx2.ReadError("reset"),
            UpstreamTimeout("tools/list", 2, "connect_timeout + list_timeout"),
            answered_error(REFUSED),
        ],
        ids=["reset", "stall", "answered"],
    )
    def test_what_the_headers_may_have_caused_is_theirs(self, error: Exception) -> None:
        health = UpstreamHealth(log=False)
        health.failed("up", through_fastmcp(error), scope="mallory")
        assert health.unavailable == {}
        assert health.failing("up", "mallory")

    def test_a_connection_that_cannot_be_made_is_everyones(self) -> None:
        health = UpstreamHealth(log=False)
        health.failed("up", through_fastmcp(httpx2.ConnectError("refused")), scope="alice")
        assert health.unavailable == {"up": "refused"}
        assert health.failing("up", "bob")

    def test_an_error_the_upstream_answered_says_it_is_up(
        self, logs: pytest.LogCaptureFixture
    ) -> None:
        health = UpstreamHealth(mode="raise")
        health.failed("up", httpx2.ConnectError("refused"), scope="alice")
        health.failed("up", answered_error(REFUSED), scope="mallory")
        assert health.unavailable == {}
        assert not health.failing("up", "alice")
        assert gateway_logs(logs) == snapshot(
            [
                "upstream 'up' is unavailable: refused; each request that needs "
                "it fails with an error naming it until it answers",
                "upstream 'up' answers again (1 request failed or went without it meanwhile)",
                "upstream 'up' failed a request carrying one client's forwarded headers: Server "
                "returned an error response; until it answers them that client is told so by "
                "each request that needs it (the others are served as before)",
            ]
        )

    def test_headers_that_cannot_be_sent_are_not_an_answer(self) -> None:
        health = UpstreamHealth(log=False)
        health.failed("up", httpx2.ConnectError("refused"))
        unsendable = UnicodeEncodeError("ascii", "caf\xe9", 3, 4, "not ASCII")
        health.failed("up", through_fastmcp(unsendable), scope="mallory")
        assert health.unavailable == {"up": "refused"}
        assert health.failing("up", "mallory")

    def test_a_back_off_is_not_an_answer(self) -> None:
        backing_off = BackingOff(5.0)
        backing_off.__cause__ = UpstreamTimeout("initialize", 1, "connect_timeout")
        health = UpstreamHealth(log=False)
        health.failed("up", httpx2.ConnectError("refused"))
        health.failed("up", backing_off, scope="eve")
        assert health.unavailable == {"up": "refused"}

    def test_a_stall_is_not_an_answer(self) -> None:
        health = UpstreamHealth(log=False)
        health.failed("up", httpx2.ConnectError("refused"))
        health.failed("up", UpstreamTimeout("tools/list", 2, "list_timeout"), scope="eve")
        assert health.unavailable == {"up": "refused"}

    def test_without_headers_every_failure_is_everyones(self) -> None:
        health = UpstreamHealth(log=False)
        health.failed("up", answered_error(REFUSED))
        assert health.unavailable == {"up": REFUSED}

    def test_new_failing_headers_on_every_request_are_a_line_a_minute(
        self, logs: pytest.LogCaptureFixture
    ) -> None:
        clock = Clock()
        health = UpstreamHealth(clock=clock)
        for i in range(5):
            health.failed("up", answered_error(REFUSED), scope=f"random {i}")
            clock.now += 10
        health.failed("other", answered_error(REFUSED), scope="random 0")  # its own minute
        clock.now += 10
        health.failed("up", answered_error(REFUSED), scope="random 5")
        assert [line.split(":")[0] for line in gateway_logs(logs)] == snapshot(
            [
                "upstream 'up' failed a request carrying one client's forwarded headers",
                "upstream 'other' failed a request carrying one client's forwarded headers",
                "upstream 'up' failed a request carrying one client's forwarded headers",
            ]
        )
        assert gateway_logs(logs)[-1].endswith(
            "; 4 other clients' headers failed since the last such line"
        )

    def test_memory_is_bounded_the_oldest_clients_failure_goes(self) -> None:
        health = UpstreamHealth(log=False)
        for i in range(MOST_KEPT + 1):
            health.failed("up", answered_error(REFUSED), scope=f"client {i}")
        assert not health.failing("up", "client 0")
        assert health.failing("up", "client 1")
        assert health.failing("up", f"client {MOST_KEPT}")


class Upstream:
    """What a probe connects to: ``answering`` (or not: a stall), counting the connections."""

    def __init__(self) -> None:
        self.answering = False
        self.released = asyncio.Event()  # a stall ends (as a timeout would) once set
        self.connections = 0
        self.headers: list[str] = []

    def __call__(self) -> Upstream:  # the client factory
        return self

    @property
    def instructions(self) -> str:
        return "hi"

    async def __aenter__(self) -> Upstream:
        self.connections += 1
        self.headers.append(_ASKING.get())
        if not self.answering:
            await self.released.wait()
            raise through_fastmcp(httpx2.ReadTimeout("no answer"))
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


def probed(clock: Clock) -> tuple[UpstreamProvider, Upstream]:
    """A provider of an upstream that gets each client's headers, and its probe's upstream."""
    upstream = Upstream()
    provider = UpstreamProvider(
        upstream, label="up", health=UpstreamHealth(log=False), backoff=2, backoff_max=8
    )
    provider.listings = forwarding(clock, backoff=2, backoff_max=8)
    provider.probe = Probe(upstream)
    return provider, upstream


async def connected(upstream: Upstream, connections: int, seconds: float = 1.0) -> None:
    """Until the probe has connected ``connections`` times in all (``seconds`` at most)."""
    for _ in range(int(seconds / 0.005)):
        if upstream.connections >= connections:
            break
        await asyncio.sleep(0.005)


async def settled(upstream: Upstream, connections: int, seconds: float = 1.0) -> None:
    """Until the probe has connected ``connections`` times in all, and every stall ended."""
    await connected(upstream, connections, seconds)
    upstream.released.set()
    for _ in range(10):
        await asyncio.sleep(0)
    upstream.released.clear()


STALLED = UpstreamTimeout("tools/list", 2, "connect_timeout + list_timeout")


class Throttling(Middleware):
    """Refuses a call to echo "throttle" as FastMCP's ``RateLimitingMiddleware`` does (-32000)."""

    async def on_call_tool(self, context: Any, call_next: Any) -> Any:
        if context.message.arguments == {"text": "throttle"}:
            raise RateLimitError("Rate limit exceeded for this client")
        return await call_next(context)


def calling(clock: Clock) -> tuple[FastMCP, UpstreamProvider, Upstream]:
    """A gateway whose provider's calls reach a real (in-memory) upstream, the provider, and
    its probe's stalling upstream."""
    echo = FastMCP("echo")
    echo.add_middleware(ErrorHandlingMiddleware())  # a KeyError answers -32001 "Not found"
    echo.add_middleware(Throttling())

    @echo.tool(name="echo")
    def echo_text(text: str) -> str:
        if text == "fail":
            raise ValueError("no echo today")
        if text == "missing":
            raise KeyError(text)
        return text

    factory = client_factory(FastMCPTransport(echo), None, relay=False)
    provider = UpstreamProvider(factory, label="up", health=UpstreamHealth(log=False), backoff=2)
    # Kept for ten minutes: once listed, a call asks nothing but the call itself.
    provider.listings = Listings(
        seconds=600, clock=clock, forwarded=True, scope=_ASKING.get, backoff=2, backoff_max=8
    )
    stalling = Upstream()
    provider.probe = Probe(stalling)
    gateway = FastMCP("gateway")
    gateway.add_provider(provider)
    return gateway, provider, stalling


class TestProbe:
    """``Probe``: a client's unanswered request asks the upstream without its headers."""

    async def test_no_answer_there_either_backs_off_everyone(self) -> None:
        clock = Clock()
        provider, upstream = probed(clock)
        _ASKING.set("carol")
        _doubt(provider, STALLED, "carol")
        await settled(upstream, 1)
        assert upstream.headers == ["alice"]  # _ASKING's default: none of the request's context
        assert provider.health.unavailable == {"up": "no answer"}
        assert await ask(provider.listings, Breaks(), "bob") == "BackingOff"
        clock.now += 2  # the back-off is over: the next unanswered request asks again
        _doubt(provider, STALLED, "dave")
        await settled(upstream, 2)
        assert provider.listings.retry_in() == 4  # doubled

    async def test_an_answer_leaves_the_failure_the_clients_and_quiets_probes(self) -> None:
        clock = Clock()
        provider, upstream = probed(clock)
        upstream.answering = True
        _doubt(provider, STALLED, "mallory")
        await settled(upstream, 1)
        assert provider.health.unavailable == {}
        assert await ask(provider.listings, Breaks(), "bob") == "bob_tool"
        clock.now += 9
        _doubt(provider, STALLED, "mallory")  # one client cannot make it ask more often
        await settled(upstream, 2, seconds=0.05)
        clock.now += 1
        _doubt(provider, STALLED, "mallory")
        await settled(upstream, 2)
        assert upstream.connections == 2

    async def test_one_at_a_time(self) -> None:
        provider, upstream = probed(Clock())
        for who in ("alice", "bob", "carol"):
            _doubt(provider, STALLED, who)
        await settled(upstream, 3, seconds=0.05)
        assert upstream.connections == 1

    async def test_newer_news_wins_over_a_probe_begun_before_it(self) -> None:
        provider, upstream = probed(Clock())
        _doubt(provider, STALLED, "alice")
        await connected(upstream, 1)  # the probe is on its way
        upstream.answering = True  # and a handshake reads the instructions meanwhile
        _ASKING.set("bob")
        assert await provider.instructions() == "hi"
        await settled(upstream, 1)
        assert provider.health.unavailable == {}
        assert await ask(provider.listings, Breaks(), "bob") == "bob_tool"

    @pytest.mark.parametrize(
        ("text", "told"),
        [
            ("hi", None),
            ("fail", "no echo today"),  # an error the upstream sends is an answer too
            # Its own errors with the codes the SDK gives its own failures (-32000, -32001)
            # too, passed on in its words: not "connection closed" nor "did not answer".
            ("throttle", "Rate limit exceeded"),
            ("missing", "Not found"),
        ],
    )
    async def test_a_call_answered_meanwhile_outweighs_the_probes_silence(
        self, text: str, told: str | None, era: str
    ) -> None:
        gateway, provider, stalling = calling(Clock())
        async with Client(gateway, **ERAS[era]) as client:
            assert [t.name for t in await client.list_tools()] == ["echo"]
            _doubt(provider, STALLED, "carol")
            await connected(stalling, 1, seconds=10)  # the probe is on its way, and hears nothing
            if told is None:
                assert (await client.call_tool("echo", {"text": text})).data == text
            else:
                with pytest.raises(ToolError, match=told) as error:
                    await client.call_tool("echo", {"text": text})
                assert "upstream 'up'" not in str(error.value)
            await settled(stalling, 1)
            assert provider.health.unavailable == {}
            assert [t.name for t in await client.list_tools()] == ["echo"]  # not backed off

    async def test_without_a_call_the_probes_silence_backs_off(self, era: str) -> None:
        gateway, provider, stalling = calling(Clock())
        async with Client(gateway, **ERAS[era]) as client:
            assert [t.name for t in await client.list_tools()] == ["echo"]
            _doubt(provider, STALLED, "carol")
            await settled(stalling, 1)
            assert provider.health.unavailable == {"up": "no answer"}
            assert provider.listings.retry_in() == 2  # the whole upstream backs off

    @pytest.mark.parametrize(
        ("error", "scope"),
        [
            (answered_error(REFUSED), "mallory"),  # an answer: no doubt
            (through_fastmcp(UnicodeEncodeError("ascii", "\xe9", 0, 1, "no")), "mallory"),
            (httpx2.ConnectError("refused"), "mallory"),  # everyone's already
            (STALLED, ""),  # no client's headers: the upstream's already
        ],
        ids=["answered", "unsendable", "refused", "no-headers"],
    )
    async def test_only_a_clients_unanswered_request_asks(
        self, error: Exception, scope: str
    ) -> None:
        provider, upstream = probed(Clock())
        _doubt(provider, error, scope)
        await settled(upstream, 1, seconds=0.05)
        assert upstream.connections == 0


ROSTER = '''"""An HTTP upstream: `weather` for all, `NAME_notes` for the bearer of token NAME."""
import argparse, asyncio

from fastmcp import FastMCP
from fastmcp.server.dependencies import get_http_headers
from fastmcp.server.middleware import Middleware

parser = argparse.ArgumentParser()
parser.add_argument("--http", action="store_true")
parser.add_argument("--port", type=int)
parser.add_argument("--count")
parser.add_argument("--delay", type=float, default=0.0)
options = parser.parse_args()


def bearer() -> str:
    header = get_http_headers(include={"authorization"}).get("authorization", "")
    return header.removeprefix("Bearer ") or "nobody"


def allowed(name: str) -> bool:
    return name == "weather" or name == f"{bearer()}_notes"


class ByToken(Middleware):
    async def on_list_tools(self, context, call_next):
        with open(options.count, "a") as count:
            count.write(bearer() + "\\n")
        await asyncio.sleep(options.delay)
        return [tool for tool in await call_next(context) if allowed(tool.name)]

    async def on_call_tool(self, context, call_next):
        if not allowed(context.message.name):
            raise ValueError(f"{bearer()} may not call {context.message.name}")
        return await call_next(context)


mcp = FastMCP("roster", middleware=[ByToken()])
for who in ("alice", "bob"):
    mcp.tool(lambda who=who: f"{who}'s notes", name=f"{who}_notes")
mcp.tool(lambda: "sunny", name="weather")
mcp.run(transport="http", port=options.port, show_banner=False)
'''


@contextmanager
def running(tmp_path: Path, script: str, *args: str) -> Iterator[RunningServer]:
    """``script`` (a server's source) run over HTTP with ``args``; stopped afterwards."""
    path = tmp_path / f"upstream_{abs(hash(script))}.py"
    path.write_text(script, encoding="utf-8")
    with serve_http(path, *args) as upstream:
        yield upstream


@pytest.fixture
def roster(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A running ``ROSTER`` upstream's URL, and the file it counts its tool listings in."""
    count = tmp_path / "count"
    with running(tmp_path, ROSTER, "--count", str(count), "--delay", "0.3") as upstream:
        yield upstream.url, count


SPEC_SERVER = '''"""An HTTP upstream listing, per bearer token, the tools a JSON spec gives it."""
import argparse, json
from fastmcp import FastMCP
from fastmcp.tools import Tool
from fastmcp.server.dependencies import get_http_headers
from fastmcp.server.middleware import Middleware

parser = argparse.ArgumentParser()
parser.add_argument("--http", action="store_true")
parser.add_argument("--port", type=int)
parser.add_argument("--spec")
options = parser.parse_args()
spec = json.load(open(options.spec))


def bearer() -> str:
    header = get_http_headers(include={"authorization"}).get("authorization", "")
    return header.removeprefix("Bearer ") or "nobody"


owners = {}
mcp = FastMCP("spec")
for who, tools in spec.items():
    for name, description, params in tools:
        owners[name] = who
        schema = {
            "type": "object",
            "properties": {p: {"type": "string", "description": d} for p, d in params.items()},
        }
        tool = Tool.from_function(lambda: "ok", name=name, description=description)
        mcp.add_tool(tool.model_copy(update={"parameters": schema}))


class ByToken(Middleware):
    async def on_list_tools(self, context, call_next):
        return [t for t in await call_next(context) if owners[t.name] == bearer()]


mcp.add_middleware(ByToken())
mcp.run(transport="http", port=options.port, show_banner=False)
'''

# alice: two tools that match "region" (one by its parameter); bob: a dozen tools that
# all have a "region" parameter, which alice never sees.
SPEC = {
    "alice": [
        ["alpha", "Look things up", {"region": "the region to forecast"}],
        ["beta", "Forecast region data quickly", {}],
    ],
    "bob": [[f"bob_tool_{i}", f"Bob tool number {i}", {"region": "a region"}] for i in range(12)],
}


@pytest.fixture
def spec_upstream(tmp_path: Path) -> Iterator[RunningServer]:
    """A running ``SPEC_SERVER`` upstream listing ``SPEC`` by bearer token."""
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC), encoding="utf-8")
    with running(tmp_path, SPEC_SERVER, "--spec", str(spec)) as upstream:
        yield upstream


@pytest.fixture
def by_spec(spec_upstream: RunningServer) -> str:
    return spec_upstream.url


GROWING = '''"""An HTTP upstream listing the same tools to everyone; `grow` adds one."""
import argparse
from fastmcp import FastMCP

parser = argparse.ArgumentParser()
parser.add_argument("--http", action="store_true")
parser.add_argument("--port", type=int)
options = parser.parse_args()
mcp = FastMCP("growing")
grown = [0]


def grow() -> str:
    grown[0] += 1
    mcp.tool(lambda: "x", name=f"grown_{grown[0]}")
    return "ok"


mcp.tool(grow, name="grow")
mcp.tool(lambda: "sunny", name="weather")
mcp.run(transport="http", port=options.port, show_banner=False)
'''


@pytest.fixture
def growing(tmp_path: Path) -> Iterator[RunningServer]:
    """A running ``GROWING`` upstream."""
    with running(tmp_path, GROWING) as upstream:
        yield upstream


@pytest.fixture
def tenant(tmp_path: Path) -> Iterator[str]:
    """The URL of a running ``TENANT`` upstream (serves only the token 'good')."""
    with running(tmp_path, TENANT) as upstream:
        yield upstream.url


GREETER = '''"""An HTTP upstream whose instructions greet the bearer of the token it is sent."""
import argparse

from fastmcp import FastMCP
from fastmcp.server.dependencies import get_http_headers
from fastmcp.server.middleware import Middleware


def greeting() -> str:
    header = get_http_headers(include={"authorization"}).get("authorization", "")
    return f"Notes for {header.removeprefix('Bearer ') or 'nobody'}."


class Greets(Middleware):
    async def on_initialize(self, context, call_next):
        result = await call_next(context)
        return None if result is None else result.model_copy(update={"instructions": greeting()})

    async def on_discover(self, context, call_next):
        result = await call_next(context)
        if isinstance(result, dict):
            return {**result, "instructions": greeting()}
        return result.model_copy(update={"instructions": greeting()})


parser = argparse.ArgumentParser()
parser.add_argument("--http", action="store_true")
parser.add_argument("--port", type=int)
mcp = FastMCP("greeter", instructions="Notes.", middleware=[Greets()])
mcp.tool(lambda: "ok", name="ping")
mcp.run(transport="http", port=parser.parse_args().port, show_banner=False)
'''


@pytest.fixture
def greeter(tmp_path: Path) -> Iterator[str]:
    """The URL of a running ``GREETER`` upstream."""
    with running(tmp_path, GREETER) as upstream:
        yield upstream.url


WELCOMER = '''"""An HTTP upstream that logs to each client in its handshake and records the
Authorization header of every HTTP request it gets (one line each, "-" for none)."""
import argparse

from fastmcp import FastMCP
from fastmcp.server.middleware import Middleware

parser = argparse.ArgumentParser()
parser.add_argument("--http", action="store_true")
parser.add_argument("--port", type=int)
parser.add_argument("--record")
options = parser.parse_args()


class Welcomes(Middleware):
    async def on_initialize(self, context, call_next):
        result = await call_next(context)
        if context.fastmcp_context is not None:
            await context.fastmcp_context.info("welcome")
        return result


mcp = FastMCP("welcomer", instructions="Welcome.", middleware=[Welcomes()])
mcp.tool(lambda: "sunny", name="weather")
inner = mcp.http_app()


async def app(scope, receive, send):
    if scope["type"] == "http":
        headers = dict(scope["headers"])
        with open(options.record, "a") as record:
            record.write(headers.get(b"authorization", b"-").decode() + "\\n")
    await inner(scope, receive, send)


import uvicorn

uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning", lifespan="on")
'''


def listed_for(count: Path) -> list[str]:
    """Whose tool listings the upstream was asked, in order."""
    return count.read_text().split() if count.exists() else []


def gateway(url: str, *, search: bool = False) -> Any:
    """A gateway without ``[auth]`` in front of the upstream at ``url`` (headers forwarded)."""
    config = {"upstreams": [{"url": url}], "search": {"enabled": search}}
    return build_proxy(FilteringConfig.model_validate(config))


async def tool_names(client: Client[Any]) -> list[str]:
    return sorted(tool.name for tool in await client.list_tools())


@asynccontextmanager
async def clients(
    url: str, era: str = "modern", *, search: bool = False
) -> AsyncIterator[tuple[Client[Any], ...]]:
    """Clients of a gateway in front of ``url``: alice's token, bob's, and one without."""
    async with (
        asgi_server(gateway(url, search=search)) as proxy,
        proxy.client(auth="alice", **ERAS[era]) as alice,
        proxy.client(auth="bob", **ERAS[era]) as bob,
        proxy.client(**ERAS[era]) as nobody,
    ):
        yield alice, bob, nobody


@pytest.mark.slow
class TestGatewayListsPerClient:
    """``build_proxy`` over HTTP, in front of a real upstream that lists by token."""

    async def test_each_token_sees_its_own_listing(
        self, era: str, roster: tuple[str, Path]
    ) -> None:
        url, count = roster
        async with clients(url, era) as (alice, bob, nobody):
            for _ in range(2):
                assert await tool_names(alice) == ["alice_notes", "weather"]
                assert await tool_names(bob) == ["bob_notes", "weather"]
                assert await tool_names(nobody) == ["weather"]
        # Kept for each client's headers: asked once for each, however often each lists.
        assert sorted(listed_for(count)) == ["alice", "bob", "nobody"]

    async def test_concurrent_listings_are_not_shared_across_tokens(
        self, era: str, roster: tuple[str, Path]
    ) -> None:
        url, _count = roster
        async with clients(url, era) as (alice, bob, _nobody):
            # The upstream takes 0.3 s a listing: both are on their way at once.
            got = await asyncio.gather(*(tool_names(c) for c in (alice, bob, alice, bob)))
        assert got == [["alice_notes", "weather"], ["bob_notes", "weather"]] * 2

    async def test_a_tool_another_token_lists_is_unknown_not_refused(
        self, era: str, roster: tuple[str, Path]
    ) -> None:
        url, _count = roster
        async with clients(url, era) as (alice, bob, _nobody):
            notes = (await alice.call_tool("alice_notes", {})).content[0]
            assert getattr(notes, "text", None) == "alice's notes"
            answers = []
            for name in ("alice_notes", "carol_notes"):
                with pytest.raises(Exception) as refused:  # noqa: PT011 - compared below
                    await bob.call_tool(name, {})
                answers.append(str(refused.value).replace(name, "NAME"))
        # Bob cannot tell alice's tool from one nobody has: the upstream never told him of it.
        assert answers[0] == answers[1]
        assert "Unknown tool" in answers[0]

    async def test_tracing_headers_do_not_split_a_clients_listing(
        self, roster: tuple[str, Path]
    ) -> None:
        url, count = roster
        async with asgi_server(gateway(url)) as proxy:
            for trace in ("00-aa-01-01", "00-bb-02-01"):
                headers = {"traceparent": trace, "x-request-id": trace}
                async with proxy.client(auth="alice", headers=headers) as alice:
                    assert await tool_names(alice) == ["alice_notes", "weather"]
        assert listed_for(count) == ["alice"]

    async def test_a_list_changed_relists_for_every_token(
        self, roster: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        url, count = roster
        made: list[Listings] = []
        original = listings_module.Listings

        def record(**options: Any) -> Listings:
            made.append(original(**options))
            return made[-1]

        monkeypatch.setattr("fastmcp_filtering.gateway.upstreams.provider.Listings", record)
        async with clients(url) as (alice, bob, _nobody):
            await tool_names(alice)
            await tool_names(bob)
            made[0].forget("tool")  # what the upstream's list_changed does
            await tool_names(alice)
            await tool_names(bob)
        assert listed_for(count) == ["alice", "bob", "alice", "bob"]


@pytest.mark.slow
class TestNothingSharedDependsOnAnotherToken:
    """What every client shares (search statistics, change notifications) is never read from
    another client's listing: the catalog counts a forwarding upstream's components as
    listed per request."""

    async def test_another_tokens_tools_move_no_score_of_mine(self, era: str, by_spec: str) -> None:
        async with clients(by_spec, era, search=True) as (alice, bob, _nobody):

            async def alices_results() -> tuple[list[str], list[str]]:
                found = await alice.call_tool("search_tools", {"query": "region"})
                assert found.structured_content is not None
                ranked = await list_tools(alice, query="region")
                names = [t["name"] for t in found.structured_content["tools"]]
                return names, [t.name for t in ranked.tools]

            before = await alices_results()
            await bob.call_tool("search_tools", {"query": "tool"})  # bob's own search
            await list_tools(bob, query="region")
            after = await alices_results()
        assert sorted(before[0]) == sorted(before[1]) == ["alpha", "beta"]
        # Counted, bob's dozen "region" parameters would make alice's one count for nothing.
        assert after == before

    async def test_an_upstream_i_cannot_see_fails_without_its_name_whoever_listed_last(
        self, era: str, spec_upstream: RunningServer
    ) -> None:
        # Alice's tools are all in a group no client here may use (no [auth]: no token); bob's
        # are open. Whether a failure names the upstream is judged by alice's own listing.
        config = {
            "on_upstream_error": "raise",
            "upstreams": [{"name": "spec", "url": spec_upstream.url, "list_ttl": 0}],
            "groups": [{"name": "locked", "tools": ["alpha", "beta"], "access": {"scopes": ["x"]}}],
            "search": {"enabled": False},
        }
        proxy_server = build_proxy(FilteringConfig.model_validate(config))
        async with (
            asgi_server(proxy_server) as proxy,
            proxy.client(auth="alice", **ERAS[era]) as alice,
            proxy.client(auth="bob", **ERAS[era]) as bob,
        ):
            assert await tool_names(alice) == []
            assert "bob_tool_0" in await tool_names(bob)  # the upstream's last listing: bob's
            os.kill(spec_upstream.pid, signal.SIGKILL)
            assert await tool_names(alice) == []  # not "upstream 'spec' is unavailable: ..."
            with pytest.raises(Exception, match="upstream 'spec' is unavailable"):
                await tool_names(bob)

    async def test_served_without_http_every_client_hears_of_a_change(
        self, growing: RunningServer
    ) -> None:
        """No request carries headers (stdio, in memory): every client shares one listing,
        and a change to it is announced as any other's."""
        config = {"upstreams": [{"url": growing.url, "list_ttl": 0}], "search": {"enabled": False}}
        server = build_proxy(FilteringConfig.model_validate(config))
        heard = Recorder()
        async with (
            Client(server, mode="legacy", message_handler=heard) as alice,
            Client(server, mode="legacy") as bob,
        ):
            await alice.list_tools()
            await bob.list_tools()
            await asyncio.sleep(0.2)
            heard.methods.clear()
            await bob.call_tool("grow", {})
            assert "grown_1" in await tool_names(bob)
            await asyncio.sleep(0.3)
        assert "notifications/tools/list_changed" in heard.methods

    async def test_a_client_backing_off_is_told_its_own_reason_never_anothers(
        self, tenant: str
    ) -> None:
        options = {"list_ttl": 0, "backoff": 60, "backoff_max": 60}
        timeouts = {"connect_timeout": 1, "list_timeout": 1}
        async with resetting(tenant) as url:
            upstream = {"name": "tenant", "url": url, **options, **timeouts}
            config = {"upstreams": [upstream], "on_upstream_error": "raise"}
            proxy_server = build_proxy(FilteringConfig.model_validate(config))
            async with asgi_server(proxy_server) as proxy:

                async def listing(headers: dict[str, str]) -> str:
                    async with proxy.client(headers=headers) as client:
                        with pytest.raises(MCPError) as failed:
                            await client.list_tools()
                        return str(failed.value)

                eve = {"Authorization": "Bearer eve", "X-Stall-Me": "1"}
                mallory = {"Authorization": "Bearer mallory", "X-Reset-Me": "1"}
                stalled = "upstream 'tenant' is unavailable: did not answer tools/list within 2 s"
                assert (await listing(eve)).startswith(stalled)
                # A socket's failure in plain words, naming no Python class.
                assert "is unavailable: connection reset" in await listing(mallory)
                # Eve's own back-off runs, with her own reason: never Mallory's reset.
                again = await listing(eve)
                assert again.startswith(stalled)
                assert again.endswith("the gateway asks it again in 60 s")

    async def test_a_bad_token_is_one_line_and_hides_nothing_from_the_others(
        self, era: str, tenant: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The upstream answers 401 to one client's token: the log says so once (not that the
        upstream comes and goes), and another client's handshake still gets its instructions."""
        caplog.set_level(logging.INFO, logger="fastmcp_filtering")
        upstreams = [{"name": "tenant", "url": tenant, "list_ttl": 0}]
        config = {"upstreams": upstreams, "search": {"enabled": False}}
        bad, good = ({"Authorization": f"Bearer {token}"} for token in ("bad", "good"))
        async with asgi_server(build_proxy(FilteringConfig.model_validate(config))) as proxy:
            for _ in range(2):
                async with proxy.client(headers=bad, **ERAS[era]) as client:
                    assert "Say it back." not in (client.instructions or "")
                    with pytest.raises(
                        MCPError, match=f"^upstream 'tenant' is unavailable: {REFUSED}"
                    ):
                        await client.list_tools()
                async with proxy.client(headers=good, **ERAS[era]) as client:
                    assert "Say it back." in (client.instructions or "")
                    assert await tool_names(client) == ["echo"]
        assert gateway_logs(caplog) == snapshot(
            [
                "upstream 'tenant' failed a request carrying one client's forwarded headers: "
                "Server returned an error response; until it answers them that client is told so "
                "by each request that needs it (the others are served as before)"
            ]
        )

    async def test_an_upstream_that_answers_no_one_is_down_for_everyone(
        self, era: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """It accepts connections and never answers: the first client's stall is asked again
        without its headers, and the upstream is then down for everyone (told at once, never
        connected to again until its back-off ends), not each client's once."""
        caplog.set_level(logging.INFO, logger="fastmcp_filtering")
        accepted: list[int] = []

        async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted.append(1)
            await reader.read()  # until the gateway gives up and closes it

        hung = await asyncio.start_server(hang, "127.0.0.1", 0)
        port = hung.sockets[0].getsockname()[1]
        timeouts = {"connect_timeout": 0.5, "list_timeout": 0.5, "backoff": 60, "backoff_max": 60}
        upstreams = [{"name": "hung", "url": f"http://127.0.0.1:{port}/mcp", **timeouts}]
        config = {"upstreams": upstreams, "search": {"enabled": False}}
        down = "upstream 'hung' is unavailable: did not answer initialize within 0.5 s"
        async with hung, asgi_server(build_proxy(FilteringConfig.model_validate(config))) as proxy:
            async with proxy.client(auth="alice", **ERAS[era]) as alice:
                assert alice.instructions is None or "hung" not in alice.instructions
            for _ in range(50):  # the probe (0.5 s at most) finds no answer either
                if any(m.startswith(down) for m in gateway_logs(caplog)):
                    break
                await asyncio.sleep(0.05)
            asked = len(accepted)
            for who in ("bob", "carol"):
                async with proxy.client(auth=who, **ERAS[era]) as client:
                    with pytest.raises(MCPError) as refused:
                        await client.list_tools()
                    assert refused.value.error.message.startswith(down)
                    assert refused.value.error.message.endswith("again in 60 s")
        assert len(accepted) == asked  # bob and carol never waited for it
        assert [m.split(";")[0] for m in gateway_logs(caplog)] == snapshot(
            [
                "upstream 'hung' failed a request carrying one client's forwarded headers: "
                "did not answer initialize within 0.5 s (connect_timeout)",
                "upstream 'hung' is unavailable: did not answer initialize within 0.5 s "
                "(connect_timeout)",
            ]
        )

    async def test_the_probe_carries_no_clients_headers_and_relays_nothing(
        self, era: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Mallory's header makes the connection reset: the upstream is asked again without
        her token, and the log message it sends in that handshake reaches no one."""
        caplog.set_level(logging.DEBUG)
        record = tmp_path / "record"
        with running(tmp_path, WELCOMER, "--record", str(record)) as upstream:
            async with resetting(upstream.url) as url:
                # A 2025-11-25 session: its handshake is where the upstream logs.
                timeouts = {"connect_timeout": 1, "list_timeout": 1}
                upstreams = [{"name": "up", "url": url, "mode": "legacy", **timeouts}]
                config = {"upstreams": upstreams, "search": {"enabled": False}}
                async with asgi_server(
                    build_proxy(FilteringConfig.model_validate(config))
                ) as proxy:
                    reset = {"X-Reset-Me": "1"}
                    async with proxy.client(auth="mallory", headers=reset, **ERAS[era]):
                        pass
                    for _ in range(100):  # the probe's requests reach the upstream
                        if "-" in record.read_text():
                            break
                        await asyncio.sleep(0.02)
                    await asyncio.sleep(0.2)  # and its handshake's log message is handled
                    async with proxy.client(auth="bob", **ERAS[era]) as bob:
                        assert await tool_names(bob) == ["weather"]
        asked = record.read_text().split()
        assert "-" in asked  # the probe: no Authorization at all
        assert "Bearer mallory" not in asked  # her reset requests never reached it
        assert not [r.getMessage() for r in caplog.records if r.exc_info]
        assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]

    async def test_each_token_is_given_the_instructions_the_upstream_gives_it(
        self, era: str, greeter: str
    ) -> None:
        async with asgi_server(gateway(greeter)) as proxy:
            for _ in range(2):  # the second handshake of each reads what was kept for it
                for who in ("alice", "bob"):
                    async with proxy.client(auth=who, **ERAS[era]) as client:
                        assert f"Notes for {who}." in (client.instructions or "")

    async def test_another_tokens_first_listing_sends_me_no_list_changed(
        self, roster: tuple[str, Path]
    ) -> None:
        url, _count = roster
        heard = Recorder()
        async with (
            asgi_server(gateway(url)) as proxy,
            proxy.client(auth="alice", mode="legacy", message_handler=heard) as alice,
            proxy.client(auth="bob", mode="legacy") as bob,
        ):
            before = await tool_names(alice)
            await asyncio.sleep(0.2)
            heard.methods.clear()
            await tool_names(bob)  # bob_notes, which alice is never listed
            await asyncio.sleep(0.2)
            after = await tool_names(alice)
        assert before == after
        assert heard.methods == []


async def test_the_scope_is_a_digest_of_who_asks_not_of_the_request() -> None:
    """Over HTTP: the token and other headers split scopes, tracing ids and MCP's own do not;
    the scope holds no token."""
    server = FastMCP("scopes")
    server.tool(forwarded_scope, name="scope")
    async with asgi_server(server) as running:

        async def scope_of(**options: Any) -> str:
            async with running.client(**options) as client:
                return str((await client.call_tool("scope", {})).data)

        alice = await scope_of(auth="alice-token")
        assert alice == await scope_of(auth="alice-token", headers={"traceparent": "00-a-b-01"})
        sentry = {"sentry-trace": "ab-cd", "baggage": "sentry-trace_id=ab,sentry-sampled=true"}
        assert alice == await scope_of(auth="alice-token", headers=sentry)
        user = {"baggage": "sentry-trace_id=ab,user=alice"}
        assert alice != await scope_of(auth="alice-token", headers=user)
        assert alice != await scope_of(auth="bob-token")
        assert alice != await scope_of(auth="alice-token", headers={"x-toolsets": "repos"})
        assert alice != await scope_of()
        assert "alice" not in alice
        assert len(alice) == 64

        def bare(**options: Any) -> httpx2.AsyncClient:
            """An HTTP client that sends only MCP's own headers (no user agent, no token)."""
            made = running.http_client(**options)

            async def strip(request: httpx2.Request) -> None:
                for name in list(request.headers):
                    if name not in _KEPT and not name.startswith("mcp-"):
                        del request.headers[name]

            made.event_hooks["request"].append(strip)
            return made

        async def bare_scope() -> str:
            async with Client(running.transport(httpx_client_factory=bare)) as client:
                return str((await client.call_tool("scope", {})).data)

        # Over HTTP with nothing that says who asks: a scope of its own, never stdio's "".
        anonymous = await bare_scope()
        assert anonymous not in ("", alice)
        assert anonymous == await bare_scope()


_KEPT = {"accept", "content-type", "content-length", "host"}

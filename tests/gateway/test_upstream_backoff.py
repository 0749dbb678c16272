"""An upstream that does not answer is left alone for a back-off, not waited for on every request.

After a listing the upstream did not answer (a timeout, a refused or dropped connection, its
process gone) the gateway treats it as failed at once for ``backoff`` seconds, doubled on
each such failure in a row up to ``backoff_max``; a listing it answers, even with an error,
or its ``list_changed``, ends it. An error it answered (an HTTP status, a JSON-RPC error)
fails that request only: one client's bad token must not make the upstream look down to the
others. Time is a fake clock (``Clock``), never slept on: the upstream is counted, never timed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as mt
import pytest
from fastmcp import Client, FastMCP
from fastmcp.utilities.tests import asgi_server
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.gateway.config.models import ConfigError, FilteringConfig, load_config
from fastmcp_filtering.gateway.proxy import build_proxy
from fastmcp_filtering.gateway.upstreams import provider as upstreams_module
from fastmcp_filtering.gateway.upstreams.failures import unanswered
from fastmcp_filtering.gateway.upstreams.listings import (
    BackingOff,
    Listings,
    NoticesChanges,
    _notice,
    how_soon,
)

from .._servers import free_port, serve_http
from .._support.backoff import (
    TENANT,
    Clock,
    Gate,
    Outage,
    answered_error,
    flaky_upstream,
    gateway_logs,
    in_memory,
    listings_asked,
    resetting,
    through_fastmcp,
)
from .._support.upstream_scripts import MISBEHAVING
from ..conftest import ERAS

GONE_WHILE = Path(__file__).parent / "gone_while.py"


class Fetches:
    """A listing that fails while ``down`` (``OSError("down")``), counting each time it is asked."""

    def __init__(self, *, down: bool = True) -> None:
        self.down = down
        self.asked = 0

    async def __call__(self) -> list[str]:
        self.asked += 1
        if self.down:
            raise OSError("down")
        return ["echo"]


async def failed(listings: Listings, fetch: Fetches, kind: str = "tool") -> BaseException:
    """What ``listings.get`` raised (it must raise)."""
    with pytest.raises((OSError, BackingOff)) as caught:
        await listings.get(kind, fetch, give_up_after=5)
    return caught.value


def status_error(status: int) -> httpx2.HTTPStatusError:
    """What httpx2's ``raise_for_status`` raises (the SSE transport's answer to a status)."""
    request = httpx2.Request("GET", "http://127.0.0.1:9/sse")
    response = httpx2.Response(status, request=request)
    return httpx2.HTTPStatusError(f"{status}", request=request, response=response)


def cycle() -> MCPError:
    """A wrapper whose causes loop back to it (never built by FastMCP, but must not hang)."""
    outer = MCPError(code=mt.INTERNAL_ERROR, message="outer")
    inner = RuntimeError("inner")
    outer.__cause__, inner.__cause__ = inner, outer
    return outer


NEVER_SENT = [
    pytest.param(ConnectionRefusedError(111, "refused"), id="connection refused"),
    pytest.param(socket.gaierror(-2, "Name or service not known"), id="no such host"),
    pytest.param(httpx2.ConnectError("All connection attempts failed"), id="http connect"),
    pytest.param(httpx2.ConnectTimeout("timed out"), id="http connect timeout"),
    pytest.param(
        through_fastmcp(httpx2.ConnectError("All connection attempts failed")),
        id="wrapped by FastMCP",
    ),
    pytest.param(
        ExceptionGroup("both", [ConnectionRefusedError(), httpx2.ConnectTimeout("t")]),
        id="a group of them",
    ),
]
"""Failures before a request byte was sent: no answer, whoever's headers it would carry."""

SENT_THEN_BROKEN = [
    pytest.param(TimeoutError("did not answer within 60 s"), id="the gateway gave up"),
    pytest.param(ConnectionResetError(104, "reset"), id="connection reset"),
    pytest.param(BrokenPipeError(32, "broken pipe"), id="a pipe broken"),
    pytest.param(httpx2.ReadError("reset"), id="http read"),
    pytest.param(httpx2.WriteError("broken"), id="http write"),
    pytest.param(
        httpx2.RemoteProtocolError("Server disconnected without sending a response."),
        id="http dropped",
    ),
    pytest.param(httpx2.ReadTimeout("timed out"), id="http read timeout"),
    pytest.param(httpx2.PoolTimeout("timed out"), id="http pool timeout"),
    pytest.param(anyio.ClosedResourceError(), id="stream closed"),
    pytest.param(anyio.BrokenResourceError(), id="stream broken"),
    pytest.param(anyio.EndOfStream(), id="end of stream"),
    pytest.param(
        MCPError(code=mt.CONNECTION_CLOSED, message="Connection closed"),
        id="the SDK's connection closed (a stdio process gone)",
    ),
    pytest.param(through_fastmcp(httpx2.ReadError("")), id="a read wrapped by FastMCP"),
    pytest.param(
        ExceptionGroup("mixed", [ConnectionRefusedError(), httpx2.ReadError("reset")]),
        id="a group with a sent request in it",
    ),
]
"""Failures once a request was (or may have been) sent: no answer, unless a client's
forwarded headers went with it."""


class TestWhatIsNoAnswer:
    """``unanswered``: each failure the MCP SDK, httpx2 or FastMCP's client raises, by class."""

    @pytest.mark.parametrize(
        "error",
        [
            *NEVER_SENT,
            *SENT_THEN_BROKEN,
            pytest.param(FileNotFoundError(2, "no such file"), id="a command that is gone"),
            pytest.param(
                ExceptionGroup("both", [ConnectionResetError(), anyio.EndOfStream()]),
                id="a group of stream failures",
            ),
        ],
    )
    def test_the_upstream_did_not_answer(self, error: BaseException) -> None:
        assert unanswered(error)

    @pytest.mark.parametrize(
        "error",
        [
            pytest.param(
                answered_error("Server returned an error response"),
                id="an HTTP 401 or 500 (streamable HTTP)",
            ),
            pytest.param(through_fastmcp(status_error(401)), id="an HTTP 401 (SSE)"),
            pytest.param(status_error(503), id="an HTTP 503"),
            pytest.param(answered_error("backend down"), id="a JSON-RPC error"),
            pytest.param(
                answered_error("Unauthorized", mt.CONNECTION_CLOSED),
                id="a peer's own -32000",
            ),
            pytest.param(
                answered_error("SSE stream ended without a response", mt.CONNECTION_CLOSED),
                id="a stream that ended unanswered (unsure: not backed off)",
            ),
            pytest.param(answered_error("Not Found", mt.METHOD_NOT_FOUND), id="an HTTP 404"),
            pytest.param(
                answered_error("Session terminated", mt.INVALID_REQUEST), id="a session ended"
            ),
            pytest.param(
                answered_error("Failed to parse JSON response", mt.PARSE_ERROR),
                id="a reply the SDK could not read",
            ),
            pytest.param(
                through_fastmcp(httpx2.LocalProtocolError("Illegal header value")),
                id="a request this end could not send (a client's header)",
            ),
            pytest.param(RuntimeError("something else"), id="a failure not known here"),
            pytest.param(
                ExceptionGroup("mixed", [ConnectionResetError(), answered_error("no")]),
                id="a group with an answer in it",
            ),
            pytest.param(cycle(), id="causes in a loop"),
        ],
    )
    def test_the_upstream_answered(self, error: BaseException) -> None:
        assert not unanswered(error)
        assert not unanswered(error, forwarded=True)

    @pytest.mark.parametrize("error", NEVER_SENT)
    def test_with_a_clients_headers_only_a_connection_never_made_is_no_answer(
        self, error: BaseException
    ) -> None:
        """Nothing was sent: no client's forwarded header can have caused it."""
        assert unanswered(error, forwarded=True)

    @pytest.mark.parametrize("error", SENT_THEN_BROKEN)
    def test_with_a_clients_headers_a_sent_request_that_broke_is_an_answer(
        self, error: BaseException
    ) -> None:
        """The upstream (or a proxy) may have reset, dropped or stalled on that client's bytes."""
        assert not unanswered(error, forwarded=True)

    @pytest.mark.parametrize(
        ("seconds", "words"),
        [
            (0.001, "in under a second"),
            (0.999, "in under a second"),
            (1, "in 1 s"),
            (3.2, "in 4 s"),
        ],
    )
    def test_how_soon_is_said_in_words(self, seconds: float, words: str) -> None:
        assert how_soon(seconds) == words
        assert str(BackingOff(seconds)) == f"did not answer lately; asked again {words}"


class TestListingsBackOff:
    """The keeper itself, in memory, on a fake clock."""

    async def test_a_failure_is_kept_for_the_backoff(self) -> None:
        clock, fetch = Clock(), Fetches()
        listings = Listings(seconds=60, backoff=1, backoff_max=30, clock=clock)
        first = await failed(listings, fetch)
        assert isinstance(first, OSError)
        assert listings.failing
        assert listings.retry_in() == 1
        again = await failed(listings, fetch)
        assert isinstance(again, BackingOff)
        assert again.__cause__ is first  # the reason the failure itself gave
        assert again.retry_in == 1
        assert fetch.asked == 1  # not asked, not waited for
        clock.now += 1
        assert isinstance(await failed(listings, fetch), OSError)
        assert fetch.asked == 2

    async def test_the_backoff_doubles_on_each_failure_in_a_row_up_to_its_cap(self) -> None:
        clock, fetch = Clock(), Fetches()
        listings = Listings(seconds=60, backoff=1, backoff_max=5, clock=clock)
        waits = []
        for _ in range(6):
            assert isinstance(await failed(listings, fetch), OSError)
            wait = listings.retry_in()
            assert wait is not None
            waits.append(wait)
            clock.now += wait - 0.01
            assert isinstance(await failed(listings, fetch), BackingOff)
            clock.now += 0.01
        assert waits == pytest.approx([1, 2, 4, 5, 5, 5])
        assert fetch.asked == 6

    async def test_a_success_ends_the_backoff_and_the_next_failure_starts_small(self) -> None:
        clock, fetch = Clock(), Fetches()
        listings = Listings(seconds=0, backoff=1, backoff_max=30, clock=clock)
        for wait in (1, 2, 4):
            await failed(listings, fetch)
            assert listings.retry_in() == wait
            clock.now += wait
        fetch.down = False
        assert await listings.get("tool", fetch, give_up_after=5) == ["echo"]
        assert not listings.failing
        assert listings.retry_in() is None
        fetch.down = True
        await failed(listings, fetch)
        assert listings.retry_in() == 1

    async def test_the_backoff_covers_every_kind_but_kept_listings_still_answer(self) -> None:
        clock, fetch = Clock(), Fetches(down=False)
        listings = Listings(seconds=60, backoff=1, backoff_max=30, clock=clock)
        assert await listings.get("tool", fetch, give_up_after=5) == ["echo"]
        fetch.down = True
        assert isinstance(await failed(listings, fetch, "prompt"), OSError)
        # The upstream failed: its other listings are not asked either...
        assert isinstance(await failed(listings, fetch, "resource"), BackingOff)
        # ... but what it listed before is still what it lists.
        assert await listings.get("tool", fetch, give_up_after=5) == ["echo"]
        assert fetch.asked == 2

    @pytest.mark.parametrize("kinds", [("tool",), ("prompt",), ("resource", "template")])
    async def test_forget_ends_the_backoff(self, kinds: tuple[str, ...]) -> None:
        clock, fetch = Clock(), Fetches()
        listings = Listings(seconds=60, backoff=10, backoff_max=30, clock=clock)
        await failed(listings, fetch)
        assert isinstance(await failed(listings, fetch), BackingOff)
        listings.forget(kinds)
        assert not listings.failing
        assert isinstance(await failed(listings, fetch), OSError)  # asked at once
        assert fetch.asked == 2
        assert listings.retry_in() == 10  # a new run of failures starts small again

    @pytest.mark.parametrize(
        "notification",
        [
            mt.ToolListChangedNotification(),
            mt.PromptListChangedNotification(),
            mt.ResourceListChangedNotification(),
        ],
    )
    async def test_a_list_changed_notification_ends_the_backoff(self, notification: Any) -> None:
        clock, fetch = Clock(), Fetches()
        listings = Listings(seconds=60, backoff=10, backoff_max=30, clock=clock)
        transport = NoticesChanges()
        transport.changed = listings.forget  # as the gateway hooks each upstream's transport
        await failed(listings, fetch)
        await _notice(
            transport,
            None,
            mt.LoggingMessageNotification(
                params=mt.LoggingMessageNotificationParams(level="info", data="hello")
            ),
        )
        assert isinstance(await failed(listings, fetch), BackingOff)  # other messages: no
        await _notice(transport, None, notification)
        assert isinstance(await failed(listings, fetch), OSError)
        assert fetch.asked == 2

    async def test_concurrent_requests_share_one_failing_listing_and_one_doubling(self) -> None:
        clock, release, both_asked = Clock(), asyncio.Event(), asyncio.Event()
        asked = 0

        async def fetch() -> list[str]:
            nonlocal asked
            asked += 1
            if asked == 2:  # both listings on their way before either fails
                both_asked.set()
            await release.wait()
            raise OSError("down")

        listings = Listings(seconds=60, backoff=1, backoff_max=30, clock=clock)
        waiting = [
            asyncio.create_task(listings.get(kind, fetch, give_up_after=5))
            for kind in ("tool", "tool", "tool", "prompt", "prompt")
        ]
        await both_asked.wait()
        release.set()
        outcomes = await asyncio.gather(*waiting, return_exceptions=True)
        assert [type(o) for o in outcomes] == [OSError] * 5
        assert asked == 2  # one listing per kind, each shared
        assert listings.retry_in() == 1  # failed together: one failure, not five

    async def test_a_listing_that_never_answers_starts_the_backoff(self) -> None:
        clock, never = Clock(), asyncio.Event()

        async def fetch() -> list[str]:
            await never.wait()
            return []

        listings = Listings(seconds=60, backoff=1, backoff_max=30, clock=clock)
        with pytest.raises(TimeoutError):
            await listings.get("tool", fetch, give_up_after=0.01)
        backing_off = await failed(listings, Fetches())
        assert isinstance(backing_off, BackingOff)
        assert str(backing_off.__cause__) == "did not answer within 0.01 s"

    async def test_with_a_clients_headers_a_stall_or_a_reset_starts_no_backoff(self) -> None:
        clock, never = Clock(), asyncio.Event()

        async def stalls() -> list[str]:
            await never.wait()
            return []

        async def resets() -> list[str]:
            raise through_fastmcp(httpx2.ReadError(""))

        listings = Listings(seconds=60, backoff=1, backoff_max=30, clock=clock, forwarded=True)
        with pytest.raises(TimeoutError):
            await listings.get("tool", stalls, give_up_after=0.01)
        with pytest.raises(MCPError):
            await listings.get("tool", resets, give_up_after=5)
        assert listings.retry_in() is None
        assert not listings.failing
        assert await listings.get("tool", Fetches(down=False), give_up_after=5) == ["echo"]

    async def test_with_a_clients_headers_a_refused_connection_still_starts_it(self) -> None:
        async def refused() -> list[str]:
            raise through_fastmcp(httpx2.ConnectError("All connection attempts failed"))

        listings = Listings(seconds=60, backoff=1, backoff_max=30, clock=Clock(), forwarded=True)
        with pytest.raises(MCPError):
            await listings.get("tool", refused, give_up_after=5)
        assert isinstance(await failed(listings, Fetches()), BackingOff)

    async def test_backoff_zero_asks_on_every_request(self) -> None:
        fetch = Fetches()
        listings = Listings(seconds=60, backoff=0, clock=Clock())
        for _ in range(3):
            assert isinstance(await failed(listings, fetch), OSError)
        assert fetch.asked == 3
        assert listings.failing
        assert listings.retry_in() is None

    @pytest.mark.parametrize(
        ("backoff", "backoff_max", "message"),
        [
            (-1, 30, r"backoff=-1 is not a time .* give 0 \(ask it again on every"),
            (float("nan"), 30, r"backoff=nan is not a time"),
            (float("inf"), 30, r"backoff=inf is not a time"),
            (5, 2, r"backoff_max=2 cannot cap backoff=5; give .* at least backoff, such as 30"),
            (1, float("inf"), r"backoff_max=inf is not a time"),
            (True, 30, r"backoff=True is not a time .* give 0 .* or a positive number such as 1"),
            (1, True, r"backoff_max=True is not a time"),
            ("1", 30, r"backoff='1' is not a time"),
            (None, 30, r"backoff=None is not a time"),
            (1, "30", r"backoff_max='30' is not a time"),
            (0, -5, r"backoff_max=-5 is not a time .* give 0 \(with backoff=0\) or a positive"),
            (1e308, 1e308, r"backoff=1e\+308 is longer than a day .*; give at most 86400 seconds"),
            (1, 86401, r"backoff_max=86401 is longer than a day"),
        ],
    )
    def test_the_backoff_is_validated(self, backoff: Any, backoff_max: Any, message: str) -> None:
        with pytest.raises(ValueError, match=message):
            Listings(seconds=60, backoff=backoff, backoff_max=backoff_max)

    @pytest.mark.parametrize("seconds", [True, "60", None, -1, float("nan")])
    def test_the_keeping_time_is_validated(self, seconds: Any) -> None:
        with pytest.raises(ValueError, match=rf"seconds={seconds!r} is not a time to keep"):
            Listings(seconds=seconds)

    def test_backoff_zero_needs_no_cap(self) -> None:
        assert Listings(seconds=60, backoff=0, backoff_max=0).backoff == 0

    def test_a_day_is_the_longest_backoff(self) -> None:
        listings = Listings(seconds=60, backoff=86400, backoff_max=86400)
        assert listings.backoff_max == 86400


class Answers:
    """A listing the upstream answers with an error while ``erring`` (what the MCP SDK makes of
    an HTTP 401), counting each time it is asked."""

    def __init__(self) -> None:
        self.erring = True
        self.asked = 0

    async def __call__(self) -> list[str]:
        self.asked += 1
        if self.erring:
            raise MCPError(code=mt.INTERNAL_ERROR, message="Server returned an error response")
        return ["echo"]


class TestAnAnsweredErrorIsNoOutage:
    """An upstream that answered, even with an error, is alive: no back-off starts."""

    async def test_it_fails_its_own_request_and_the_next_one_asks_again(self) -> None:
        clock, fetch = Clock(), Answers()
        listings = Listings(seconds=60, backoff=10, backoff_max=30, clock=clock)
        for _ in range(3):
            with pytest.raises(MCPError, match="Server returned an error response"):
                await listings.get("tool", fetch, give_up_after=5)
            assert not listings.failing
            assert listings.retry_in() is None
        assert fetch.asked == 3
        fetch.erring = False  # the next client's token is good: served, on the same clock
        assert await listings.get("tool", fetch, give_up_after=5) == ["echo"]

    async def test_it_ends_a_run_of_failures(self) -> None:
        clock = Clock()
        listings = Listings(seconds=0, backoff=1, backoff_max=30, clock=clock)
        for wait in (1, 2):
            await failed(listings, Fetches())
            assert listings.retry_in() == wait
            clock.now += wait
        with pytest.raises(MCPError):
            await listings.get("tool", Answers(), give_up_after=5)
        assert not listings.failing
        await failed(listings, Fetches())
        assert listings.retry_in() == 1  # a new run starts small, not at 4


async def answered() -> list[str]:
    return ["listed"]


class TestOlderNewsChangesNothing:
    """A listing that began before newer news (another's outcome, or a list_changed) was
    recorded neither starts nor ends the back-off: older news never overrides newer."""

    async def test_a_stale_failure_after_a_list_changed_starts_no_backoff(self) -> None:
        listings = Listings(seconds=60, backoff=10, backoff_max=30, clock=Clock())
        stale = Gate(OSError("the old session went away"))
        waiting = asyncio.create_task(listings.get("tool", stale, give_up_after=60))
        await stale.asked.wait()
        listings.forget(("tool",))  # the upstream says its tools changed
        assert await listings.get("tool", answered, give_up_after=60) == ["listed"]
        await stale.settle(waiting)
        assert isinstance(waiting.exception(), OSError)  # its own request still failed
        assert not listings.failing
        assert listings.retry_in() is None
        assert await listings.get("prompt", answered, give_up_after=60) == ["listed"]

    async def test_an_older_failure_after_a_newer_answer_starts_no_backoff(self) -> None:
        listings = Listings(seconds=60, backoff=10, backoff_max=30, clock=Clock())
        older = Gate(OSError("timed out"))
        waiting = asyncio.create_task(listings.get("tool", older, give_up_after=60))
        await older.asked.wait()
        assert await listings.get("prompt", answered, give_up_after=60) == ["listed"]
        await older.settle(waiting)
        assert isinstance(waiting.exception(), OSError)
        assert listings.retry_in() is None

    async def test_an_older_success_after_a_newer_failure_does_not_end_the_backoff(self) -> None:
        listings = Listings(seconds=0, backoff=10, backoff_max=30, clock=Clock())
        older = Gate()
        waiting = asyncio.create_task(listings.get("tool", older, give_up_after=60))
        await older.asked.wait()
        await failed(listings, Fetches(), "prompt")
        await older.settle(waiting)
        assert waiting.result() == ["echo"]  # answered its own request
        assert listings.failing
        assert listings.retry_in() == 10
        assert isinstance(await failed(listings, Fetches(), "resource"), BackingOff)

    async def test_the_newest_failure_still_starts_it(self) -> None:
        listings = Listings(seconds=60, backoff=10, backoff_max=30, clock=Clock())
        assert await listings.get("tool", answered, give_up_after=60) == ["listed"]
        listings.forget(("tool",))
        assert isinstance(await failed(listings, Fetches()), OSError)  # began after the news
        assert listings.retry_in() == 10


class TestForget:
    async def test_one_kind_is_one_kind_not_its_letters(self) -> None:
        listings = Listings(seconds=60, clock=Clock())
        fetch = Fetches(down=False)
        for kind in ("tool", "prompt"):
            await listings.get(kind, fetch, give_up_after=5)
        listings.forget("tool")
        for kind in ("tool", "prompt"):
            await listings.get(kind, fetch, give_up_after=5)
        assert fetch.asked == 3  # tools asked again, prompts kept

    def test_a_kind_that_is_none_is_refused(self) -> None:
        with pytest.raises(ValueError, match=r"'tools' is not a kind of listing; give some of"):
            Listings(seconds=60).forget(["tools"])


# -- the gateway, in memory: an upstream whose listings fail while it is down -----------------


def down_then_back(reason: str, requests: int) -> list[str]:
    """What the log says of "flaky" failing (for ``reason``), then answering after
    ``requests`` requests went without it, with ``on_upstream_error = "raise"``: one line each,
    however many requests failed, both warnings (a log kept to warnings shows the end too)."""
    return [
        f"upstream 'flaky' is unavailable: {reason}; each request that needs it fails "
        "with an error naming it until it answers",
        f"upstream 'flaky' answers again ({requests} requests failed or went without it meanwhile)",
    ]


def one_flaky(monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[Outage, FastMCP]:
    """A gateway of one in-memory upstream "flaky" (``options``: its keys), and its outage."""
    outage = Outage()
    in_memory(monkeypatch, {"flaky": flaky_upstream(outage)}, outage)
    upstream = {"name": "flaky", "command": "x", **options}
    config = {"upstreams": [upstream], "search": {"enabled": False}}
    return outage, build_proxy(FilteringConfig.model_validate(config))


class TestGatewayBackOff:
    """``build_proxy`` in front of in-memory upstreams; clients of both eras."""

    async def test_raise_fails_at_once_then_serves_it_again(
        self,
        era: str,
        clock: Clock,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        outage, gateway = one_flaky(monkeypatch, list_ttl=0, backoff=10, backoff_max=15)
        caplog.set_level(logging.INFO, logger="fastmcp_filtering")
        async with Client(gateway, **ERAS[era]) as client:
            assert [t.name for t in await client.list_tools()] == ["echo"]
            outage.down = True
            asked = outage.asked
            down = (
                r"upstream 'flaky' is unavailable: connection refused; the gateway asks it again in"
            )
            with pytest.raises(MCPError, match=rf"{down} 10 s$"):
                await client.list_tools()
            assert outage.asked == asked + 1
            clock.now += 4
            for _ in range(3):  # at once, the upstream not asked
                with pytest.raises(MCPError, match=rf"{down} 6 s$"):
                    await client.list_tools()
            with pytest.raises(Exception, match=rf"{down} 6 s"):
                await client.call_tool("echo", {"text": "hi"})
            assert outage.asked == asked + 1
            clock.now += 6
            with pytest.raises(MCPError, match=rf"{down} 15 s$"):  # doubled, capped
                await client.list_tools()
            assert outage.asked == asked + 2
            outage.down = False
            clock.now += 15
            assert [t.name for t in await client.list_tools()] == ["echo"]
            assert (await client.call_tool("echo", {"text": "hi"})).data == "hi"
        assert gateway_logs(caplog) == down_then_back("connection refused", 6)

    async def test_warn_leaves_it_out_at_once_and_serves_the_others(
        self,
        era: str,
        clock: Clock,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        outage = Outage()
        steady = FastMCP("steady")
        steady.tool(lambda: "ok", name="ping")
        in_memory(monkeypatch, {"flaky": flaky_upstream(outage), "steady": steady}, outage)
        config = FilteringConfig.model_validate(
            {
                "on_upstream_error": "warn",
                "upstreams": [
                    {"name": "flaky", "namespace": "f", "command": "x", "list_ttl": 0},
                    {"name": "steady", "namespace": "s", "command": "x"},
                ],
                "search": {"enabled": False},
            }
        )
        caplog.set_level(logging.INFO, logger="fastmcp_filtering")
        async with Client(build_proxy(config), **ERAS[era]) as client:
            assert {t.name for t in await client.list_tools()} == {"f_echo", "s_ping"}
            outage.down = True
            asked = outage.asked
            for _ in range(3):  # the default back-off: 1 s, on a clock that does not move
                assert {t.name for t in await client.list_tools()} == {"s_ping"}
            assert outage.asked == asked + 1
            outage.down = False
            clock.now += 1
            assert {t.name for t in await client.list_tools()} == {"f_echo", "s_ping"}
        assert gateway_logs(caplog) == [
            "upstream 'flaky' is unavailable: connection refused; serving the other upstreams "
            "without it until it answers",
            "upstream 'flaky' answers again (3 requests failed or went without it meanwhile)",
        ]

    @pytest.mark.parametrize(
        ("backoff", "said", "asked"),
        [
            pytest.param(0, r"unavailable: connection refused$", 3, id="0 asks on every request"),
            pytest.param(0.5, r"asks it again in under a second$", 1, id="under a second"),
        ],
    )
    async def test_a_short_backoff(
        self,
        era: str,
        clock: Clock,
        monkeypatch: pytest.MonkeyPatch,
        backoff: float,
        said: str,
        asked: int,
    ) -> None:
        outage, gateway = one_flaky(monkeypatch, list_ttl=0, backoff=backoff)
        async with Client(gateway, **ERAS[era]) as client:
            outage.down = True
            for _ in range(3):
                with pytest.raises(MCPError, match=said):
                    await client.list_tools()
            assert outage.asked == asked

    async def test_an_error_it_answers_fails_that_request_only(
        self,
        era: str,
        clock: Clock,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """A JSON-RPC error is an answer: the upstream is alive, and no back-off starts."""
        outage, gateway = one_flaky(monkeypatch, list_ttl=0, backoff=10)
        caplog.set_level(logging.INFO, logger="fastmcp_filtering")
        async with Client(gateway, **ERAS[era]) as client:
            assert [t.name for t in await client.list_tools()] == ["echo"]
            outage.erring = True
            asked = outage.asked
            for _ in range(3):  # no "asks it again": it is asked again, at once
                with pytest.raises(
                    MCPError, match=r"^upstream 'flaky' is unavailable: backend down$"
                ):
                    await client.list_tools()
            assert outage.asked == asked + 3
            outage.erring = False  # the clock has not moved: no back-off to wait out
            assert [t.name for t in await client.list_tools()] == ["echo"]
        assert gateway_logs(caplog) == down_then_back("backend down", 3)


# -- the gateway over HTTP: a real upstream that checks each client's forwarded token ---------


@pytest.fixture(scope="module")
def tenant(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a running ``TENANT`` upstream (one process for the module's tests)."""
    script = tmp_path_factory.mktemp("tenant") / "tenant.py"
    script.write_text(TENANT, encoding="utf-8")
    with serve_http(script) as upstream:
        yield upstream.url


def built_listings(monkeypatch: pytest.MonkeyPatch, config: dict[str, Any]) -> list[Listings]:
    """The ``Listings`` of each upstream ``build_proxy`` makes of ``config``, in order."""
    made: list[Listings] = []

    def record(**options: Any) -> Listings:
        made.append(Listings(**options))
        return made[-1]

    monkeypatch.setattr(upstreams_module, "Listings", record)
    build_proxy(FilteringConfig.model_validate({**config, "search": {"enabled": False}}))
    return made


class TestForwardedTokens:
    """A gateway without ``[auth]`` forwards each client's headers to an HTTP upstream."""

    @pytest.mark.parametrize(
        ("auth", "forwarded"),
        [
            pytest.param(None, [True, True, False], id="without [auth]: HTTP and SSE forward"),
            pytest.param(
                {"type": "static", "tokens": [{"token": "t", "client_id": "c", "scopes": []}]},
                [False, False, False],
                id="with [auth]: none does",
            ),
        ],
    )
    def test_the_gateway_tells_each_upstream_whether_a_listing_carries_a_clients_headers(
        self, monkeypatch: pytest.MonkeyPatch, auth: dict[str, Any] | None, forwarded: list[bool]
    ) -> None:
        upstreams = [
            {"name": "http", "namespace": "h", "url": "http://127.0.0.1:9/mcp"},
            {"name": "sse", "namespace": "s", "url": "http://127.0.0.1:9/sse"},
            {"name": "stdio", "namespace": "p", "command": "x"},
        ]
        config: dict[str, Any] = {"upstreams": upstreams} | ({"auth": auth} if auth else {})
        assert [made.forwarded for made in built_listings(monkeypatch, config)] == forwarded

    @pytest.mark.slow
    async def test_a_reset_on_one_clients_header_fails_its_own_requests_only(
        self, era: str, clock: Clock, tenant: str
    ) -> None:
        """A header the upstream resets the connection on must not make it look down to others."""
        good = {"Authorization": "Bearer good"}
        reset = {**good, "X-Reset-Me": "1"}
        async with resetting(tenant) as url:
            config = FilteringConfig.model_validate(
                {
                    "upstreams": [{"name": "tenant", "url": url, "list_ttl": 0}],
                    "search": {"enabled": False},
                }
            )
            async with asgi_server(build_proxy(config)) as proxy:
                for _ in range(3):  # on a clock that does not move: any back-off would still run
                    async with proxy.client(headers=reset, **ERAS[era]) as client:
                        with pytest.raises(MCPError, match=r"^upstream 'tenant' is unavailable: "):
                            await client.list_tools()
                    async with proxy.client(headers=good, **ERAS[era]) as client:
                        assert [t.name for t in await client.list_tools()] == ["echo"]
                        assert (await client.call_tool("echo", {"text": "hi"})).data == "hi"

    @pytest.mark.slow
    async def test_a_bad_token_fails_its_own_requests_only(
        self, era: str, clock: Clock, tenant: str
    ) -> None:
        """One client's 401 must not make the upstream look down to every other client."""
        config = FilteringConfig.model_validate(
            {
                "upstreams": [{"name": "tenant", "url": tenant, "list_ttl": 0}],
                "search": {"enabled": False},
            }
        )
        bad, good = ({"Authorization": f"Bearer {token}"} for token in ("bad", "good"))
        async with asgi_server(build_proxy(config)) as proxy:
            for _ in range(3):  # on a clock that does not move: any back-off would still run
                async with proxy.client(headers=bad, **ERAS[era]) as client:
                    with pytest.raises(
                        MCPError,
                        match=r"^upstream 'tenant' is unavailable: "
                        r"Server returned an error response$",
                    ):
                        await client.list_tools()
                async with proxy.client(headers=good, **ERAS[era]) as client:
                    assert [t.name for t in await client.list_tools()] == ["echo"]
                    assert (await client.call_tool("echo", {"text": "hi"})).data == "hi"

    async def test_a_refused_connection_starts_the_backoff(self, era: str, clock: Clock) -> None:
        closed = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there
        config = FilteringConfig.model_validate(
            {
                "upstreams": [{"name": "gone", "url": closed, "backoff": 5}],
                "search": {"enabled": False},
            }
        )
        async with Client(build_proxy(config), **ERAS[era]) as client:
            for _ in range(2):
                with pytest.raises(MCPError, match=r"'gone' is unavailable: .* again in 5 s$"):
                    await client.list_tools()


# -- the gateway over stdio: a real upstream process that goes, then comes back --------------


def stdio_upstream(count: Path, down: Path, *args: str, **options: Any) -> dict[str, Any]:
    """``misbehaving.py``: every listing answers an error while ``down`` exists; each counted."""
    script = [str(MISBEHAVING), "--count-listings", str(count), "--fail-when", str(down)]
    return {"name": "flaky", "command": sys.executable, "args": [*script, *args], **options}


class Gone:
    """A ``gone_while.py`` upstream: its process exits at start while ``down`` exists."""

    def __init__(self, tmp_path: Path) -> None:
        self.down, self.starts, self.pid = (tmp_path / n for n in ("down", "starts", "pid"))

    def upstream(self, *args: str, **options: Any) -> dict[str, Any]:
        files = [str(self.down), str(self.starts), str(self.pid)]
        script = [str(GONE_WHILE), *files, *args]
        return {"name": "flaky", "command": sys.executable, "args": script, **options}

    def started(self) -> int:
        return len(self.starts.read_text().splitlines()) if self.starts.exists() else 0

    def go(self) -> None:
        """End the running upstream, by its own id, and keep the next ones from starting."""
        self.down.touch()
        os.kill(int(self.pid.read_text()), signal.SIGKILL)


def serving(upstream: dict[str, Any]) -> FilteringConfig:
    return FilteringConfig.model_validate({"upstreams": [upstream], "search": {"enabled": False}})


@pytest.mark.slow
class TestGatewayBackOffOverStdio:
    async def test_an_upstream_that_is_gone_is_left_alone_then_served_again(
        self, era: str, clock: Clock, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        gone = Gone(tmp_path)
        config = serving(gone.upstream(list_ttl=0, backoff=10, backoff_max=40))
        caplog.set_level(logging.INFO, logger="fastmcp_filtering")
        async with asyncio.timeout(60), Client(build_proxy(config), **ERAS[era]) as client:
            assert [t.name for t in await client.list_tools()] == ["echo"]
            gone.go()
            with pytest.raises(MCPError, match=r"'flaky' is unavailable: .*; .* again in 10 s$"):
                await client.list_tools()
            started = gone.started()
            for _ in range(3):
                with pytest.raises(MCPError, match=r"'flaky' is unavailable: .* in 10 s$"):
                    await client.list_tools()
            assert gone.started() == started  # not started again, not waited for
            clock.now += 10
            with pytest.raises(MCPError, match=r"asks it again in 20 s$"):
                await client.list_tools()
            assert gone.started() > started
            gone.down.unlink()
            clock.now += 20
            assert [t.name for t in await client.list_tools()] == ["echo"]
        said = [m for m in gateway_logs(caplog) if "'flaky'" in m]
        # Its process ended while serving (said once, by the first connection that finds it
        # gone: before or after a request on its way fails, as the kill races the request);
        # its starts that exit at once are not said.
        assert len(said) == 3
        exited = "upstream 'flaky' exited (its process ended); starting it again"
        assert exited in said[:2]
        assert [m for m in said[:2] if m.startswith("upstream 'flaky' is unavailable: ")]
        assert said[2].startswith("upstream 'flaky' answers again (")

    async def test_its_list_changed_ends_the_backoff(
        self, era: str, clock: Clock, tmp_path: Path
    ) -> None:
        """Its tools kept, its process gone: a call that starts it again, and makes it say its
        tools changed, makes the gateway ask it again at once, whatever the back-off had left."""
        gone = Gone(tmp_path)
        config = serving(gone.upstream("--grow", list_ttl=60, backoff=30, backoff_max=30))
        async with asyncio.timeout(60), Client(build_proxy(config), **ERAS[era]) as client:
            assert {t.name for t in await client.list_tools()} == {"echo", "grow"}
            clock.now += 30
            await client.call_tool("grow", {})  # its tools relisted now, the rest kept
            assert "grown_1" in {t.name for t in await client.list_tools()}
            clock.now += 31  # its prompts' listing is stale, its tools' is not
            gone.go()
            with pytest.raises(MCPError, match=r"'flaky' is unavailable: .* again in 30 s$"):
                await client.list_prompts()
            started = gone.started()
            with pytest.raises(MCPError, match=r"asks it again in 30 s$"):
                await client.list_prompts()
            assert gone.started() == started
            gone.down.unlink()
            await client.call_tool("grow", {})  # a kept tool: the call reaches it, started again
            assert await client.list_prompts() == []  # asked at once: no back-off left

    async def test_an_error_it_answers_starts_no_backoff(
        self, era: str, clock: Clock, tmp_path: Path
    ) -> None:
        count, down = tmp_path / "count", tmp_path / "down"
        config = serving(stdio_upstream(count, down, list_ttl=0, backoff=10, backoff_max=40))
        async with asyncio.timeout(60), Client(build_proxy(config), **ERAS[era]) as client:
            assert [t.name for t in await client.list_tools()] == ["echo"]
            down.touch()
            asked = listings_asked(count)
            for _ in range(3):
                with pytest.raises(MCPError, match=r"'flaky' is unavailable: backend down$"):
                    await client.list_tools()
            assert listings_asked(count) == asked + 3  # asked each time: it answers
            down.unlink()
            assert [t.name for t in await client.list_tools()] == ["echo"]


class TestConfig:
    def test_the_backoff_defaults_to_a_second_doubling_up_to_half_a_minute(self) -> None:
        config = FilteringConfig.model_validate({"upstreams": [{"command": "server"}]})
        assert (config.upstreams[0].backoff, config.upstreams[0].backoff_max) == (1, 30)

    @pytest.mark.parametrize(
        ("lines", "message"),
        [
            (
                "backoff = -1\n",
                r"gateway.toml:3: upstreams\[0\].backoff: -1.0 is not a time in seconds; "
                r"write 0 \(ask a failed upstream on every request\)",
            ),
            (
                "backoff_max = 0\n",
                r"gateway.toml:3: upstreams\[0\].backoff_max: 0.0 is not a time in seconds",
            ),
            (
                "backoff = 60\n",
                r"gateway.toml:1: upstreams\[0\]: backoff = 60 is above backoff_max = 30, .*; "
                r"write backoff_max = 60 or more, or a smaller backoff",
            ),
            (
                "backoff = 1e308\n",
                r"gateway.toml:3: upstreams\[0\].backoff: 1e\+308 seconds is longer than a day "
                r"to leave a failed upstream alone; write at most 86400, such as 30",
            ),
            (
                "backoff_max = 86401\n",
                r"gateway.toml:3: upstreams\[0\].backoff_max: 86401 seconds is longer than a day",
            ),
        ],
    )
    def test_a_bad_backoff_is_refused_in_toml_terms(
        self, tmp_path: Path, lines: str, message: str
    ) -> None:
        path = tmp_path / "gateway.toml"
        path.write_text('[[upstreams]]\ncommand = "server"\n' + lines)
        with pytest.raises(ConfigError, match=message):
            load_config(path)

    def test_a_day_is_the_longest(self, tmp_path: Path) -> None:
        path = tmp_path / "gateway.toml"
        path.write_text('[[upstreams]]\ncommand = "server"\nbackoff = 86400\nbackoff_max = 86400\n')
        assert load_config(path).upstreams[0].backoff_max == 86400

    def test_backoff_zero_turns_it_off(self, tmp_path: Path) -> None:
        path = tmp_path / "gateway.toml"
        path.write_text('[[upstreams]]\ncommand = "server"\nbackoff = 0\nbackoff_max = 5\n')
        assert load_config(path).upstreams[0].backoff == 0

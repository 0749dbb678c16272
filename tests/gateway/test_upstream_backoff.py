"""A failing upstream is left alone for a back-off, not asked (and waited for) on every request.

After a failed listing the gateway treats the upstream as failed at once for ``backoff``
seconds, doubled on each failure in a row up to ``backoff_max``; a listing that succeeds, or
the upstream's ``list_changed``, ends it. Time is a fake clock (``Clock``), never slept on:
the upstream is counted, never timed.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from functools import partial
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import FastMCPTransport
from fastmcp.server.middleware import Middleware, MiddlewareContext
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.gateway import proxy as proxy_module
from fastmcp_filtering.gateway import upstreams as upstreams_module
from fastmcp_filtering.gateway.config import ConfigError, FilteringConfig, load_config
from fastmcp_filtering.gateway.listings import BackingOff, Listings, NoticesChanges, _notice
from fastmcp_filtering.gateway.proxy import build_proxy

from ..conftest import ERAS
from .test_upstream_listings import listings_asked

MISBEHAVING = Path(__file__).parent / "misbehaving.py"


class Clock:
    """A monotonic clock that moves only when a test moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


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
            (1, float("inf"), r"backoff_max=inf cannot cap"),
        ],
    )
    def test_the_backoff_is_validated(
        self, backoff: float, backoff_max: float, message: str
    ) -> None:
        with pytest.raises(ValueError, match=message):
            Listings(seconds=60, backoff=backoff, backoff_max=backoff_max)

    def test_backoff_zero_needs_no_cap(self) -> None:
        assert Listings(seconds=60, backoff=0, backoff_max=0).backoff == 0


# -- the gateway, in memory: an upstream whose listings fail while it is down -----------------


class Outage(Middleware):
    """Fails every listing with "backend down" while ``down``; counts the tool listings asked."""

    def __init__(self) -> None:
        self.down = False
        self.asked = 0

    async def on_list_tools(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        self.asked += 1
        if self.down:
            raise MCPError(code=mt.INTERNAL_ERROR, message="backend down")
        return await call_next(context)


class _Memory(NoticesChanges, FastMCPTransport):
    pass


def flaky_upstream(outage: Outage) -> FastMCP:
    server = FastMCP("flaky")

    @server.tool
    def echo(text: str = "") -> str:
        """Say it back."""
        return text

    server.add_middleware(outage)
    return server


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The clock every upstream's back-off (and listing age) is measured on."""
    fake = Clock()
    monkeypatch.setattr(upstreams_module, "Listings", partial(Listings, clock=fake))
    return fake


def in_memory(monkeypatch: pytest.MonkeyPatch, servers: dict[str, FastMCP]) -> None:
    """Each configured upstream named in ``servers`` is reached in memory."""

    def transport(upstream: Any, **_: Any) -> Any:
        return _Memory(servers[upstream.label])

    monkeypatch.setattr(proxy_module, "upstream_transport", transport)


def gateway_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "fastmcp_filtering"]


class TestGatewayBackOff:
    """``build_proxy`` in front of in-memory upstreams; clients of both eras."""

    async def test_raise_fails_at_once_then_serves_it_again(
        self,
        era: str,
        clock: Clock,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        outage = Outage()
        in_memory(monkeypatch, {"flaky": flaky_upstream(outage)})
        config = FilteringConfig.model_validate(
            {
                "upstreams": [
                    {
                        "name": "flaky",
                        "command": "x",
                        "list_ttl": 0,
                        "backoff": 10,
                        "backoff_max": 15,
                    }
                ],
                "search": {"enabled": False},
            }
        )
        caplog.set_level(logging.INFO, logger="fastmcp_filtering")
        async with Client(build_proxy(config), **ERAS[era]) as client:
            assert [t.name for t in await client.list_tools()] == ["echo"]
            outage.down = True
            asked = outage.asked
            down = r"upstream 'flaky' is unavailable: backend down; the gateway asks it again in"
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
        assert gateway_logs(caplog) == [
            "upstream 'flaky' is unavailable: backend down; each request that needs it fails "
            "with an error naming it until it answers",
            "upstream 'flaky' answers again",
        ]

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
        in_memory(monkeypatch, {"flaky": flaky_upstream(outage), "steady": steady})
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
            "upstream 'flaky' is unavailable: backend down; serving the other upstreams "
            "without it until it answers",
            "upstream 'flaky' answers again",
        ]

    async def test_backoff_zero_asks_it_on_every_request(
        self, era: str, clock: Clock, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        outage = Outage()
        in_memory(monkeypatch, {"flaky": flaky_upstream(outage)})
        config = FilteringConfig.model_validate(
            {
                "upstreams": [{"name": "flaky", "command": "x", "list_ttl": 0, "backoff": 0}],
                "search": {"enabled": False},
            }
        )
        async with Client(build_proxy(config), **ERAS[era]) as client:
            outage.down = True
            for _ in range(3):
                with pytest.raises(MCPError, match=r"unavailable: backend down$"):
                    await client.list_tools()
            assert outage.asked >= 3


# -- the gateway over stdio: a real upstream process that fails, then answers again -----------


def stdio_upstream(count: Path, down: Path, *args: str, **options: Any) -> dict[str, Any]:
    """``misbehaving.py``: every listing fails while ``down`` exists; each one asked counted."""
    script = [str(MISBEHAVING), "--count-listings", str(count), "--fail-when", str(down)]
    return {"name": "flaky", "command": sys.executable, "args": [*script, *args], **options}


@pytest.mark.slow
class TestGatewayBackOffOverStdio:
    async def test_a_failing_upstream_is_left_alone_then_served_again(
        self, era: str, clock: Clock, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        count, down = tmp_path / "count", tmp_path / "down"
        flaky = stdio_upstream(count, down, list_ttl=0, backoff=10, backoff_max=40)
        config = FilteringConfig.model_validate(
            {"upstreams": [flaky], "search": {"enabled": False}}
        )
        caplog.set_level(logging.INFO, logger="fastmcp_filtering")
        async with asyncio.timeout(60), Client(build_proxy(config), **ERAS[era]) as client:
            assert [t.name for t in await client.list_tools()] == ["echo"]
            down.touch()
            with pytest.raises(MCPError, match=r"'flaky' is unavailable: backend down; .* 10 s$"):
                await client.list_tools()
            asked = listings_asked(count)
            for _ in range(3):
                with pytest.raises(MCPError, match=r"'flaky' is unavailable: backend down"):
                    await client.list_tools()
            assert listings_asked(count) == asked  # not asked, not waited for
            clock.now += 10
            with pytest.raises(MCPError, match=r"asks it again in 20 s$"):
                await client.list_tools()
            assert listings_asked(count) == asked + 1
            down.unlink()
            clock.now += 20
            assert [t.name for t in await client.list_tools()] == ["echo"]
            assert listings_asked(count) == asked + 2
        said = [m for m in gateway_logs(caplog) if "'flaky'" in m]
        assert len(said) == 2
        assert said[0].startswith("upstream 'flaky' is unavailable: backend down; ")
        assert said[1] == "upstream 'flaky' answers again"

    async def test_its_list_changed_ends_the_backoff(
        self, era: str, clock: Clock, tmp_path: Path
    ) -> None:
        """Its tools kept, its prompts failing: a call that makes it say its tools changed
        makes the gateway ask it again at once, whatever the back-off had left."""
        count, down = tmp_path / "count", tmp_path / "down"
        flaky = stdio_upstream(count, down, "--grow", list_ttl=60, backoff=30, backoff_max=30)
        config = FilteringConfig.model_validate(
            {"upstreams": [flaky], "search": {"enabled": False}}
        )
        async with asyncio.timeout(60), Client(build_proxy(config), **ERAS[era]) as client:
            assert {t.name for t in await client.list_tools()} == {"echo", "grow"}
            clock.now += 30
            await client.call_tool("grow", {})  # its tools relisted now, the rest kept
            assert "grown_1" in {t.name for t in await client.list_tools()}
            clock.now += 31  # its prompts' listing is stale, its tools' is not
            down.touch()
            with pytest.raises(MCPError, match=r"'flaky' is unavailable: backend down"):
                await client.list_prompts()
            asked = listings_asked(count, "prompts/list")
            with pytest.raises(MCPError, match=r"asks it again in 30 s$"):
                await client.list_prompts()
            assert listings_asked(count, "prompts/list") == asked
            await client.call_tool("grow", {})  # a kept tool: the call reaches it
            down.unlink()
            assert await client.list_prompts() == []  # asked at once: no back-off left
            assert listings_asked(count, "prompts/list") == asked + 1


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
        ],
    )
    def test_a_bad_backoff_is_refused_in_toml_terms(
        self, tmp_path: Path, lines: str, message: str
    ) -> None:
        path = tmp_path / "gateway.toml"
        path.write_text('[[upstreams]]\ncommand = "server"\n' + lines)
        with pytest.raises(ConfigError, match=message):
            load_config(path)

    def test_backoff_zero_turns_it_off(self, tmp_path: Path) -> None:
        path = tmp_path / "gateway.toml"
        path.write_text('[[upstreams]]\ncommand = "server"\nbackoff = 0\nbackoff_max = 5\n')
        assert load_config(path).upstreams[0].backoff == 0

"""An upstream that cannot be reached is said to be unavailable, in plain words, once.

A client's call, prompt get or resource read to an upstream whose connection is refused
gets ``upstream 'flaky' is unavailable (connection refused)``: no Python class, no
"internal error". The log says the outage once, however many requests it fails, and its end
once, at the same level (a log kept to warnings shows both), with how many requests it cost.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx2
import pytest
from fastmcp import Client, FastMCP
from fastmcp.server.providers.proxy import ProxyTool
from inline_snapshot import snapshot

from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.proxy import build_proxy
from fastmcp_filtering.gateway.upstreams.failures import describe_failure

from .._support.backoff import Clock, Outage, flaky_upstream, gateway_logs, in_memory
from ..conftest import ERAS


def reachable_by_every_request(monkeypatch: pytest.MonkeyPatch) -> tuple[Outage, FastMCP]:
    """A gateway of one in-memory upstream "flaky" with a tool, a prompt and a resource."""
    outage = Outage()
    upstream = flaky_upstream(outage)
    upstream.prompt(lambda: "Say hi.", name="greet")
    upstream.resource("notes://today", name="today")(lambda: "nothing yet")
    in_memory(monkeypatch, {"flaky": upstream}, outage)
    config = {"upstreams": [{"name": "flaky", "command": "x"}], "search": {"enabled": False}}
    return outage, build_proxy(FilteringConfig.model_validate(config))


async def failure_of(request: Any) -> str:
    try:
        result = await request
    except Exception as error:
        return str(error)
    assert result.is_error
    return str(result.content[0].text)


@pytest.mark.usefixtures("clock")
class TestARefusedConnection:
    async def test_each_request_is_told_in_plain_words_and_the_log_says_it_once(
        self, era: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        outage, gateway = reachable_by_every_request(monkeypatch)
        caplog.set_level(logging.INFO, logger="fastmcp_filtering")
        async with Client(gateway, **ERAS[era]) as client:
            # Listed while up: the listings are kept, so the requests below reach for it.
            assert [t.name for t in await client.list_tools()] == ["echo"]
            assert [p.name for p in await client.list_prompts()] == ["greet"]
            assert [str(r.uri) for r in await client.list_resources()] == ["notes://today"]
            outage.down = True
            told = [
                await failure_of(client.call_tool_mcp("echo", {"text": "hi"})) for _ in range(3)
            ]
            told.append(await failure_of(client.get_prompt("greet")))
            told.append(await failure_of(client.read_resource("notes://today")))
            outage.down = False
            assert (await client.call_tool("echo", {"text": "back"})).data == "back"
        assert told == [
            "upstream 'flaky' is unavailable (connection refused)",
            "upstream 'flaky' is unavailable (connection refused)",
            "upstream 'flaky' is unavailable (connection refused)",
            "upstream 'flaky' is unavailable (connection refused)",
            "upstream 'flaky' is unavailable (connection refused)",
        ]
        ours = [r for r in caplog.records if r.name == "fastmcp_filtering"]
        assert gateway_logs(caplog) == snapshot(
            [
                "upstream 'flaky' is unavailable: connection refused; each request that needs "
                "it fails with an error naming it until it answers",
                "upstream 'flaky' answers again (5 requests failed or went without it meanwhile)",
            ]
        )
        assert [r.levelno for r in ours] == [logging.WARNING, logging.WARNING]

    async def test_a_failure_that_is_an_answer_is_still_named_without_its_class(
        self, era: str, monkeypatch: pytest.MonkeyPatch, clock: Clock
    ) -> None:
        """A result the upstream sent that is no valid result: its fault, no Python class."""
        _, gateway = reachable_by_every_request(monkeypatch)

        async def broken(*_: Any, **__: Any) -> Any:
            raise ValueError("1 validation error for CallToolResult")

        async with Client(gateway, **ERAS[era]) as client:
            await client.list_tools()
            monkeypatch.setattr(ProxyTool, "run", broken)
            told = await failure_of(client.call_tool_mcp("echo", {}))
        assert told == "upstream 'flaky' failed the call (its answer was not a valid result)"


def refused_as_httpx_says_it() -> BaseException:
    """The chain FastMCP's client raises for a refused HTTP connection: the refusal is under
    three wrappers that all say "All connection attempts failed"."""
    try:
        try:
            refused = ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 1)")
            raise OSError("All connection attempts failed") from refused
        except OSError as error:
            raise httpx2.ConnectError("All connection attempts failed") from error
    except httpx2.ConnectError as error:
        wrapped = RuntimeError("Client failed to connect: All connection attempts failed")
        wrapped.__cause__ = error
        return wrapped


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (refused_as_httpx_says_it(), "connection refused"),
        (ConnectionResetError(104, "Connection reset by peer"), "connection reset"),
        (RuntimeError("Client failed to connect: [Errno 2] gone"), "[Errno 2] gone"),
    ],
)
def test_a_socket_failure_is_said_in_plain_words(error: BaseException, words: str) -> None:
    assert describe_failure(error) == words

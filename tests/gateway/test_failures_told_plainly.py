"""What a team reads when something behind the gateway fails: one log line, a plain error.

A Redis that stops, an upstream that is missing or crashes mid-call, a wrong token:
``fastmcp-filtering serve --http`` runs as a subprocess, clients of both eras make
requests, and its stderr is read afterwards. No traceback (unless ``--log-level
debug``), one line per failure, and client errors that name what failed in the
client's terms: never the store's address or driver message.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import mcp_types as mt
import pytest
from fastmcp import Client
from key_value.aio.stores.memory import MemoryStore
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.gateway.auth_errors import INVALID_TOKEN
from fastmcp_filtering.gateway.config.models import ConfigError, load_config
from fastmcp_filtering.gateway.config.state_store import CLIENT_MESSAGE, GatewayStore
from fastmcp_filtering.gateway.serve import configure_logs

from .._progressive_servers import redis_server
from .._support.cli import serve_http
from .._support.standin import STANDIN
from ..conftest import ERAS

MISBEHAVING = Path(__file__).parent / "misbehaving.py"


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text(text, encoding="utf-8")
    return path


def stderr_of(process: subprocess.Popen[bytes]) -> str:
    """The stopped ``serve`` process's whole stderr."""
    assert process.stderr is not None
    return process.stderr.read().decode()


async def errors_of(url: str, era: str, requests: list[str], **client: Any) -> list[str]:
    """Each request's error text (or "ok"), for a client of ``era``: list, or a tool call."""
    seen = []
    async with Client(url, **ERAS[era], **client) as connected:
        for request in requests:
            run: Callable[[], Awaitable[Any]] = (
                connected.list_tools
                if request == "list"
                else lambda r=request: connected.call_tool(r, {"groups": ["issues"]})
            )
            try:
                await run()
                seen.append("ok")
            except Exception as error:
                seen.append(str(error))
    return seen


STORE = """
[[upstreams]]
name = "github"
command = "python"
args = [{standin}]

[[groups]]
name = "issues"
tools = ["*issue*"]

[progressive]
initial_groups = ["issues"]

[auth]
type = "static"

[[auth.tokens]]
token = "good-token"
client_id = "alice"

[state]
url = "{url}"
timeout = 0.5
"""


@pytest.mark.slow
class TestARedisThatStops:
    @pytest.mark.parametrize("flags", [("--quiet",), ()], ids=["quiet", "info"])
    async def test_one_line_no_traceback_and_no_address_for_clients(
        self, tmp_path: Path, flags: tuple[str, ...]
    ) -> None:
        with redis_server() as redis_url:
            config = STORE.format(standin=json.dumps(str(STANDIN)), url=redis_url)
            with serve_http(write_config(tmp_path, config), *flags) as (url, process):
                port = redis_url.rsplit(":", 1)[1].split("/")[0]
                stop = ["redis-cli", "-p", port, "shutdown", "nosave"]
                subprocess.run(stop, capture_output=True, check=False)  # noqa: ASYNC221
                errors = []
                for era in ERAS:
                    errors += await errors_of(
                        url, era, ["list", "enable_tools", "list"], auth="good-token"
                    )
        log = stderr_of(process)
        assert errors.count(CLIENT_MESSAGE) == 4  # both eras' listings
        assert all("127.0.0.1" not in e and "Error 111" not in e for e in errors)
        assert "Traceback" not in log
        assert sum("state store redis://" in line for line in log.splitlines()) == 1
        ours = [line for line in log.splitlines() if "fastmcp-filtering:" in line]
        assert len(ours) <= 12  # six requests: a line each at most, and the outage's own


MISSING = """
on_upstream_error = "raise"

[[upstreams]]
name = "clock"
namespace = "clock"
command = "/nonexistent/mcp-clock"

[[upstreams]]
name = "crashy"
namespace = "crashy"
command = "python"
args = [{misbehaving}, "--tools", "tick", "--crash-on-call"]
"""


@pytest.mark.slow
class TestUpstreamsThatFail:
    async def test_a_missing_and_a_crashing_upstream_are_named_once(self, tmp_path: Path) -> None:
        config = MISSING.format(misbehaving=json.dumps(str(MISBEHAVING)))
        with serve_http(write_config(tmp_path, config)) as (url, process):
            errors = []
            for era in ERAS:
                errors += await errors_of(url, era, ["list", "crashy_tick", "list"])
        log = stderr_of(process)
        clock = "upstream 'clock' is unavailable: [Errno 2] No such file or directory: '<path>'"
        # Each says when the gateway asks the upstream again (its back-off).
        assert sum(e.startswith(f"{clock}; the gateway asks it again in ") for e in errors) >= 4
        assert all("upstream '" in e for e in errors)
        assert "Traceback" not in log
        lines = log.splitlines()
        assert (
            sum(line.startswith("WARNING fastmcp-filtering: upstream 'clock'") for line in lines)
            == 1
        )
        # A line per failed call: the upstream, what failed, and that the client was told.
        crashes = [line for line in lines if "upstream 'crashy' failed the call" in line]
        assert len(crashes) == 2
        assert all(line.endswith("the client got that error") for line in crashes)

    async def test_a_crash_mid_call_names_the_upstream(self, tmp_path: Path, era: str) -> None:
        crashy = MISSING.split("[[upstreams]]")[-1].format(misbehaving=json.dumps(str(MISBEHAVING)))
        with serve_http(write_config(tmp_path, "[[upstreams]]" + crashy)) as (url, process):
            [error] = await errors_of(url, era, ["crashy_tick"])
        # FastMCP puts "Error calling tool 'crashy_tick': " before it.
        assert error.endswith(
            "upstream 'crashy' failed the call (its connection closed before a result)"
        )
        log = stderr_of(process)
        assert "Traceback" not in log


READS: dict[str, Callable[[Client[Any]], Awaitable[object]]] = {
    "prompts/get": lambda c: c.get_prompt("crashy_greet"),
    "resources/read": lambda c: c.read_resource("memo://crashy/note"),
    "resources/read (a template's)": lambda c: c.read_resource("memo://crashy/notes/7"),
}


@pytest.mark.slow
@pytest.mark.parametrize("read", list(READS))
async def test_a_crash_mid_read_names_the_upstream(tmp_path: Path, era: str, read: str) -> None:
    crashy = MISSING.split("[[upstreams]]")[-1].format(misbehaving=json.dumps(str(MISBEHAVING)))
    crashy = crashy.replace('"--crash-on-call"', '"--readable", "--crash-on-read"')
    with serve_http(write_config(tmp_path, "[[upstreams]]" + crashy)) as (url, process):
        async with Client(url, **ERAS[era]) as client:
            with pytest.raises(MCPError) as failed:
                await READS[read](client)
            # The gateway answers on: the upstream is started again for the next request.
            assert "crashy_tick" in [tool.name for tool in await client.list_tools()]
    method = read.split()[0]
    assert str(failed.value).endswith(
        f"upstream 'crashy' failed {method} (its connection closed before an answer)"
    )
    assert failed.value.error.code == mt.INTERNAL_ERROR
    log = stderr_of(process)
    assert "Traceback" not in log
    told = [line for line in log.splitlines() if "upstream 'crashy' failed" in line]
    assert len(told) == 1
    assert told[0].endswith("the client got an error")


@pytest.mark.slow
class TestAWrongToken:
    def test_a_plain_invalid_token_with_the_same_status_and_challenge(self, tmp_path: Path) -> None:
        config = STORE.split("[state]")[0].format(standin=json.dumps(str(STANDIN)))
        with serve_http(write_config(tmp_path, config)) as (url, _process):
            answer = httpx.post(
                url,
                headers={"Authorization": "Bearer wrong", "Accept": "application/json"},
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
            missing = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert answer.status_code == 401
        assert answer.json() == {"error": "invalid_token", "error_description": INVALID_TOKEN}
        challenge = answer.headers["www-authenticate"]
        assert challenge.startswith('Bearer error="invalid_token"')
        assert f'error_description="{INVALID_TOKEN}"' in challenge
        assert "re-register" not in answer.text + challenge
        # No token at all: FastMCP's bare challenge, untouched.
        assert missing.status_code == 401
        assert "error=" not in missing.headers["www-authenticate"]


class TestTheStore:
    """``GatewayStore`` in memory: one warning per outage, a plain error, the configured TTL."""

    async def test_an_outage_is_logged_once_and_told_plainly(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        class Down(MemoryStore):
            up = False

            async def get(self, key: str, *, collection: str | None = None) -> Any:
                if not self.up:
                    raise ConnectionError("Error 111 connecting to 127.0.0.1:6391")
                return await super().get(key, collection=collection)

        inner = Down()
        store = GatewayStore(inner, where="redis://redis:6379/0", ttl=60)
        caplog.set_level(logging.INFO, logger="fastmcp_filtering")
        for _ in range(3):
            with pytest.raises(MCPError) as raised:
                await store.get(key="k")
            assert str(raised.value) == CLIENT_MESSAGE
        inner.up = True
        assert await store.get(key="k") is None
        said = [r.getMessage() for r in caplog.records]
        assert len(said) == 2
        assert said[0].startswith(
            "state store redis://redis:6379/0 is unavailable (ConnectionError)"
        )
        assert said[1] == "state store redis://redis:6379/0 answers again"

    async def test_client_state_lives_ttl_seconds(self) -> None:
        store = GatewayStore(MemoryStore(), where="memory://", ttl=120)
        state, task, other = "fastmcp-filtering:progressive:abc", "fastmcp-filtering:task:1", "x"
        for key in (state, task, other):
            await store.put(key=key, value={"v": 1}, ttl=86_400)
        lifetimes = {key: (await store.ttl(key=key))[1] for key in (state, task, other)}
        assert 0 < (lifetimes[state] or 0) <= 120
        assert (lifetimes[task] or 0) > 120
        assert (lifetimes[other] or 0) > 120

    def test_ttl_is_validated(self) -> None:
        with pytest.raises(ValueError, match=r"ttl=0 must be a positive number"):
            GatewayStore(MemoryStore(), where="memory://", ttl=0)

    def test_ttl_seconds_in_toml(self, tmp_path: Path) -> None:
        upstream = f'[[upstreams]]\ncommand = "{sys.executable}"\n'
        good = load_config(write_config(tmp_path, upstream + "[state]\nttl_seconds = 3600\n"))
        assert good.state.ttl_seconds == 3600
        assert load_config(write_config(tmp_path, upstream)).state.ttl_seconds == 86_400
        with pytest.raises(ConfigError, match=r"state.ttl_seconds: .*ttl_seconds = 86400"):
            load_config(write_config(tmp_path, upstream + "[state]\nttl_seconds = 0\n"))


class TestOtherLibrariesLogs:
    """``configure_logs``: the SDK's and FastMCP's errors are one line below DEBUG."""

    @pytest.fixture(autouse=True)
    def _restore_logging(self) -> Iterator[None]:
        root, fastmcp = logging.getLogger(), logging.getLogger("fastmcp")
        handlers = list(root.handlers)
        filters = {h: list(h.filters) for h in fastmcp.handlers}
        levels = {name: logging.getLogger(name).level for name in ("fastmcp", "fastmcp_filtering")}
        yield
        root.handlers[:] = handlers
        for handler, kept in filters.items():
            handler.filters[:] = kept
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)

    def test_an_sdk_exception_is_its_reason_not_a_traceback(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        configure_logs(None, quiet=True)
        try:
            raise MCPError(code=-32603, message=CLIENT_MESSAGE) from ConnectionError("refused")
        except MCPError:
            logging.getLogger("mcp.server.x").exception("the tools/list listing failed")
        err = capsys.readouterr().err
        assert err == "ERROR mcp.server.x: the tools/list listing failed: refused\n"

    def test_debug_keeps_tracebacks(self) -> None:
        configure_logs("DEBUG", quiet=False)
        assert not [h for h in logging.getLogger().handlers if type(h).__name__ == "_Others"]

"""``fastmcp-filtering serve`` in front of real third-party servers from npm, as a user runs it.

``tests/interop`` pins ``@modelcontextprotocol/server-everything`` (tools, prompts,
resources and templates, and long instructions) and ``@modelcontextprotocol/server-memory``
(a knowledge graph); ``.ci/run`` installs them with ``npm ci``. The proxy runs as
a subprocess (``python -m fastmcp_filtering serve``) over stdio and streamable
HTTP, and FastMCP's ``Client`` drives it in both protocol eras: the upstreams'
instructions, groups over their prompts and resources, calls reaching them, a dead
upstream with ``on_upstream_error = "warn"``, ``--quiet``, and a clean stop.
Without the node packages the tests skip locally and fail under CI (``CI=true``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fastmcp_filtering.client import call_method, list_groups, list_tools

from .._node import node_with_packages
from .._support.cli import CLI, SRC, proxy_client, serve_http, wait_gone
from ..conftest import ERAS

# The proxy as a subprocess in front of real npm servers.
pytestmark = pytest.mark.slow


PACKAGES = (
    Path(__file__).resolve().parents[1] / "interop" / "node_modules" / "@modelcontextprotocol"
)
EVERYTHING = PACKAGES / "server-everything" / "dist" / "index.js"
MEMORY = PACKAGES / "server-memory" / "dist" / "index.js"

# What the two servers write to stderr when they start; --quiet hides it.
UPSTREAM_NOISE = ("Starting default (STDIO) server", "Knowledge Graph MCP Server running on stdio")
PROMPTS = ["ev_args-prompt", "ev_completable-prompt", "ev_resource-prompt", "ev_simple-prompt"]
DOCS = "demo://ev/resource/static/document/"


@pytest.fixture(scope="module")
def node() -> str:
    """``node``'s path, once the pinned servers are installed in tests/interop."""
    return node_with_packages()


def write_config(tmp_path: Path, node: str, *, dead: bool = False) -> Path:
    """Both servers, namespaced, with groups over everything's prompts and resources.

    ``dead`` replaces server-memory by a command that does not exist, with
    ``on_upstream_error = "warn"``.
    """
    memory = '[[upstreams]]\nname = "memory"\nnamespace = "mem"\n' + (
        'command = "/nonexistent/server-memory"\n'
        if dead
        else f"command = {json.dumps(node)}\nargs = [{json.dumps(str(MEMORY))}]\n"
        f"env = {{ MEMORY_FILE_PATH = {json.dumps(str(tmp_path / 'memory.jsonl'))} }}\n"
    )
    path = tmp_path / "real.toml"
    path.write_text(
        ('on_upstream_error = "warn"\n\n' if dead else "")
        + f'[[upstreams]]\nname = "everything"\nnamespace = "ev"\ncommand = {json.dumps(node)}\n'
        f'args = [{json.dumps(str(EVERYTHING))}, "stdio"]\n\n'
        + memory
        + '\n[[groups]]\nname = "prompts"\ntitle = "Prompts"\ntools = ["ev_*-prompt"]\n\n'
        f'[[groups]]\nname = "docs"\ntools = ["{DOCS}*"]\n\n'
        '[[groups]]\nname = "dynamic"\ntools = ["demo://ev/resource/dynamic/*"]\n\n'
        '[[groups]]\nname = "maths"\ntools = ["ev_echo", "ev_get-sum"]\n\n'
        '[[groups]]\nname = "graph"\ntools = ["mem_*"]\n',
        encoding="utf-8",
    )
    return path


def serving(config: Path) -> int:
    """The pid of the ``serve`` process started with ``config`` (found in /proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"fastmcp_filtering" in arguments and str(config).encode() in arguments:
            return int(entry.name)
    raise AssertionError(f"no fastmcp-filtering process serves {config}")


def children(pid: int) -> list[int]:
    """The processes ``pid`` started (its stdio upstreams)."""
    task = Path(f"/proc/{pid}/task")
    found: list[int] = []
    for thread in task.iterdir():
        found += [int(p) for p in (thread / "children").read_text().split()]
    return found


async def check_session(client: Client[Any], *, memory: bool = True) -> None:
    """What an agent sees and does through the proxy of ``write_config``."""
    instructions = client.instructions or ""
    # server-everything's own instructions, under its name, then the search paragraph.
    assert instructions.startswith("## everything\n\n# Everything Server")
    assert "\n\nTool search: send tools/list with params.query" in instructions
    assert "## memory" not in instructions  # server-memory has no instructions

    assert [g.name for g in await list_groups(client)] == [
        "prompts",
        "docs",
        "dynamic",
        "maths",
        "graph",
    ]
    maths = await list_tools(client, groups=["maths"])
    assert sorted(t.name for t in maths.tools) == ["ev_echo", "ev_get-sum"]
    graph = await list_tools(client, groups=["graph"])
    assert len(graph.tools) == (9 if memory else 0)

    # Groups match server-everything's prompts, resources and templates too.
    prompts = await call_method(client, "prompts/list", {"filter": {"groups": ["prompts"]}})
    assert sorted(p["name"] for p in prompts["prompts"]) == PROMPTS
    docs = await call_method(client, "resources/list", {"filter": {"groups": ["docs"]}})
    uris = sorted(r["uri"] for r in docs["resources"])
    assert len(uris) == 7
    assert all(u.startswith(DOCS) for u in uris)
    templates = await call_method(
        client, "resources/templates/list", {"filter": {"groups": ["dynamic"]}}
    )
    assert len(templates["resourceTemplates"]) == 2

    # Calls, prompts and reads reach the upstream.
    echoed = await client.call_tool("ev_echo", {"message": "through the proxy"})
    assert echoed.content[0].text == "Echo: through the proxy"  # type: ignore[union-attr]
    prompt = await client.get_prompt("ev_simple-prompt")
    assert prompt.messages
    features = await client.read_resource(f"{DOCS}features.md")
    assert "Features" in features[0].text  # type: ignore[union-attr]
    if memory:
        entity = {"name": "proxy", "entityType": "tool", "observations": ["filters"]}
        await client.call_tool("mem_create_entities", {"entities": [entity]})
        graph_read = await client.call_tool("mem_read_graph", {})
        assert '"name": "proxy"' in graph_read.content[0].text  # type: ignore[union-attr]


class TestStdio:
    @pytest.mark.parametrize("era", list(ERAS))
    async def test_an_agent_session_quietly(self, era: str, node: str, tmp_path: Path) -> None:
        config = write_config(tmp_path, node)
        log = tmp_path / "stderr.log"
        async with proxy_client(config, "--quiet", log=log, era=era) as client:
            await check_session(client)
            upstreams = children(serving(config))
            assert len(upstreams) == 2
        for pid in upstreams:
            wait_gone(pid)
        text = log.read_text()
        assert not [noise for noise in UPSTREAM_NOISE if noise in text], text
        assert "Traceback" not in text
        assert "EPIPE" not in text

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_without_quiet_the_upstreams_stderr_shows(
        self, era: str, node: str, tmp_path: Path
    ) -> None:
        config = write_config(tmp_path, node)
        log = tmp_path / "stderr.log"
        async with proxy_client(config, log=log, era=era) as client:
            await client.list_tools()
            upstreams = children(serving(config))
        for pid in upstreams:
            wait_gone(pid)
        text = log.read_text()
        assert all(noise in text for noise in UPSTREAM_NOISE), text

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_a_dead_upstream_with_warn(self, era: str, node: str, tmp_path: Path) -> None:
        config = write_config(tmp_path, node, dead=True)
        log = tmp_path / "stderr.log"
        async with proxy_client(config, "--quiet", log=log, era=era) as client:
            await check_session(client, memory=False)
            assert not [t for t in (await list_tools(client)).tools if t.name.startswith("mem_")]
        warnings = [line for line in log.read_text().splitlines() if "'memory'" in line]
        assert warnings == [
            "WARNING fastmcp-filtering: upstream 'memory' is unavailable: [Errno 2] No such "
            "file or directory: '<path>'; serving the other upstreams "
            "without it until it answers"
        ]

    @pytest.mark.parametrize("era", list(ERAS))
    @pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
    async def test_a_signal_stops_the_node_upstreams(
        self, era: str, signum: int, node: str, tmp_path: Path
    ) -> None:
        config = write_config(tmp_path, node)
        log = tmp_path / "stderr.log"
        async with proxy_client(config, log=log, era=era) as client:
            await client.call_tool("ev_echo", {"message": "hi"})
            await client.call_tool("mem_read_graph", {})
            proxy = serving(config)
            upstreams = children(proxy)
            assert len(upstreams) == 2
            os.kill(proxy, signum)
            for pid in [proxy, *upstreams]:
                wait_gone(pid)
        text = log.read_text()
        assert "stopping: closing the upstreams" in text
        assert "Traceback" not in text
        assert "EPIPE" not in text


class TestStreamableHttp:
    @pytest.mark.parametrize("era", list(ERAS))
    async def test_an_agent_session_then_sigterm(self, era: str, node: str, tmp_path: Path) -> None:
        config = write_config(tmp_path, node)
        with serve_http(config, "--quiet") as (url, process):
            async with Client(url, **ERAS[era]) as client:
                await check_session(client)
            upstreams = children(process.pid)
            assert len(upstreams) == 2
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0
        for pid in upstreams:
            wait_gone(pid)
        assert process.stderr is not None
        assert process.stderr.read().decode() == ""


def test_the_check_command_counts_everythings_prompts_and_resources(
    node: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [*CLI, "check", str(write_config(tmp_path, node)), "--json", "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **SRC},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    groups = {g["name"]: g for g in report["groups"]}
    assert sorted(groups["prompts"]["others"]) == [f"prompt {p}" for p in PROMPTS]
    assert len(groups["docs"]["others"]) == 7
    assert len(groups["dynamic"]["others"]) == 2
    assert groups["graph"]["with_subgroups"] == 9
    assert report["errors"] == []
    assert done.stderr == ""

"""What ``init`` writes and says: names an agent can choose by, no doubled namespaces, a quiet
run, and the upstreams' stderr only when it explains a failure."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from fastmcp_filtering.gateway.cli import main
from fastmcp_filtering.gateway.config.models import load_config
from fastmcp_filtering.gateway.grouping.suggest import suggest_config
from fastmcp_filtering.gateway.init import _label


@pytest.mark.parametrize(
    ("target", "label"),
    [
        (["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "server-filesystem"),
        (["/venv/bin/python", "-m", "mcp_server_git", "-r", "/tmp"], "mcp_server_git"),
        (["node", "/x/server-everything/dist/index.js", "stdio"], "server-everything"),
        (["uvx", "mcp-server-fetch==1.0"], "mcp-server-fetch"),
        (
            ["docker", "run", "-i", "--rm", "ghcr.io/github/github-mcp-server:v1"],
            "github-mcp-server",
        ),
        (["npx", "-y", "@scope/server-x@1.2.3", "--root", "/tmp"], "server-x"),
        (["python", "weather.py"], "weather"),
        (["https://api.example.com/mcp"], "api.example.com"),
    ],
)
def test_the_proxy_is_named_after_the_server_not_its_last_argument(
    target: list[str], label: str
) -> None:
    assert _label(target) == label


def tools(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "description": f"{n.replace('_', ' ')}."} for n in names]


class TestNames:
    """No group is titled "Other tools" or described as "Tools with no shared topic"."""

    def test_a_server_whose_tools_share_no_topic_is_its_own_group(self) -> None:
        suggestion = suggest_config(
            {"time": tools("convert_time", "get_current_time"), "memory": tools(*MEMORY)}
        )
        time = next(g for g in suggestion.groups if g.name == "time")
        assert (time.title, time.description) == (
            "time",
            "Tools of time: convert time and get current time",
        )

    def test_the_rest_of_a_server_is_titled_by_its_tools(self) -> None:
        suggestion = suggest_config({"everything": tools(*EVERYTHING)})
        titles = {g.name: (g.title, g.description) for g in suggestion.groups}
        assert titles["everything.other"] == (
            "Echo and simulate research query",
            "Echo and simulate research query",
        )
        assert (titles["everything"][1] or "").endswith("; also: echo and simulate research query")
        for title, description in titles.values():
            assert title != "Other tools"
            assert not (description or "").startswith("Tools with no shared topic")

    def test_a_verb_named_like_its_topic_is_said_once(self) -> None:
        suggestion = suggest_config(tools("diff", "diff_staged", "diff_unstaged", "log", "show"))
        described = [g.description or "" for g in suggestion.groups]
        assert not any("Diff diff" in d for d in described), described


MEMORY = ["create_entities", "delete_entities", "add_observations", "delete_observations"]
EVERYTHING = [
    "echo",
    "simulate_research_query",
    "toggle_simulated_logging",
    "toggle_subscriber_updates",
    "trigger_sampling_request",
    "trigger_long_running_operation",
]

SERVER = """
import sys
from fastmcp import FastMCP

print({noise!r}, file=sys.stderr, flush=True)
{fail}
server = FastMCP("s")
for name in {names!r}:
    server.tool(name=name, description=name.replace("_", " ") + ".")(lambda: "ok")
server.run(show_banner=False)
"""


def server_file(tmp_path: Path, name: str, names: list[str], *, fail: bool = False) -> str:
    path = tmp_path / f"{name}.py"
    exit_line = "sys.exit(3)" if fail else ""
    noise = f"{name}: missing API token" if fail else f"{name} MCP server running on stdio"
    path.write_text(
        textwrap.dedent(SERVER.format(noise=noise, fail=exit_line, names=names)), encoding="utf-8"
    )
    return str(path)


def mcp_json(tmp_path: Path, *, broken: bool = False) -> Path:
    git = ["git_status", "git_diff", "git_diff_staged", "git_log", "git_commit", "git_add"]
    servers = {
        "git": {"command": sys.executable, "args": [server_file(tmp_path, "git", git)]},
        "time": {
            "command": sys.executable,
            "args": [server_file(tmp_path, "time", ["convert_time", "get_current_time"])],
        },
    }
    if broken:
        servers["weather"] = {
            "command": sys.executable,
            "args": [server_file(tmp_path, "weather", ["forecast"], fail=True)],
        }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


@pytest.mark.slow
class TestInitRun:
    def test_quiet_prints_nothing_and_names_are_not_doubled(
        self, tmp_path: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        out = tmp_path / "proxy.toml"
        assert main(["init", "--quiet", "--from", str(mcp_json(tmp_path)), "-o", str(out)]) == 0
        assert capfd.readouterr() == ("", "")
        text = out.read_text(encoding="utf-8")
        assert "git_git" not in text
        assert "Other tools" not in text
        assert "Tools with no shared topic" not in text
        groups = {g.name: g for g in load_config(out).groups}
        assert groups["time"].title == "time"

    def test_the_upstreams_stderr_is_shown_only_for_a_failure(
        self, tmp_path: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        out = tmp_path / "proxy.toml"
        assert main(["init", "--from", str(mcp_json(tmp_path)), "-o", str(out)]) == 0
        said = capfd.readouterr()
        assert "running on stdio" not in said.out + said.err
        assert "written to" in said.out
        out.unlink()
        assert main(["init", "--from", str(mcp_json(tmp_path, broken=True)), "-o", str(out)]) == 1
        said = capfd.readouterr()
        assert "error: upstream 'weather' cannot be listed" in said.err
        assert "weather: missing API token" in said.err
        assert not out.exists()
        assert main(["init", "-q", "--from", str(mcp_json(tmp_path, broken=True))]) == 1
        said = capfd.readouterr()
        assert "error: upstream 'weather' cannot be listed" in said.err
        assert "missing API token" not in said.err

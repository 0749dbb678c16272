"""The full-stack example server driven by TypeScript clients: the MCP SDK and the Inspector CLI.

``tests/interop`` pins ``@modelcontextprotocol/sdk`` (1.x, protocol 2025-11-25) and
``@modelcontextprotocol/inspector``; ``.ci/run`` installs them with ``npm ci``, and
``tests/_node.py`` installs them once per session when they are missing. Without Node
the tests skip locally and fail under CI (``CI=true``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .._full_stack import FULL_STACK_SERVER, full_stack_http_server
from .._node import INTEROP, node_with_packages

# Node clients against the server as a subprocess.
pytestmark = pytest.mark.slow


SCRIPT = INTEROP / "interop.mjs"
INSPECTOR = INTEROP / "node_modules" / ".bin" / "mcp-inspector"

INITIAL_TOOLS = sorted(
    [
        "add_issue_comment",
        "add_labels",
        "assign_issue",
        "close_issue",
        "create_issue",
        "get_issue",
        "list_issue_comments",
        "list_issues",
        "remove_label",
        "search_issues",
        "update_issue",
        "call_tool",
        "disable_tools",
        "enable_tools",
        "search_tools",
    ]
)

# Every step of interop.mjs must have reported, so a script that stops early cannot pass.
REQUIRED_CHECKS = {
    "initialize: experimental.filtering",
    "groups/list: names in declaration order",
    "tags/list: declared tags first",
    "tools/list: initial groups and meta-tools",
    "tools/list filter: issues + read-only",
    "tools/list filter: unknown group matches nothing, warned of",
    "tools/list query: best match first",
    "search_tools: hidden tools only as groups to enable",
    "concerns/list: risk declared",
    "enable_tools: admin enabled",
    "enable_tools: tools/list_changed received",
    "concerns/update: destructive tools hidden",
    "concerns: excluded tool refused naming the concern",
    "hidden tool: refused with the enable_tools hint",
    "call_tool proxy: hidden tool refused too",
    "tools/call: visible tool runs",
    "disable_tools: admin tools gone",
    "concerns/update {}: back to defaults",
}


@pytest.fixture(scope="session")
def node() -> str:
    """``node``'s path, with tests/interop's packages installed (``npm ci``, once)."""
    return node_with_packages()


def _run_script(node: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [node, str(SCRIPT), *args],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"no output (exit {done.returncode}):\n{done.stderr[-3000:]}"
    summary: dict[str, Any] = json.loads(lines[-1])
    assert "error" not in summary, summary["error"]
    failed = [c for c in summary["checks"] if not c["ok"]]
    assert not failed, json.dumps(failed, indent=2)
    assert done.returncode == 0, done.stderr[-3000:]
    return summary


class TestTypeScriptSDK:
    """The SDK's Client parses every reply with its own zod schemas; all checks must pass."""

    def test_stdio(self, node: str) -> None:
        summary = _run_script(node, "stdio", sys.executable, str(FULL_STACK_SERVER))
        assert summary["protocolVersion"] == "2025-11-25"
        assert not REQUIRED_CHECKS - {c["name"] for c in summary["checks"]}

    def test_streamable_http(self, node: str) -> None:
        with full_stack_http_server() as server:
            summary = _run_script(node, "http", server.url)
        assert summary["protocolVersion"] == "2025-11-25"
        assert not REQUIRED_CHECKS - {c["name"] for c in summary["checks"]}


def _inspector(node: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The Inspector keeps a server catalog in the home directory unless told otherwise.
    env = {**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "mcp.json")}
    return subprocess.run(
        [node, str(INSPECTOR), "--cli", sys.executable, str(FULL_STACK_SERVER), *args],
        cwd=INTEROP,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


class TestInspectorCLI:
    """``mcp-inspector --cli`` against the stdio server: what a developer sees when debugging."""

    def test_tools_list_shows_the_initial_groups(self, node: str, tmp_path: Path) -> None:
        done = _inspector(node, tmp_path, "--method", "tools/list")
        assert done.returncode == 0, done.stderr[-3000:]
        tools = json.loads(done.stdout)["tools"]
        assert sorted(t["name"] for t in tools) == INITIAL_TOOLS
        create_issue = next(t for t in tools if t["name"] == "create_issue")
        assert create_issue["_meta"]["io.modelcontextprotocol/groups"] == ["issues"]

    def test_tools_call_runs_a_visible_tool(self, node: str, tmp_path: Path) -> None:
        done = _inspector(
            node,
            tmp_path,
            "--method",
            "tools/call",
            "--tool-name",
            "create_issue",
            "--tool-arg",
            "owner=octo",
            "repo=hello",
            "title=Crash",
        )
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout)
        assert result["isError"] is False
        assert result["structuredContent"] == {
            "number": 42,
            "title": "Crash",
            "url": "https://github.com/octo/hello/issues/42",
        }

    def test_tools_call_of_a_hidden_tool_fails(self, node: str, tmp_path: Path) -> None:
        done = _inspector(
            node,
            tmp_path,
            "--method",
            "tools/call",
            "--tool-name",
            "delete_repo",
            "--tool-arg",
            "owner=octo",
            "repo=hello",
        )
        # The Inspector looks the tool up in tools/list first: a hidden tool is not there.
        assert done.returncode != 0
        assert "delete_repo" in done.stdout + done.stderr
        assert '"isError": false' not in done.stdout

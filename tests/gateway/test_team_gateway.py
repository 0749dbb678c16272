"""The gateway a team deploys, as a new user builds it: five real servers from npm and PyPI in a
Claude-Desktop-style ``mcpServers`` file, ``init --from``, ``check``, then ``serve --http`` with
no ``[auth]``. FastMCP's default client (2026-07-28, no identity) reaches every tool: the initial
groups listed, every other tool found by ``search_tools`` and run by its exact name. One dead
upstream is harmless without any configuration."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fastmcp_filtering.gateway.cli import check, main
from fastmcp_filtering.gateway.config.models import load_config

from .._node import node_with_packages
from .._python_servers import python_servers
from .._support.cli import serve_http

pytestmark = pytest.mark.slow

PACKAGES = (
    Path(__file__).resolve().parents[1] / "interop" / "node_modules" / "@modelcontextprotocol"
)


@pytest.fixture(scope="module")
def mcp_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """everything, filesystem and memory (npm), git and time (PyPI), as a host lists them."""
    node, python = node_with_packages(), python_servers()
    root = tmp_path_factory.mktemp("team")
    files, repo = root / "files", root / "repo"
    files.mkdir()
    (files / "notes.txt").write_text("hello\n")
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    (repo / "README.md").write_text("# repo\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    servers = {
        "everything": {
            "command": node,
            "args": [str(PACKAGES / "server-everything" / "dist" / "index.js"), "stdio"],
        },
        "filesystem": {
            "command": node,
            "args": [str(PACKAGES / "server-filesystem" / "dist" / "index.js"), str(files)],
        },
        "memory": {
            "command": node,
            "args": [str(PACKAGES / "server-memory" / "dist" / "index.js")],
            "env": {"MEMORY_FILE_PATH": str(root / "memory.jsonl")},
        },
        "git": {"command": str(python), "args": ["-m", "mcp_server_git", "-r", str(repo)]},
        "time": {"command": str(python), "args": ["-m", "mcp_server_time"]},
    }
    path = root / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


async def generated(mcp_json: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """``init --from mcp.json -o proxy.toml``, then ``check``: the file and every tool."""
    out = tmp_path / "proxy.toml"
    assert await asyncio.to_thread(main, ["init", "--from", str(mcp_json), "-o", str(out)]) == 0
    report = await check(load_config(out), file=str(out))
    assert report.ok, report.errors
    return out, report.tools


async def reached(client: Client[Any], name: str) -> bool:
    """Whether a call of ``name`` reaches a tool (its own error is a reach; "Unknown" is not)."""
    result = await client.call_tool_mcp(name, {})
    text = " ".join(getattr(c, "text", "") for c in result.content)
    # ``is_error`` since FastMCP 4.2 (the SDK's v2 name), ``isError`` before.
    failed = getattr(result, "is_error", None)
    if failed is None:
        failed = result.isError
    return not (failed and "Unknown tool" in text)


async def test_every_tool_reaches_a_client_without_identity(mcp_json: Path, tmp_path: Path) -> None:
    proxy, tools = await generated(mcp_json, tmp_path)
    assert len({t.split("_", 1)[0] for t in tools}) == 5
    # mcp-server-git names its tools git_status: under the namespace git they stay so.
    assert "git_status" in tools
    assert not [t for t in tools if t.startswith("git_git_")]
    titles = [g.title for g in load_config(proxy).groups]
    assert "Other tools" not in titles
    with serve_http(proxy) as (url, _):
        async with Client(url) as client:
            listed = {t.name for t in await client.list_tools()}
            assert "search_tools" in listed
            unlisted = [t for t in tools if t not in listed]
            assert unlisted, "init lists every tool: nothing to reach by name"
            for name in tools:
                assert await reached(client, name), name
            found = await client.call_tool("search_tools", {"query": "current time in a timezone"})
            names = [t["name"] for t in found.structured_content["tools"]]
            assert names[0].startswith("time_"), names


async def test_one_dead_upstream_is_harmless(mcp_json: Path, tmp_path: Path) -> None:
    proxy, tools = await generated(mcp_json, tmp_path)
    text = proxy.read_text(encoding="utf-8")
    # The git server's interpreter replaced by one that does not exist, nothing else changed.
    git_entry = text.index('name = "git"')
    start = text.index("command = ", git_entry)
    end = text.index("\n", start)
    proxy.write_text(text[:start] + 'command = "/nonexistent/python"' + text[end:])
    with serve_http(proxy) as (url, _):
        async with Client(url) as client:
            listed = {t.name for t in await client.list_tools()}
            assert not any(t.startswith("git_") for t in listed)
            assert await reached(client, next(t for t in tools if t.startswith("time_")))

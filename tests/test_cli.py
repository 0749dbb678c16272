"""The ``fastmcp-filtering`` command as a subprocess: ``check`` and ``serve`` (stdio and HTTP)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError

from fastmcp_filtering.cli import main
from fastmcp_filtering.client import list_groups, list_tools

from ._servers import free_port, wait_for_http
from .conftest import ERAS
from .test_proxy import EXAMPLE_CONFIG, RECORDED, STANDIN, reply

CLI = [sys.executable, "-m", "fastmcp_filtering"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=60, cwd=Path(__file__).parent
    )


def partial_config(tmp_path: Path) -> Path:
    """Groups that leave tools out, and one whose pattern matches nothing."""
    path = tmp_path / "partial.toml"
    path.write_text(
        f'[[upstreams]]\ncommand = "python"\nargs = [{json.dumps(str(STANDIN))}]\n\n'
        '[[groups]]\nname = "issues"\ntools = ["*_issue*"]\n\n'
        '[[groups]]\nname = "pulls"\ntools = ["*pull_request*"]\n\n'
        '[[groups]]\nname = "wiki"\ntools = ["wiki_*"]\n\n'
        '[[groups]]\nname = "finding"\ntools = ["search_*"]\n\n'
        '[[tags]]\nname = "read-only"\ntools = ["get_*", "list_*", "read_*"]\n',
        encoding="utf-8",
    )
    return path


class TestCheck:
    def test_the_example_passes_and_prints_the_groups(self) -> None:
        result = run("check", str(EXAMPLE_CONFIG))
        assert result.returncode == 0, result.stderr
        out = result.stdout
        assert f"{EXAMPLE_CONFIG}: 26 upstream tools\n  upstream github: 26 tools\n" in out
        rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line[:2] == "  "}
        assert rows["pull_requests"] == ["10", "0", "10"]
        assert rows["repos"] == ["4", "0", "8"]  # 4 of its own, 8 with files and branches
        assert rows["reviews"] == ["2", "0", "2", "pull_requests"]
        assert rows["read-only"][0] == "14"
        assert "risk (default write): read 14, write 10, irreversible 2, unmapped 0" in out
        assert "tools in no group (0)" in out
        assert out.rstrip().endswith("OK")

    def test_a_group_matching_nothing_fails_and_ungrouped_tools_are_listed(
        self, tmp_path: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["check", str(partial_config(tmp_path)), "--json"]) == 1
        report = json.loads(capfd.readouterr().out)
        assert report["ok"] is False
        assert report["tools"] == sorted(RECORDED)
        groups = {g["name"]: g for g in report["groups"]}
        assert len(groups["issues"]["tools"]) == 6
        assert groups["wiki"]["tools"] == []
        assert report["errors"] == [
            "group 'wiki' matches no tool, prompt, resource or template ('wiki_*'); fix its "
            "tools patterns against the names above, or remove the group"
        ]
        assert report["ungrouped"] == [
            "create_branch",
            "create_or_update_file",
            "create_repository",
            "fork_repository",
            "get_file_contents",
            "list_commits",
            "push_files",
        ]
        assert "tag 'read-only' pattern 'read_*' matches no tool" in report["warnings"]
        assert any("also matches the meta-tool 'search_tools'" in w for w in report["warnings"])

    def test_groups_of_prompts_and_resources_count(
        self, tmp_path: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        upstream = tmp_path / "upstream.py"
        upstream.write_text(
            "from fastmcp import FastMCP\n"
            "mcp = FastMCP('docs')\n"
            "@mcp.tool\ndef search_docs(q: str) -> str:\n    return q\n"
            "@mcp.prompt\ndef review_code(code: str) -> str:\n    return code\n"
            "@mcp.resource('docs://guide')\ndef guide() -> str:\n    return 'g'\n"
            "@mcp.resource('docs://{page}/raw')\ndef raw(page: str) -> str:\n    return page\n"
            "mcp.run(show_banner=False)\n",
            encoding="utf-8",
        )
        config = tmp_path / "docs.toml"
        config.write_text(
            f'[[upstreams]]\ncommand = "python"\nargs = [{json.dumps(str(upstream))}]\n\n'
            '[[groups]]\nname = "reviews"\ntools = ["review_*"]\n\n'
            '[[groups]]\nname = "pages"\ntools = ["docs://*"]\n\n'
            '[[groups]]\nname = "search"\ntools = ["search_*"]\n',
            encoding="utf-8",
        )
        assert main(["check", str(config), "--json"]) == 0
        report = json.loads(capfd.readouterr().out)
        groups = {g["name"]: (g["tools"], g["others"]) for g in report["groups"]}
        # A prompt-only group is no error: serve would show the prompt through it.
        assert groups == {
            "reviews": ([], ["prompt review_code"]),
            "pages": ([], ["resource docs://guide", "template docs://{page}/raw"]),
            "search": (["search_docs"], []),
        }
        assert report["errors"] == []
        assert main(["check", str(config)]) == 0
        out = capfd.readouterr().out
        assert "1 upstream tools, 3 prompts, resources and templates" in out

    def test_an_invalid_config_fails_with_file_line_and_key(
        self, tmp_path: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        path = tmp_path / "bad.toml"
        path.write_text('[[upstreams]]\ncommand = "x"\n[[groups]]\nname = "a"\nparent = "b"\n')
        assert main(["check", str(path)]) == 1
        stderr = capfd.readouterr().err
        assert f"{path}:5: groups[0].parent: group 'a' names unknown parent 'b'" in stderr
        assert main(["serve", str(path)]) == 1
        assert "groups[0].parent" in capfd.readouterr().err
        assert main(["check", str(path), "--json"]) == 1
        as_json = json.loads(capfd.readouterr().out)
        assert as_json["config_errors"][0]["key"] == "groups[0].parent"
        assert as_json["config_errors"][0]["line"] == 5

    def test_an_unreachable_upstream_is_named(
        self, tmp_path: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        path = tmp_path / "dead.toml"
        path.write_text('[[upstreams]]\nname = "ghost"\ncommand = "/nonexistent/mcp-server"\n')
        assert main(["check", str(path)]) == 1
        out = capfd.readouterr().out
        assert "error: upstream 'ghost' cannot be listed" in out
        assert "No such file or directory: '/nonexistent/mcp-server'" in out


class TestServe:
    @pytest.mark.parametrize("era", list(ERAS))
    async def test_stdio(self, era: str) -> None:
        transport = StdioTransport(
            command=sys.executable, args=["-m", "fastmcp_filtering", "serve", str(EXAMPLE_CONFIG)]
        )
        async with Client(transport, **ERAS[era]) as client:
            await exercise(client)

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_streamable_http(self, era: str) -> None:
        with serve_http() as url:
            async with Client(url, **ERAS[era]) as client:
                # 2026-07-28 over HTTP without auth has no client identity: no enable_tools.
                await exercise(client, stateful=era == "legacy")


@contextmanager
def serve_http(config: Path = EXAMPLE_CONFIG) -> Iterator[str]:
    """``fastmcp-filtering serve CONFIG --http`` on a free loopback port; yields its MCP URL."""
    port = free_port()
    process = subprocess.Popen(
        [*CLI, "serve", str(config), "--http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_http(process, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


async def exercise(client: Client[Any], *, stateful: bool = True) -> None:
    """Groups, a filtered list, a refused hidden call, and a call reaching the upstream."""
    assert len(await list_groups(client)) == 7
    issues = await list_tools(client, groups=["issues"], tags=["read-only"])
    assert sorted(t.name for t in issues.tools) == ["get_issue", "list_issues", "search_issues"]
    with pytest.raises(
        ToolError, match=r"'list_commits' is in group 'repos', which is not enabled"
    ):
        await client.call_tool("list_commits", {"owner": "o", "repo": "r"})
    if stateful:
        await client.call_tool("enable_tools", {"groups": ["repos"]})
        commits = await client.call_tool("list_commits", {"owner": "o", "repo": "r"})
        assert reply(commits)["tool"] == "list_commits"
    issue = await client.call_tool("get_issue", {"owner": "o", "repo": "r", "issue_number": 1})
    assert reply(issue)["arguments"]["issue_number"] == 1

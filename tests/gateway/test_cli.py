"""The ``fastmcp-filtering`` command as a subprocess: ``check`` and ``serve`` (stdio and HTTP)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError

from fastmcp_filtering.client import list_groups, list_tools
from fastmcp_filtering.gateway.cli import CheckReport, check, main
from fastmcp_filtering.gateway.config.models import load_config
from fastmcp_filtering.gateway.proxy import build_proxy

from .._node import node_with_packages
from .._support.cli import CLI, SRC, proxy_client, serve_http, wait_gone
from .._support.github import github_toml
from .._support.standin import EXAMPLE_CONFIG, RECORDED, STANDIN, names, reply, standin_http
from ..conftest import ERAS

# Every test runs the command as a subprocess, or a stdio upstream under it.
pytestmark = pytest.mark.slow


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[1],
        env={**os.environ, **SRC},
    )


def own_warnings(stderr: str) -> list[str]:
    """Warnings a subprocess printed that this package's own code raised."""
    return re.findall(r"fastmcp_filtering/\S+\.py:\d+: \w*Warning.*", stderr)


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
            "group 'wiki' matches no tool, prompt, resource or template ('wiki_*'): its "
            "members cannot be listed or enabled; fix its tools patterns against the names "
            "above, or remove the group"
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
        # The operator's own check names what is missing (a client is told '<path>').
        assert "No such file or directory: '/nonexistent/mcp-server'" in out

    def test_a_dead_upstream_among_several_is_named_and_the_others_checked(
        self, tmp_path: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        path = tmp_path / "two.toml"
        path.write_text(
            f'on_upstream_error = "warn"\n\n[[upstreams]]\nname = "live"\nnamespace = "a"\n'
            f'command = "python"\nargs = [{json.dumps(str(STANDIN))}]\n\n'
            '[[upstreams]]\nname = "ghost"\nnamespace = "g"\ncommand = "/nonexistent/mcp"\n\n'
            '[[groups]]\nname = "issues"\ntools = ["a_*_issue"]\n\n'
            '[[groups]]\nname = "ghostly"\ntools = ["g_*"]\n',
            encoding="utf-8",
        )
        assert main(["check", str(path)]) == 1
        out = capfd.readouterr().out
        reason = "[Errno 2] No such file or directory: '/nonexistent/mcp'"
        assert f"{path}: 26 upstream tools\n" in out
        assert "  upstream live (namespace a): 26 tools\n" in out
        assert f"  upstream ghost (namespace g): unavailable ({reason})\n" in out
        assert (
            f"error: upstream 'ghost' cannot be listed: {reason}; check its command/args "
            "(run it by hand) or url, and that it speaks MCP\n"
        ) in out
        assert (
            "error: group 'ghostly' matches no tool, prompt, resource or template ('g_*') (not "
            "counting upstream 'ghost', which did not answer): its members cannot be listed or "
            "enabled; fix its tools patterns against the names above, or remove the group\n"
        ) in out
        assert main(["check", str(path), "--json"]) == 1
        report = json.loads(capfd.readouterr().out)
        assert report["upstreams"] == [
            {"name": "live", "namespace": "a", "tools": 26, "error": None},
            {"name": "ghost", "namespace": "g", "tools": None, "error": reason},
        ]
        groups = {g["name"]: g["tools"] for g in report["groups"]}
        assert groups["issues"] == ["a_create_issue", "a_get_issue", "a_update_issue"]

    def test_an_upstream_announcing_a_list_change_leaves_check_quiet(self, tmp_path: Path) -> None:
        # check lists outside any client's request: there is no one to relay the change to.
        script = tmp_path / "announcing.py"
        script.write_text(ANNOUNCING_UPSTREAM, encoding="utf-8")
        path = tmp_path / "announcing.toml"
        path.write_text(
            f"[[upstreams]]\ncommand = {json.dumps(sys.executable)}\n"
            f"args = [{json.dumps(str(script))}]\n",
            encoding="utf-8",
        )
        done = run("check", str(path), "--json", "--quiet")
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)["tools"] == ["ping"]
        assert done.stderr == ""


# An upstream that announces tools/list_changed whenever its tools are listed.
ANNOUNCING_UPSTREAM = """\
import mcp_types as mt
from fastmcp import FastMCP
from fastmcp.server.middleware import Middleware

class Announce(Middleware):
    async def on_list_tools(self, context, call_next):
        if context.fastmcp_context is not None:
            await context.fastmcp_context.send_notification(mt.ToolListChangedNotification())
        return await call_next(context)

mcp = FastMCP("announcing", middleware=[Announce()])

@mcp.tool
def ping() -> str:
    return "pong"

mcp.run(show_banner=False)
"""


class TestServe:
    @pytest.mark.parametrize("era", list(ERAS))
    async def test_stdio(self, era: str) -> None:
        transport = StdioTransport(
            command=sys.executable,
            args=["-m", "fastmcp_filtering", "serve", str(EXAMPLE_CONFIG)],
            env=SRC,
        )
        async with Client(transport, **ERAS[era]) as client:
            await exercise(client, era)

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_streamable_http(self, era: str) -> None:
        with serve_http() as (url, _):
            async with Client(url, **ERAS[era]) as client:
                # 2026-07-28 over HTTP without auth has no identity: enable_tools needs none.
                await exercise(client, era)


async def exercise(client: Client[Any], era: str) -> None:
    """Groups, a filtered list, a call of a group not enabled (2025-11-25: refused with a
    hint until enable_tools; 2026-07-28: enable_tools hands out its definitions, and a call
    by exact name runs), and a call reaching the upstream."""
    assert len(await list_groups(client)) == 7
    issues = await list_tools(client, groups=["issues"], tags=["read-only"])
    assert sorted(t.name for t in issues.tools) == ["get_issue", "list_issues", "search_issues"]
    before = {t.name for t in await client.list_tools()}
    assert "list_commits" not in before
    if era == "legacy":
        with pytest.raises(
            ToolError, match=r"'list_commits' is in group 'repos', which is not enabled"
        ):
            await client.call_tool("list_commits", {"owner": "o", "repo": "r"})
    enabled = await client.call_tool("enable_tools", {"groups": ["repos"]})
    assert enabled.structured_content is not None
    if era == "modern":
        handed_out = {t["name"] for t in enabled.structured_content["tools"]}
        assert "list_commits" in handed_out
        assert {t.name for t in await client.list_tools()} == before
    commits = await client.call_tool("list_commits", {"owner": "o", "repo": "r"})
    assert reply(commits)["tool"] == "list_commits"
    issue = await client.call_tool("get_issue", {"owner": "o", "repo": "r", "issue_number": 1})
    assert reply(issue)["arguments"]["issue_number"] == 1


NODE_MODULES = Path(__file__).parents[1] / "interop" / "node_modules" / "@modelcontextprotocol"
ANNOTATED = Path(__file__).parents[1] / "_annotated_upstream.py"


def body(toml: str) -> str:
    """A generated file from its groups on: what does not depend on how the server is run."""
    return toml[toml.index("# -- groups") :]


async def init_and_check(tmp_path: Path, *args: str) -> tuple[str, CheckReport]:
    """``init -o proxy.toml ARGS`` then ``check``, in this process: the TOML and the report."""
    out = tmp_path / "proxy.toml"
    assert await asyncio.to_thread(main, ["init", "-o", str(out), *args]) == 0
    report = await check(load_config(out), file=str(out))
    assert report.ok, report.errors
    return out.read_text(encoding="utf-8"), report


def assert_grouped(report: CheckReport, cap: int = 15) -> None:
    """Every tool in a group, none with more than ``cap`` of its own."""
    assert report.tools
    assert report.ungrouped == []
    assert all(len(g["tools"]) <= cap for g in report.groups), report.groups


class TestInit:
    """``fastmcp-filtering init``: connect, propose, write a TOML that ``check`` accepts."""

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_the_recorded_github_server(self, tmp_path: Path, era: str) -> None:
        mode = ["--mode", "legacy"] if era == "legacy" else []
        toml, report = await init_and_check(tmp_path, *mode, "python", str(STANDIN))
        assert_grouped(report)
        assert len(report.tools) == 26
        # The same proposal as the README shows for the real server.
        assert body(toml) == body(github_toml())
        upstream = tomllib.loads(toml)["upstreams"]
        assert upstream == [
            {"command": "python", "args": [str(STANDIN)], **({"mode": "legacy"} if mode else {})}
        ]

    def test_the_command_relative_paths_get_a_cwd_and_the_host_entry_is_printed(
        self, tmp_path: Path
    ) -> None:
        out = tmp_path / "sub" / "proxy.toml"
        out.parent.mkdir()
        made = run("init", "-o", str(out), "python", "../examples/upstream_standin.py")
        assert made.returncode == 0, made.stderr
        assert own_warnings(made.stderr) == []
        upstream = tomllib.loads(out.read_text())["upstreams"][0]
        # The arguments were relative to where init ran (tests/), not to the file.
        assert (out.parent / upstream["cwd"]).resolve() == Path(__file__).parents[1]
        checked = run("check", str(out))
        assert checked.returncode == 0, checked.stdout
        assert own_warnings(checked.stderr) == []
        assert "tools in no group (0)" in checked.stdout
        assert f"26 tools in 5 groups written to {out}" in made.stdout
        entry = json.loads(made.stdout[made.stdout.index("{") :])
        [server] = entry["mcpServers"].values()
        assert server["args"][-3:] == ["serve", str(out), "--quiet"]

    def test_without_o_the_toml_goes_to_stdout(self, capfd: pytest.CaptureFixture[str]) -> None:
        assert main(["init", sys.executable, str(ANNOTATED)]) == 0
        out, err = capfd.readouterr()
        config = tomllib.loads(out)
        assert [g["name"] for g in config["groups"]] == ["notes"]
        assert config["concerns"] == [
            {"name": "risk", "from_annotations": True, "default": "write"}
        ]
        # tidy_notes states no annotations: guessed (no read or destroying verb) as write.
        assert config["concern_mapping"] == {"tidy_notes": {"risk": "write"}}
        assert {t["name"]: t["tools"] for t in config["tags"]} == {
            "read-only": ["read_notes"],
            "destructive": ["delete_notes"],
            "idempotent": ["read_notes"],
        }
        assert "4 tools in 1 group." in err
        assert '"fastmcp-filtering"' in err

    def test_refusals(self, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
        assert main(["init"]) == 2
        assert "init needs a server" in capfd.readouterr().err
        existing = tmp_path / "proxy.toml"
        existing.write_text("keep me")
        assert main(["init", "-o", str(existing), "python", str(STANDIN)]) == 1
        assert "pass --force" in capfd.readouterr().err
        assert existing.read_text() == "keep me"
        dead = [sys.executable, "-c", "import sys; sys.exit(3)"]
        assert main(["init", "-o", str(tmp_path / "new.toml"), *dead]) == 1
        assert "cannot be listed" in capfd.readouterr().err
        assert not (tmp_path / "new.toml").exists()
        assert main(["init", "--header", "A=b", "python", str(STANDIN)]) == 1
        assert "--header applies to a URL" in capfd.readouterr().err

    async def test_env_and_headers(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("STANDIN_LABEL", "from-env")
        with standin_http() as url:
            toml, _ = await init_and_check(tmp_path, "--header", "X-Token=${STANDIN_LABEL}", url)
        assert tomllib.loads(toml)["upstreams"] == [
            {"url": url, "headers": {"X-Token": "${STANDIN_LABEL}"}}
        ]
        (tmp_path / "proxy.toml").unlink()
        toml, _ = await init_and_check(
            tmp_path, "--env", "STANDIN_LABEL", "--env", "A=1", "python", str(STANDIN)
        )
        env = tomllib.loads(toml)["upstreams"][0]["env"]
        assert env == {"STANDIN_LABEL": "${STANDIN_LABEL}", "A": "1"}

    @pytest.mark.parametrize(
        "package", ["server-everything", "server-memory"], ids=["everything", "memory"]
    )
    async def test_real_npm_servers(self, tmp_path: Path, package: str) -> None:
        node = node_with_packages()
        main_js = NODE_MODULES / package / "dist" / "index.js"
        _, report = await init_and_check(tmp_path, node, str(main_js))
        assert_grouped(report)


def servers_file(tmp_path: Path) -> Path:
    """An mcpServers file: the GitHub stand-in, the notes server, a disabled one, the proxy."""
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "github": {"command": "python", "args": [str(STANDIN), "--label", "gh"]},
                    "notes": {"command": "python", "args": [str(ANNOTATED)]},
                    "broken": {"command": "no-such-command", "disabled": True},
                    # The host's entry for the proxy itself: never an upstream of it.
                    "filtered": {
                        "command": "fastmcp-filtering",
                        "args": ["serve", str(tmp_path / "proxy.toml")],
                    },
                }
            }
        ),
        encoding="utf-8",
    )
    return path


class TestInitFromMcpJson:
    """``init --from mcp.json``: one proxy for every server a host lists."""

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_one_proxy_with_a_parent_group_per_server(self, tmp_path: Path, era: str) -> None:
        toml, report = await init_and_check(tmp_path, "--from", str(servers_file(tmp_path)))
        assert_grouped(report)
        parsed = tomllib.loads(toml)
        assert [(u["name"], u["namespace"]) for u in parsed["upstreams"]] == [
            ("github", "github"),
            ("notes", "notes"),
        ]
        parents = {g["name"]: g.get("parent") for g in parsed["groups"]}
        assert parents["github"] is None
        assert parents["github.pull_requests"] == "github"
        assert parents["notes"] is None  # one group of its own: the server's group is it
        assert parsed["progressive"]["initial_groups"] == ["github", "notes"]
        proxy = build_proxy(load_config(tmp_path / "proxy.toml"))
        async with Client(proxy, **ERAS[era]) as client:
            offered = {g.name for g in await list_groups(client)}
            assert {"github", "github.issues", "notes"} <= offered
            added = await client.call_tool("notes_add_note", {"text": "x"})
            assert added.content[0].text == "added x"  # type: ignore[union-attr]
            if era == "legacy":
                hint = r"enable_tools\(groups=\[\"github.issues\"\]\)"
                with pytest.raises(ToolError, match=hint):
                    await client.call_tool("github_get_issue", {"owner": "o"})
            enabled = await client.call_tool("enable_tools", {"groups": ["github.issues"]})
            assert enabled.structured_content is not None
            assert enabled.structured_content["enabled"] == ["github.issues"]
            args = {"owner": "o", "repo": "r", "issue_number": 1}
            assert reply(await client.call_tool("github_get_issue", args))["upstream"] == "gh"

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_upstreams_from_serves_the_file(self, tmp_path: Path, era: str) -> None:
        servers_file(tmp_path)
        config = tmp_path / "proxy.toml"
        config.write_text(
            'upstreams_from = "mcp.json"\n\n[[groups]]\nname = "notes"\ntools = ["notes_*"]\n',
            encoding="utf-8",
        )
        assert (await check(load_config(config))).ok
        async with Client(build_proxy(load_config(config)), **ERAS[era]) as client:
            notes = ["add_note", "delete_notes", "read_notes", "tidy_notes"]
            assert await names(client, groups=["notes"]) == [f"notes_{n}" for n in notes]
            args = {"owner": "o", "repo": "r", "issue_number": 1}
            assert reply(await client.call_tool("github_get_issue", args))["upstream"] == "gh"


NOISY_UPSTREAM = """\
import os, sys
from fastmcp import FastMCP
with open(sys.argv[1], "w") as pids:
    pids.write(f"{os.getpid()} {os.getppid()}")
print("noise from the upstream", file=sys.stderr, flush=True)
mcp = FastMCP("noisy", instructions="A noisy upstream.")
@mcp.tool
def ping() -> str:
    return "pong"
mcp.run(show_banner=False)
"""


def noisy_config(tmp_path: Path) -> tuple[Path, Path]:
    """A proxy of one upstream that writes to stderr and records its pid and its parent's."""
    script = tmp_path / "noisy.py"
    script.write_text(NOISY_UPSTREAM, encoding="utf-8")
    pids = tmp_path / "pids"
    config = tmp_path / "noisy.toml"
    config.write_text(
        f'[[upstreams]]\ncommand = "python"\nargs = [{json.dumps(str(script))}, '
        f"{json.dumps(str(pids))}]\n",
        encoding="utf-8",
    )
    return config, pids


class TestServeLifecycle:
    """--quiet, --log-level, and a clean stop: no traceback, no upstream left running."""

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_quiet_hides_the_upstream_stderr_and_info_logs(
        self, era: str, tmp_path: Path
    ) -> None:
        config, pids = noisy_config(tmp_path)
        for flags, shown in (((), True), (("--quiet",), False)):
            log = tmp_path / f"stderr{len(flags)}.log"
            async with proxy_client(config, *flags, log=log, era=era) as client:
                assert sorted(t.name for t in await client.list_tools()) == [
                    "ping",
                    "search_tools",
                ]
                assert (client.instructions or "").startswith("A noisy upstream.\n\n")
                upstream = int(pids.read_text().split()[0])
            wait_gone(upstream)
            text = log.read_text()
            assert ("noise from the upstream" in text) is shown, text
            assert ("Starting MCP server" in text) is shown, text
            assert "Traceback" not in text

    @pytest.mark.parametrize("era", list(ERAS))
    @pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
    async def test_a_signal_stops_the_upstreams_cleanly(
        self, era: str, signum: int, tmp_path: Path
    ) -> None:
        config, pids = noisy_config(tmp_path)
        log = tmp_path / "stderr.log"
        async with proxy_client(config, log=log, era=era) as client:
            await client.list_tools()
            upstream, proxy = (int(p) for p in pids.read_text().split())
            os.kill(proxy, signum)
            wait_gone(upstream)
        text = log.read_text()
        assert "INFO fastmcp-filtering: stopping: closing the upstreams" in text
        assert "Traceback" not in text
        assert "KeyboardInterrupt" not in text

    def test_sigterm_stops_the_http_proxy_and_its_upstreams(self, tmp_path: Path) -> None:
        config, pids = noisy_config(tmp_path)
        with serve_http(config, "--quiet") as (url, process):
            asyncio.run(_list_tools(url))
            upstream = int(pids.read_text().split()[0])
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0
        wait_gone(upstream)
        assert process.stderr is not None
        stderr = process.stderr.read().decode()
        assert stderr == ""

    @pytest.mark.parametrize("era", list(ERAS))
    async def test_log_level_filters_the_dead_upstream_warning(
        self, era: str, tmp_path: Path
    ) -> None:
        path = tmp_path / "dead.toml"
        path.write_text(
            'on_upstream_error = "warn"\n[[upstreams]]\nname = "ghost"\n'
            'command = "/nonexistent/mcp-server"\n',
            encoding="utf-8",
        )
        warning = "WARNING fastmcp-filtering: upstream 'ghost' is unavailable: [Errno 2]"
        for flags, shown in (
            ((), True),
            (("--log-level", "warning"), True),
            (("--log-level", "ERROR"), False),
        ):
            log = tmp_path / f"{len(flags)}{shown}.log"
            async with proxy_client(path, *flags, log=log, era=era) as client:
                assert [t.name for t in await client.list_tools()] == ["search_tools"]
            assert (warning in log.read_text()) is shown, log.read_text()

    def test_check_reports_a_dead_upstream_without_logging_it(self, tmp_path: Path) -> None:
        path = tmp_path / "dead.toml"
        path.write_text(
            'on_upstream_error = "warn"\n[[upstreams]]\nname = "ghost"\n'
            'command = "/nonexistent/mcp-server"\n',
            encoding="utf-8",
        )
        done = run("check", str(path))
        assert done.returncode == 1
        assert "error: upstream 'ghost' cannot be listed: [Errno 2]" in done.stdout
        assert "unavailable" not in done.stderr
        bad = run("check", str(path), "--log-level", "LOUD")
        assert bad.returncode == 2
        assert "invalid choice: 'LOUD'" in bad.stderr


async def _list_tools(url: str) -> None:
    async with Client(url) as client:
        assert sorted(t.name for t in await client.list_tools()) == ["ping", "search_tools"]

"""What ``init`` writes and prints says what it does, and ``check`` tells the operator what
is missing.

- The groups' patterns match tools alone (``kinds = ["tool"]``): a prompt of a tool's name stays
  in no group, as the file says.
- The file says how many tools a client sees first, and that a parent group holds none.
- The host entry starts the CLI by its absolute path, with ``--quiet``.
- ``check`` names the missing command's path (a client is told ``<path>``).

The upstreams are in-memory FastMCP servers (``upstream_transport`` replaced), except the
missing command, which is run (and not found).
"""

from __future__ import annotations

import asyncio
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import FastMCPTransport

import fastmcp_filtering.gateway.proxy as proxy_module
from fastmcp_filtering.gateway.cli import main
from fastmcp_filtering.gateway.config.models import load_config
from fastmcp_filtering.gateway.proxy import build_proxy

from ..conftest import ERAS

META = {"search_tools", "enable_tools", "disable_tools", "call_tool"}


def notes_server() -> FastMCP:
    server = FastMCP("notes")
    for name in ("add_note", "read_note", "delete_note"):
        server.tool(lambda: "done", name=name, description=f"{name.replace('_', ' ')}.")
    for name in ("list_folders", "create_folder", "rename_folder"):
        server.tool(lambda: "done", name=name, description=f"{name.replace('_', ' ')}.")
    return server


def web_server() -> FastMCP:
    server = FastMCP("web")
    for name in ("fetch_page", "read_page", "add_bookmark", "list_bookmarks", "delete_bookmark"):
        server.tool(lambda: "done", name=name, description=f"{name.replace('_', ' ')}.")
    # A prompt of a tool's name, as mcp-server-fetch has ("fetch" both).
    server.prompt(lambda: "Fetch it.", name="fetch_page")
    return server


SERVERS = {"notes": notes_server, "web": web_server}


@pytest.fixture
def in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    def transport(upstream: Any, **_: Any) -> Any:
        return FastMCPTransport(SERVERS[upstream.label]())

    monkeypatch.setattr(proxy_module, "upstream_transport", transport)


def init(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    """``init --from`` the two servers, 3 tools a group at most; the file and what was said."""
    servers = tmp_path / "mcp.json"
    servers.write_text(
        json.dumps({"mcpServers": {"notes": {"command": "notes"}, "web": {"command": "web"}}}),
        encoding="utf-8",
    )
    out = tmp_path / "proxy.toml"
    argv = ["init", "--from", str(servers), "-o", str(out), "--max-group-size", "3"]
    assert main(argv) == 0
    return out, capfd.readouterr().out


@pytest.mark.usefixtures("in_memory")
class TestPatternsMatchToolsAlone:
    def test_a_prompt_of_a_tools_name_is_in_no_group(
        self, tmp_path: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        out, _ = init(tmp_path, capfd)
        groups = tomllib.loads(out.read_text(encoding="utf-8"))["groups"]
        page = next(g for g in groups if "web_*_page" in g.get("tools", []))
        assert page["kinds"] == ["tool"]
        assert all(g["kinds"] == ["tool"] for g in groups if g.get("tools"))

    async def test_the_prompt_stays_listed_whatever_is_enabled(
        self, tmp_path: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        out, _ = await asyncio.to_thread(init, tmp_path, capfd)  # init runs its own loop
        async with Client(build_proxy(load_config(out)), **ERAS["legacy"]) as client:
            assert [p.name for p in await client.list_prompts()] == ["web_fetch_page"]
            await client.call_tool("enable_tools", {"groups": ["web.page"]})
            await client.call_tool("disable_tools", {"groups": ["web.page"]})
            assert [p.name for p in await client.list_prompts()] == ["web_fetch_page"]


@pytest.mark.usefixtures("in_memory")
class TestTheFirstView:
    async def test_the_file_says_how_many_tools_a_client_sees_first(
        self, tmp_path: Path, capfd: pytest.CaptureFixture[str], era: str
    ) -> None:
        out, _ = await asyncio.to_thread(init, tmp_path, capfd)  # init runs its own loop
        text = out.read_text(encoding="utf-8")
        said = re.search(r"# A client sees (\d+) of the 11 tools first", text)
        assert said is not None, text
        # notes and web are parents: their tools are their subgroups'.
        assert "notes, web hold no tools of their own" in " ".join(text.split("\n# "))
        assert tomllib.loads(text)["progressive"]["initial_groups"] == ["notes", "web"]
        async with Client(build_proxy(load_config(out)), **ERAS[era]) as client:
            tools = {t.name for t in await client.list_tools()} - META
        assert len(tools) == int(said.group(1))


@pytest.mark.usefixtures("in_memory")
class TestTheHostEntry:
    def test_it_names_the_cli_by_its_absolute_path_with_quiet(
        self, tmp_path: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        out, said = init(tmp_path, capfd)
        entry = json.loads(said[said.index("{") : said.rindex("}") + 1])
        [server] = entry["mcpServers"].values()
        assert Path(server["command"]).is_absolute()
        assert Path(server["command"]).is_file()
        assert server["args"][-3:] == ["serve", str(out), "--quiet"]


class TestCheckNamesWhatIsMissing:
    def test_the_missing_command_is_named_and_a_secret_still_hidden(
        self, tmp_path: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        missing = tmp_path / "bin" / "mcp-server"
        config = tmp_path / "proxy.toml"
        config.write_text(
            f'[[upstreams]]\nname = "ghost"\ncommand = {json.dumps(str(missing))}\n'
            'args = ["--token", "sk-live-4f9a8b7c6d5e4f3a2b1c"]\n',
            encoding="utf-8",
        )
        assert main(["check", str(config)]) == 1
        report = capfd.readouterr().out
        assert f"No such file or directory: '{missing}'" in report
        assert "sk-live" not in report

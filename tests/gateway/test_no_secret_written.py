"""No secret written to a file: ``init --from`` writes ``${NAME}`` references and says which
variables to set; ``check`` warns of a secret written in a configuration.

The upstreams are in-memory FastMCP servers (``upstream_transport`` replaced), so the
``mcpServers`` file's commands and URLs are never run or reached.
"""

from __future__ import annotations

import asyncio
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import FastMCPTransport
from inline_snapshot import snapshot

import fastmcp_filtering.gateway.proxy as proxy_module
from fastmcp_filtering.gateway.cli import check, main
from fastmcp_filtering.gateway.config.models import FilteringConfig, load_config
from fastmcp_filtering.gateway.config.secret_values import Referencer, literal_secrets, looks_secret
from fastmcp_filtering.gateway.proxy import build_proxy

from ..conftest import ERAS

TOKEN = "sk-live-4f9a8b7c6d5e4f3a2b1c"
BEARER = "ghp_abcdefghijklmnopqrstuvwxyz0123"


def notes_server() -> FastMCP:
    server = FastMCP("notes")
    server.tool(lambda text="": f"added {text}", name="add_note")
    server.tool(lambda: "read", name="read_notes")
    return server


@pytest.fixture
def in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every configured upstream is the in-memory notes server."""

    def transport(upstream: Any, **_: Any) -> Any:
        return FastMCPTransport(notes_server())

    monkeypatch.setattr(proxy_module, "upstream_transport", transport)


def servers_file(tmp_path: Path) -> Path:
    """An ``mcpServers`` file as a desktop host keeps it: secrets written out."""
    path = tmp_path / "mcp.json"
    servers = {
        "notes": {
            "command": "notes-server",
            "env": {"MY_API_TOKEN": TOKEN, "NODE_ENV": "production"},
        },
        "web": {
            "url": "https://web.example/mcp",
            "headers": {"Authorization": f"Bearer {BEARER}", "Accept-Language": "en"},
        },
    }
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


class TestInitWritesReferences:
    @pytest.mark.usefixtures("in_memory")
    def test_secrets_become_references_and_the_variables_are_named(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        out = tmp_path / "proxy.toml"
        assert main(["init", "--from", str(servers_file(tmp_path)), "-o", str(out)]) == 0
        text = out.read_text(encoding="utf-8")
        assert TOKEN not in text
        assert BEARER not in text
        upstreams = tomllib.loads(text)["upstreams"]
        assert [(u.get("env"), u.get("headers")) for u in upstreams] == snapshot(
            [
                ({"MY_API_TOKEN": "${MY_API_TOKEN}", "NODE_ENV": "production"}, None),
                (None, {"Authorization": "Bearer ${WEB_AUTHORIZATION}", "Accept-Language": "en"}),
            ]
        )
        said = capsys.readouterr().out
        assert TOKEN not in said
        assert said[said.index("No secret") :] == snapshot("""\
No secret was written to the file: it reads each from the environment. \
Set these before check and serve (the host entry's env, or your shell):
  MY_API_TOKEN  (upstream 'notes' env MY_API_TOKEN)
  WEB_AUTHORIZATION  (upstream 'web' header Authorization)
""")
        assert "set these environment variables before check and serve: MY_API_TOKEN" in text

    @pytest.mark.usefixtures("in_memory")
    async def test_the_written_file_reads_the_same_secrets_back(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, era: str
    ) -> None:
        out = tmp_path / "proxy.toml"
        made = ["init", "-q", "--from", str(servers_file(tmp_path)), "-o", str(out)]
        assert await asyncio.to_thread(main, made) == 0
        monkeypatch.setenv("MY_API_TOKEN", TOKEN)
        monkeypatch.setenv("WEB_AUTHORIZATION", BEARER)
        config = load_config(out)
        assert config.upstreams[0].env["MY_API_TOKEN"] == TOKEN
        assert config.upstreams[1].headers["Authorization"] == f"Bearer {BEARER}"
        async with Client(build_proxy(config), **ERAS[era]) as client:
            added = await client.call_tool("notes_add_note", {"text": "x"})
        assert added.content[0].text == "added x"  # type: ignore[union-attr]

    def test_two_different_secrets_never_share_a_variable(self) -> None:
        referencer = Referencer()
        first = referencer.table("a", {"env": {"API_KEY": "sk-aaaaaaaaaaaa"}})
        same = referencer.table("b", {"env": {"API_KEY": "sk-aaaaaaaaaaaa"}})
        other = referencer.table("c", {"env": {"API_KEY": "sk-cccccccccccc"}})
        assert [first["env"], same["env"], other["env"]] == [
            {"API_KEY": "${API_KEY}"},
            {"API_KEY": "${API_KEY}"},
            {"API_KEY": "${C_API_KEY}"},
        ]


@pytest.mark.parametrize(
    ("key", "value", "secret"),
    [
        ("MY_API_TOKEN", TOKEN, True),
        ("GITHUB_PERSONAL_ACCESS_TOKEN", "abc123secret", True),
        ("Authorization", f"Bearer {BEARER}", True),
        ("X_ANY", BEARER, True),  # a known token's shape, whatever its key
        ("DATABASE_PASSWORD", "hunter22", True),
        ("MY_API_TOKEN", "${MY_API_TOKEN}", False),
        ("Authorization", "Bearer ${WEB_TOKEN}", False),
        ("NODE_ENV", "production", False),
        ("ALLOWED_DIRS", "/home/me/projects/some-long-directory-name-1234", False),
        ("AUTH_MODE", "oauth", False),
    ],
)
def test_what_looks_like_a_secret(key: str, value: str, secret: bool) -> None:
    assert looks_secret(key, value) is secret


class TestCheckWarns:
    @pytest.mark.usefixtures("in_memory")
    async def test_a_secret_written_in_the_file_is_a_warning_a_reference_is_not(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("NOTES_TOKEN", TOKEN)
        written = {"name": "notes", "command": "x", "env": {"NOTES_TOKEN": TOKEN}}
        referenced = {"name": "notes", "command": "x", "env": {"NOTES_TOKEN": "${NOTES_TOKEN}"}}
        reports = []
        for upstream in (written, referenced):
            config = FilteringConfig.model_validate({"upstreams": [upstream]})
            reports.append(await check(config))
        assert reports[0].ok
        assert reports[0].warnings == snapshot(
            [
                "upstream 'notes' env.NOTES_TOKEN holds what looks like a secret written in the "
                'file; write "${NOTES_TOKEN}" there and set NOTES_TOKEN in the environment, so '
                "the file can be shared without it"
            ]
        )
        assert all(TOKEN not in w for w in reports[0].warnings)
        assert reports[1].warnings == []

    def test_the_keys_are_read_before_references_are_expanded(self) -> None:
        assert literal_secrets({"headers": {"Authorization": "Bearer x-1234567"}}) == [
            "headers.Authorization"
        ]
        assert literal_secrets({"headers": {"Authorization": "Bearer ${T}"}}) == []

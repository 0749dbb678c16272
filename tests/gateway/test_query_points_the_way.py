"""Through the gateway, a ``query`` whose best matches its first list leaves out names them.

Issue 53's case: the gateway's default client asks ``query: "git history"`` with only the
files server's tools listed at first. "files" and "git" are in-memory FastMCP servers.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import FastMCPTransport

import fastmcp_filtering.gateway.proxy as proxy_module
from fastmcp_filtering.client import better_by_name, better_matches, list_tools
from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.proxy import build_proxy

from ..conftest import ERAS

TOOLS = {
    "files": {
        "read_file": "Read the text of a file",
        "write_file": "Save text to a new file, or overwrite a file",
        "list_directory": "List the entries of a directory",
    },
    "git": {
        "log": "Show the commit history of the repository",
        "commit": "Record changes to the repository",
        "status": "Show the working tree status",
    },
}

CONFIG = {
    "upstreams": [{"name": name, "namespace": name, "command": name} for name in ("files", "git")],
    "groups": [{"name": "files", "tools": ["files_*"]}, {"name": "git", "tools": ["git_*"]}],
    "progressive": {"enabled": True, "initial_groups": ["files"]},
    "search": {"enabled": True},
}


def _upstream(name: str) -> FastMCP:
    server = FastMCP(name)
    for tool, description in TOOLS[name].items():
        server.tool(lambda: "done", name=tool, description=description)
    return server


@pytest.fixture
def gateway(monkeypatch: pytest.MonkeyPatch) -> FastMCP:
    def transport(upstream: Any, **options: Any) -> Any:
        return FastMCPTransport(_upstream(upstream.label))

    monkeypatch.setattr(proxy_module, "upstream_transport", transport)
    return build_proxy(FilteringConfig.model_validate(CONFIG))


async def test_git_history_names_the_git_tools(gateway: FastMCP, era: str) -> None:
    async with Client(gateway, **ERAS[era]) as client:
        page = await list_tools(client, query="git history")
        listed = {t.name for t in await client.list_tools()}
    assert "git_log" not in listed
    assert "git_log" not in {t.name for t in page.tools}
    if era == "modern":
        # A 2026-07-28 list holds the initial groups; the git tools are called by name.
        assert better_by_name(page)[:1] == ["git_log"]
        assert better_matches(page) == []
    else:
        # A 2025-11-25 session enables the group first.
        assert better_matches(page) == ["git"]
        assert better_by_name(page) == []

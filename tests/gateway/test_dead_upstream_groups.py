"""A dead upstream's groups are not offered: ``enable_tools`` on one of them answers with the
groups that hold something now, and its ``available_groups`` leaves the dead ones out.

"notes" is an in-memory FastMCP server; "web" a command that does not exist.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import FastMCPTransport

import fastmcp_filtering.gateway.proxy as proxy_module
from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.proxy import build_proxy, upstream_transport

from ..conftest import ERAS


def notes_server() -> FastMCP:
    server = FastMCP("notes")
    for name in ("add_note", "read_note", "create_folder", "list_folders"):
        server.tool(lambda: "done", name=name)
    return server


CONFIG = {
    "on_upstream_error": "warn",
    "upstreams": [
        {"name": "notes", "namespace": "notes", "command": "notes"},
        {"name": "web", "namespace": "web", "command": "/nonexistent/web-server"},
    ],
    "groups": [
        {"name": "notes"},
        {"name": "notes.note", "parent": "notes", "tools": ["notes_*_note"]},
        {"name": "notes.folder", "parent": "notes", "tools": ["notes_*folder*"]},
        {"name": "web"},
        {"name": "web.page", "parent": "web", "tools": ["web_*_page"]},
        {"name": "web.bookmark", "parent": "web", "tools": ["web_*bookmark*"]},
    ],
    "progressive": {"enabled": True, "initial_groups": ["notes", "web"]},
    "search": {"enabled": False},
}


@pytest.fixture
def gateway(monkeypatch: pytest.MonkeyPatch) -> FastMCP:
    def transport(upstream: Any, **options: Any) -> Any:
        if upstream.label == "notes":
            return FastMCPTransport(notes_server())
        return upstream_transport(upstream, **options)  # run, and not found

    monkeypatch.setattr(proxy_module, "upstream_transport", transport)
    return build_proxy(FilteringConfig.model_validate(CONFIG))


async def test_enabling_a_dead_upstreams_group_offers_only_what_holds_something(
    gateway: FastMCP, era: str
) -> None:
    async with Client(gateway, **ERAS[era]) as client:
        result = await client.call_tool("enable_tools", {"groups": ["web.page"]})
        reply = result.structured_content
        assert reply is not None
        assert reply["enabled"] == []
        assert reply["errors"] == [
            "group 'web.page' holds nothing you can use right now, so it was not enabled; "
            'enable another group (["notes.note", "notes.folder"] can be enabled now), or '
            "try 'web.page' again later"
        ]
        assert reply["available_groups"] == ["notes.note", "notes.folder"]

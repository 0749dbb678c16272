"""An upstream's namespace is said once: mcp-server-git's ``git_status`` under the namespace
``git`` is ``git_status``, not ``git_git_status``; every other name is prefixed as usual."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.providers import FastMCPProvider

from fastmcp_filtering.gateway.cli import check
from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.proxy import build_proxy
from fastmcp_filtering.gateway.upstreams.namespacing import OwnNamespace, served_name

from .._support.upstream_scripts import MISBEHAVING
from ..conftest import ERAS


def upstream() -> FastMCP:
    """A server naming some tools after itself (``git_status``), and one name twice over."""
    server: FastMCP = FastMCP("git")

    @server.tool(name="git_status")
    def own_status() -> str:
        return "own git_status"

    @server.tool(name="status")
    def bare_status() -> str:
        return "bare status"

    @server.tool(name="log")
    def log() -> str:
        return "log"

    @server.prompt(name="git_review")
    def review() -> str:
        return "review"

    @server.resource("docs://repo/readme")
    def readme() -> str:
        return "readme"

    return server


def gateway() -> FastMCP:
    server: FastMCP = FastMCP("gateway")
    server.add_provider(FastMCPProvider(upstream()).wrap_transform(OwnNamespace("git")))
    return server


def test_served_name() -> None:
    assert served_name("git_", "git_status") == "git_status"
    assert served_name("git_", "status") == "git_status"
    assert served_name("git_", "gitstatus") == "git_gitstatus"
    assert served_name("", "status") == "status"


async def test_names_already_in_the_namespace_are_not_prefixed_again(era: str) -> None:
    async with Client(gateway(), **ERAS[era]) as client:
        # status would be git_status too: the upstream's own git_status wins, in lists and calls.
        assert sorted(t.name for t in await client.list_tools()) == ["git_log", "git_status"]
        assert [p.name for p in await client.list_prompts()] == ["git_review"]
        # Resources are namespaced as FastMCP does.
        assert [str(r.uri) for r in await client.list_resources()] == ["docs://git/repo/readme"]
        result = await client.call_tool("git_status", {})
        assert result.data == "own git_status"
        assert (await client.call_tool("git_log", {})).data == "log"
        assert (await client.get_prompt("git_review")).messages


@pytest.mark.parametrize("name", ["git_git_status", "status", "log", "review", "git_git_log"])
async def test_names_not_listed_cannot_be_called(era: str, name: str) -> None:
    async with Client(gateway(), **ERAS[era]) as client:
        with pytest.raises(ToolError, match="Unknown tool"):
            await client.call_tool(name, {})


@pytest.mark.slow
async def test_a_real_upstream_through_the_gateway_and_check(era: str) -> None:
    config = FilteringConfig.model_validate(
        {
            "upstreams": [
                {
                    "command": sys.executable,
                    "args": [str(MISBEHAVING), "--tools", "git_status,git_diff,log"],
                    "namespace": "git",
                },
                {"command": sys.executable, "args": [str(MISBEHAVING)], "namespace": "other"},
            ],
            "groups": [{"name": "git", "tools": ["git_*"]}],
            "search": {"enabled": False},
        }
    )
    report = await check(config)
    assert report.tools == ["git_diff", "git_log", "git_status", "other_echo"]
    assert report.upstreams[0] == {"name": "git", "namespace": "git", "tools": 3, "error": None}
    async with Client(build_proxy(config), **ERAS[era]) as client:
        listed: list[Any] = await client.list_tools()
        assert sorted(t.name for t in listed) == ["git_diff", "git_log", "git_status", "other_echo"]
        result = await client.call_tool("git_status", {})
        assert '"tool": "git_status"' in result.content[0].text  # type: ignore[union-attr]

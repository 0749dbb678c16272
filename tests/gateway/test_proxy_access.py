"""``access`` in a proxy config: checked groups of proxied tools, per token, from TOML."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from fastmcp_filtering.client import list_groups
from fastmcp_filtering.gateway.config.models import ConfigError, load_config
from fastmcp_filtering.gateway.proxy import build_proxy

from .._principals import PrincipalByClientName, as_principal
from .._servers import ROOT
from .._support.cli import serve_http as serve_proxy
from ..conftest import ERAS

STANDIN = ROOT / "examples" / "upstream_standin.py"


def config_text(extra: str = "") -> str:
    return f"""
{extra}
[[upstreams]]
command = "{sys.executable}"
args = ["{STANDIN}"]

[[groups]]
name = "issues"
tools = ["*_issue", "list_issues"]

[[groups]]
name = "admin"
tools = ["delete_*", "merge_pull_request"]
access = {{ scopes = ["github:admin"] }}
restrictive = true

[[groups]]
name = "acme"
tools = ["create_pull_request"]
access = {{ claims = {{ tenant = "acme" }} }}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "proxy.toml"
    path.write_text(text)
    return path


def proxy_for(tmp_path: Path, extra: str = "") -> Any:
    proxy = build_proxy(load_config(write(tmp_path, config_text(extra))))
    # Outermost, before the filtering stack: stands in for the verifier [auth] configures.
    proxy.middleware.insert(0, PrincipalByClientName())
    return proxy


async def tool_names(client: Client[Any]) -> set[str]:
    return {t.name for t in await client.list_tools()}


@pytest.mark.slow
@pytest.mark.parametrize("era", list(ERAS))
class TestAccessFromTheConfig:
    async def test_scopes_and_claims_decide_per_token(self, tmp_path: Path, era: str) -> None:
        proxy = proxy_for(tmp_path)
        async with (
            Client(proxy, **ERAS[era], **as_principal("admin")) as admin,
            Client(proxy, **ERAS[era], **as_principal("reader")) as reader,
        ):
            assert [g.name for g in await list_groups(admin)] == ["issues", "admin", "acme"]
            assert [g.name for g in await list_groups(reader)] == ["issues"]
            seen_by_admin, seen_by_reader = await tool_names(admin), await tool_names(reader)
            assert {"merge_pull_request", "create_pull_request"} <= seen_by_admin
            assert seen_by_reader.isdisjoint({"merge_pull_request", "create_pull_request"})
            with pytest.raises(ToolError, match="Unknown tool"):
                await reader.call_tool("merge_pull_request", {"owner": "o", "repo": "r"})
            merged = await admin.call_tool(
                "merge_pull_request", {"owner": "o", "repo": "r", "pull_number": 1}
            )
            assert not merged.is_error

    async def test_no_token_gets_the_checked_groups_only_if_allowed(
        self, tmp_path: Path, era: str
    ) -> None:
        async with Client(proxy_for(tmp_path), **ERAS[era]) as anonymous:
            assert "merge_pull_request" not in await tool_names(anonymous)
        allowed = proxy_for(tmp_path, 'unauthenticated = "allow"')
        async with Client(allowed, **ERAS[era]) as anonymous:
            assert "merge_pull_request" in await tool_names(anonymous)


GATEWAY_AUTH = """
[auth]
type = "static"

[[auth.tokens]]
token = "admin-gateway-token"
client_id = "admin"
scopes = ["github:admin"]
claims = { tenant = "acme" }

[[auth.tokens]]
token = "reader-gateway-token"
client_id = "reader"
scopes = []
claims = { tenant = "globex" }
"""


@pytest.mark.slow
@pytest.mark.parametrize("era", list(ERAS))
async def test_over_http_with_the_proxys_own_auth(tmp_path: Path, era: str) -> None:
    """`serve --http` with [auth]: the verified tokens' scopes and claims open the groups."""
    with serve_proxy(write(tmp_path, config_text() + GATEWAY_AUTH)) as (url, _):
        async with (
            Client(url, auth="admin-gateway-token", **ERAS[era]) as admin,
            Client(url, auth="reader-gateway-token", **ERAS[era]) as reader,
        ):
            assert [g.name for g in await list_groups(admin)] == ["issues", "admin", "acme"]
            assert [g.name for g in await list_groups(reader)] == ["issues"]
            assert "merge_pull_request" in await tool_names(admin)
            assert "merge_pull_request" not in await tool_names(reader)
            with pytest.raises(ToolError, match="Unknown tool"):
                await reader.call_tool("create_pull_request", {"owner": "o", "repo": "r"})
            created = await admin.call_tool(
                "create_pull_request",
                {"owner": "o", "repo": "r", "title": "t", "head": "h", "base": "main"},
            )
            assert not created.is_error


class TestAccessConfigErrors:
    @pytest.mark.parametrize(
        ("access", "message"),
        [
            ("{}", "access needs scopes"),
            ('{ scopes = [""] }', "non-empty strings"),
            ('{ scopes = "github:admin" }', "Input should be a valid list"),
            ('{ roles = ["x"] }', "roles"),
            ("{ claims = { tenant = 1 } }", "Input should be a valid string"),
        ],
    )
    def test_errors_name_the_key_and_line(self, tmp_path: Path, access: str, message: str) -> None:
        text = config_text().replace('access = { scopes = ["github:admin"] }', f"access = {access}")
        with pytest.raises(ConfigError) as error:
            load_config(write(tmp_path, text))
        shown = str(error.value)
        assert "groups[1].access" in shown
        assert message in shown
        line = next(
            i for i, row in enumerate(text.splitlines(), 1) if row.startswith("access = " + access)
        )
        assert f":{line}:" in shown or f"line {line}" in shown

    def test_unauthenticated_is_deny_or_allow(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="unauthenticated"):
            load_config(write(tmp_path, config_text('unauthenticated = "maybe"')))

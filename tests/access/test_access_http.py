"""Access control over streamable HTTP with real JWTs, both eras, two tokens of different scopes.

examples/access_server.py runs as a subprocess trusting a key made here; each test mints
tokens with FastMCP's ``RSAKeyPair``, so FastMCP's own ``JWTVerifier`` checks them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError
from fastmcp.server.auth.providers.jwt import RSAKeyPair
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.client import call_method, list_groups, list_tools

from .._servers import ROOT, serve_http
from ..conftest import ERAS

SCRIPT = ROOT / "examples" / "access_server.py"
ISSUER = "https://auth.example.com"
AUDIENCE = "github-mcp"

ADMIN_ONLY = {"delete_repo", "remove_member", "acme_report"}
"""What alice (github:admin, tenant acme) may use and bob (tenant globex) may not."""


@pytest.fixture(scope="module")
def key_pair() -> RSAKeyPair:
    return RSAKeyPair.generate()


@pytest.fixture(scope="module")
def url(key_pair: RSAKeyPair, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    public = tmp_path_factory.mktemp("keys") / "public.pem"
    public.write_text(key_pair.public_key)
    with serve_http(SCRIPT, "--public-key", str(public)) as running:
        yield running.url


def token(key_pair: RSAKeyPair, subject: str, scopes: list[str], **claims: Any) -> str:
    expires = claims.pop("expires_in_seconds", 3600)
    return key_pair.create_token(
        subject=subject,
        issuer=ISSUER,
        audience=AUDIENCE,
        scopes=scopes,
        expires_in_seconds=expires,
        additional_claims=claims,
    )


# State is kept per principal (subject) in both eras: each era's test has its own users.
@pytest.fixture
def alice(key_pair: RSAKeyPair, era: str) -> str:
    return token(key_pair, f"alice-{era}", ["github:read", "github:admin"], tenant="acme")


@pytest.fixture
def bob(key_pair: RSAKeyPair, era: str) -> str:
    return token(key_pair, f"bob-{era}", ["github:read"], tenant="globex")


async def every_path(client: Client[Any], era: str) -> dict[str, Any]:
    """What one client gets on every path to the admin group and its members."""
    seen: dict[str, Any] = {}
    seen["groups"] = [g.name for g in await list_groups(client)]
    seen["enable"] = (
        await client.call_tool(
            "enable_tools", {"groups": ["admin", "members", "repos", "acme", "globex"]}
        )
    ).structured_content
    # The tools a client may now use: listed (2025-11-25) or handed out (2026-07-28).
    handed_out = {t["name"] for t in seen["enable"].get("tools", [])}
    seen["tools"] = sorted({t.name for t in await client.list_tools()} | handed_out)
    # 2026-07-28 lists what a host enabled through filter.groups (host-side disclosure).
    disclosed = {"groups": seen["enable"]["enabled"]} if era == "modern" else {}
    query = await list_tools(client, query="delete a repository", **disclosed)
    seen["query"] = [t.name for t in query.tools]
    found = await client.call_tool("search_tools", {"query": "remove an organization member"})
    seen["search_tools"] = str(found.structured_content)
    calls = {}
    for name, arguments in {
        "delete_repo": {"name": "x"},
        "remove_member": {"login": "x"},
        "acme_report": {},
        "globex_report": {},
    }.items():
        try:
            calls[name] = (await client.call_tool(name, arguments)).data
        except ToolError as exc:
            calls[name] = f"refused: {exc}"
    seen["calls"] = calls
    try:
        seen["read"] = str(await client.read_resource("audit://users/x"))
    except MCPError as exc:
        seen["read"] = f"refused: {exc.error.code}"
    try:
        seen["prompt"] = str(await client.get_prompt("audit_prompt", {"scope": "all"}))
    except MCPError as exc:
        seen["prompt"] = f"refused: {exc.error.code}"
    try:
        completion = await call_method(
            client,
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "audit_prompt"},
                "argument": {"name": "scope", "value": ""},
            },
        )
        seen["complete"] = completion["completion"]["values"]
    except MCPError as exc:
        seen["complete"] = f"refused: {exc.error.code}"
    try:
        filtered = await list_tools(client, groups=["admin"])
        seen["filter"] = f"accepted: {len(filtered.tools)} tools"
    except MCPError as exc:
        seen["filter"] = f"refused: {exc.error.code}"
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("era", list(ERAS))
async def test_two_tokens_see_their_own_groups_on_every_path(
    url: str, alice: str, bob: str, era: str
) -> None:
    async with (
        Client(url, auth=alice, **ERAS[era]) as as_alice,
        Client(url, auth=bob, **ERAS[era]) as as_bob,
    ):
        a = await every_path(as_alice, era)
        b = await every_path(as_bob, era)
    # Alice, with github:admin and tenant acme, reaches the admin group on every path.
    assert a["groups"] == ["issues", "repos", "admin", "members", "acme"]
    assert a["enable"]["enabled"] == ["admin", "members", "repos", "acme"]
    assert ADMIN_ONLY - {"acme_report"} <= set(a["tools"])
    assert a["query"][0] == "delete_repo"
    assert "remove_member" in a["search_tools"]
    assert a["calls"]["delete_repo"] == "deleted repo 'x'"
    assert a["calls"]["remove_member"] == "removed 'x'"
    assert a["calls"]["acme_report"] == "acme numbers"
    assert a["calls"]["globex_report"].startswith("refused: Unknown tool")
    assert "audit of x" in a["read"]
    assert "audit all" in a["prompt"]
    assert a["complete"] == ["everything"]
    assert a["filter"].startswith("accepted")
    # Bob, without them, finds none of it: not by name, not by search, not in a hint.
    assert b["groups"] == ["issues", "repos", "globex"]
    assert b["enable"]["enabled"] == ["repos", "globex"]
    assert [e.split(";")[0] for e in b["enable"]["errors"]] == [
        "unknown group 'admin'",
        "unknown group 'members'",
        "unknown group 'acme'",
    ]
    assert ADMIN_ONLY.isdisjoint(b["tools"])
    assert "delete_repo" not in b["query"]
    for hidden in ("remove_member", "admin", "members"):
        assert hidden not in b["search_tools"]
    for name in ("delete_repo", "remove_member", "acme_report"):
        assert b["calls"][name] == f"refused: Unknown tool: '{name}'"
    assert b["calls"]["globex_report"] == "globex numbers"
    assert b["read"] == b["prompt"] == b["complete"] == "refused: -32602"
    # A group it may not use reads as one never declared: ANY of no known group, nothing.
    assert b["filter"] == "accepted: 0 tools"


@pytest.mark.slow
@pytest.mark.parametrize("era", list(ERAS))
async def test_enabled_groups_stay_with_each_token(
    url: str, key_pair: RSAKeyPair, era: str
) -> None:
    carol = token(key_pair, f"carol-{era}", ["github:admin"], tenant="acme")
    async with Client(url, auth=carol, **ERAS[era]) as first:
        enabled = await first.call_tool("enable_tools", {"groups": ["admin"]})
        handed_out = {t["name"] for t in (enabled.structured_content or {}).get("tools", [])}
        listed = {t.name for t in await first.list_tools()}
        # 2025-11-25 lists it from now on; 2026-07-28 hands out its definition instead.
        assert "delete_repo" in (handed_out if era == "modern" else listed)
    # A token without github:admin for the same subject: the stored admin group is not usable.
    demoted = token(key_pair, f"carol-{era}", ["github:read"], tenant="acme")
    async with Client(url, auth=demoted, **ERAS[era]) as second:
        assert "delete_repo" not in {t.name for t in await second.list_tools()}
        with pytest.raises(ToolError, match="Unknown tool: 'delete_repo'"):
            await second.call_tool("delete_repo", {"name": "x"})


@pytest.mark.slow
def test_an_expired_token_gets_nothing(url: str, key_pair: RSAKeyPair) -> None:
    expired = token(key_pair, "alice", ["github:admin"], tenant="acme", expires_in_seconds=-60)
    response = httpx.post(
        url,
        headers={"Authorization": f"Bearer {expired}", "Accept": "application/json"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    # FastMCP's verifier refuses it before any MCP method runs, in either era.
    assert response.status_code == 401


def test_the_example_documents_its_groups() -> None:
    text = Path(SCRIPT).read_text()
    for scope in ("github:admin", "github:secrets"):
        assert scope in text

"""Concerns on 2026-07-28: from the request and its authorization, never from another request.

A list there "MAY vary by the authorization presented on the request" and by nothing a
previous request did (``server/tools.mdx``): ``concerns/update`` answers the ``_meta`` to
send and stores nothing; a token's scopes or claim configure a principal's concerns.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.utilities.tests import asgi_server
from inline_snapshot import snapshot

from fastmcp_filtering import Concern, ConcernMiddleware, ConcernsFromToken, concerns, install
from fastmcp_filtering.client import call_method, concerns_meta

from .._principals import PrincipalByClientName, as_principal
from ..conftest import ERAS, Connect

RISK = Concern("risk", values=["safe", "destructive"], default="safe")


def make_server(authorization: ConcernsFromToken | None = None) -> FastMCP:
    mcp = FastMCP("concerned")
    mcp.add_middleware(PrincipalByClientName())

    @concerns(risk="safe")
    @mcp.tool
    def read_file(path: str) -> str:
        return path

    @concerns(risk="destructive")
    @mcp.tool
    def delete_file(path: str) -> str:
        return path

    @mcp.tool
    def ping() -> str:
        return "pong"

    install(mcp, ConcernMiddleware(concerns=[RISK], authorization=authorization))
    return mcp


async def names(client: Client[Any], **params: Any) -> list[str]:
    listed = await call_method(client, "tools/list", params)
    return sorted(t["name"] for t in listed["tools"])


class TestUpdate:
    async def test_answers_the_meta_to_send_and_changes_no_list(self) -> None:
        async with Client(make_server()) as client:
            before = await names(client)
            reply = await call_method(client, "concerns/update", {"concerns": {"risk": "safe"}})
            assert reply == snapshot(
                {
                    "concerns": {"risk": "safe"},
                    "warnings": [],
                    "stored": False,
                    "requestMeta": {"io.github.fastmcp-filtering/concerns": {"risk": "safe"}},
                    "message": (
                        "nothing was stored: on protocol 2026-07-28 a list never changes as a "
                        "side effect of another request. Send requestMeta as params._meta on "
                        "each tools/list, tools/call and other list or get request to apply "
                        "these concerns"
                    ),
                    "resultType": "complete",
                }
            )
            assert await names(client) == before == ["delete_file", "ping", "read_file"]
            assert await names(client, _meta=reply["requestMeta"]) == ["ping", "read_file"]

    async def test_a_client_with_no_identity_gets_the_same_answer(self) -> None:
        async with (
            asgi_server(make_server(), stateless_http=True) as running,
            running.client() as client,
        ):
            reply = await call_method(client, "concerns/update", {"concerns": {"risk": "safe"}})
            assert reply["stored"] is False

    async def test_bad_input_is_still_refused(self) -> None:
        from mcp.shared.exceptions import MCPError

        async with Client(make_server()) as client:
            with pytest.raises(MCPError) as raised:
                await call_method(client, "concerns/update", {"concerns": {"risk": "loud"}})
            assert raised.value.error.data["field"] == "concerns.risk"


class TestRefusal:
    """A refusal names the way to the component that works for the client, in each era."""

    @pytest.mark.parametrize("era", ["legacy", "modern"])
    async def test_names_concerns_update_only_where_it_is_stored(self, era: str) -> None:
        safe = concerns_meta({"risk": "safe"})
        async with Client(make_server(), **ERAS[era]) as client:
            with pytest.raises(ToolError) as refused:
                await client.call_tool("delete_file", {"path": "x"}, meta=safe)
        if era == "legacy":
            assert "send concerns/update with risk: 'destructive'" in str(refused.value)
        else:
            assert str(refused.value) == snapshot(
                "tool 'delete_file' is excluded by concern 'risk': it is risk='destructive' and "
                "this client's concerns ask risk='safe'. Concerns are a preference filter, not "
                "a permission: to use it, set params._meta['io.github.fastmcp-filtering/"
                "concerns'] to {'risk': 'destructive'} on this request"
            )


class TestFromTheToken:
    SCOPED = ConcernsFromToken(scopes={"github:read": {"risk": "safe"}})

    async def test_a_scope_configures_the_principals_concerns(self, connect: Connect) -> None:
        server = make_server(self.SCOPED)
        async with connect(server, **as_principal("reader")) as reader:
            assert await names(reader) == ["ping", "read_file"]
            refused = await reader.call_tool_mcp("delete_file", {"path": "x"})
            assert refused.is_error
        async with connect(server) as anonymous:
            assert await names(anonymous) == ["delete_file", "ping", "read_file"]

    async def test_the_request_meta_still_wins(self, connect: Connect) -> None:
        async with connect(make_server(self.SCOPED), **as_principal("reader")) as reader:
            wider = await names(reader, _meta=concerns_meta({"risk": "destructive"}))
            assert wider == ["delete_file", "ping"]

    async def test_a_claim_configures_them_over_http(self) -> None:
        server = make_server(ConcernsFromToken(claim="concerns"))
        server.auth = StaticTokenVerifier(
            tokens={
                "careful": {"client_id": "c", "scopes": [], "concerns": {"risk": "safe"}},
                "odd": {"client_id": "o", "scopes": [], "concerns": {"risk": "loud"}},
            }
        )
        async with asgi_server(server, stateless_http=True) as running:
            async with running.client(auth="careful") as careful:
                assert await names(careful) == ["ping", "read_file"]
            async with running.client(auth="odd") as odd:
                # A value the declarations do not allow is ignored (and logged); the claim
                # still states concerns, so the defaults fill in, as for a client sending {}.
                assert await names(odd) == ["ping", "read_file"]

    def test_scopes_are_checked_against_the_declarations(self) -> None:
        with pytest.raises(ValueError, match="loud"):
            ConcernMiddleware(
                concerns=[RISK],
                authorization=ConcernsFromToken(scopes={"x": {"risk": "loud"}}),
            )
        with pytest.raises(ValueError, match="needs scopes"):
            ConcernsFromToken()

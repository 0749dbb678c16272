"""A server whose tools bind ``account_region`` to the ``Mcp-Param-Region`` header, with
bearer tokens: ``admin-token`` may use the ``admin`` group (``move_account``), ``reader-token``
may not. ``--absent`` leaves ``move_account`` out. Run over HTTP by
``security/test_param_headers.py``, which builds the same server in memory too.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Annotated

from fastmcp import FastMCP
from fastmcp.server.auth import AuthProvider, require_scopes
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.server.middleware import Middleware
from pydantic import Field

from fastmcp_filtering import Group, add_filtering, in_group

Region = Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]
TOKENS = {
    "admin-token": {"client_id": "admin", "scopes": ["github:admin"]},
    "reader-token": {"client_id": "reader", "scopes": []},
}


def make_server(
    *, hidden: bool, auth: AuthProvider | None = None, first: Sequence[Middleware] = ()
) -> FastMCP:
    """``ping`` and ``show_region`` for everyone and, with ``hidden``, ``move_account`` in
    the ``admin`` group only ``github:admin`` tokens may use; the last two take an
    ``account_region`` bound to the ``Mcp-Param-Region`` header. ``first``: middlewares
    ahead of the stack (who the client is, in memory)."""
    mcp = FastMCP("regions", auth=auth, middleware=list(first))
    mcp.tool(lambda: "pong", name="ping")

    @mcp.tool
    def show_region(account_region: Region) -> str:
        return account_region

    if hidden:

        @in_group("admin")
        @mcp.tool
        def move_account(account_region: Region) -> str:
            return f"moved to {account_region}"

    add_filtering(mcp, groups=[Group("admin", access=require_scopes("github:admin"))])
    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--absent", action="store_true")
    args = parser.parse_args()
    server = make_server(hidden=not args.absent, auth=StaticTokenVerifier(tokens=TOKENS))
    server.run(transport="http", host="127.0.0.1", port=args.port, show_banner=False)


if __name__ == "__main__":
    main()

"""A small server with concerns, run as a subprocess over stdio or streamable HTTP."""

from __future__ import annotations

import argparse

from fastmcp import FastMCP

from fastmcp_filtering import install
from fastmcp_filtering.concern.middleware import Concern, ConcernMiddleware, concerns

CONCERNS = [
    Concern(
        "security",
        description="Security level required",
        values=["high", "medium", "low"],
        default="medium",
    ),
    Concern("cost", values=["minimal", "moderate", "high"]),
]
MAPPING = {
    "encrypt_data": {"security": "high", "cost": "minimal"},
    "log_data": {"security": "medium"},
}


def make_server() -> FastMCP:
    mcp = FastMCP("concerns")

    @mcp.tool
    def encrypt_data(data: str) -> str:
        return data[::-1]

    @mcp.tool
    def log_data(line: str) -> str:
        return line

    @mcp.tool
    def validate_data(data: str) -> bool:
        return bool(data)

    @concerns(security="low", cost="high")
    @mcp.tool
    def dump_plaintext(data: str) -> str:
        return data

    # Defaults for every client: the subprocess tests check what they filter on each transport.
    install(mcp, ConcernMiddleware(concerns=CONCERNS, mapping=MAPPING, apply_defaults="all"))
    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--stateless", action="store_true", help="no sessions in either era")
    args = parser.parse_args()
    server = make_server()
    if args.http:
        server.run(
            transport="http",
            host="127.0.0.1",
            port=args.port,
            stateless_http=args.stateless,
            show_banner=False,
        )
    else:
        server.run(show_banner=False)


if __name__ == "__main__":
    main()

"""A server with progressive disclosure, optionally on a shared Redis store behind several replicas.

Run one replica over stdio, or several over HTTP on one Redis so that an agent's
enabled groups follow it from replica to replica:

    python examples/progressive_server.py                      # stdio
    python examples/progressive_server.py --http --port 8001 \\
        --redis-url redis://127.0.0.1:6379/0 --auth            # replica A
    python examples/progressive_server.py --http --port 8002 \\
        --redis-url redis://127.0.0.1:6379/0 --auth            # replica B

On 2025-11-25, ``enable_tools`` adds a group's tools to the session's later
lists. On 2026-07-28 a list never changes as a side effect of another request:
``enable_tools`` answers the group's tool definitions and they run on the next
call (by name or through ``call_tool``), with no state, so a client without
identity uses it too. ``--side-effect-lists`` keeps the 2025-11-25 behaviour on
2026-07-28 (which the specification forbids), for hosts that list every turn.
Enabled groups are kept per authenticated principal in both eras, so replicas
need ``--auth`` (two demo bearer tokens, ``alice-token`` and ``bob-token``);
without auth, per 2025-11-25 session id.
"""

from __future__ import annotations

import argparse
from typing import Any

from fastmcp import FastMCP

from fastmcp_filtering import Group, ProgressiveDisclosureMiddleware, in_group, install

GROUPS = [
    Group("issues", description="Create and triage issues"),
    Group("code", description="Code management"),
    Group("repos", description="Repositories", parent="code"),
    Group("admin", description="Destructive administration", tools=["delete_*"]),
]

TOKENS: dict[str, dict[str, Any]] = {
    "alice-token": {"client_id": "agent", "sub": "alice", "scopes": []},
    "bob-token": {"client_id": "agent", "sub": "bob", "scopes": []},
}
"""Demo bearer tokens, one per user: never use static tokens in production."""


def build_server(
    *, redis_url: str | None = None, auth: bool = False, side_effect_lists: bool = False
) -> FastMCP:
    """The demo server; ``redis_url`` puts the session state in Redis."""
    store = None
    if redis_url is not None:
        from key_value.aio.stores.redis import RedisStore

        store = RedisStore(url=redis_url)
    verifier = None
    if auth:
        from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

        verifier = StaticTokenVerifier(tokens=TOKENS)
    mcp = FastMCP("progressive", session_state_store=store, auth=verifier)

    @in_group("issues")
    @mcp.tool
    def create_issue(title: str) -> dict[str, Any]:
        """Open an issue."""
        return {"number": 42, "title": title}

    @in_group("issues")
    @mcp.tool
    def list_issues() -> list[str]:
        """List open issues."""
        return ["#42"]

    @in_group("repos")
    @mcp.tool
    def create_repo(name: str) -> str:
        """Create a repository."""
        return f"created {name}"

    @mcp.tool
    def delete_repo(name: str) -> str:
        """Delete a repository."""
        return f"deleted {name}"

    @mcp.tool
    def whoami() -> str:
        """A tool in no group: always visible."""
        return "demo"

    @in_group("repos")
    @mcp.prompt
    def review(repo: str) -> str:
        """Review a repository."""
        return f"Review {repo}"

    install(
        mcp,
        ProgressiveDisclosureMiddleware(
            groups=GROUPS,
            initial_groups=["issues"],
            max_tools=4,
            call_tool_name="call_tool",
            side_effect_lists=side_effect_lists,
        ),
    )
    return mcp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP, not stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--redis-url", default=None, help="keep session state in this Redis")
    parser.add_argument("--auth", action="store_true", help="accept the demo bearer tokens")
    parser.add_argument(
        "--side-effect-lists",
        action="store_true",
        help="on 2026-07-28 too, enable_tools changes later lists (2025-11-25 behaviour)",
    )
    args = parser.parse_args()
    server = build_server(
        redis_url=args.redis_url, auth=args.auth, side_effect_lists=args.side_effect_lists
    )
    if args.http:
        server.run(transport="http", host=args.host, port=args.port, show_banner=False)
    else:
        server.run(show_banner=False)


if __name__ == "__main__":
    main()

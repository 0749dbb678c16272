"""Access control by group from a JWT's scopes and claims (the README's worked example).

Serve it over streamable HTTP, trusting tokens signed by the key in ``PUBLIC_KEY_FILE``::

    python examples/access_server.py --http --port 8000 --public-key public.pem

Every token must come from issuer ``https://auth.example.com`` for audience
``github-mcp``. What a token may use follows its scopes and its ``tenant`` claim:

- ``issues`` and ``repos``: any valid token;
- ``admin`` (and ``members`` below it): the ``github:admin`` scope;
- ``secrets``: the ``github:secrets`` scope, and restrictive: a tool also in
  ``repos`` stays hidden without it;
- ``acme`` / ``globex``: a ``tenant`` claim equal to the group's tenant.

Progressive disclosure starts each client with ``issues``; a client may enable only
the groups its token may use. Without ``--public-key`` the server runs on stdio with
no authentication, where the checked groups do not exist (``unauthenticated="deny"``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fastmcp import FastMCP
from fastmcp.server.auth import require_scopes
from fastmcp.server.auth.providers.jwt import JWTVerifier

from fastmcp_filtering import AccessPolicy, Group, add_filtering, in_group

ISSUER = "https://auth.example.com"
AUDIENCE = "github-mcp"

SAME_TENANT = AccessPolicy(claim="tenant", from_meta="tenant")
GROUPS = [
    Group("issues", description="Create and triage issues"),
    Group("repos", description="Create and manage repositories"),
    Group(
        "admin", description="Administer the organization", access=require_scopes("github:admin")
    ),
    Group("members", parent="admin", description="Organization members"),
    Group(
        "secrets",
        description="Repository secrets",
        access=require_scopes("github:secrets"),
        restrictive=True,
    ),
    Group("acme", description="Acme's reports", meta={"tenant": "acme"}, access=SAME_TENANT),
    Group("globex", description="Globex's reports", meta={"tenant": "globex"}, access=SAME_TENANT),
]


def add_components(mcp: FastMCP) -> None:
    """The example's tools, prompt and resources, each declared in its groups."""

    @in_group("issues")
    @mcp.tool
    def create_issue(title: str) -> str:
        """Open a new issue."""
        return f"created issue {title!r}"

    @in_group("repos")
    @mcp.tool
    def create_repo(name: str) -> str:
        """Create a repository."""
        return f"created repo {name!r}"

    @in_group("admin")
    @mcp.tool
    def delete_repo(name: str) -> str:
        """Delete a repository for good."""
        return f"deleted repo {name!r}"

    @in_group("admin", "repos")
    @mcp.tool
    def transfer_repo(name: str, owner: str) -> str:
        """Transfer a repository to another owner."""
        return f"transferred {name!r} to {owner!r}"

    @in_group("members")
    @mcp.tool
    def remove_member(login: str) -> str:
        """Remove a member from the organization."""
        return f"removed {login!r}"

    @in_group("secrets", "repos")
    @mcp.tool
    def read_secret(name: str) -> str:
        """Read a repository secret."""
        return f"secret {name!r}"

    @in_group("acme")
    @mcp.tool
    def acme_report() -> str:
        """Acme's quarterly numbers."""
        return "acme numbers"

    @in_group("globex")
    @mcp.tool
    def globex_report() -> str:
        """Globex's quarterly numbers."""
        return "globex numbers"

    @in_group("admin")
    @mcp.prompt
    def audit_prompt(scope: str) -> str:
        """Audit the organization."""
        return f"audit {scope}"

    @in_group("admin")
    @mcp.resource("audit://log")
    def audit_log() -> str:
        """The organization's audit log."""
        return "the audit log"

    @in_group("admin")
    @mcp.resource("audit://users/{login}")
    def audit_user(login: str) -> str:
        """One member's audit trail."""
        return f"audit of {login}"


def build_server(public_key: str | None = None) -> FastMCP:
    auth = (
        JWTVerifier(public_key=public_key, issuer=ISSUER, audience=AUDIENCE) if public_key else None
    )
    mcp: FastMCP = FastMCP("access", auth=auth)
    add_components(mcp)

    def complete(reference: object, argument: object, context: object) -> list[str]:
        return ["everything"]

    mcp.add_completion_handler(complete)
    add_filtering(mcp, groups=GROUPS, progressive={"initial_groups": ["issues"]})
    return mcp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP, not stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--public-key", type=Path, help="PEM file of the JWT signing key")
    args = parser.parse_args()
    public_key = args.public_key.read_text() if args.public_key else None
    server = build_server(public_key)
    if args.http:
        server.run(transport="http", host=args.host, port=args.port, show_banner=False)
    else:
        server.run(show_banner=False)


if __name__ == "__main__":
    main()

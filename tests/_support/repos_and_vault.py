"""Repository tools, one of them destructive, and a vault: tools several servers declare."""

from __future__ import annotations

from fastmcp import FastMCP

from fastmcp_filtering import concerns as with_concerns
from fastmcp_filtering import in_group


def add_repos_and_vault(mcp: FastMCP) -> None:
    """``create_repo`` and a destructive ``delete_repo`` in ``repos``; ``wipe_vault`` in
    ``vault``."""

    @in_group("repos")
    @mcp.tool
    def create_repo(name: str) -> str:
        """Create a new repository."""
        return f"repo {name}"

    @in_group("repos")
    @with_concerns(risk="destructive")
    @mcp.tool
    def delete_repo(name: str) -> str:
        """Delete a repository for good."""
        return f"deleted {name}"

    @in_group("vault")
    @mcp.tool
    def wipe_vault() -> str:
        """Wipe the secret vault."""
        return "wiped"

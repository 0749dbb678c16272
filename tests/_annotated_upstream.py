"""An upstream whose tools state MCP annotations (and one states none), for ``from_annotations``.

Run over stdio by ``test_proxy.TestFromAnnotations`` and ``test_cli.TestInit``.
"""

from __future__ import annotations

from fastmcp import FastMCP

mcp = FastMCP("notes")


@mcp.tool(annotations={"readOnlyHint": True, "idempotentHint": True})
def read_notes() -> str:
    """Read every note."""
    return "notes"


@mcp.tool(annotations={"readOnlyHint": False, "destructiveHint": False})
def add_note(text: str) -> str:
    """Add a note."""
    return f"added {text}"


@mcp.tool(annotations={"destructiveHint": True, "openWorldHint": False})
def delete_notes() -> str:
    """Delete every note."""
    return "deleted"


@mcp.tool
def tidy_notes() -> str:
    """Merge duplicate notes (states no annotations)."""
    return "tidied"


@mcp.prompt
def summarize_notes() -> str:
    """A prompt about the notes."""
    return "Summarize the notes."


if __name__ == "__main__":
    mcp.run(show_banner=False)

"""The GitHub-like example with all four middlewares of fastmcp-filtering on one catalog.

An agent connecting to this server sees the meta-tools and the tools of the
``issues`` group. It can

- list groups and tags (``groups/list``, ``tags/list``) and narrow any list with
  ``filter: {groups, tags}`` (``FilterMiddleware``);
- search with ``tools/list`` ``query: "..."`` or the ``search_tools`` meta-tool
  (``SearchMiddleware``);
- state a preference with ``concerns/update {"concerns": {"risk": "safe"}}`` to
  hide the destructive tools (``ConcernMiddleware``);
- enable more groups with ``enable_tools(groups=[...])``, give them back with
  ``disable_tools``, and call an enabled tool through ``call_tool`` if it ignores
  ``list_changed`` (``ProgressiveDisclosureMiddleware``).

Each layer only ever narrows what the others allow: a tool is listed, found or
callable when every layer lets this client see it.

Run it over stdio with ``python examples/full_stack_server.py``, or over
streamable HTTP with ``python examples/full_stack_server.py --http --port 8000``;
``--search-first`` lists only ``search_tools`` and ``call_tool`` (what the demo runs).
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

from fastmcp import FastMCP

sys.path.insert(0, str(Path(__file__).parent))

from github_server import _TABLE as TOOL_TABLE
from github_server import GROUPS, TAGS, build_catalog, serve

from fastmcp_filtering import (
    SEARCH_FIRST,
    Catalog,
    Concern,
    ConcernMiddleware,
    FilterMiddleware,
    ProgressiveDisclosureMiddleware,
    SearchMiddleware,
    install,
)

INITIAL_GROUPS = ["issues"]
"""What a new client starts with: the groups it does not have to enable."""

RISK = Concern(
    "risk",
    description="The most risk the agent accepts: safe hides tools that delete or overwrite data",
    values=["safe", "destructive"],
    # Strictest first: a client accepting "destructive" also gets the safe tools.
    ordered=True,
    # No default: a client that says nothing sees every tool, as on the plain example server.
    default=None,
)

# Concern values from the catalog's own "destructive" tag, so the two never disagree. The two
# decorated tools of the catalog (create_issue, list_issues) have no value: they match any risk.
RISK_MAPPING = {
    name: {"risk": "destructive" if "destructive" in tags else "safe"}
    for name, _group, tags, _description, _params in TOOL_TABLE
}


def build_full_stack_server(
    *, list_page_size: int | None = None, search_first: bool = False
) -> FastMCP:
    """The example catalog behind filter, search, concerns and progressive disclosure.

    ``search_first``: only ``search_tools`` and ``call_tool`` are listed, a search hit runs
    on the next call by its name (the ``progressive="search_first"`` preset of
    ``add_filtering``, with 5 compact hits per search).
    """
    mcp = build_catalog(name="github-full-stack", list_page_size=list_page_size)
    # One Catalog: group membership is resolved once and every layer agrees on it.
    catalog = Catalog(groups=GROUPS, tags=TAGS)
    install(mcp, FilterMiddleware(catalog=catalog))
    if search_first:
        search = SearchMiddleware(catalog=catalog, max_results=5, compact_results=True)
        progressive = ProgressiveDisclosureMiddleware(catalog=catalog, options=SEARCH_FIRST)
    else:
        search = SearchMiddleware(catalog=catalog, max_results=10)
        progressive = ProgressiveDisclosureMiddleware(
            catalog=catalog, initial_groups=INITIAL_GROUPS, call_tool_name="call_tool"
        )
    install(mcp, search)
    install(mcp, ConcernMiddleware(concerns=[RISK], mapping=RISK_MAPPING))
    install(mcp, progressive)
    return mcp


def main() -> None:
    search_first = "--search-first" in sys.argv
    if search_first:
        sys.argv.remove("--search-first")
    serve(partial(build_full_stack_server, search_first=search_first), __doc__)


if __name__ == "__main__":
    main()

"""What a configuration's groups match in the upstreams' listings: ``check`` reports it, ``serve``
logs it.

A group whose patterns match nothing, even through its subgroups, is a mistake
(``check`` fails on it); so is a pattern naming something no upstream lists
(a warning: the group's other patterns still match). ``serve`` does not refuse
to start on either, since an upstream may be down at that moment or add the
tool later: once serving, it lists the upstreams in the background and logs
one warning per finding, the same words ``check`` uses.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fastmcp_filtering.core.catalog import ComponentKind, match_names
from fastmcp_filtering.core.request import unrestricted
from fastmcp_filtering.gateway.upstreams.provider import patiently

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from fastmcp import FastMCP
    from fastmcp.tools import Tool
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.core.catalog import Catalog
    from fastmcp_filtering.core.declarations import Group

logger = logging.getLogger("fastmcp_filtering")


@dataclass
class Listing:
    """What the upstreams listed, unfiltered; ``dead``: each upstream that failed, and why."""

    tools: Sequence[Tool]
    others: list[tuple[ComponentKind, FastMCPComponent]]
    dead: dict[str, str] = field(default_factory=dict)
    dropped: dict[tuple[str, str], str] = field(default_factory=dict)


async def list_unfiltered(server: FastMCP) -> Listing:
    """Every tool, prompt, resource and template ``server`` serves, before any client's policy.

    Example:
        ```python
        listing = await list_unfiltered(proxy.server)
        ```
    """
    # The whole catalog, as the operator configured it, not as one client sees it.
    with unrestricted():
        tools = await server.list_tools(run_middleware=False)
        # Group patterns match prompts, resources (and their URIs) and templates too.
        others: list[tuple[ComponentKind, FastMCPComponent]] = [
            *(("prompt", p) for p in await server.list_prompts(run_middleware=False)),
            *(("resource", r) for r in await server.list_resources(run_middleware=False)),
            *(("template", t) for t in await server.list_resource_templates(run_middleware=False)),
        ]
    return Listing(tools=tools, others=others)


@dataclass
class Findings:
    """Mistakes in the groups: ``errors`` fail ``check``, ``warnings`` do not."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def findings(catalog: Catalog, listing: Listing, *, shown: bool = True) -> Findings:
    """Each group that matches nothing (an error) and each pattern that matches nothing (a
    warning), in ``listing`` (``shown``: the reader sees its names, as in ``check``'s report).

    Example:
        ```python
        found = findings(config.catalog(), await list_unfiltered(server))
        ```
    """
    by_kind: dict[str, set[str]] = {"tool": {t.name for t in listing.tools}}
    for kind, component in listing.others:
        by_kind.setdefault(kind, set()).update(match_names(component, kind))
    filled: set[str] = set()
    for component in [*listing.tools, *(c for _kind, c in listing.others)]:
        filled.update(catalog.membership(component).effective)
    found = Findings()
    for group in catalog.groups:
        if group.name not in filled:
            found.errors.append(empty_group_error(group, listing.dead, shown=shown))
            continue
        names = [n for k, ns in by_kind.items() if not group.kinds or k in group.kinds for n in ns]
        for pattern in group.tools:
            if not any(fnmatch.fnmatchcase(n, pattern) for n in names):
                found.warnings.append(
                    f"group {group.name!r} pattern {pattern!r} matches no tool, prompt, "
                    f"resource or template{_unlisted(listing.dead)}; fix or remove it"
                )
    return found


def empty_group_error(group: Group, dead: dict[str, str], *, shown: bool = True) -> str:
    """The error for a group that matches nothing, naming the upstreams that did not answer."""
    patterns = ", ".join(repr(p) for p in group.tools) or "no tools patterns"
    names = "the names above" if shown else "the names `fastmcp-filtering check` lists"
    return (
        f"group {group.name!r} matches no tool, prompt, resource or template "
        f"({patterns}){_unlisted(dead)}: its members cannot be listed or enabled; fix its "
        f"tools patterns against {names}, or remove the group"
    )


def _unlisted(dead: dict[str, str]) -> str:
    if not dead:
        return ""
    named = ", ".join(repr(d) for d in dead)
    return f" (not counting upstream {named}, which did not answer)"


async def audit_groups(server: FastMCP, catalog: Catalog, dead: dict[str, str]) -> Findings:
    """``findings`` for what ``server`` lists now; ``dead`` names the upstreams that failed.

    Example:
        ```python
        found = await audit_groups(proxy.server, config.catalog(), dict(proxy.health.unavailable))
        ```
    """
    # Every upstream waited for: one still starting is not an empty group.
    with patiently():
        listing = await list_unfiltered(server)
    listing.dead = dict(dead)
    return findings(catalog, listing, shown=False)


@contextlib.asynccontextmanager
async def logged_audit(
    server: FastMCP, catalog: Catalog, dead: dict[str, str]
) -> AsyncIterator[None]:
    """While serving: the groups audited once in the background, each finding logged as a warning.

    Example:
        ```python
        async with logged_audit(server, config.catalog(), health.unavailable):
            ...  # serve
        ```
    """

    async def run() -> None:
        try:
            found = await audit_groups(server, catalog, dead)
        except Exception as error:  # the upstreams' own failures are logged as they happen
            logger.debug("the groups could not be checked at startup: %s", error)
            return
        if dead:
            # An upstream that did not answer is logged as such; what it would have listed
            # cannot be told, so a group of its tools is not called a mistake.
            return
        for message in [*found.errors, *found.warnings]:
            logger.warning("%s", message)

    task = asyncio.create_task(run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

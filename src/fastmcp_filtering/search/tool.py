"""The ``search_tools`` meta-tool: callable and enable-able tools in one ranking."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastmcp.server.context import Context  # noqa: TC002 - the meta-tool's signature needs it
from fastmcp.utilities.versions import dedupe_with_versions
from pydantic import BaseModel, Field

from fastmcp_filtering.core.catalog import MetaTool, mark_meta_tool, search_key
from fastmcp_filtering.core.request import REPLY_CONFIG, clean_query
from fastmcp_filtering.search.service import candidates, rank_hits, request_trusts
from fastmcp_filtering.server.hooks import leaves_tools, marked_by
from fastmcp_filtering.server.transform import current_policy, remedy, shown

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence

    from fastmcp.tools import Tool

    from fastmcp_filtering.core.catalog import Catalog
    from fastmcp_filtering.policy.decision import Hit
    from fastmcp_filtering.search.service import SearchService, Snapshots


class SearchToolsResult(BaseModel):
    """What the ``search_tools`` meta-tool returns: tool definitions, best match first."""

    model_config = REPLY_CONFIG

    query: str
    tools: list[dict[str, Any]] = Field(
        description="Best match first; one you cannot call yet has available_after: calls to make"
    )


class CompactSearchToolsResult(BaseModel):
    """What ``search_tools`` returns with ``compact_results``: each callable hit as its name,
    description and input schema, best match first, and what to do next."""

    model_config = REPLY_CONFIG

    tools: list[dict[str, Any]] = Field(description="Best match first")
    next: str


_DESCRIPTION = (
    "Find tools for a task described in a few plain words (e.g. 'open a pull request'), best "
    "match first. One you cannot call yet comes with available_after: the calls to make first."
)
_COMPACT_DESCRIPTION = (
    "Find tools for a task described in a few plain words (e.g. 'open a pull request'), best "
    "match first, each with its inputSchema."
)
_NEXT = "Call a hit by its name, or through call_tool."
# What a compact hit keeps of a tool's definition: what an agent needs to call it.
_COMPACT_KEYS = ("name", "description", "inputSchema")


class SearchTool:
    """The body of one ``SearchMiddleware``'s ``search_tools`` meta-tool.

    It ranks what the client can call now together with what it could call
    after enabling groups, from the catalog snapshot when the request can use
    it, else from the client's listings; a tool the client may not learn of is
    never among the candidates.

    Example:
        ```python
        search_tool = SearchTool(service, snapshots, catalog)
        # The meta-tool to inject, answered by the middleware's own discover(), which
        # calls search_tool.discover(ctx, query, limit=self.max_results).
        tool = search_tool.tool("search_tools", middleware.discover)
        ```
    """

    def __init__(
        self,
        service: SearchService,
        snapshots: Snapshots,
        catalog: Catalog,
        *,
        compact: bool = False,
    ) -> None:
        self._service = service
        self._snapshots = snapshots
        self._catalog = catalog
        self._compact = compact

    def __repr__(self) -> str:
        return f"SearchTool(catalog={self._catalog!r})"

    def tool(
        self, name: str, discover: Callable[[Context, str], Awaitable[list[dict[str, Any]]]]
    ) -> Tool:
        """The meta-tool, named ``name``, whose calls ``discover`` answers (looked up at each
        call, so that what it reads, such as the middleware's ``max_results``, is current)."""

        async def search_tools(
            query: Annotated[
                str, Field(description="A few plain words saying what you want to do")
            ],
            ctx: Context,
        ) -> SearchToolsResult | CompactSearchToolsResult:
            """Find the tools for a task: returns the best matching tools, most relevant first."""
            text = clean_query(query, field="query")
            found = await discover(ctx, text) if text else []
            if compact:
                return CompactSearchToolsResult(tools=found, next=_NEXT)
            return SearchToolsResult(query=query, tools=found)

        compact = self._compact
        # One result type per tool, so its output schema is that type's.
        search_tools.__annotations__["return"] = (
            CompactSearchToolsResult if compact else SearchToolsResult
        )

        return mark_meta_tool(
            MetaTool.from_function(
                search_tools,
                name=name,
                description=_COMPACT_DESCRIPTION if compact else _DESCRIPTION,
            )
        )

    async def discover(self, ctx: Context, query: str, *, limit: int) -> list[dict[str, Any]]:
        """What ``search_tools`` answers: the best ``limit`` of the callable and enable-able
        tools, in one ranking.

        A tool of a group the client has not enabled is listed with its name,
        title and description and ``available_after``: the meta-tool calls that
        make it callable (``enable_tools`` with the shortest path of groups,
        parents first, after ``disable_tools`` when ``max_tools`` needs room).
        Full definitions are given only for tools the client can call now.
        """
        server = ctx.fastmcp
        found = await self._discovered(ctx, query, limit)
        if found is None:
            usable: list[Tool]
            extra: list[Hit[Tool]]
            usable, extra = await candidates(server, "tool")
            found = await self._offers(
                ctx, await rank_hits(self._service, "tool", usable, extra, query), limit
            )
            found = _versions_named(found, _by_key(usable))
        items: list[dict[str, Any]] = []
        for tool, calls in found:
            if calls is None:
                definition = tool.to_mcp_tool(name=tool.name).model_dump(
                    by_alias=True, mode="json", exclude_none=True
                )
                if self._compact:
                    definition = {k: definition[k] for k in _COMPACT_KEYS if k in definition}
                items.append(definition)
                continue
            item: dict[str, Any] = {"name": tool.name}
            if tool.title:
                item["title"] = tool.title
            item["description"] = tool.description or ""
            item["available_after"] = calls
            items.append(item)
        return items

    async def _discovered(
        self, ctx: Context, query: str, limit: int
    ) -> list[tuple[Tool, dict[str, Any] | None]] | None:
        """``_offers`` from the catalog snapshot, callable tools as a listing shows them (each
        middleware's marks); None when the snapshot cannot be used for this request."""
        server = ctx.fastmcp
        snapshot = await self._snapshots.current(server)
        if (
            snapshot is None
            or not all(leaves_tools(m) for m in server.middleware)
            or not await request_trusts(snapshot, ctx)
        ):
            return None
        # What a call by name finds: tools lists only leave out come callable.
        policy = (await current_policy(server)).as_reach()
        selection = snapshot.selection(policy, self._catalog, None, query)
        keys = await self._service.rank_keys(
            query,
            selection.within,
            selection.versioned,
            snapshot.component_of(selection),
            first=2 * limit + 16,
        )
        found = _versions_named(
            await self._offers(ctx, map(selection.hit, keys), limit), selection.versions
        )
        # As a listing would show them: no middleware changes a tool but by its marks.
        page = [tool for tool, calls in found if calls is None]
        listed = await marked_by(server.middleware, shown(server, policy, page))
        callable_ = iter(listed)
        return [(next(callable_) if calls is None else tool, calls) for tool, calls in found]

    async def _offers(
        self, ctx: Context, hits: Iterable[Hit[Tool]], limit: int
    ) -> list[tuple[Tool, dict[str, Any] | None]]:
        """The best ``limit`` of ``hits``: callable ones (None), and enable-able ones with
        the calls that make them callable; one no call can make callable is left out."""
        found: list[tuple[Tool, dict[str, Any] | None]] = []
        for hit in hits:
            calls = None
            if hit.enable:
                calls = await remedy(ctx, hit.enable)
                if calls is None:
                    continue
            found.append((hit.component, calls))
            if len(found) == limit:
                break
        return found


def _by_key(tools: Iterable[Tool]) -> dict[str, list[Tool]]:
    by_key: dict[str, list[Tool]] = {}
    for tool in tools:
        by_key.setdefault(search_key(tool), []).append(tool)
    return by_key


def _versions_named(
    found: Sequence[tuple[Tool, dict[str, Any] | None]], versions: Mapping[str, list[Tool]]
) -> list[tuple[Tool, dict[str, Any] | None]]:
    """Each callable versioned tool as FastMCP's listing gives it: its ``_meta`` names
    every version of it the client can use (``versions``), and no other."""
    return [
        (
            dedupe_with_versions(versions.get(search_key(tool)) or [tool], search_key)[0]
            if calls is None and (tool.version is not None or search_key(tool) in versions)
            else tool,
            calls,
        )
        for tool, calls in found
    ]

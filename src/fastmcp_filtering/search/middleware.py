"""Query search: a ``query`` on list requests that puts the best matching tools first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from fastmcp.server.middleware import Middleware
from typing_extensions import override

from fastmcp_filtering._fastmcp import list_page_size
from fastmcp_filtering.access.middleware import enforce_access
from fastmcp_filtering.core.catalog import LIST_METHOD, Catalog, ComponentKind
from fastmcp_filtering.core.errors import OptionError
from fastmcp_filtering.core.filters import filter_warnings, narrow
from fastmcp_filtering.core.options import SearchOptions, option_names, resolve_options
from fastmcp_filtering.core.request import (
    RequestInfo,
    add_capabilities,
    clean_query,
    has_filter,
    invalid_params,
    request_info,
)
from fastmcp_filtering.policy.access import access_of
from fastmcp_filtering.policy.decision import is_widened
from fastmcp_filtering.search.rate_limit import counted, is_search
from fastmcp_filtering.search.service import (
    SearchService,
    Snapshots,
    discoverable,
    rank_hits,
    request_trusts,
)
from fastmcp_filtering.search.tool import SearchTool
from fastmcp_filtering.server.hooks import ListHooks, as_listed, shaped_ahead, through_chain
from fastmcp_filtering.server.transform import current_policy, shown
from fastmcp_filtering.server.wire import LIST_METHODS, report, search_page

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from fastmcp import FastMCP
    from fastmcp.server.context import Context
    from fastmcp.server.middleware import CallNext, MiddlewareContext
    from fastmcp.tools import Tool
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.core.catalog import GroupTree
    from fastmcp_filtering.core.declarations import Group, Tag
    from fastmcp_filtering.policy.decision import Hit
    from fastmcp_filtering.retrieval.embedders import Embedder
    from fastmcp_filtering.server.hooks import ListRequest
    from fastmcp_filtering.server.wire import SearchPage

_SEARCH_METHODS = frozenset({*LIST_METHODS, "tools/call"})

_C = TypeVar("_C", bound="FastMCPComponent")


class SearchMiddleware(ListHooks):
    """Rank tools (and prompts and resources) for a plain-text ``query`` on their list request.

    ``tools/list`` with ``params.query`` returns the matching tools, most relevant
    first, in pages of ``max_results`` (``nextCursor`` pages on through the
    matches, bound to the query); with a ``filter`` it searches within the
    filtered set; without a query nothing changes. The ranking is lexical and
    offline: names split into words, titles, descriptions, tags, group titles and
    descriptions and parameters, each with its weight, stemmed, with typo
    tolerance, and Unicode-aware (CJK text is matched by characters). Parameters
    most tools share do not count. A ``search_tools`` meta-tool gives the same
    ranking to clients that cannot send the new parameter; it only ever returns
    tools the client may see, and calls nothing.

    With ``semantic=True`` (the ``fastmcp-filtering[semantic]`` extra) or any
    embedder, an embedding ranking is blended with the lexical one (meaning
    leads, exact words break ties); tools are embedded once and again only when their text changes.

    Declares ``capabilities.tools.filtering: true`` and adds a paragraph on how to
    search, with examples from the server's groups, to the server instructions.

    ``rate_limit`` takes a FastMCP rate limiter (``RateLimitingMiddleware``,
    ``SlidingWindowRateLimitingMiddleware``, or any middleware whose ``on_request``
    decides) and hands it only searches: list requests with a query and
    ``search_tools`` calls (also through ``call_tool``), each counted once however
    many listings it makes inside. Key it with ``get_client_id=rate_limit_key``.

    The options may come as one ``SearchOptions`` (``options=``) instead of the
    keywords, never both; ``self.options`` holds them either way.

    Example:
        ```python
        install(mcp, SearchMiddleware(groups=groups, max_results=10))
        ```
    """

    list_params = frozenset({"query"})
    prefills = True
    catalog: Catalog

    def __init__(
        self,
        *,
        max_results: int = 10,
        groups: Iterable[Group] = (),
        tags: Iterable[Tag] = (),
        catalog: Catalog | None = None,
        search_tool: str | None = "search_tools",
        instructions: bool = True,
        weights: Mapping[str, float] | None = None,
        semantic: bool | Embedder = False,
        rate_limit: Middleware | None = None,
        compact_results: bool = False,
        options: SearchOptions | None = None,
    ) -> None:
        # Each option is the keyword of its name: the object checks them all, once.
        given = locals()
        self.options = resolve_options(
            SearchOptions,
            options,
            {name: given[name] for name in option_names(SearchOptions)},
            owner="SearchMiddleware",
        )
        if rate_limit is not None and not isinstance(rate_limit, Middleware):
            raise OptionError(
                "rate_limit must be a FastMCP middleware such as RateLimitingMiddleware, "
                f"got {type(rate_limit).__name__}"
            )
        max_results, search_tool = self.options.max_results, self.options.search_tool
        compact_results = self.options.compact_results
        self.catalog = Catalog.shared(catalog, groups, tags)
        self.max_results = max_results
        self.rate_limit = rate_limit
        # Searches are what a rate limit counts: lists with a query, search_tools calls.
        self.answers = _SEARCH_METHODS if rate_limit is not None else frozenset()
        self.search_tool = search_tool
        self.instructions = self.options.instructions
        self._weights = dict(self.options.weights or {})
        self._service = SearchService(
            self.catalog,
            weights=self._weights,
            embedder=_embedder(self.options.semantic),
            max_results=max_results,
        )
        self._snapshots = Snapshots(self._service, self)
        self.compact_results = compact_results
        self._search_tool = SearchTool(
            self._service, self._snapshots, self.catalog, compact=compact_results
        )
        self._listing = _QueryListing(self, self._service, self._snapshots)
        self._meta_tools = (
            {search_tool: self._search_tool.tool(search_tool, self.discover)} if search_tool else {}
        )

    def __repr__(self) -> str:
        return (
            f"SearchMiddleware(max_results={self.max_results!r}, "
            f"search_tool={self.search_tool!r}, catalog={self.catalog!r})"
        )

    @override
    def meta_tools(self) -> dict[str, Tool]:
        return self._meta_tools

    @override
    def setup(self, server: FastMCP) -> None:
        super().setup(server)
        enforce_access(server, self.catalog)

    # -- capabilities and instructions --------------------------------------------------

    @override
    def announce(self, result: Any) -> Any:
        tools = {"filtering": True}
        capabilities = getattr(result, "capabilities", None)
        if capabilities is not None and capabilities.tools is not None:
            tools = {**capabilities.tools.model_dump(by_alias=True, exclude_none=True), **tools}
        result = add_capabilities(result, {"tools": tools})
        if self.instructions and result is not None and hasattr(result, "instructions"):
            paragraph = self._instructions_paragraph()
            current = result.instructions
            text = f"{current}\n\n{paragraph}" if current else paragraph
            result = result.model_copy(update={"instructions": text})
        return result

    def _instructions_paragraph(self) -> str:
        # Instructions are the same for every client: only groups open to everyone.
        open_groups = access_of(self.catalog).open_groups()
        examples = [g.display_title or g.name.replace("_", " ") for g in open_groups]
        examples = examples[:3]
        quoted = ", ".join(f"'{e.lower()}'" for e in examples) or "'create issue', 'read files'"
        tool_hint = (
            f" Clients that cannot send it can call the {self.search_tool} tool with a query."
            if self.search_tool
            else ""
        )
        return (
            "Tool search: send tools/list with params.query set to a few plain words saying "
            f"what you want to do, for example {quoted}; the best matches come first "
            f"(at most {self.max_results}). Combine it with params.filter to search within "
            f"groups.{tool_hint}"
        )

    # -- lists with a query --------------------------------------------------------------

    @override
    async def on_list(self, request: ListRequest[_C]) -> Sequence[_C]:
        info = request_info(request.context)
        query = _requested_query(info, request.kind)
        if query is None or is_widened():
            # A discovery listing (this very search, listing what enabling would show) wants
            # every candidate, not a ranking.
            return await request.rest()
        found = await self._listing.answer(
            request.context, request.call_next, request.kind, info=info, query=query
        )
        ctx = request.context.fastmcp_context
        if has_filter(info) and ctx is not None:
            tree = await access_of(self.catalog).tree()
            report(ctx.fastmcp, warnings=filter_warnings(tree, info, request.kind))
        return found

    async def search_tools(
        self, server: FastMCP, query: str, *, limit: int | None = None
    ) -> list[Tool]:
        """The tools this client may call now that best match ``query``, best first.

        Ranks what ``tools/list`` gives this client through the whole middleware
        chain (FastMCP's listing, every middleware, the access policy), so no
        middleware of the server's own is bypassed.
        """
        listed = await server.list_tools()
        return await self._service.rank("tool", listed, query, limit or self.max_results)

    async def discover(self, ctx: Context, query: str) -> list[dict[str, Any]]:
        """What ``search_tools`` answers for ``query``: callable and enable-able tools in one
        ranking (see ``SearchTool.discover``)."""
        return await self._search_tool.discover(ctx, query, limit=self.max_results)

    @override
    def serving(self, server: FastMCP) -> None:
        # Index the catalog while the client connects and lists, in a worker thread,
        # rather than during the first search.
        self._service.warm(server, self._snapshots.snapshot)

    @override
    async def answer(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        limiter = self.rate_limit
        if limiter is None or not is_search(
            context, self, self.search_tool, lambda raw: clean_query(raw, field="query")
        ):
            return await call_next(context)
        with counted(self):
            return await limiter.on_request(context, call_next)

    async def prepare(self, server: FastMCP) -> None:
        """Index (and with ``semantic``, embed) the server's tools now, not at the first search.

        Example:
            ```python
            search = SearchMiddleware(semantic=True)
            install(mcp, search)
            await search.prepare(mcp)   # e.g. in the server's lifespan
            ```
        """
        if await self._snapshots.snapshot(server) is None:
            await self._service.prepare(server)
        else:
            # The snapshot indexed the words; the meanings are embedded here, not at a search.
            await self._service.embed()


def _embedder(semantic: object) -> Embedder | None:
    """The embedder ``semantic`` asks for: the bundled MiniLM model for True, None for False."""
    if semantic is True:
        from fastmcp_filtering.retrieval.embedders import MiniLMEmbedder

        # Fails here, with the install hint, when the extra is missing.
        return MiniLMEmbedder()
    return None if semantic is False else cast("Embedder", semantic)


class _QueryListing:
    """A ``SearchMiddleware``'s answer to a list request with a ``query``: ranked and paged.

    Reads the middleware's ``catalog`` and ``max_results`` at each request, as the
    middleware did; ``owner`` is that middleware, the search page's owner.
    """

    def __init__(
        self, owner: SearchMiddleware, service: SearchService, snapshots: Snapshots
    ) -> None:
        self.owner = owner
        self.service = service
        self.snapshots = snapshots

    async def answer(
        self,
        context: MiddlewareContext[Any],
        call_next: CallNext[Any, Sequence[_C]],
        kind: ComponentKind,
        *,
        info: RequestInfo | None,
        query: str,
    ) -> Sequence[_C]:
        """This search's page of matches for ``query``; every match when a parent server pages.

        Raises -32602 for a cursor this search did not issue.
        """
        owner = self.owner
        page = search_page()
        if page is not None and page.owner is not None and page.owner is not owner:
            # A mounted server's search, inside its parent's: the parent ranks and pages all.
            return await call_next(context)
        server = context.fastmcp_context.fastmcp if context.fastmcp_context else None
        if page is None or page.server is not server:
            # A mounted server's search under a parent that does not search: the parent's
            # FastMCP pages the whole list with its own cursors, so rank every match here.
            usable = _narrowed(owner.catalog, info, kind, await call_next(context))
            return await self.service.rank(kind, usable, query, len(usable))
        page.owner = owner
        _refuse_foreign_cursor(info)
        size = self._page_size(server)
        listed: Sequence[_C] | None = None
        # The groups this client's principal may use: a filter naming another is unknown.
        tree = await access_of(owner.catalog).tree()
        if server is not None and shaped_ahead(server, owner):
            # A middleware ahead of this one may drop what this ranks: rank only what the
            # client lists, so nothing it drops counts in a page, a cursor or a filter's tags.
            listed = await _as_the_client_lists(server, kind, context, call_next)
        elif kind == "tool" and server is not None and context.fastmcp_context is not None:
            served = await self._snapshot_page(
                context, call_next, server, page, tree=tree, info=info, query=query, size=size
            )
            if served is not None:
                used, result = served
                if used:
                    return cast("Sequence[_C]", result)
                # The chain listed the catalog itself (a middleware came after Prefilled).
                listed = cast("Sequence[_C]", result)
        return await self._ranked_page(
            context,
            call_next,
            kind,
            listed,
            server,
            page,
            tree=tree,
            info=info,
            query=query,
            size=size,
        )

    def _page_size(self, server: FastMCP | None) -> int:
        """How many matches a page holds: ``max_results``, at most the server's page size."""
        size = self.owner.max_results
        page_size = list_page_size(server) if server is not None else None
        if page_size is not None:
            # FastMCP pages what this returns by its own size: a page never exceeds it.
            size = min(size, page_size)
        return size

    async def _snapshot_page(
        self,
        context: MiddlewareContext[Any],
        call_next: CallNext[Any, Any],
        server: FastMCP,
        page: SearchPage,
        *,
        tree: GroupTree,
        info: RequestInfo | None,
        query: str,
        size: int,
    ) -> tuple[bool, Sequence[Tool]] | None:
        """The page of tools ranked over the server's catalog snapshot, through the chain.

        None when this request may not use a snapshot; else whether the chain served the
        page (then ``page.next`` is set), and what it returned (False: its own listing).
        """
        assert context.fastmcp_context is not None
        snapshot = await self.snapshots.current(server)
        if snapshot is None or not await request_trusts(snapshot, context.fastmcp_context):
            return None
        policy = await current_policy(server)
        selection = snapshot.selection(policy, tree, info, query)
        keys = await self.service.rank_keys(
            query,
            selection.within,
            selection.versioned,
            snapshot.component_of(selection),
            # A page, what precedes it, and room for matches it skips (enable-able).
            first=2 * (page.offset + size) + 16,
        )
        ranked = _page(map(selection.hit, keys), page.offset, size)
        # The snapshot holds the tools as no client sees them: shown as this client's would be.
        used, result = await through_chain(shown(server, policy, ranked.found), context, call_next)
        if used:
            page.next = ranked.more
            self._report(server, ranked)
        return used, result

    async def _ranked_page(
        self,
        context: MiddlewareContext[Any],
        call_next: CallNext[Any, Sequence[_C]],
        kind: ComponentKind,
        listed: Sequence[_C] | None,
        server: FastMCP | None,
        page: SearchPage,
        *,
        tree: GroupTree,
        info: RequestInfo | None,
        query: str,
        size: int,
    ) -> Sequence[_C]:
        """The page of ``listed`` (else of what the chain lists) and of what enabling would
        add, ranked for ``query``; sets ``page.next``."""
        # Candidates are what the rest of the chain lists for this client; with a filter,
        # only its matches, whatever the order of the middlewares.
        usable = _narrowed(
            tree, info, kind, listed if listed is not None else await call_next(context)
        )
        extra = await discoverable(server, kind, usable) if server is not None else []
        if extra:
            admitted = {id(c) for c in _narrowed(tree, info, kind, [h.component for h in extra])}
            extra = [h for h in extra if id(h.component) in admitted]
        ranked = _page(await rank_hits(self.service, kind, usable, extra, query), page.offset, size)
        page.next = ranked.more
        if server is not None:
            self._report(server, ranked)
        return ranked.found

    def _report(self, server: FastMCP, ranked: _Page[Any]) -> None:
        """Name the better matches this page leaves out in the list result's ``_meta``."""
        most = self.owner.max_results
        report(server, better=ranked.better[:most], by_name=ranked.by_name[:most])


@dataclass(slots=True)
class _Page(Generic[_C]):
    """One page of a ranking: what the client gets, and better matches it cannot list."""

    found: list[_C] = field(default_factory=list)
    more: int | None = None
    """The offset of the next page; None: none follows."""
    better: list[str] = field(default_factory=list)
    """Groups holding matches the client cannot use yet that rank above what it gets."""
    by_name: list[str] = field(default_factory=list)
    """Matches lists leave out (callable by name) that rank above what it gets."""


def _page(hits: Iterable[Hit[_C]], offset: int, size: int) -> _Page[_C]:
    """The listed components of one page of ``hits``, and what outranks them unlisted.

    A match the client cannot list counts when it ranks above one it gets, or when the
    page holds nothing: its group (the last of its enable path), or its name when it is
    callable by name already.
    """
    page: _Page[_C] = _Page()
    pending: list[Hit[_C]] = []
    seen = 0
    rest = iter(hits)
    for hit in rest:
        if not hit.listed:
            pending.append(hit)
            continue
        seen += 1
        if seen <= offset:
            pending.clear()
            continue
        _outranked(page, pending)
        page.found.append(hit.component)
        if len(page.found) == size:
            break
    page.more = offset + len(page.found) if any(hit.listed for hit in rest) else None
    if not page.found:
        _outranked(page, pending)
    return page


def _outranked(page: _Page[Any], pending: list[Hit[Any]]) -> None:
    """Name ``pending`` (matches the client cannot list) as better matches, then forget them."""
    for hit in pending:
        if hit.enable:
            page.better.append(hit.enable[-1])
        elif hit.component.name not in page.by_name:
            page.by_name.append(hit.component.name)
    pending.clear()


async def _as_the_client_lists(
    server: FastMCP,
    kind: ComponentKind,
    context: MiddlewareContext[Any],
    call_next: CallNext[Any, Sequence[_C]],
) -> Sequence[_C]:
    """What the rest of the chain lists, less what the client's own listing leaves out.

    The components are the rest of the chain's: the middleware ahead shapes the page
    once, on its way back, as it shapes any listing.
    """
    shown = {component.key for component in await as_listed(server, kind)}
    return [c for c in await call_next(context) if c.key in shown]


def _refuse_foreign_cursor(info: RequestInfo | None) -> None:
    """-32602 for a cursor left in the params: the cursor scope takes this search's own page
    cursors out of them, so any other was not issued for this query."""
    if info is not None and info.params.get("cursor") is not None:
        raise invalid_params(
            "cursor was not issued for this query; send the nextCursor of the previous "
            "page with the same query, or search again without a cursor",
            field="cursor",
        )


def _narrowed(
    tree: GroupTree, info: RequestInfo | None, kind: ComponentKind, components: Sequence[_C]
) -> Sequence[_C]:
    """``components`` that match the request's ``filter`` (all of them without one)."""
    return narrow(tree, info, kind, components) if has_filter(info) else components


def _requested_query(info: RequestInfo | None, kind: ComponentKind) -> str | None:
    """The request's ``query``, cleaned; None when absent, blank, or another method's."""
    if info is None or info.method != LIST_METHOD[kind]:
        return None
    raw = info.params.get("query")
    if raw is None:
        return None
    return clean_query(raw, field="query") or None

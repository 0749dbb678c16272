"""Query search: a ``query`` on list requests that puts the best matching tools first."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import unicodedata
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio
from fastmcp.server.context import Context  # noqa: TC002 - the meta-tool's signature needs it
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.middleware.tool_injection import ToolInjectionMiddleware
from fastmcp.server.providers.aggregate import AggregateProvider
from fastmcp.server.transforms.visibility import apply_session_transforms, is_enabled
from fastmcp.tools import Tool
from pydantic import BaseModel, Field
from typing_extensions import override

from fastmcp_filtering._catalog import LIST_METHOD, Catalog, ComponentKind
from fastmcp_filtering._declarations import META_TOOL_KEY
from fastmcp_filtering._fusion import blend
from fastmcp_filtering._hooks import ListHooks
from fastmcp_filtering._layers import AccessLayer, ClientView
from fastmcp_filtering._protocol import RequestInfo, add_capabilities, invalid_params, request_info
from fastmcp_filtering._ranking import Document, SearchIndex
from fastmcp_filtering._semantic_index import EmbeddingIndex, document_text
from fastmcp_filtering.filter import FilterMiddleware

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering._declarations import Group, Tag
    from fastmcp_filtering.semantic import Embedder

__all__ = ["MAX_QUERY_LENGTH", "SearchMiddleware", "SearchToolsResult"]

_C = TypeVar("_C", bound="FastMCPComponent")

logger = logging.getLogger("fastmcp_filtering")

MAX_QUERY_LENGTH = 1000
"""Longest query accepted, in characters."""

# Up to this many new or changed tools are embedded before answering; more, in the background.
_EMBED_INLINE = 32
# Cosine similarity below which a semantic neighbour is noise, not a match.
_MIN_SIMILARITY = 0.1


class SearchToolsResult(BaseModel):
    """What the ``search_tools`` meta-tool returns: tool definitions, best match first."""

    query: str
    tools: list[dict[str, Any]] = Field(
        description="Matching tools as tools/list would list them, most relevant first"
    )


class SearchMiddleware(ListHooks, ToolInjectionMiddleware):
    """Rank tools (and prompts and resources) for a plain-text ``query`` on their list request.

    ``tools/list`` with ``params.query`` returns the matching tools, most relevant
    first, at most ``max_results``; with a ``filter`` it searches within the
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

    Example:
        ```python
        mcp.add_middleware(SearchMiddleware(groups=groups, max_results=10))
        ```
    """

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
    ) -> None:
        if isinstance(max_results, bool) or not isinstance(max_results, int) or max_results < 1:
            raise ValueError(f"max_results must be a positive integer, got {max_results!r}")
        if search_tool is not None and (not isinstance(search_tool, str) or not search_tool):
            raise ValueError(
                f"search_tool must be a tool name or None to turn it off, got {search_tool!r}"
            )
        if catalog is not None and (any(True for _ in groups) or any(True for _ in tags)):
            raise ValueError("pass either catalog= or groups=/tags=, not both")
        self.catalog = catalog if catalog is not None else Catalog(groups=groups, tags=tags)
        self.max_results = max_results
        self.search_tool = search_tool
        self.instructions = instructions
        self._weights = dict(weights or {})
        if semantic is True:
            from fastmcp_filtering.semantic import MiniLMEmbedder

            # Fails here, with the install hint, when the extra is missing.
            semantic = MiniLMEmbedder()
        elif semantic is not False and not callable(semantic):
            raise ValueError(
                "semantic must be True (the bundled MiniLM model), False, or an embedder "
                f"(a function from texts to vectors), got {semantic!r}"
            )
        self._embedder: Embedder | None = semantic or None
        # Building the index when the first client arrives, off the event loop.
        self._warming: asyncio.Task[None] | None = None
        # Embedding a new catalog takes a while: it runs in the background meanwhile.
        self._embedding: set[asyncio.Task[None]] = set()
        SearchIndex(weights=self._weights)  # validates the weights now, not at first search
        self._indexes: dict[ComponentKind, _SyncedIndex] = {}
        super().__init__(tools=[self._make_search_tool()] if search_tool else [])

    def __repr__(self) -> str:
        return (
            f"SearchMiddleware(max_results={self.max_results!r}, "
            f"search_tool={self.search_tool!r}, catalog={self.catalog!r})"
        )

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
        examples = [g.title or g.name.replace("_", " ") for g in self.catalog.groups][:3]
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
    async def on_list(
        self,
        context: MiddlewareContext[Any],
        call_next: CallNext[Any, Sequence[_C]],
        kind: ComponentKind,
    ) -> Sequence[_C]:
        info = request_info(context)
        query = _requested_query(info, kind)
        if query is None:
            return await call_next(context)
        server = _server(context)
        if kind == "tool" and server is not None and self._inner_is_list_neutral(server):
            # Nothing inside us narrows tool lists in ways we cannot apply: rank from the
            # index and check only the candidates, instead of listing the whole catalog.
            return await self.search_tools(server, context, query, info=info)  # type: ignore[return-value]
        return await self._rank_listed(context, await call_next(context), query, kind, info)

    async def _rank_listed(
        self,
        context: MiddlewareContext[Any],
        components: Sequence[_C],
        query: str,
        kind: ComponentKind,
        info: RequestInfo | None,
    ) -> list[_C]:
        """Rank components a list already produced (the path that lists everything)."""
        await self._settled()
        index = self._index(kind)
        by_key = {_key(c, kind): c for c in components}
        index.merge(by_key.values(), self._document)
        server = _server(context)
        check = await self._checker(server, context, info, kind, components)
        ranked: list[_C] = []
        for key in await self._ranked(index, query, within=by_key.keys()):
            kept = check(by_key[key])
            if kept is not None:
                ranked.append(kept)
                if len(ranked) == self.max_results:
                    break
        return ranked

    # -- the fast path, shared by tools/list and the meta-tool ---------------------------

    async def search_tools(
        self,
        server: FastMCP,
        context: MiddlewareContext[Any],
        query: str,
        *,
        info: RequestInfo | None = None,
        limit: int | None = None,
    ) -> list[Tool]:
        """The tools this client may see that best match ``query``, best first.

        Reads the providers' tools once (no per-tool text extraction, hashing or
        auth pass), brings the index up to date with the objects that changed, and
        checks only the best candidates against FastMCP's visibility (enabled
        state, session rules, auth) and every layer of this package.
        """
        await self._settled()
        index = self._index("tool")
        catalog = await _all_tools(server)
        index.sync(catalog.tools.values(), self._document, self.catalog.version)
        check = await self._checker(server, context, info, "tool", ())
        limit = limit or self.max_results
        found: list[Tool] = []
        for key in await self._ranked(index, query):
            tool = await _visible_tool(server, catalog, key)
            kept = check(tool) if tool is not None else None
            if kept is not None:
                found.append(kept)
                if len(found) == limit:
                    break
        return found

    @override
    async def on_message(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        server = _server(context)
        if server is not None and self._warming is None:
            # Index the catalog while the client connects and lists, in a worker thread,
            # rather than during the first search.
            self._warming = asyncio.get_running_loop().create_task(self._warm(server))
            self._warming.add_done_callback(_log_failure)
        return await super().on_message(context, call_next)

    async def _warm(self, server: FastMCP) -> None:
        index = self._index("tool")
        catalog = await _all_tools(server)

        def build() -> None:
            index.sync(catalog.tools.values(), self._document, self.catalog.version)
            index.index.search("")  # posts the documents

        await anyio.to_thread.run_sync(build)

    async def _settled(self) -> None:
        """Wait for a warm-up in progress: the index is not to be touched meanwhile."""
        task = self._warming
        if task is not None and not task.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(task)

    async def prepare(self, server: FastMCP) -> None:
        """Index (and with ``semantic``, embed) the server's tools now, not at the first search.

        Example:
            ```python
            search = SearchMiddleware(semantic=True)
            mcp.add_middleware(search)
            await search.prepare(mcp)   # e.g. in the server's lifespan
            ```
        """
        await self._settled()
        index = self._index("tool")
        catalog = await _all_tools(server)
        index.sync(catalog.tools.values(), self._document, self.catalog.version)
        index.index.search("")  # posts the documents
        if index.semantic is not None:
            await anyio.to_thread.run_sync(index.semantic.refresh)

    async def _ranked(
        self, index: _SyncedIndex, query: str, within: Collection[str] | None = None
    ) -> list[str]:
        """Keys best first: the lexical ranking, fused with the semantic one if enabled."""
        lexical = index.index.search(query, within=within)
        semantic = index.semantic
        if semantic is None:
            return [key for key, _score in lexical]
        if semantic.pending:
            if semantic.pending <= _EMBED_INLINE:
                # A few new or changed tools: embed them now, off the event loop.
                await anyio.to_thread.run_sync(semantic.refresh)
            elif not self._embedding:
                task = asyncio.get_running_loop().create_task(self._embed_all(semantic))
                self._embedding.add(task)
                task.add_done_callback(self._embedding.discard)
        nearest = await anyio.to_thread.run_sync(
            functools.partial(
                semantic.search,
                query,
                limit=max(50, 5 * self.max_results),
                within=within,
                min_score=_MIN_SIMILARITY,
                # Until a new catalog is embedded, rank with the vectors that are ready.
                refresh=False,
            )
        )
        return [key for key, _score in blend(lexical, nearest)]

    async def _embed_all(self, semantic: EmbeddingIndex) -> None:
        try:
            await anyio.to_thread.run_sync(semantic.refresh)
        except Exception:
            logger.exception("embedding the tool catalog failed; search stays lexical")

    async def _checker(
        self,
        server: FastMCP | None,
        context: MiddlewareContext[Any],
        info: RequestInfo | None,
        kind: ComponentKind,
        known: Sequence[FastMCPComponent],
    ) -> Callable[[_C], _C | None]:
        """One request's decision for a candidate: every layer's refusal and filter view."""
        views: list[ClientView] = []
        filters: list[FilterMiddleware] = []
        if server is not None:
            for middleware in server.middleware:
                if isinstance(middleware, AccessLayer):
                    views.append(await middleware.client_view(context))
                elif isinstance(middleware, FilterMiddleware):
                    filters.append(middleware)

        def visible() -> list[FastMCPComponent]:
            # Only for a filter naming an undeclared tag: the tags of what this client sees.
            components = known or self._index(kind).components()
            return [
                c
                for c in components
                if is_enabled(c) and all(view.refusal(c) is None for view in views)
            ]

        selectors = [f.selector(info, kind, visible) for f in filters]

        def check(component: _C) -> _C | None:
            for view in views:
                if view.refusal(component) is not None:
                    return None
            kept: Any = component
            for select in selectors:
                kept = select(kept)
                if kept is None:
                    return None
            return kept  # type: ignore[no-any-return]

        return check

    def _inner_is_list_neutral(self, server: FastMCP) -> bool:
        """Whether every middleware after this one either is ours or leaves tool lists alone."""
        try:
            position = server.middleware.index(self)
        except ValueError:
            return False
        return _list_neutral(server.middleware[position + 1 :])

    # -- index bookkeeping --------------------------------------------------------------

    def _index(self, kind: ComponentKind) -> _SyncedIndex:
        index = self._indexes.get(kind)
        if index is None:
            semantic = EmbeddingIndex(self._embedder) if self._embedder is not None else None
            index = self._indexes[kind] = _SyncedIndex(
                SearchIndex(weights=self._weights), kind, semantic
            )
        return index

    def _document(self, component: FastMCPComponent) -> Document:
        """The searchable text of a component: its fields and its groups' titles."""
        membership = self.catalog.membership(component)
        group_text: list[str] = []
        for name in membership.direct:
            group = self.catalog.group(name)
            if group is not None:
                group_text.extend(t for t in (group.name, group.title, group.description) if t)
        params: tuple[tuple[str, str], ...] = ()
        schema = getattr(component, "parameters", None)
        if isinstance(schema, Mapping):
            properties = schema.get("properties")
            if isinstance(properties, Mapping):
                params = tuple(
                    (
                        str(name),
                        str(spec.get("description", "")) if isinstance(spec, Mapping) else "",
                    )
                    for name, spec in properties.items()
                )
        elif (arguments := getattr(component, "arguments", None)) is not None:
            params = tuple((a.name, a.description or "") for a in arguments)
        return Document(
            name=component.name,
            title=component.title or "",
            description=component.description or "",
            tags=tuple(sorted(component.tags)),
            groups=tuple(group_text),
            params=params,
        )

    def _make_search_tool(self) -> Tool:
        middleware = self

        async def search_tools(
            query: Annotated[
                str, Field(description="A few plain words saying what you want to do")
            ],
            ctx: Context,
        ) -> SearchToolsResult:
            """Find the tools for a task: returns the best matching tools, most relevant first."""
            text = _clean_query(query, field="query")
            found: list[Tool] = []
            if text:
                server = ctx.fastmcp
                context = MiddlewareContext(message=None, fastmcp_context=ctx)
                if _list_neutral(server.middleware):
                    found = await middleware.search_tools(server, context, text)
                else:
                    # A middleware of the server's own narrows tool lists: rank what the
                    # client gets through the whole chain, so it is never bypassed.
                    listed = await server.list_tools()
                    found = await middleware._rank_listed(context, listed, text, "tool", None)
            return SearchToolsResult(
                query=query,
                tools=[
                    t.to_mcp_tool(name=t.name).model_dump(
                        by_alias=True, mode="json", exclude_none=True
                    )
                    for t in found
                ],
            )

        assert self.search_tool is not None
        return Tool.from_function(
            search_tools,
            name=self.search_tool,
            meta={META_TOOL_KEY: True},
            description=(
                "Search this server's tools by what you want to do (plain words, e.g. "
                "'open a pull request'). Returns the best matching tool definitions, most "
                "relevant first."
            ),
        )


class _SyncedIndex:
    """A ``SearchIndex`` that follows a catalog by object identity."""

    def __init__(
        self, index: SearchIndex, kind: ComponentKind, semantic: EmbeddingIndex | None = None
    ) -> None:
        self.index = index
        self.kind = kind
        self.semantic = semantic
        self._seen: dict[str, FastMCPComponent] = {}
        self._version = -1

    def components(self) -> list[FastMCPComponent]:
        return list(self._seen.values())

    def merge(
        self, components: Iterable[FastMCPComponent], describe: Callable[[Any], Document]
    ) -> None:
        """Index components not seen before, or changed (a new object), keeping the rest."""
        for component in components:
            key = _key(component, self.kind)
            if self._seen.get(key) is not component:
                document = describe(component)
                self.index.upsert(key, document)
                if self.semantic is not None:
                    # A no-op when the text did not change: nothing is embedded again.
                    self.semantic.upsert(key, document_text(document))
                self._seen[key] = component

    def sync(
        self,
        components: Collection[FastMCPComponent],
        describe: Callable[[Any], Document],
        version: int,
    ) -> None:
        """Make the index match the whole catalog: add, change and remove what differs.

        Unchanged components are the same objects as last time, so this costs a
        dictionary lookup each; only new or replaced ones are described again.
        """
        if version != self._version:
            # Group titles are part of the text: describe everything again (an upsert
            # of an unchanged document is a no-op).
            self._seen.clear()
            self._version = version
        seen = self._seen
        kind = self.kind
        lookup = seen.get
        if kind == "tool" or kind == "prompt":
            # The hot loop at 10,000 tools: no function call per component.
            changed = [c for c in components if lookup(c.name) is not c]
        else:
            changed = [c for c in components if lookup(_key(c, kind)) is not c]
        if not changed and len(components) == len(seen):
            return
        if len(components) - len(changed) < len(seen):
            current = {_key(c, kind) for c in components}
            for key in [k for k in seen if k not in current]:
                self.index.remove(key)
                if self.semantic is not None:
                    self.semantic.remove(key)
                del seen[key]
        self.merge(changed, describe)


class _Catalog:
    """Every tool of the server by name, whoever the client: providers, then meta-tools."""

    def __init__(self, tools: dict[str, Tool], versioned: frozenset[str]) -> None:
        self.tools = tools
        self.versioned = versioned
        """Names that several tool versions share: FastMCP picks which one shows."""


def _list_neutral(middlewares: Iterable[Middleware]) -> bool:
    """Whether each middleware is this package's, or leaves tool lists as they are."""
    for middleware in middlewares:
        if isinstance(
            middleware,
            AccessLayer | FilterMiddleware | SearchMiddleware | ToolInjectionMiddleware,
        ):
            continue
        cls = type(middleware)
        if cls.on_list_tools is not Middleware.on_list_tools or cls.__call__ is not (
            Middleware.__call__
        ):
            return False
    return True


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and (error := task.exception()) is not None:
        logger.warning("indexing the tool catalog ahead of time failed: %r", error)


async def _provider_tools(server: FastMCP) -> Sequence[Tool]:
    """What the server's providers list, server transforms applied: FastMCP's own listing.

    The same public steps as ``AggregateProvider.list_tools`` (each provider's
    ``list_tools``, then the server's transforms), without its per-tool key
    bookkeeping for duplicate warnings, which costs more than the rest at 10,000
    tools. Provider errors follow the server's ``provider_error_strategy``.
    """
    providers = getattr(server, "providers", None)
    if not isinstance(providers, list):
        return await AggregateProvider.list_tools(server)
    tools: list[Tool] = []
    for provider in providers:
        try:
            tools.extend(await provider.list_tools())
        except Exception:
            if getattr(server, "provider_error_strategy", "warn") == "raise":
                raise
            logger.warning("a provider failed to list its tools", exc_info=True)
    listed: Sequence[Tool] = tools
    for transform in server.transforms:
        listed = await transform.list_tools(listed)
    return listed


async def _all_tools(server: FastMCP) -> _Catalog:
    tools: dict[str, Tool] = {}
    versioned: set[str] = set()
    for tool in await _provider_tools(server):
        if tool.name in tools:
            versioned.add(tool.name)
        tools.setdefault(tool.name, tool)
    for middleware in server.middleware:
        if isinstance(middleware, ToolInjectionMiddleware):
            for tool in middleware.injected_tools:
                tools[tool.name] = tool
    return _Catalog(tools, frozenset(versioned))


async def _visible_tool(server: FastMCP, catalog: _Catalog, name: str) -> Tool | None:
    """The tool called ``name`` as this client sees it through FastMCP, or None."""
    tool = catalog.tools.get(name)
    if tool is None:
        return None
    if name in catalog.versioned or tool.auth is not None:
        # Version choice and auth checks: FastMCP's own lookup decides.
        return await server.get_tool(name)
    marked = await apply_session_transforms([tool])
    return marked[0] if marked and is_enabled(marked[0]) else None


def _key(component: FastMCPComponent, kind: ComponentKind) -> str:
    if kind == "tool" or kind == "prompt":
        return component.name
    if kind == "resource":
        return str(getattr(component, "uri", component.name))
    if kind == "template":
        return str(getattr(component, "uri_template", component.name))
    return component.name


def _server(context: MiddlewareContext[Any]) -> FastMCP | None:
    return context.fastmcp_context.fastmcp if context.fastmcp_context else None


def _requested_query(info: RequestInfo | None, kind: ComponentKind) -> str | None:
    """The request's ``query``, cleaned; None when absent, blank, or another method's."""
    if info is None or info.method != LIST_METHOD[kind]:
        return None
    raw = info.params.get("query")
    if raw is None:
        return None
    return _clean_query(raw, field="query") or None


def _clean_query(raw: object, *, field: str) -> str:
    """Validate a query: a string of at most ``MAX_QUERY_LENGTH`` characters, as plain text.

    Control characters are read as spaces; the result is trimmed. No syntax is
    interpreted: the query is only ever split into words.
    """
    if not isinstance(raw, str):
        raise invalid_params(
            f"{field} must be a string of plain words, got {type(raw).__name__}", field=field
        )
    if len(raw) > MAX_QUERY_LENGTH:
        raise invalid_params(
            f"{field} has {len(raw)} characters; at most {MAX_QUERY_LENGTH} are allowed",
            field=field,
        )
    cleaned = "".join(" " if unicodedata.category(ch)[0] == "C" else ch for ch in raw)
    return cleaned.strip()

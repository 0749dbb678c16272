"""The usual stack from one set of declarations: ``add_filtering(mcp, ...)``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, Unpack

from fastmcp_filtering.access.middleware import GroupAccessMiddleware
from fastmcp_filtering.concern.middleware import ConcernMiddleware
from fastmcp_filtering.core.catalog import Catalog
from fastmcp_filtering.core.errors import OptionError
from fastmcp_filtering.core.options import ConcernOptions, ProgressiveOptions, SearchOptions
from fastmcp_filtering.group.middleware import FilterMiddleware
from fastmcp_filtering.progressive.middleware import ProgressiveDisclosureMiddleware
from fastmcp_filtering.search.middleware import SearchMiddleware
from fastmcp_filtering.server.hooks import FilteringRuntime, ListHooks, set_up

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from fastmcp_filtering.core.catalog import Unauthenticated
    from fastmcp_filtering.core.concerns import Concern, ConcernsFromToken
    from fastmcp_filtering.core.declarations import Group, Tag
    from fastmcp_filtering.core.options import ApplyDefaults


def install(mcp: FastMCP, *middlewares: ListHooks) -> None:
    """Add the package's middlewares to ``mcp`` and set the server up for them now.

    The same as ``mcp.add_middleware`` for each, except that the setup a
    middleware otherwise does when the first message reaches it happens here,
    before the server serves: the ``AccessTransform`` that applies the policy
    layers in FastMCP's own component lookup (after the transforms added so
    far), and the cursor binding for filtered and searched lists. Use it when
    something looks components up before the first request (a startup check,
    a programmatic ``await mcp.list_tools()``), which then sees what a client
    with no identity would.

    Example:
        ```python
        install(mcp, FilterMiddleware(groups=groups), SearchMiddleware(groups=groups))
        ```
    """
    for middleware in middlewares:
        if not isinstance(middleware, ListHooks):
            raise OptionError(
                f"install() takes this package's middlewares, got {type(middleware).__name__}; "
                "add other middleware with mcp.add_middleware()"
            )
    runtime = FilteringRuntime.ensure(mcp)
    for middleware in middlewares:
        runtime.add(mcp, middleware)
    set_up(mcp)


@dataclass(frozen=True, slots=True)
class FilteringStack:
    """The middlewares of one declaration, by role; iterating yields them in order."""

    catalog: Catalog
    filter: FilterMiddleware | None
    search: SearchMiddleware | None
    concerns: ConcernMiddleware | None
    progressive: ProgressiveDisclosureMiddleware | None
    access: GroupAccessMiddleware | None = None
    """Only when no other middleware holds the catalog: declared checks hold whatever the
    stack holds (concerns alone, or no layer at all)."""

    def __iter__(self) -> Iterator[ListHooks]:
        for middleware in (self.filter, self.search, self.concerns, self.progressive, self.access):
            if middleware is not None:
                yield middleware


class StackOptions(TypedDict, total=False):
    """The keyword options of ``filtering_stack`` and ``add_filtering``."""

    groups: Iterable[Group]
    tags: Iterable[Tag]
    catalog: Catalog | None
    filter: bool
    search: bool | SearchOptions | Mapping[str, Any]
    concerns: Iterable[Concern] | None
    concern_mapping: Mapping[str, Mapping[str, str]] | None
    apply_concern_defaults: ApplyDefaults
    concern_authorization: ConcernsFromToken | None
    progressive: bool | Literal["search_first"] | ProgressiveOptions | Mapping[str, Any]
    unauthenticated: Unauthenticated | None
    side_effect_lists: bool | None


def filtering_stack(
    *,
    groups: Iterable[Group] = (),
    tags: Iterable[Tag] = (),
    catalog: Catalog | None = None,
    filter: bool = True,
    search: bool | SearchOptions | Mapping[str, Any] = True,
    concerns: Iterable[Concern] | None = None,
    concern_mapping: Mapping[str, Mapping[str, str]] | None = None,
    apply_concern_defaults: ApplyDefaults | None = None,
    concern_authorization: ConcernsFromToken | None = None,
    progressive: bool | Literal["search_first"] | ProgressiveOptions | Mapping[str, Any] = False,
    unauthenticated: Unauthenticated | None = None,
    side_effect_lists: bool | None = None,
) -> FilteringStack:
    """Groups and tags, search, concerns and progressive disclosure from one declaration.

    Builds one ``Catalog`` from ``groups`` and ``tags`` (or takes ``catalog``) and
    hands it to every middleware, so they agree on membership and see each
    other's runtime changes. ``search`` and ``progressive`` take ``True``, an options
    object (``SearchOptions`` / ``ProgressiveOptions``) or a dict of its keywords;
    ``progressive="search_first"`` is the preset ``SEARCH_FIRST`` (only
    ``search_tools`` and ``call_tool`` listed; a hit runs on the next call).
    ``concerns`` (with ``concern_*``: its ``mapping``, ``apply_defaults`` and
    ``authorization``) adds ``ConcernMiddleware``. Groups with ``access`` are
    enforced by every middleware; ``unauthenticated`` (``"deny"`` unless set) is
    what a client without a token gets of them. ``side_effect_lists`` (unset: off)
    goes to progressive disclosure and concerns (see docs/protocol-eras.md). The
    order of the middlewares changes no answer. Nothing is added to a server:
    pass the stack to ``FastMCP(middleware=[*stack])``, or use ``add_filtering``.

    Example:
        ```python
        stack = filtering_stack(groups=groups, progressive={"initial_groups": ["issues"]})
        mcp = FastMCP("github", middleware=[*stack])
        ```
    """
    if progressive == "search_first":
        progressive, search = _search_first(search)
    catalog = Catalog.shared(catalog, groups, tags, unauthenticated=unauthenticated)
    # Set only when given, so that each middleware's own default holds otherwise.
    era: dict[str, Any] = (
        {} if side_effect_lists is None else {"side_effect_lists": side_effect_lists}
    )
    concern_middleware = _concerns(
        concerns, concern_mapping, apply_concern_defaults, concern_authorization, era
    )
    search_middleware = _layer(SearchMiddleware, search, "search", catalog)
    progressive_middleware = _layer(
        ProgressiveDisclosureMiddleware, progressive, "progressive", catalog, era
    )
    holds_catalog = filter or search_middleware is not None or progressive_middleware is not None
    return FilteringStack(
        catalog=catalog,
        filter=FilterMiddleware(catalog=catalog) if filter else None,
        search=search_middleware,
        concerns=concern_middleware,
        progressive=progressive_middleware,
        access=None if holds_catalog else GroupAccessMiddleware(catalog=catalog),
    )


SEARCH_FIRST = ProgressiveOptions(
    initial_groups=(),
    hide_ungrouped=True,
    call_unlisted=True,
    offer_enable=False,
    call_tool_name="call_tool",
)
"""The progressive options of ``progressive="search_first"``: only the meta-tools are listed.

Change one with ``dataclasses.replace(SEARCH_FIRST, max_tools=20)``."""


def _search_first(
    search: bool | SearchOptions | Mapping[str, Any],
) -> tuple[ProgressiveOptions, SearchOptions | dict[str, Any]]:
    """The progressive and search options of the search-first preset; a ``SearchOptions``
    is used as it is (each of its options was chosen)."""
    if search is False:
        raise OptionError(
            'progressive="search_first" needs search: leave search=True (or pass its options)'
        )
    if isinstance(search, SearchOptions):
        return SEARCH_FIRST, search
    # Five hits: what docs/benchmarks measure, and about FastMCP's BM25SearchTransform's bytes.
    return SEARCH_FIRST, {"compact_results": True, "max_results": 5, **_options(search, "search")}


_M = TypeVar("_M")


def _layer(
    kind: Callable[..., _M],
    value: bool | SearchOptions | ProgressiveOptions | Mapping[str, Any],
    name: str,
    catalog: Catalog,
    defaults: Mapping[str, Any] | None = None,
) -> _M | None:
    """``kind(catalog=..., **defaults, **options)``, or None for ``False``; an empty dict of
    options turns the layer on with its defaults, as ``True`` does; an options object goes
    as ``options=``."""
    if value is False:
        return None
    if isinstance(value, SearchOptions | ProgressiveOptions):
        return kind(catalog=catalog, options=value, **(defaults or {}))
    return kind(catalog=catalog, **{**(defaults or {}), **_options(value, name)})


def _concerns(
    concerns: Iterable[Concern] | None,
    mapping: Mapping[str, Mapping[str, str]] | None,
    apply_defaults: ApplyDefaults | None,
    authorization: ConcernsFromToken | None,
    era: Mapping[str, Any],
) -> ConcernMiddleware | None:
    """The stack's ``ConcernMiddleware``, when concerns are declared."""
    if concerns is None:
        for name, value in (("concern_mapping", mapping), ("concern_authorization", authorization)):
            if value is not None:
                raise OptionError(f"{name} needs concerns=[Concern(...)] to map onto")
        return None
    return ConcernMiddleware(
        concerns=concerns,
        mapping=mapping,
        authorization=authorization,
        # None: the options' own default, declared once (ConcernOptions).
        options=ConcernOptions()
        if apply_defaults is None
        else ConcernOptions(apply_defaults=apply_defaults),
        **era,
    )


def add_filtering(mcp: FastMCP, **options: Unpack[StackOptions]) -> FilteringStack:
    """Add ``filtering_stack(**options)`` to ``mcp`` and set the server up for it.

    Takes the options of ``filtering_stack``: groups and tags, search, concerns
    and progressive disclosure from one declaration, on one shared ``Catalog``.

    Example:
        ```python
        stack = add_filtering(
            mcp,
            groups=groups,
            tags=[Tag("destructive")],
            concerns=[Concern("risk", values=["safe", "destructive"])],
            progressive={"initial_groups": ["issues"], "max_tools": 20},
        )
        await stack.catalog.add_group(Group("wiki"))
        ```
    """
    stack = filtering_stack(**options)
    install(mcp, *stack)
    return stack


def _options(value: bool | SearchOptions | Mapping[str, Any], name: str) -> dict[str, Any]:
    if value is True:
        return {}
    if isinstance(value, Mapping):
        if "catalog" in value or "groups" in value:
            raise OptionError(
                f"{name}= options must not repeat groups or catalog: add_filtering shares one"
            )
        return dict(value)
    kind = "SearchOptions" if name == "search" else "ProgressiveOptions"
    raise OptionError(
        f"{name} must be True, False or a dict of options or a {kind}(...), got {value!r}"
    )

"""The usual stack from one set of declarations: ``add_filtering(mcp, ...)``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastmcp_filtering._catalog import Catalog
from fastmcp_filtering._hooks import ListHooks
from fastmcp_filtering.concerns import Concern, ConcernMiddleware
from fastmcp_filtering.filter import FilterMiddleware
from fastmcp_filtering.progressive import ProgressiveDisclosureMiddleware
from fastmcp_filtering.search import SearchMiddleware

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from fastmcp_filtering._access import Unauthenticated
    from fastmcp_filtering._declarations import Group, Tag
    from fastmcp_filtering.concerns import ApplyDefaults

__all__ = ["FilteringStack", "add_filtering", "install"]


def install(mcp: FastMCP, *middlewares: ListHooks) -> None:
    """Add the package's middlewares to ``mcp`` and set the server up for them, once.

    Use it where you would call ``mcp.add_middleware``: besides adding each
    middleware, it installs, before the server serves anything, what the
    middlewares need inside FastMCP: the ``AccessTransform`` that applies the
    concern and progressive-disclosure layers in FastMCP's own component lookup
    (added after the server's own transforms: add yours first), and the cursor
    binding for filtered and searched lists. A middleware of this package added
    with ``mcp.add_middleware`` alone refuses every request, saying so.

    Example:
        ```python
        install(mcp, FilterMiddleware(groups=groups), SearchMiddleware(groups=groups))
        ```
    """
    for middleware in middlewares:
        if not isinstance(middleware, ListHooks):
            raise ValueError(
                f"install() takes this package's middlewares, got {type(middleware).__name__}; "
                "add other middleware with mcp.add_middleware()"
            )
        middleware.setup(mcp)
        mcp.add_middleware(middleware)


@dataclass(frozen=True, slots=True)
class FilteringStack:
    """The middlewares ``add_filtering`` added, by role; iterating yields them in order."""

    catalog: Catalog
    filter: FilterMiddleware | None
    search: SearchMiddleware | None
    concerns: ConcernMiddleware | None
    progressive: ProgressiveDisclosureMiddleware | None

    def __iter__(self) -> Iterator[ListHooks]:
        for middleware in (self.filter, self.search, self.concerns, self.progressive):
            if middleware is not None:
                yield middleware


def add_filtering(
    mcp: FastMCP,
    *,
    groups: Iterable[Group] = (),
    tags: Iterable[Tag] = (),
    catalog: Catalog | None = None,
    filter: bool = True,
    search: bool | Mapping[str, Any] = True,
    concerns: Iterable[Concern] | None = None,
    concern_mapping: Mapping[str, Mapping[str, str]] | None = None,
    apply_concern_defaults: ApplyDefaults = "configured",
    progressive: bool | Mapping[str, Any] = False,
    unauthenticated: Unauthenticated | None = None,
) -> FilteringStack:
    """Add groups and tags, search, concerns and progressive disclosure from one declaration.

    Builds one ``Catalog`` from ``groups`` and ``tags`` (or takes ``catalog``) and
    hands it to every middleware, so they agree on membership and see each
    other's runtime changes. ``search`` and ``progressive`` take ``True`` or the
    keyword options of ``SearchMiddleware`` / ``ProgressiveDisclosureMiddleware``;
    ``concerns`` (with ``concern_mapping`` and ``apply_concern_defaults``, its
    ``apply_defaults``) adds ``ConcernMiddleware``. Groups declared with
    ``access`` checks are enforced by every middleware of the stack;
    ``unauthenticated`` (``"deny"`` unless set) is what a client without a
    token gets of them. The order
    the middlewares are added in does not change any answer: every list, search
    and call asks all of them.

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
    catalog = Catalog.shared(catalog, groups, tags, unauthenticated=unauthenticated)
    if concerns is None and concern_mapping is not None:
        raise ValueError("concern_mapping needs concerns=[Concern(...)] to map onto")
    stack = FilteringStack(
        catalog=catalog,
        filter=FilterMiddleware(catalog=catalog) if filter else None,
        search=SearchMiddleware(catalog=catalog, **_options(search, "search")) if search else None,
        concerns=ConcernMiddleware(
            concerns=concerns, mapping=concern_mapping, apply_defaults=apply_concern_defaults
        )
        if concerns is not None
        else None,
        progressive=ProgressiveDisclosureMiddleware(
            catalog=catalog, **_options(progressive, "progressive")
        )
        if progressive
        else None,
    )
    install(mcp, *stack)
    # Declared checks hold whatever the stack holds (concerns alone, or no layer at all).
    catalog.access.install(mcp)
    return stack


def _options(value: bool | Mapping[str, Any], name: str) -> dict[str, Any]:
    if value is True:
        return {}
    if isinstance(value, Mapping):
        if "catalog" in value or "groups" in value:
            raise ValueError(
                f"{name}= options must not repeat groups or catalog: add_filtering shares one"
            )
        return dict(value)
    raise ValueError(f"{name} must be True, False or a dict of options, got {value!r}")

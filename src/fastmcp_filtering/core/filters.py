"""Parsing and checking SEP-1300's ``filter`` parameter."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from fastmcp_filtering.core.catalog import LIST_METHOD, ComponentKind
from fastmcp_filtering.core.declarations import MAX_NAME_LENGTH
from fastmcp_filtering.core.request import RequestInfo, invalid_params, request_memo

if TYPE_CHECKING:
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.core.catalog import GroupTree

_C = TypeVar("_C", bound="FastMCPComponent")

MAX_FILTER_NAMES = 100
"""Most names a client may send in ``filter.groups`` or ``filter.tags``."""

_KEYS = ("groups", "tags")


@dataclass(frozen=True, slots=True)
class ListFilter:
    """A client's ``filter``: ANY of ``groups`` (None: no group condition), ALL of ``tags``."""

    groups: frozenset[str] | None
    tags: frozenset[str]

    def within(self, groups: Collection[str]) -> ListFilter:
        """This filter with only the names of ``groups`` in ``filter.groups``.

        SEP-1300 reads ``filter.groups`` as ANY of the named groups: a name no group
        has (or one the client may not know) matches nothing, so the known ones are
        kept and ``filter_warnings`` says which were not; with none known, nothing
        matches.
        """
        if self.groups is None or self.groups <= set(groups):
            return self
        return ListFilter(groups=self.groups & set(groups), tags=self.tags)

    def check_tags(self, tags: Collection[str]) -> None:
        """Raise -32602 for a tag name no tag has, listing the valid ones (ALL of the tags
        must hold, so an unknown one would only ever empty the list)."""
        if unknown := sorted(self.tags - set(tags)):
            raise invalid_params(
                f"filter.tags names unknown tag(s) {unknown}; call tags/list for the names",
                field="filter.tags",
                unknown=unknown,
                valid=sorted(tags),
            )


def parse_filter(raw: object) -> ListFilter | None:
    """Validate the raw ``filter`` value of a list request; None when absent."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise invalid_params(
            f"filter must be an object like {{'groups': [...], 'tags': [...]}}, "
            f"got {type(raw).__name__}",
            field="filter",
        )
    if extra := sorted(str(k)[:64] for k in raw if k not in _KEYS):
        # An ignored key would give a wider list than the client asked for.
        raise invalid_params(
            f"filter has unsupported key(s) {extra}; only 'groups' and 'tags' are supported",
            field="filter",
            unsupported=extra,
        )
    groups = raw.get("groups")
    return ListFilter(
        groups=None if groups is None else _names(groups, "filter.groups"),
        tags=_names([] if raw.get("tags") is None else raw.get("tags"), "filter.tags"),
    )


def _names(value: Any, field: str) -> frozenset[str]:
    problem = _names_problem(value)
    if problem is not None:
        raise invalid_params(f"{field} {problem}", field=field)
    return frozenset(value)


def _names_problem(value: Any) -> str | None:
    """What is wrong with a filter's list of names; None when nothing is."""
    if not isinstance(value, list):
        return f"must be a list of strings, got {type(value).__name__}"
    if len(value) > MAX_FILTER_NAMES:
        return f"has {len(value)} names; at most {MAX_FILTER_NAMES} are allowed"
    for item in value:
        if not isinstance(item, str):
            return f"must hold strings, got {type(item).__name__}"
        if len(item) > MAX_NAME_LENGTH:
            return f"has a name of {len(item)} characters; at most {MAX_NAME_LENGTH}"
    return None


def requested_filter(info: RequestInfo | None, kind: ComponentKind) -> ListFilter | None:
    """The ``filter`` of the wire request, if it is the list request of ``kind``."""
    if info is None or info.method != LIST_METHOD[kind]:
        return None
    return parse_filter(info.params.get("filter"))


def narrow(
    catalog: GroupTree,
    info: RequestInfo | None,
    kind: ComponentKind,
    components: Sequence[_C],
    *,
    listed: Sequence[FastMCPComponent] | None = None,
) -> Sequence[_C]:
    """``components`` that match the request's ``filter``: ANY of its groups, ALL of its tags.

    ``catalog`` is the tree of the groups this client's principal may know: a
    group name of the filter that no group of it has matches nothing (one hidden
    from the client reads as one never declared). Raises -32602 for a tag that
    neither is declared nor is on a component in ``components`` (what this
    client can see, so no hidden component's tag is valid), or in ``listed`` when
    given (what the client lists, where ``components`` may hold more). The filtering
    and search middlewares both apply it, so a filter means the same in any order.
    """

    def seen_tags() -> set[str]:
        seen = components if listed is None else listed
        return {tag for component in seen for tag in component.tags}

    list_filter = checked_filter(catalog, info, kind, seen_tags)
    if list_filter is None:
        return components
    return [c for c in components if matches(catalog, list_filter, c)]


def checked_filter(
    catalog: GroupTree,
    info: RequestInfo | None,
    kind: ComponentKind,
    seen_tags: Callable[[], Collection[str]],
) -> ListFilter | None:
    """The request's ``filter``, its names checked against the catalog and ``seen_tags()``
    (the tags of what this client can see) once per request; None when it has none."""
    list_filter = requested_filter(info, kind)
    if list_filter is None:
        return None
    assert info is not None
    remembered = request_memo()
    if remembered is None or remembered.get("filter checked") is not info.params:
        tags = {tag.name for tag in catalog.tags}
        if not list_filter.tags <= tags:
            tags |= set(seen_tags())
        list_filter.check_tags(tags)
        # The innermost middleware saw the widest list: an outer one, given a list already
        # narrowed or ranked, must not judge the names again against less.
        if remembered is not None:
            remembered["filter checked"] = info.params
    return list_filter.within([g.name for g in catalog.groups])


def filter_warnings(catalog: GroupTree, info: RequestInfo | None, kind: ComponentKind) -> list[str]:
    """What the result of a list request says of its ``filter.groups`` names that no group
    the client may know has (each matches nothing); empty when there are none."""
    list_filter = requested_filter(info, kind)
    if list_filter is None or list_filter.groups is None:
        return []
    known = {g.name for g in catalog.groups}
    return [
        f"filter.groups: {name!r} is not a group, so it matches nothing (groups/list gives "
        "the names)"
        for name in sorted(list_filter.groups - known)
    ]


def matches(catalog: GroupTree, list_filter: ListFilter, component: FastMCPComponent) -> bool:
    """Whether ``component`` is in ANY of the filter's groups and has ALL of its tags."""
    groups = list_filter.groups
    return (
        groups is None or not catalog.membership(component).effective.isdisjoint(groups)
    ) and list_filter.tags <= component.tags

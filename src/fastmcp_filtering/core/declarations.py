"""The declarations every middleware of the package shares: groups, tags, ``@in_group``."""

from __future__ import annotations

import contextlib
import inspect
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, TypeVar, cast

import mcp_types as mt
from fastmcp.server.providers.fastmcp_provider import (
    FastMCPProviderPrompt,
    FastMCPProviderResource,
    FastMCPProviderResourceTemplate,
    FastMCPProviderTool,
)
from fastmcp.utilities.components import FastMCPComponent
from pydantic import ConfigDict

from fastmcp_filtering.core.errors import OptionError, OptionTypeError

GROUPS_META_KEY = "io.modelcontextprotocol/groups"
"""The reserved ``_meta`` key that lists the groups a primitive (or a group) belongs to."""

META_TOOL_KEY = "io.github.fastmcp-filtering/meta-tool"
"""``_meta`` mark of the stack's own meta-tools, for clients; the package itself never trusts it."""

BETTER_MATCHES_META_KEY = "io.github.fastmcp-filtering/better-matches-in"
"""Result ``_meta`` key of a ``query`` list: groups holding matches the client cannot use yet."""

BETTER_BY_NAME_META_KEY = "io.github.fastmcp-filtering/better-matches-by-name"
"""Result ``_meta`` key of a ``query`` list: better matches lists leave out, callable by name."""

CONCERNS_META_KEY = "io.github.fastmcp-filtering/concerns"
"""Request ``_meta`` key whose object overrides the client's concerns for one request."""

CONCERNS_META_ALIAS = "io.modelcontextprotocol/concerns"
"""The override's former key, still accepted: no proposal defines a per-request override, and
``io.modelcontextprotocol/`` is reserved for MCP's own keys."""

WARNINGS_META_KEY = "io.github.fastmcp-filtering/warnings"
"""Result ``_meta`` key of a list whose concerns override named concerns the server ignored."""

MAX_NAME_LENGTH = 256
"""Longest group or tag name accepted, in declarations and in a client's ``filter``."""

# Letters, digits and a few separators: safe in JSON, URLs, glob patterns and log lines.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/\-]*")

_FN_ATTRIBUTE = "__fastmcp_filtering_groups__"

logger = logging.getLogger("fastmcp_filtering")

# What a mounted server's components are, as its parent lists them.
_MOUNTED = (
    FastMCPProviderTool,
    FastMCPProviderPrompt,
    FastMCPProviderResource,
    FastMCPProviderResourceTemplate,
)

_T = TypeVar("_T")
_C = TypeVar("_C", bound=FastMCPComponent)


def validate_name(name: object, *, what: str) -> str:
    """Return ``name`` if it is a valid group or tag name, else raise ``ValueError``."""
    if not isinstance(name, str):
        raise OptionError(f"{what} name must be a string, got {type(name).__name__}: {name!r}")
    if not name or len(name) > MAX_NAME_LENGTH or not _NAME.fullmatch(name):
        raise OptionError(
            f"invalid {what} name {name!r}: use 1 to {MAX_NAME_LENGTH} letters, digits, "
            "'_', '.', ':', '/' or '-', starting with a letter, digit or '_'"
        )
    return name


def _names_tuple(value: object, *, what: str, field_name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if field_name == "parent" else _reject_bare_string(value, field_name)
    if not isinstance(value, Sequence | set | frozenset):
        raise OptionError(f"{field_name} must be a list of strings, got {type(value).__name__}")
    items = tuple(value)
    for item in items:
        if not isinstance(item, str) or not item:
            raise OptionError(f"{field_name} must hold non-empty strings, got {item!r} ({what})")
    return items


def _checks(value: object, group: str) -> tuple[Callable[..., Any], ...] | None:
    """``Group.access`` as a tuple of auth checks (None: the group is open to everyone)."""
    if value is None:
        return None
    items = tuple(value) if isinstance(value, list | tuple) else (value,)
    for item in items:
        if not callable(item):
            raise OptionError(
                f"group {group!r}: access takes FastMCP auth checks (require_scopes(...), "
                f"an AccessPolicy, a function of AuthContext) or a list of them, got {item!r}"
            )
    if not items:
        raise OptionError(
            f"group {group!r}: access=[] admits nobody by mistake or everybody by design; "
            "leave access out for an open group, or name a check"
        )
    return items


def _reject_bare_string(value: str, field_name: str) -> tuple[str, ...]:
    raise OptionError(
        f"{field_name}={value!r} is a string; pass a list so it is not split into characters: "
        f"{field_name}=[{value!r}]"
    )


_KINDS = ("tool", "prompt", "resource", "template")


def _kinds(kinds: Sequence[str], group: str) -> tuple[str, ...]:
    """``kinds`` as a tuple, each a component kind, at least one."""
    found = _names_tuple(kinds, what=f"group {group!r}", field_name="kinds")
    unknown = [k for k in found if k not in _KINDS]
    if unknown or not found:
        raise OptionError(
            f"group {group!r}: kinds must name one or more of {', '.join(_KINDS)}; "
            f"got {list(found)!r}"
        )
    return found


class GroupAnnotations(mt.Annotations):
    """A group's ``annotations``: MCP's ``Annotations`` keeping keys it does not declare,
    such as the ``title`` the grouping proposal ranks after ``Group.title`` for display."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True, slots=True)
class Group:
    """A named collection of tools, prompts, resources and other groups.

    The Group primitive of the grouping proposal: ``name`` (unique), ``title``,
    ``description``, ``icons`` and ``annotations`` appear in ``groups/list``.
    ``parent`` (one name or several) makes hierarchy: the group belongs to its
    parents, and a filter on a parent also matches the members of its children.
    ``tools`` declares membership by name or glob pattern (``"delete_*"``) for
    components whose code cannot change (a proxy, an OpenAPI server); patterns
    match tool, prompt and resource names, resource URIs and URI templates;
    ``kinds`` (``"tool"``, ``"prompt"``, ``"resource"``, ``"template"``) limits them to
    those kinds, for a tool and a prompt of one name (None: every kind).

    ``access`` makes the group access control: FastMCP auth checks
    (``require_scopes("github:admin")``, an ``AccessPolicy``, any ``AuthCheck``
    callable, or a list of them, all required), judged against each request's
    token with the group standing in as the component. Child groups inherit
    their parents' checks. A principal that fails them gets the group and its
    members as if they did not exist, unless a member is also in a group it
    may use; ``restrictive=True`` makes this group's denial win over that.

    Example:
        ```python
        Group("repos", description="Repositories", parent="code", tools=["*_repo"])
        Group("admin", access=require_scopes("github:admin"), restrictive=True)
        ```
    """

    name: str
    _: KW_ONLY
    title: str | None = None
    description: str | None = None
    parent: str | Sequence[str] | None = None
    tools: Sequence[str] = ()
    icons: Sequence[mt.Icon | Mapping[str, Any]] | None = None
    annotations: GroupAnnotations | mt.Annotations | Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None
    access: Callable[..., Any] | Sequence[Callable[..., Any]] | None = None
    restrictive: bool = False
    kinds: Sequence[str] | None = None
    parents: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        validate_name(self.name, what="group")
        parents = _names_tuple(self.parent, what=f"group {self.name!r}", field_name="parent")
        for parent in parents:
            validate_name(parent, what=f"parent of group {self.name!r}")
        if self.name in parents:
            raise OptionError(f"group {self.name!r} names itself as parent; remove it from parent")
        patterns = _names_tuple(self.tools, what=f"group {self.name!r}", field_name="tools")
        object.__setattr__(self, "parents", tuple(dict.fromkeys(parents)))
        object.__setattr__(self, "tools", patterns)
        if self.icons is not None:
            icons = tuple(mt.Icon.model_validate(icon) for icon in self.icons)
            object.__setattr__(self, "icons", icons)
        if self.annotations is not None and not isinstance(self.annotations, GroupAnnotations):
            raw = self.annotations
            if isinstance(raw, mt.Annotations):
                raw = raw.model_dump(by_alias=True, exclude_none=True)
            object.__setattr__(self, "annotations", GroupAnnotations.model_validate(raw))
        object.__setattr__(self, "access", _checks(self.access, self.name))
        if self.kinds is not None:
            object.__setattr__(self, "kinds", _kinds(self.kinds, self.name))
        if not isinstance(self.restrictive, bool):
            raise OptionError(
                f"group {self.name!r}: restrictive must be True or False, got {self.restrictive!r}"
            )

    @property
    def display_title(self) -> str | None:
        """The group's human-readable name: ``title``, else ``annotations.title`` (the
        grouping proposal's display-name order before ``name``); None when it has neither."""
        if self.title is not None:
            return self.title
        title = getattr(self.annotations, "title", None)
        return title if isinstance(title, str) and title else None

    @property
    def checks(self) -> tuple[Callable[..., Any], ...]:
        """The group's own access checks (not its parents'), all of which must pass."""
        return cast("tuple[Callable[..., Any], ...]", self.access or ())

    def to_wire(self) -> dict[str, Any]:
        """The group as ``groups/list`` returns it (camelCase keys, no nulls)."""
        wire: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            wire["title"] = self.title
        if self.description is not None:
            wire["description"] = self.description
        if self.icons:
            wire["icons"] = [
                icon.model_dump(by_alias=True, mode="json", exclude_none=True)
                for icon in self.icons
                if isinstance(icon, mt.Icon)
            ]
        if isinstance(self.annotations, GroupAnnotations):
            wire["annotations"] = self.annotations.model_dump(
                by_alias=True, mode="json", exclude_none=True
            )
        meta = dict(self.meta or {})
        if self.parents:
            meta[GROUPS_META_KEY] = list(self.parents)
        if meta:
            wire["_meta"] = meta
        return wire


@dataclass(frozen=True, slots=True)
class Tag:
    """A cross-cutting label (SEP-1300), described for ``tags/list``.

    A component's tags are FastMCP's own ``tags=``; declaring a ``Tag`` gives it
    a description and makes it valid in a ``filter`` before any component uses it.

    Example:
        ```python
        Tag("destructive", "Deletes or overwrites data")
        ```
    """

    name: str
    description: str | None = None

    def __post_init__(self) -> None:
        validate_name(self.name, what="tag")

    def to_wire(self) -> dict[str, Any]:
        """The tag as ``tags/list`` returns it."""
        wire: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            wire["description"] = self.description
        return wire


def in_group(*names: str) -> Callable[[_T], _T]:
    """Put a tool, prompt or resource in one or more groups.

    Works above or below ``@mcp.tool`` / ``@mcp.prompt`` / ``@mcp.resource`` and
    on a component object (``Tool.from_function(...)``). Membership declared
    here is unioned with ``meta["io.modelcontextprotocol/groups"]`` and with the
    ``tools`` patterns of each ``Group``. Names are checked against the declared
    groups when a middleware first lists the component.

    Example:
        ```python
        @in_group("issues", "triage")
        @mcp.tool
        def label_issue(number: int, label: str) -> str: ...
        ```
    """
    if not names:
        raise OptionError("in_group() needs at least one group name: @in_group('issues')")
    for name in names:
        validate_name(name, what="group")

    def decorate(target: _T) -> _T:
        if isinstance(target, FastMCPComponent):
            meta = dict(target.meta or {})
            existing = meta.get(GROUPS_META_KEY) or []
            meta[GROUPS_META_KEY] = list(dict.fromkeys([*existing, *names]))
            target.meta = meta
            fn = getattr(target, "fn", None)
            if fn is not None:
                _tag_function(fn, names)
            return target
        if callable(target):
            _tag_function(target, names)
            return target
        raise OptionTypeError(
            f"@in_group applies to functions and FastMCP components, not {type(target).__name__}"
        )

    return decorate


def set_function_attribute(fn: object, attribute: str, value: object) -> None:
    """Record a decorator's declaration on a function, where the function accepts it."""
    # Bound methods and builtins refuse attributes; a component's meta key still carries them.
    with contextlib.suppress(AttributeError, TypeError):
        setattr(fn, attribute, value)


def function_attributes(fn: object, attribute: str) -> list[Any]:
    """The values of ``attribute`` on ``fn`` and on every function it wraps, outermost first."""
    found: list[Any] = []
    # FastMCP wraps some functions (resource templates); the decorator may sit on either side.
    for _ in range(8):
        if fn is None:
            break
        value = getattr(fn, attribute, None)
        if value is not None:
            found.append(value)
        fn = getattr(fn, "__wrapped__", None)
    return found


def _tag_function(fn: object, names: tuple[str, ...]) -> None:
    existing: tuple[str, ...] = getattr(fn, _FN_ATTRIBUTE, ())
    set_function_attribute(fn, _FN_ATTRIBUTE, tuple(dict.fromkeys([*existing, *names])))


def _function_groups(fn: object) -> tuple[str, ...]:
    """Groups set by ``@in_group`` on ``fn`` or on any function it wraps."""
    found = [g for names in function_attributes(fn, _FN_ATTRIBUTE) for g in names]
    return tuple(dict.fromkeys(found))


def lineage(component: FastMCPComponent) -> tuple[FastMCPComponent, ...]:
    """``component`` and every tool it was made from, itself first.

    A ``ToolTransform`` (or ``Tool.from_tool``) serves a new tool whose
    ``parent_tool`` is the one it renames or wraps: whatever the parent declared
    (``@in_group``, ``_meta``, a name a pattern matches), the tool as served
    declares too, so a rename never takes a tool out of its group.

    Example:
        ```python
        assert lineage(renamed) == (renamed, renamed.parent_tool)
        ```
    """
    found = [component]
    seen = {id(component)}
    parent = getattr(component, "parent_tool", None)
    # However deep: a tool cut from part of its lineage would lose that part's groups.
    while isinstance(parent, FastMCPComponent) and id(parent) not in seen:
        found.append(parent)
        seen.add(id(parent))
        parent = getattr(parent, "parent_tool", None)
    return tuple(found)


def is_mounted(component: FastMCPComponent) -> bool:
    """Whether ``component`` is a mounted server's, as its parent serves it.

    Its own server's middleware and policy judge it when a request reaches that server,
    which nothing outside the request can ask: nothing shared between clients (change
    notifications, search statistics) may depend on it.

    Example:
        ```python
        parent.mount(child, namespace="ops")
        is_mounted(await parent.get_tool("ops_restart"))  # True
        ```
    """
    return isinstance(component, _MOUNTED)


def per_request_rule(
    marks: Callable[[FastMCPComponent], bool] | None,
) -> Callable[[FastMCPComponent], bool]:
    """The rule that tells a component listed per request: a mounted server's, or one ``marks``.

    Such a component may be there for one request and not another beyond what the
    policy decides (a mounted server's own policy, a provider that lists by the
    caller's token), so nothing shared between clients may depend on it.
    ``marks`` must be callable (or None); a check that fails counts as marking.

    Example:
        ```python
        rule = per_request_rule(lambda c: c.name.startswith("mine_"))
        rule(tool)  # True for a mounted server's tool or a mine_* one
        ```
    """
    if marks is None:
        return is_mounted
    # A class or a coroutine function is callable too, but never says False: everything would
    # count as listed per request, silently.
    asynchronous = inspect.iscoroutinefunction(marks) or inspect.iscoroutinefunction(
        getattr(marks, "__call__", None)  # noqa: B004 - an async __call__ is what is looked for
    )
    if not callable(marks) or isinstance(marks, type) or asynchronous:
        raise OptionError(
            f"per_request must be a plain function of a component (or None), got {marks!r}: "
            "pass one that returns True for what is listed per request, such as "
            "lambda c: isinstance(c, TenantTool)"
        )

    def listed_per_request(component: FastMCPComponent) -> bool:
        if is_mounted(component):
            return True
        try:
            return bool(marks(component))
        except Exception:
            # Unknown: hidden from what clients share, as a marked one is.
            logger.debug("per_request failed on %r", component.name, exc_info=True)
            return True

    return listed_per_request


def with_declared_groups(component: _C) -> _C:
    """``component`` with the groups ``@in_group`` gave its function in its own ``_meta``.

    A mounted server's components reach the parent as FastMCP's provider
    components, which keep ``_meta`` but carry no function: without this, a
    group declared with ``@in_group`` would not exist for the parent (and its
    access check would not apply).

    Example:
        ```python
        served = with_declared_groups(tool)  # tool.meta groups + @in_group's
        ```
    """
    declared = declared_groups_of(component)
    named = (component.meta or {}).get(GROUPS_META_KEY)
    if not declared or (isinstance(named, list | tuple) and set(declared) <= set(named)):
        return component
    meta = {**(component.meta or {}), GROUPS_META_KEY: list(declared)}
    copy: _C = component.model_copy(update={"meta": meta})
    return copy


def declared_groups_of(component: FastMCPComponent) -> tuple[str, ...]:
    """Groups a component claims itself: ``@in_group`` plus its ``_meta`` key, and what the
    tools it was made from claim (``lineage``)."""
    found: list[str] = []
    for source in lineage(component):
        found.extend(_function_groups(getattr(source, "fn", None)))
        meta_groups = (source.meta or {}).get(GROUPS_META_KEY) or ()
        if isinstance(meta_groups, str):
            meta_groups = (meta_groups,)
        found.extend(g for g in meta_groups if isinstance(g, str))
    return tuple(dict.fromkeys(found))

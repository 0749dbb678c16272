"""One immutable options object per feature, shared by the Python API and the gateway's config.

``SearchOptions`` and ``ProgressiveOptions`` hold a middleware's options with their
defaults, checked once when the object is built (an ``OptionError`` naming the
option and the fix), as httpx's ``Timeout`` and ``Limits`` do. A middleware takes
one as ``options=`` or builds one from its keywords; the gateway's ``[search]`` and
``[progressive]`` tables become one. What is not an option (the catalog, a rate
limiter, a state store) stays a constructor argument of the middleware.

Example:
    ```python
    options = SearchOptions(max_results=5, compact_results=True)
    install(mcp, SearchMiddleware(groups=groups, options=options))
    ```
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar

from fastmcp_filtering.core.concerns import STATE_NAMESPACE as CONCERNS_STATE
from fastmcp_filtering.core.errors import OptionError, OptionTypeError

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence

FIELDS = ("name", "title", "description", "tags", "groups", "params")
"""The fields of a component that search ranks by."""

DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {"name": 4.0, "title": 2.0, "description": 1.0, "tags": 1.0, "groups": 0.5, "params": 1.0}
)
"""How much a match in each field counts; the name says most about what a tool does."""

# MCP tool names (SEP-986): what every client accepts.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")

AvailableGroups = Literal["children", "all"]
ApplyDefaults = Literal["configured", "all"]
"""When concern defaults apply: once a client states a concern, or to every client."""
APPLY_DEFAULTS: tuple[ApplyDefaults, ...] = ("configured", "all")


def field_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    """``DEFAULT_WEIGHTS`` with ``weights`` over them: known fields, finite numbers >= 0.

    Example:
        ```python
        field_weights({"name": 6.0})["name"]  # 6.0; the other fields keep their defaults
        ```
    """
    merged = {**DEFAULT_WEIGHTS, **(weights or {})}
    unknown = set(merged) - set(FIELDS)
    if unknown:
        raise OptionError(f"unknown field weight(s) {sorted(unknown)}; fields are {FIELDS}")
    for name, weight in merged.items():
        if not (isinstance(weight, int | float) and math.isfinite(weight) and weight >= 0):
            raise OptionError(
                f"field weight {name!r} must be a finite number >= 0, got {weight!r}; "
                "use 0 to leave the field out of the ranking"
            )
    return merged


class FieldWeights(dict[str, float]):
    """A read-only dict of field weights: ``SearchOptions.weights``, which nobody changes later.

    Example:
        ```python
        SearchOptions(weights={"name": 6.0}).weights["name"]  # 6.0; assigning is a TypeError
        ```
    """

    def _read_only(self, *_args: object, **_kwargs: object) -> NoReturn:
        raise OptionTypeError(
            "SearchOptions.weights cannot change; build other options: "
            "dataclasses.replace(options, weights={...})"
        )

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple[type[FieldWeights], tuple[dict[str, float]]]:
        # Copies and pickles rebuild it from a plain dict, never item by item.
        return (FieldWeights, (dict(self),))


@dataclass(frozen=True, kw_only=True)
class SearchOptions:
    """``SearchMiddleware``'s options, checked once: ``OptionError`` names the one out of range.

    ``max_results`` hits per page; ``search_tool`` names the ``search_tools``
    meta-tool (None: none); ``instructions`` adds how to search to the server
    instructions; ``weights`` weighs the ranked fields (``FIELDS``);
    ``semantic`` blends in the bundled MiniLM model (True) or any embedder (a
    function from texts to vectors); ``compact_results`` gives each
    ``search_tools`` hit as its name, description and input schema only.

    Example:
        ```python
        SearchMiddleware(groups=groups, options=SearchOptions(max_results=5))
        ```
    """

    max_results: int = 10
    search_tool: str | None = "search_tools"
    instructions: bool = True
    weights: Mapping[str, float] | None = field(default=None, hash=False)
    semantic: bool | Callable[[Sequence[str]], Any] = False
    compact_results: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.compact_results, bool):
            raise OptionError(
                f"compact_results must be True or False, got {self.compact_results!r}: True "
                "gives each search_tools hit as its name, description and input schema only"
            )
        max_results = self.max_results
        if isinstance(max_results, bool) or not isinstance(max_results, int) or max_results < 1:
            raise OptionError(f"max_results must be a positive integer, got {max_results!r}")
        search_tool = self.search_tool
        if search_tool is not None and (not isinstance(search_tool, str) or not search_tool):
            raise OptionError(
                f"search_tool must be a tool name or None to turn it off, got {search_tool!r}"
            )
        if not isinstance(self.semantic, bool) and not callable(self.semantic):
            raise OptionError(
                "semantic must be True (the bundled MiniLM model), False, or an embedder "
                f"(a function from texts to vectors), got {self.semantic!r}"
            )
        if self.weights is not None:
            field_weights(self.weights)
            # A copy no caller can change behind the object's back.
            object.__setattr__(self, "weights", FieldWeights(self.weights))


@dataclass(frozen=True, kw_only=True)
class ProgressiveOptions:
    """``ProgressiveDisclosureMiddleware``'s options, checked once (``OptionError`` names one).

    Which groups a client starts with (``initial_groups``; the middleware checks
    them against its catalog), at most ``max_tools`` grouped tools at once,
    whether ungrouped tools hide, the meta-tools' names, what replies offer
    (``available_groups``), where enabled groups are kept (``state_namespace``),
    and whether tools of groups not enabled are callable by name
    (``call_unlisted``) and ``enable_tools`` offered at all (``offer_enable``).

    Example:
        ```python
        ProgressiveDisclosureMiddleware(
            groups=groups, options=ProgressiveOptions(initial_groups=("issues",), max_tools=10)
        )
        ```
    """

    initial_groups: Sequence[str] = ()
    """Stored as a tuple, each name once, in order."""
    max_tools: int | None = None
    hide_ungrouped: bool = False
    enable_tool_name: str = "enable_tools"
    disable_tool_name: str = "disable_tools"
    call_tool_name: str | None = None
    include_schemas: bool = False
    available_groups: AvailableGroups = "children"
    state_namespace: str = "progressive"
    call_unlisted: bool = False
    offer_enable: bool = True

    def __post_init__(self) -> None:
        _check_progressive(self)
        _check_meta_tool_names(self.enable_tool_name, self.disable_tool_name, self.call_tool_name)
        _check_state_namespace(self.state_namespace)
        if isinstance(self.initial_groups, str):
            raise OptionError(
                f"initial_groups={self.initial_groups!r} is a string; pass a list: "
                f"initial_groups=[{self.initial_groups!r}]"
            )
        # Any iterable of names, kept once each, in order, as a tuple nobody can change.
        object.__setattr__(self, "initial_groups", tuple(dict.fromkeys(self.initial_groups)))
        object.__setattr__(self, "hide_ungrouped", bool(self.hide_ungrouped))
        object.__setattr__(self, "include_schemas", bool(self.include_schemas))

    @property
    def meta_tool_names(self) -> frozenset[str]:
        """The names of the meta-tools these options add (``call_tool`` only when named)."""
        names = {self.enable_tool_name, self.disable_tool_name, self.call_tool_name}
        return frozenset(n for n in names if n is not None)


@dataclass(frozen=True, kw_only=True)
class ConcernOptions:
    """``ConcernMiddleware``'s options, checked once (``OptionError`` names one).

    When concern defaults apply (``apply_defaults``): ``"configured"`` fills the
    concerns a client did not state once it states one; ``"all"`` applies them to
    every client, stated or not. The concerns themselves, their mapping and the
    token claims that set them are declarations, given to the middleware.

    Example:
        ```python
        ConcernMiddleware(concerns=[risk], options=ConcernOptions(apply_defaults="all"))
        ```
    """

    apply_defaults: ApplyDefaults = "configured"

    def __post_init__(self) -> None:
        if self.apply_defaults not in APPLY_DEFAULTS:
            raise OptionError(
                f"apply_defaults={self.apply_defaults!r} is not an option: use 'configured' "
                "(defaults fill in for clients that stated concerns) or 'all' (every client)"
            )


def _check_progressive(options: ProgressiveOptions) -> None:
    """Raise ``OptionError`` naming the first option out of range and what to pass instead."""
    max_tools = options.max_tools
    if max_tools is not None and (
        isinstance(max_tools, bool) or not isinstance(max_tools, int) or max_tools < 1
    ):
        raise OptionError(f"max_tools must be a positive int or None, got {max_tools!r}")
    if options.available_groups not in ("children", "all"):
        raise OptionError(
            f"available_groups={options.available_groups!r} is not an option: use 'children' "
            "(the child groups enabling opened up, as wags replies) or 'all' (the roots not "
            "enabled too)"
        )
    if not isinstance(options.call_unlisted, bool):
        raise OptionError(
            f"call_unlisted must be True or False, got {options.call_unlisted!r}: True lets a "
            "client call any tool of a group it has not enabled by its exact name"
        )
    if options.offer_enable is not True and options.offer_enable is not False:
        raise OptionError(f"offer_enable must be True or False, got {options.offer_enable!r}")
    if options.offer_enable is False and options.call_unlisted is not True:
        raise OptionError(
            "offer_enable=False needs call_unlisted=True: without enable_tools a tool of a "
            "group not enabled could never be reached"
        )


def _check_meta_tool_names(enable: str, disable: str, call: str | None) -> None:
    """The meta-tools' names: valid MCP tool names, all different."""
    names = {"enable_tool_name": enable, "disable_tool_name": disable}
    if call is not None:
        names["call_tool_name"] = call
    for option, value in names.items():
        if not isinstance(value, str) or not _TOOL_NAME.fullmatch(value):
            raise OptionError(
                f"{option}={value!r} is not a valid tool name: use 1 to 128 letters, "
                "digits, '_', '-' or '.'"
            )
    if len(set(names.values())) != len(names):
        raise OptionError(f"meta-tool names must differ, got {names}")


def _check_state_namespace(state_namespace: object) -> None:
    """A namespace of its own: another layer's (``concerns``), or one with ``:``, clobbers state."""
    if not isinstance(state_namespace, str) or not state_namespace:
        raise OptionError(f"state_namespace must be a non-empty string, got {state_namespace!r}")
    if state_namespace == CONCERNS_STATE or ":" in state_namespace:
        raise OptionError(
            f"state_namespace={state_namespace!r} is reserved (the concerns layer keeps its "
            "state under 'concerns', and ':' separates keys); choose another, such as "
            "'progressive'"
        )


_O = TypeVar("_O", SearchOptions, ProgressiveOptions, ConcernOptions)
AnyOptions = SearchOptions | ProgressiveOptions | ConcernOptions
"""Any feature's options object."""


def resolve_options(
    kind: type[_O], options: _O | None, keywords: Mapping[str, Any], *, owner: str
) -> _O:
    """``options`` when given (then no keyword may differ from its default), else
    ``kind(**keywords)``: a middleware's one way to its options object.

    Example:
        ```python
        resolve_options(SearchOptions, None, {"max_results": 5}, owner="SearchMiddleware")
        ```
    """
    if options is None:
        return kind(**keywords)
    if not isinstance(options, kind):
        raise OptionError(
            f"options must be a {kind.__name__}, got {type(options).__name__}: "
            f"{owner}(options={kind.__name__}(...))"
        )
    defaults = option_defaults(kind)
    given = [name for name, value in keywords.items() if value != defaults[name]]
    if given:
        shown = ", ".join(f"{name}={keywords[name]!r}" for name in given)
        raise OptionError(
            f"{owner} got options= and {shown}: give each option once, either in "
            f"options={kind.__name__}(..., {shown}) or as keywords, leaving options= out"
        )
    return options


def option_defaults(
    kind: type[AnyOptions],
) -> dict[str, Any]:
    """Each option of ``kind`` and its default, in declaration order.

    Example:
        ```python
        option_defaults(SearchOptions)["max_results"]  # 10
        ```
    """
    return {f.name: f.default for f in dataclasses.fields(kind)}


def option_names(
    kind: type[AnyOptions],
) -> Collection[str]:
    """The names of ``kind``'s options, in declaration order.

    Example:
        ```python
        "max_tools" in option_names(ProgressiveOptions)  # True
        ```
    """
    return tuple(f.name for f in dataclasses.fields(kind))

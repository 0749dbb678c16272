"""Concern declarations, component values and client configurations: parsing and matching."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

from fastmcp_filtering.core.catalog import kind_label
from fastmcp_filtering.core.declarations import (
    CONCERNS_META_ALIAS,
    CONCERNS_META_KEY,
    function_attributes,
    lineage,
    set_function_attribute,
    validate_name,
)
from fastmcp_filtering.core.errors import OptionError, OptionTypeError
from fastmcp_filtering.core.request import invalid_params

if TYPE_CHECKING:
    from fastmcp.utilities.components import FastMCPComponent

REQUEST_META_KEY = CONCERNS_META_KEY
"""The request ``_meta`` key whose object overrides the client's concerns for one request."""

REQUEST_META_ALIAS = CONCERNS_META_ALIAS
"""The override's former key under MCP's reserved prefix, still accepted."""

COMPONENT_META_KEY = "concerns"
"""The component ``_meta`` key (the proposal's ``_meta.concerns``) holding its concern values."""

STATE_NAMESPACE = "concerns"
"""Where the concerns layer keeps a client's configuration in the state store."""

MAX_CONFIG_ENTRIES = 64
"""Most entries a client configuration may hold; larger objects are refused with -32602."""

MAX_VALUE_LENGTH = 256
"""Longest concern value accepted in a declaration."""

_FN_ATTRIBUTE = "__fastmcp_filtering_concerns__"
_ECHO = 64


def label(component: FastMCPComponent) -> str:
    """How messages name a component: ``tool 'encrypt_data'``."""
    return f"{kind_label(component)} {component.name!r}"


def _short(value: object) -> str:
    """``repr(value)`` cut short, so a huge payload is never echoed back."""
    text = repr(value)
    return text if len(text) <= _ECHO else f"{text[:_ECHO]}...'"


def check_value(value: object, *, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_VALUE_LENGTH:
        raise OptionError(
            f"{what} must be a non-empty string of at most {MAX_VALUE_LENGTH} characters, "
            f"got {_short(value)}"
        )
    return value


@dataclass(frozen=True, slots=True)
class Concern:
    """A user-facing dimension a client can state a preference on (security, cost, ...).

    ``values`` are the levels a client may ask for; ``default`` applies to every
    client that does not configure this concern (without one, such a client sees
    every value). With ``ordered=True`` the values run from strictest to loosest
    and a client asking one value also gets components mapped to a stricter one:
    ``security: "medium"`` lists tools mapped ``high`` and ``medium``, not ``low``.

    Example:
        ```python
        Concern("security", description="Security level required",
                values=["high", "medium", "low"], default="medium", ordered=True)
        ```
    """

    name: str
    _: KW_ONLY
    values: Sequence[str]
    description: str | None = None
    default: str | None = None
    ordered: bool = False
    rank: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        validate_name(self.name, what="concern")
        if isinstance(self.values, str) or not isinstance(self.values, Sequence):
            raise OptionError(
                f"Concern {self.name!r}: values must be a list of strings, "
                f"e.g. values=['high', 'low'], got {_short(self.values)}"
            )
        values = tuple(
            check_value(v, what=f"a value of concern {self.name!r}") for v in self.values
        )
        if not values:
            raise OptionError(f"Concern {self.name!r} needs at least one value: values=['high']")
        if duplicates := sorted({v for v in values if values.count(v) > 1}):
            raise OptionError(
                f"Concern {self.name!r} repeats value(s) {duplicates}; list each once"
            )
        if self.default is not None and self.default not in values:
            raise OptionError(
                f"Concern {self.name!r}: default {_short(self.default)} is not one of its "
                f"values {list(values)}; pick one of them or leave default unset"
            )
        if not isinstance(self.ordered, bool):
            raise OptionError(f"Concern {self.name!r}: ordered must be True or False")
        if self.description is not None and not isinstance(self.description, str):
            raise OptionError(f"Concern {self.name!r}: description must be a string")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "rank", {v: i for i, v in enumerate(values)})

    def admits(self, mapped: str, asked: str) -> bool:
        """True if a component mapped ``mapped`` suits a client asking ``asked``."""
        if not self.ordered:
            return mapped == asked
        # Unknown mapped values never reach here: declarations are checked against values.
        return self.rank.get(mapped, len(self.values)) <= self.rank[asked]

    def accepted(self, asked: str) -> list[str]:
        """The mapped values a client asking ``asked`` gets."""
        return [v for v in self.values if self.admits(v, asked)]

    def to_wire(self) -> dict[str, Any]:
        """The concern as ``capabilities.concerns`` and ``concerns/list`` carry it."""
        wire: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            wire["description"] = self.description
        wire["values"] = list(self.values)
        if self.default is not None:
            wire["default"] = self.default
        if self.ordered:
            wire["ordered"] = True
        return wire


@dataclass(frozen=True, slots=True)
class ConcernsFromToken:
    """The concern configuration a caller's token states: by its scopes, or from a claim.

    The 2026-07-28 way to configure concerns per user: a list varies by "the
    authorization presented on the request", never by another request. A token's
    ``claim`` (an object such as ``{"security": "high"}``) comes first; then each
    scope in ``scopes`` the token holds, in the order given, fills the concerns not
    yet configured. Checked against the declared concerns when the middleware is
    built; a claim entry the declarations do not allow is ignored and logged.

    Example:
        ```python
        ConcernMiddleware(
            concerns=[Concern("risk", values=["safe", "any"])],
            authorization=ConcernsFromToken(scopes={"interns": {"risk": "safe"}}),
        )
        ```
    """

    _: KW_ONLY
    scopes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Scope name to the concern values a token holding it configures."""
    claim: str | None = None
    """A token claim holding ``{concern: value}``; None reads no claim."""

    def __post_init__(self) -> None:
        if not isinstance(self.scopes, Mapping) or not all(
            isinstance(k, str) and isinstance(v, Mapping) for k, v in self.scopes.items()
        ):
            raise OptionError(
                f"scopes must map scope names to concern values, like "
                f"{{'interns': {{'security': 'high'}}}}, got {_short(self.scopes)}"
            )
        if self.claim is not None and (not isinstance(self.claim, str) or not self.claim):
            raise OptionError(f"claim must be a claim name or None, got {_short(self.claim)}")
        if not self.scopes and self.claim is None:
            raise OptionError("ConcernsFromToken needs scopes={...} or claim='...'")

    def configured(
        self, scopes: Sequence[str], claims: Mapping[str, Any], declared: Mapping[str, Concern]
    ) -> tuple[dict[str, str] | None, list[str]]:
        """The configuration a token with ``scopes`` and ``claims`` states, and what was ignored.

        None when the token states nothing (no claim, no listed scope): the client
        then counts as one that stated no concern.
        """
        config: dict[str, str] = {}
        ignored: list[str] = []
        raw = claims.get(self.claim) if self.claim is not None else None
        if isinstance(raw, Mapping):
            for name, value in raw.items():
                concern = declared.get(name) if isinstance(name, str) else None
                if concern is None or not isinstance(value, str) or value not in concern.rank:
                    ignored.append(f"claim {self.claim!r}: {_short(name)}={_short(value)}")
                else:
                    config[name] = value
        elif raw is not None:
            ignored.append(f"claim {self.claim!r} is not an object")
        stated = bool(config) or raw is not None
        for scope, values in self.scopes.items():
            if scope in scopes:
                stated = True
                for name, value in values.items():
                    config.setdefault(name, value)
        return (config if stated else None), ignored


def parse_config(
    raw: object, declared: Mapping[str, Concern], *, field: str
) -> tuple[dict[str, str], list[str]]:
    """Validate a client's configuration: the accepted entries and warnings for ignored ones.

    Raises -32602 for anything but an object, an object with too many entries, or
    a value outside the concern's ``values``. Unknown names are ignored with a
    warning, as the proposal allows; they cannot widen the list.
    """
    if not isinstance(raw, Mapping):
        raise invalid_params(
            f"{field} must be an object mapping concern names to values, like "
            f"{{'security': 'high'}}, got {type(raw).__name__}; call concerns/list for the names",
            field=field,
        )
    if len(raw) > MAX_CONFIG_ENTRIES:
        raise invalid_params(
            f"{field} has {len(raw)} entries; at most {MAX_CONFIG_ENTRIES} are accepted, "
            f"and this server declares {len(declared)} concern(s): {sorted(declared)}",
            field=field,
        )
    config: dict[str, str] = {}
    warnings: list[str] = []
    for name, value in raw.items():
        concern = declared.get(name) if isinstance(name, str) else None
        if concern is None:
            warnings.append(
                f"unknown concern {_short(name)} ignored; this server declares {sorted(declared)}"
            )
            continue
        if not isinstance(value, str) or value not in concern.rank:
            raise invalid_params(
                f"{field}.{name}: {_short(value)} is not a value of concern {name!r}; "
                f"allowed values: {list(concern.values)}",
                field=f"{field}.{name}",
                concern=name,
                allowed=list(concern.values),
            )
        config[name] = value
    return config, warnings


def declare_on(target: object, values: Mapping[str, str]) -> None:
    """Record ``values`` on a component's ``_meta`` or a function, refusing conflicts."""
    from fastmcp.utilities.components import FastMCPComponent

    if isinstance(target, FastMCPComponent):
        meta = dict(target.meta or {})
        existing = meta.get(COMPONENT_META_KEY) or {}
        where = label(target)
        meta[COMPONENT_META_KEY] = merge_values(
            [("its _meta['concerns']", existing), ("@concerns", values)], where=where
        )
        target.meta = meta
        fn = getattr(target, "fn", None)
        if fn is not None:
            _declare_on_function(fn, values)
        return
    if callable(target):
        _declare_on_function(target, values)
        return
    raise OptionTypeError(
        f"@concerns applies to functions and FastMCP components, not {type(target).__name__}"
    )


def _declare_on_function(fn: object, values: Mapping[str, str]) -> None:
    existing: Mapping[str, str] = getattr(fn, _FN_ATTRIBUTE, {})
    merged = merge_values(
        [("@concerns", existing), ("@concerns", values)],
        where=f"function {getattr(fn, '__name__', fn)!r}",
    )
    set_function_attribute(fn, _FN_ATTRIBUTE, merged)


def _function_values(fn: object) -> dict[str, str]:
    found: dict[str, str] = {}
    for values in function_attributes(fn, _FN_ATTRIBUTE):
        found.update(values)
    return found


def merge_values(sources: Sequence[tuple[str, object]], *, where: str) -> dict[str, str]:
    """Union the concern values of several sources; a concern given two values is a ValueError."""
    merged: dict[str, str] = {}
    origin: dict[str, str] = {}
    for source, values in sources:
        if not values:
            continue
        if not isinstance(values, Mapping):
            raise OptionError(
                f"{where}: {source} must be an object like {{'security': 'high'}}, "
                f"got {_short(values)}"
            )
        for name, value in values.items():
            validate_name(name, what=f"concern in {source} of {where}")
            check_value(value, what=f"{source} value of concern {name!r} on {where}")
            if name in merged and merged[name] != value:
                raise OptionError(
                    f"{where}: concern {name!r} is {merged[name]!r} in {origin[name]} but "
                    f"{value!r} in {source}; give each concern one value per component"
                )
            merged[name] = value
            origin.setdefault(name, source)
    return merged


def component_keys(component: FastMCPComponent) -> tuple[str, ...]:
    """The names a ``mapping`` entry may use for ``component``: its name, URI or URI template."""
    keys = [component.name]
    for attribute in ("uri", "uri_template"):
        value = getattr(component, attribute, None)
        if value is not None and str(value) != component.name:
            keys.append(str(value))
    return tuple(keys)


def declared_values_of(
    component: FastMCPComponent, mapping: Mapping[str, Mapping[str, str]]
) -> dict[str, str]:
    """A component's concern values, unioned from all three sources.

    ``mapping`` by name or URI, ``_meta['concerns']`` and ``@concerns``. Raises
    ``ValueError`` when two sources give one concern different values.
    """
    where = label(component)
    sources: list[tuple[str, object]] = []
    # What the tools it was made from declare (a rename's parent), it declares too.
    for source in lineage(component):
        sources.extend(
            (f"mapping[{key!r}]", mapping[key]) for key in component_keys(source) if key in mapping
        )
        sources.append(("_meta['concerns']", (source.meta or {}).get(COMPONENT_META_KEY)))
        sources.append(("@concerns", _function_values(getattr(source, "fn", None))))
    return merge_values(sources, where=where)

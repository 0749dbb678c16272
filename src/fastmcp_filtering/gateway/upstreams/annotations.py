"""MCP tool annotations as a ``risk`` value and tags: the ``from_annotations`` preset.

A tool's ``risk`` is ``read-only`` when ``readOnlyHint`` is true, ``write`` when
it is not read-only and ``destructiveHint`` is false, and ``destructive``
otherwise. That follows the MCP defaults: an unset ``readOnlyHint`` is false and
an unset ``destructiveHint`` is true, so a tool that says nothing is treated as
destructive (unknown means the strictest reading).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RISK_VALUES = ("read-only", "write", "destructive")
"""The values of a concern ``from_annotations``, strictest first (it is ``ordered``)."""

RISK_DESCRIPTION = (
    "How much a tool may change, from its MCP annotations: read-only < write < destructive"
)

# Tag name -> (hint, value that earns it, description): only hints a tool states explicitly.
ANNOTATION_TAGS: dict[str, tuple[str, bool, str]] = {
    "read-only": ("readOnlyHint", True, "readOnlyHint: does not modify its environment"),
    "destructive": (
        "destructiveHint",
        True,
        "destructiveHint: may delete or overwrite (and is not read-only)",
    ),
    "idempotent": ("idempotentHint", True, "idempotentHint: calling it again changes nothing"),
    "open-world": ("openWorldHint", True, "openWorldHint: reaches beyond the server (the web)"),
}

_MISSING = object()

_HINTS = {
    "readOnlyHint": "read_only_hint",
    "destructiveHint": "destructive_hint",
    "idempotentHint": "idempotent_hint",
    "openWorldHint": "open_world_hint",
}


def hints(annotations: object) -> dict[str, bool]:
    """The boolean hints a tool's annotations state, by their MCP names (``readOnlyHint``).

    Takes the MCP SDK's ``ToolAnnotations`` (either spelling of the fields), a
    mapping as on the wire, or None; unset or non-boolean hints are left out.
    """
    found: dict[str, bool] = {}
    if annotations is None:
        return found
    for wire, python in _HINTS.items():
        value: Any
        if isinstance(annotations, Mapping):
            value = annotations.get(wire, annotations.get(python))
        else:
            # The wire spelling is a deprecated alias on the SDK's model: read it only
            # from objects that lack the Python one, so no warning is raised for them.
            value = getattr(annotations, python, _MISSING)
            if value is _MISSING:
                value = getattr(annotations, wire, None)
        if isinstance(value, bool):
            found[wire] = value
    # A destructive hint means nothing on a read-only tool (the MCP spec).
    if found.get("readOnlyHint"):
        found.pop("destructiveHint", None)
    return found


def is_annotated(annotations: object) -> bool:
    """Whether the annotations say anything about risk (``readOnlyHint`` or ``destructiveHint``)."""
    stated = hints(annotations)
    return "readOnlyHint" in stated or "destructiveHint" in stated


def risk_of(annotations: object) -> str:
    """``read-only``, ``write`` or ``destructive`` from a tool's annotations (MCP defaults)."""
    stated = hints(annotations)
    if stated.get("readOnlyHint", False):
        return "read-only"
    if not stated.get("destructiveHint", True):
        return "write"
    return "destructive"

"""Copies of listed components with the package's ``_meta`` entries, made once per component."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from fastmcp_filtering.core.declarations import same_kind

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Mapping, Sequence

    from fastmcp.utilities.components import FastMCPComponent

__all__ = ["Marks"]

_C = TypeVar("_C", bound="FastMCPComponent")

_MAX_CACHED = 100_000


class Marks:
    """Adds ``_meta`` entries to listed components, remembering each copy while ``version`` holds.

    A listing marks every component on every request: a copy is made only for a
    component whose entries differ from its own ``_meta``, and reused until the
    component object or ``version`` changes. Entries that depend on the client
    (the groups its principal may know) pass their own ``entries`` and a
    ``version`` naming that dependency; copies are kept per version. Copies
    keep the meta-tool mark.
    """

    def __init__(
        self, entries: Callable[[FastMCPComponent], Mapping[str, Any]] | None = None
    ) -> None:
        self._entries = entries
        self._copies: dict[tuple[int, Hashable], tuple[FastMCPComponent, FastMCPComponent]] = {}

    def apply(
        self,
        components: Sequence[_C],
        version: Hashable = None,
        entries: Callable[[FastMCPComponent], Mapping[str, Any]] | None = None,
    ) -> list[_C]:
        """``components`` in order, each with its entries in ``_meta``."""
        compute = entries or self._entries
        assert compute is not None, "Marks needs entries, at construction or per call"
        copies = self._copies
        marked: list[_C] = []
        for component in components:
            # The hot loop of every listing: one lookup per component while nothing changed.
            hit = copies.get((id(component), version))
            if hit is not None and hit[0] is component:
                marked.append(hit[1])  # type: ignore[arg-type]  # cast() costs a call per item
            else:
                marked.append(self._mark(component, version, compute))
        return marked

    def _mark(
        self,
        component: _C,
        version: Hashable,
        entries: Callable[[FastMCPComponent], Mapping[str, Any]],
    ) -> _C:
        wanted = entries(component)
        meta = component.meta or {}
        copy = component
        if any(meta.get(key) != value for key, value in wanted.items()):
            copy = same_kind(component, component.model_copy(update={"meta": {**meta, **wanted}}))
        if len(self._copies) > _MAX_CACHED:
            self._copies.clear()
        # Holding the original keeps its id from being reused by another object.
        self._copies[(id(component), version)] = (component, copy)
        return copy

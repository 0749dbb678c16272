"""The public module paths of earlier releases, kept importable after the move to subpackages.

``fastmcp_filtering.filter``, ``.search``, ``.config`` and the other public modules that
sat at the package's top level now live in subpackages. Importing an old path still works:
a meta path finder answers it with a module that forwards every attribute to the new one
and warns once, naming the import to use instead.

Example:
    ```python
    from fastmcp_filtering.filter import FilterMiddleware  # DeprecationWarning
    from fastmcp_filtering import FilterMiddleware  # the supported path
    ```
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Any

__all__ = ["MOVED", "install_moved_modules"]

_PACKAGE = "fastmcp_filtering"

MOVED: dict[str, tuple[str, str]] = {
    # old module: (where it lives now, what to import instead)
    "access": ("middleware.access", "fastmcp_filtering"),
    "concerns": ("middleware.concerns", "fastmcp_filtering"),
    "filter": ("middleware.filter", "fastmcp_filtering"),
    "progressive": ("middleware.progressive", "fastmcp_filtering"),
    "search": ("middleware.search", "fastmcp_filtering"),
    "stack": ("middleware.stack", "fastmcp_filtering"),
    "suggest": ("gateway.suggest", "fastmcp_filtering"),
    "config": ("gateway.config", "fastmcp_filtering.gateway"),
    "proxy": ("gateway.proxy", "fastmcp_filtering.gateway"),
    "cli": ("gateway.cli", "fastmcp_filtering.gateway"),
}
"""Each moved module, with its new home and the public namespace users import from."""


class _Forwarding(ModuleType):
    """A module that answers every attribute from the module it moved to."""

    __target__: ModuleType

    def __getattr__(self, name: str) -> Any:
        # Before exec_module the import system probes dunders: those are this module's own.
        target = self.__dict__.get("__target__")
        if target is None:
            raise AttributeError(name)
        return getattr(target, name)

    def __dir__(self) -> list[str]:
        return dir(self.__dict__.get("__target__"))


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths in ``MOVED`` and loads them as forwarding modules."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        old = fullname.removeprefix(f"{_PACKAGE}.")
        if old == fullname or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return _Forwarding(spec.name)

    def exec_module(self, module: ModuleType) -> None:
        old = module.__name__.removeprefix(f"{_PACKAGE}.")
        new, public = MOVED[old]
        warnings.warn(
            f"{module.__name__} moved; import from {public} instead",
            DeprecationWarning,
            stacklevel=2,
        )
        module.__target__ = importlib.import_module(f"{_PACKAGE}.{new}")  # type: ignore[attr-defined]


def install_moved_modules() -> None:
    """Answer imports of the old public module paths (once per interpreter)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())

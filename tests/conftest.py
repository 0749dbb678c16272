"""Shared fixtures: every feature is exercised in both protocol eras."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from fastmcp import Client, FastMCP

from fastmcp_filtering import ConcernMiddleware, ProgressiveDisclosureMiddleware, install
from fastmcp_filtering.server.hooks import ListHooks

SEMANTIC_MODULES = ("numpy", "onnxruntime", "tokenizers", "fastmcp_filtering_model")
"""What the ``semantic`` extra installs: ``MiniLMEmbedder`` imports each of them."""


@functools.cache
def importable(module: str) -> bool:
    """Whether ``module`` imports: installed is not enough (a wheel whose native library is
    missing, or built for another numpy, fails on import)."""
    try:
        importlib.import_module(module)
    except (ImportError, OSError):
        return False
    return True


def need(what: str, *modules: str, hint: str, found: tuple[str, ...] = ()) -> None:
    """Skip, naming ``hint``, unless ``modules`` import and ``found`` are installed (packages
    whose files are read, never imported); in CI, where the extras are installed, fail."""
    missing = [m for m in modules if not importable(m)]
    missing += [m for m in found if importlib.util.find_spec(m) is None]
    if not missing:
        return
    message = f"{what} needs {', '.join(missing)} (missing or not importable): {hint}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message} (CI installs it; a skip here would hide the tests)")
    pytest.skip(message)


ERAS = {"modern": {}, "legacy": {"mode": "legacy"}}
"""2026-07-28 (stateless, server/discover) is FastMCP's default; 2025-11-25 is "legacy"."""

Connect = Callable[..., Any]


@pytest.fixture(params=list(ERAS), ids=list(ERAS))
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def _side_effect_lists(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test marked ``side_effect_lists`` runs, on 2026-07-28, with that opt-in on by default.

    Such a test checks lists that change by the client's own calls (``enable_tools``,
    ``concerns/update``): 2025-11-25 behaviour, which 2026-07-28 keeps only with
    ``side_effect_lists=True``. Fixed 2026-07-28 lists have tests of their own
    (``tests/progressive/test_fixed_lists.py``, ``tests/concerns/test_per_request.py``).
    """
    if request.node.get_closest_marker("side_effect_lists") is None:
        return
    callspec = getattr(request.node, "callspec", None)
    era = callspec.params.get("era") if callspec is not None else None
    if era == "legacy":
        return
    for cls in (ProgressiveDisclosureMiddleware, ConcernMiddleware):
        defaults = {**(cls.__init__.__kwdefaults__ or {}), "side_effect_lists": True}
        monkeypatch.setattr(cls.__init__, "__kwdefaults__", defaults)


@pytest.fixture
def connect(era: str) -> Connect:
    """Open an in-memory ``Client`` on a server in the era under test."""

    @asynccontextmanager
    async def _connect(server: FastMCP, **kwargs: Any) -> AsyncIterator[Client[Any]]:
        async with Client(server, **ERAS[era], **kwargs) as client:
            yield client

    return _connect


def use(server: FastMCP, *middlewares: Any) -> None:
    """Add middlewares in order: the package's through ``install``, others as FastMCP does."""
    for middleware in middlewares:
        if isinstance(middleware, ListHooks):
            install(server, middleware)
        else:
            server.add_middleware(middleware)


SETUPS = ("install", "add_middleware")
"""How a server gets the package's middlewares: ``install``/``add_filtering`` set it up at
once; ``mcp.add_middleware`` (FastMCP's way) leaves setting up to the first message."""


def add_the_fastmcp_way(server: FastMCP, *middlewares: ListHooks) -> None:
    """``install`` as a FastMCP user writes it: ``mcp.add_middleware`` for each, nothing else."""
    for middleware in middlewares:
        server.add_middleware(middleware)


@pytest.fixture(params=SETUPS, ids=list(SETUPS))
def setup_way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with servers set up by ``install`` and again by ``mcp.add_middleware`` only.

    Under ``add_middleware`` every ``install`` the tests and ``add_filtering`` call
    becomes plain ``mcp.add_middleware`` calls (``add_filtering`` adds its
    ``filtering_stack`` that way).
    """
    if request.param == "add_middleware":
        real = install  # this module's own name is replaced too (for use())
        for module in list(sys.modules.values()):
            name = getattr(module, "__name__", "")
            owned = name == "tests" or name.startswith(("tests.", "fastmcp_filtering"))
            if owned and getattr(module, "install", None) is real:
                monkeypatch.setattr(module, "install", add_the_fastmcp_way)
    return str(request.param)

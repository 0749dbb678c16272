"""A policy layer as a newcomer writes one, through the public extension points."""

from __future__ import annotations

from collections.abc import Callable

from fastmcp.utilities.components import FastMCPComponent

# The extension points as the docs name them: public names of fastmcp_filtering.
from fastmcp_filtering import ClientRequest, Hidden, LayerMiddleware, LayerView, PolicyLayer


class _Judge:
    def __init__(self, hide: Callable[[FastMCPComponent], str | None]) -> None:
        self._hide = hide

    def judge(self, component: FastMCPComponent) -> Hidden | None:
        message = self._hide(component)
        return None if message is None else Hidden(message)


class _HideLayer(PolicyLayer):
    def __init__(self, hide: Callable[[FastMCPComponent], str | None]) -> None:
        self._view = _Judge(hide)

    async def view(self, client: ClientRequest) -> LayerView:
        return self._view


class HideLayer(LayerMiddleware):
    """A fifth layer, as a newcomer writes one: a policy class and a middleware holding it."""

    def __init__(self, hide: Callable[[FastMCPComponent], str | None]) -> None:
        self.policy_layer = _HideLayer(hide)


def hide_secret(component: FastMCPComponent) -> str | None:
    if "secret" in component.tags:
        return f"{component.name} is hidden: ask for clearance first"
    return None


def HideSecret() -> HideLayer:
    """A layer that hides whatever is tagged ``secret``."""
    return HideLayer(hide_secret)

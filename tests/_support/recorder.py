"""A client message handler that records the notifications a client receives."""

from __future__ import annotations

from typing import Any


class Recorder:
    """A client message handler that keeps the methods of the notifications it receives."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    async def __call__(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if isinstance(method, str) and method.startswith("notifications/"):
            self.methods.append(method)

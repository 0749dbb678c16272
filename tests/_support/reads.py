"""Each kind of read a client makes through the gateway (a prompt, a resource, a template)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastmcp import Client

Read = Callable[[Client[Any]], Awaitable[object]]


READS: dict[str, tuple[str, str, Read]] = {
    "prompt": ("prompts/get", "prompt 's_greet'", lambda c: c.get_prompt("s_greet")),
    "resource": (
        "resources/read",
        "resource 'memo://s/note'",
        lambda c: c.read_resource("memo://s/note"),
    ),
    "template": (
        "resources/read",
        "resource 'memo://s/notes/7'",
        lambda c: c.read_resource("memo://s/notes/7"),
    ),
}
"""Each kind of read through the gateway: the method its upstream is asked, what the log names,
and the request."""

"""What holds for the code running now, whoever the client: the ``unrestricted()`` block.

Server code and the package's own bookkeeping sometimes need the whole catalog (a
startup check, counting a group's members, announcing a change every client may
see). Inside ``unrestricted()`` FastMCP's lookups skip every policy layer; outside
it, every lookup is judged for the request's client.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["is_unrestricted", "unrestricted"]

_UNRESTRICTED: ContextVar[bool] = ContextVar("fastmcp_filtering_unrestricted", default=False)


@contextlib.contextmanager
def unrestricted() -> Iterator[None]:
    """Look components up as no client sees them: the whole catalog, every layer aside.

    Outside a request FastMCP's lookups find nothing once a layer is set up
    (there is no client to judge for). Server code that needs the whole
    catalog (a startup check, an admin script) and the package's own
    bookkeeping (counting a group's members) look inside this block; never
    hand what it returns to a client.

    Example:
        ```python
        with unrestricted():
            every_tool = await mcp.list_tools(run_middleware=False)
        ```
    """
    token = _UNRESTRICTED.set(True)
    try:
        yield
    finally:
        _UNRESTRICTED.reset(token)


def is_unrestricted() -> bool:
    """Whether lookups show the whole catalog (inside ``unrestricted()``)."""
    return _UNRESTRICTED.get()

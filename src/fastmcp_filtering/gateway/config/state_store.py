"""The gateway's session state store: a failure told once to the operator, plainly to clients.

``GatewayStore`` wraps the store ``[state]`` configures (this process's memory, or
a Redis every replica shares). While it fails, each operation raises an
``MCPError`` clients read as "the gateway's state store is unavailable", never
the store's address or driver message, and the log gets one line when it fails
and one when it answers again (details at ``--log-level debug``). A client's
stored state (enabled groups, concerns) lives ``ttl_seconds`` after its last
change.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, NoReturn, SupportsFloat, TypeVar

import mcp_types as mt
from key_value.aio.wrappers.base import BaseWrapper
from mcp.shared.exceptions import MCPError
from typing_extensions import override

from fastmcp_filtering.core.errors import OptionError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Mapping, Sequence

    from key_value.aio.protocols.key_value import AsyncKeyValue

_T = TypeVar("_T")

logger = logging.getLogger("fastmcp_filtering")

CLIENT_MESSAGE = "the gateway's state store is unavailable; try again later"
"""What a client whose request needs the store is answered while it fails."""
# The package's per-client state (enabled groups, concerns) is stored under this prefix;
# task records share it but keep the lifetime their task asked for.
_CLIENT_STATE = "fastmcp-filtering:"
_TASK_RECORDS = "fastmcp-filtering:task:"


class GatewayStore(BaseWrapper):
    """A py-key-value store whose failures reach clients as one plain error, logged once.

    ``where`` names the store in the log (its URL, password masked); clients never
    see it. Each client's state is kept ``ttl`` seconds after it last changed.

    Example:
        ```python
        store = GatewayStore(RedisStore(client=redis), where="redis://redis:6379/0", ttl=86400)
        server = FastMCP("gateway", session_state_store=store)
        ```
    """

    def __init__(self, key_value: AsyncKeyValue, *, where: str, ttl: float) -> None:
        if not ttl > 0:
            raise OptionError(f"ttl={ttl!r} must be a positive number of seconds, such as 86400")
        self.key_value = key_value
        self.where = where
        self.ttl_seconds = ttl
        self.failing = False

    def _failed(self, error: Exception) -> NoReturn:
        if not self.failing:
            self.failing = True
            logger.warning(
                "state store %s is unavailable (%s); clients get only the initial groups and "
                "default concerns, and requests that need it fail with %r, until it answers",
                self.where,
                type(error).__name__,
                CLIENT_MESSAGE,
            )
        logger.debug("state store %s failed", self.where, exc_info=error)
        raise MCPError(code=mt.INTERNAL_ERROR, message=CLIENT_MESSAGE) from error

    def _answered(self) -> None:
        if self.failing:
            self.failing = False
            logger.info("state store %s answers again", self.where)

    def _lifetime(self, key: str, ttl: SupportsFloat | None) -> SupportsFloat | None:
        if key.startswith(_CLIENT_STATE) and not key.startswith(_TASK_RECORDS):
            return self.ttl_seconds
        return ttl

    async def _run(self, pending: Awaitable[_T]) -> _T:
        try:
            result = await pending
        except Exception as error:
            self._failed(error)
        self._answered()
        return result

    @override
    async def get(self, key: str, *, collection: str | None = None) -> dict[str, Any] | None:
        return await self._run(self.key_value.get(key=key, collection=collection))

    @override
    async def get_many(
        self, keys: Sequence[str], *, collection: str | None = None
    ) -> list[dict[str, Any] | None]:
        return await self._run(self.key_value.get_many(keys=keys, collection=collection))

    @override
    async def ttl(
        self, key: str, *, collection: str | None = None
    ) -> tuple[dict[str, Any] | None, float | None]:
        return await self._run(self.key_value.ttl(key=key, collection=collection))

    @override
    async def put(
        self,
        key: str,
        value: Mapping[str, Any],
        *,
        collection: str | None = None,
        ttl: SupportsFloat | None = None,
    ) -> None:
        lifetime = self._lifetime(key, ttl)
        await self._run(
            self.key_value.put(key=key, value=value, collection=collection, ttl=lifetime)
        )

    @override
    async def delete(self, key: str, *, collection: str | None = None) -> bool:
        return await self._run(self.key_value.delete(key=key, collection=collection))

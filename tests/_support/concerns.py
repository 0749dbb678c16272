"""A server filtered by concerns, a state store that fails on cue, and a raw handshake."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, ClassVar

import mcp_types as mt
from fastmcp import Client, FastMCP
from key_value.aio.stores.memory import MemoryStore
from pydantic import BaseModel

from fastmcp_filtering.concern.middleware import Concern, ConcernMiddleware, concerns

from ..conftest import use


def declared(*, ordered: bool = False) -> list[Concern]:
    return [
        Concern(
            "security",
            description="Security level required",
            values=["high", "medium", "low"],
            default="medium",
            ordered=ordered,
        ),
        Concern("cost", values=["minimal", "moderate", "high"]),
    ]


MAPPING = {
    "encrypt_data": {"security": "high", "cost": "minimal"},
    "log_data": {"security": "medium"},
    "vault://key": {"security": "high"},
    "logs://{day}": {"security": "medium", "cost": "moderate"},
}


class FlakyStore(MemoryStore):
    """The default state store, until ``broken`` is set; then it fails for concerns' keys.

    FastMCP keeps its own session state (visibility) in the same store; that part
    keeps working so the failure is the package's alone.
    """

    broken = False

    def _check(self, key: str) -> None:
        if self.broken and key.startswith("fastmcp-filtering:concerns:"):
            raise ConnectionError("state store down")

    async def get(self, key: str, *, collection: str | None = None) -> Any:
        self._check(key)
        return await super().get(key, collection=collection)

    async def put(self, key: str, value: Any, **kwargs: Any) -> None:
        self._check(key)
        await super().put(key, value, **kwargs)


def make_server(
    *,
    ordered: bool = False,
    page_size: int | None = None,
    store: MemoryStore | None = None,
    apply_defaults: Any = "all",
) -> tuple[FastMCP, ConcernMiddleware]:
    """A server with concerns; by default they filter every client (the defaults apply)."""
    mcp = FastMCP("concerns", list_page_size=page_size, session_state_store=store)

    @mcp.tool
    def encrypt_data(data: str) -> str:
        return data[::-1]

    @mcp.tool
    def log_data(line: str) -> str:
        return f"logged {line}"

    @mcp.tool
    def validate_data(data: str) -> bool:
        return bool(data)

    @concerns(security="low", cost="high")
    @mcp.tool
    def dump_plaintext(data: str) -> str:
        return data

    @mcp.tool(meta={"concerns": {"cost": "moderate"}})
    def archive(name: str) -> str:
        return name

    @mcp.prompt
    @concerns(security="high")
    def secure_review(code: str) -> str:
        return f"Review {code}"

    @mcp.prompt
    def summarize(text: str) -> str:
        return text

    @mcp.resource("vault://key")
    def vault_key() -> str:
        return "k"

    @mcp.resource("notes://today")
    def notes() -> str:
        return "notes"

    @mcp.resource("logs://{day}")
    def logs(day: str) -> str:
        return day

    middleware = ConcernMiddleware(
        concerns=declared(ordered=ordered), mapping=MAPPING, apply_defaults=apply_defaults
    )
    use(mcp, middleware)
    return mcp, middleware


def names(items: Any) -> list[str]:
    return sorted(item.name for item in items)


class _Raw(BaseModel):
    method: str
    params: dict[str, Any] | None = None
    name_param: ClassVar[str | None] = None


@asynccontextmanager
async def handshake(
    server: FastMCP,
    *,
    initialize: dict[str, Any] | None = None,
    initialized: dict[str, Any] | None = None,
    client: Client[Any] | None = None,
) -> AsyncIterator[Client[Any]]:
    """A 2025-11-25 client whose ``initialize`` and ``initialized`` carry extra params
    (``client``: one made with ``mode="legacy", auto_initialize=False``; in memory if None)."""
    client = client or Client(server, mode="legacy", auto_initialize=False)
    async with client:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
            **(initialize or {}),
        }
        request = _Raw(method="initialize", params=params)
        result = await client.session.send_request(request, mt.InitializeResult)  # type: ignore[arg-type]
        client.session.adopt(result)
        notification = _Raw(method="notifications/initialized", params=initialized)
        await client.session.send_notification(notification)  # type: ignore[arg-type]
        yield client

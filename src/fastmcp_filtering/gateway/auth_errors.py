"""A refused token told in an API key's terms, not an OAuth client's.

FastMCP answers a token it does not accept with HTTP 401 and a description
meant for OAuth clients ("...re-register and obtain new tokens"), which a
gateway's static tokens and pre-issued JWTs cannot do. ``PlainTokenErrors``
(added through ``AuthProvider.get_middleware``, FastMCP's public hook) keeps
the status, ``error="invalid_token"`` and every other ``WWW-Authenticate``
parameter, and replaces only the description, in the header and the body.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from starlette.middleware import Middleware

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

INVALID_TOKEN = (
    "invalid token: this gateway does not accept the bearer token sent "
    "(unknown, expired or malformed); check the token your client is configured with"
)
_DESCRIPTION = re.compile(r'error_description="[^"]*"')


class PlainTokenErrors:
    """ASGI middleware: a 401 ``invalid_token`` answer gets a plain description.

    Example:
        ```python
        app = PlainTokenErrors(app)
        ```
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rewriting = False

        async def plain(message: Message) -> None:
            nonlocal rewriting
            if message["type"] == "http.response.start" and _refused(message):
                rewriting = True
                await send(_plain_start(message))
                return
            if message["type"] == "http.response.body" and rewriting:
                if not message.get("more_body", False):
                    await send({"type": "http.response.body", "body": _BODY})
                return
            await send(message)

        await self.app(scope, receive, plain)


_BODY = json.dumps({"error": "invalid_token", "error_description": INVALID_TOKEN}).encode()


def _refused(start: Message) -> bool:
    """Whether a response start is a 401 for a token that was sent and not accepted."""
    if start.get("status") != 401:
        return False
    challenge = dict(start.get("headers", [])).get(b"www-authenticate", b"")
    return b'error="invalid_token"' in challenge


def _plain_start(start: Message) -> Message:
    headers = []
    for name, value in start.get("headers", []):
        if name == b"www-authenticate":
            text = _DESCRIPTION.sub(f'error_description="{INVALID_TOKEN}"', value.decode())
            value = text.encode()
        elif name == b"content-length":
            value = str(len(_BODY)).encode()
        elif name == b"content-type":
            continue
        headers.append((name, value))
    headers.append((b"content-type", b"application/json"))
    return {**start, "headers": headers}


class PlainTokenMessages:
    """Mixin for a FastMCP ``AuthProvider``: its HTTP app answers refused tokens plainly.

    Example:
        ```python
        class PlainStatic(PlainTokenMessages, StaticTokenVerifier): ...
        ```
    """

    def get_middleware(self) -> list[Any]:
        # Outermost: it sees the 401 whichever layer (FastMCP's or the SDK's) sends it.
        inner: list[Any] = super().get_middleware()  # type: ignore[misc]
        return [Middleware(PlainTokenErrors), *inner]

"""The proxy's ``[auth]`` and ``[state]`` tables: who a client is, and where its state lives.

``AuthConfig`` builds one of FastMCP's token verifiers (static bearer tokens, or
JWTs checked against a JWKS URI or a key); the proxy serves HTTP with it, so
each request carries a verified principal and its scopes. ``StateConfig``
builds the session state store every replica shares (Redis), bounded by a
timeout so a dead store fails requests instead of holding them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from fastmcp.server.auth.providers.jwt import JWTVerifier, StaticTokenVerifier
from pydantic import Field, model_validator

from fastmcp_filtering.core.errors import OptionError
from fastmcp_filtering.gateway.auth_errors import PlainTokenMessages
from fastmcp_filtering.gateway.config.base import EnvString, KeyPath, _CrossReferenceError, _Model
from fastmcp_filtering.gateway.config.state_store import GatewayStore
from fastmcp_filtering.gateway.redact import safe_url

if TYPE_CHECKING:
    from fastmcp.server.auth import TokenVerifier
    from key_value.aio.protocols.key_value import AsyncKeyValue

_JWT_KEYS = ("jwks_uri", "public_key", "issuer", "audience", "algorithm")
_STATIC_KEYS = ("tokens",)


class StaticToken(_Model):
    """One bearer token and who it stands for (``[[auth.tokens]]``).

    ``client_id`` and ``subject`` are the principal the client's state is kept
    under: two tokens with the same ``client_id`` and ``subject`` are one
    client. ``claims`` are extra claims the token carries.

    Example:
        ```toml
        [[auth.tokens]]
        token = "${ALICE_TOKEN}"
        client_id = "alice"
        scopes = ["issues", "admin"]
        ```
    """

    token: EnvString = Field(repr=False)
    client_id: str
    subject: str | None = None
    scopes: list[str] = Field(default_factory=list)
    claims: dict[str, Any] = Field(default_factory=dict)

    def token_data(self) -> dict[str, Any]:
        """The entry ``StaticTokenVerifier`` takes for this token."""
        data = {**self.claims, "client_id": self.client_id, "scopes": list(self.scopes)}
        if self.subject is not None:
            data["sub"] = self.subject
        return data


class AuthConfig(_Model):
    """``[auth]``: how the proxy verifies the bearer token of each HTTP request.

    ``type = "static"`` checks tokens against ``[[auth.tokens]]`` (API keys you
    hand out; FastMCP's ``StaticTokenVerifier``). ``type = "jwt"`` checks signed
    tokens (FastMCP's ``JWTVerifier``) with ``jwks_uri`` or ``public_key`` (a PEM
    key, or the shared secret of an ``HS*`` ``algorithm``), and ``issuer`` and
    ``audience`` when given. A token without every scope in
    ``required_scopes`` is refused. ``${NAME}`` in values is read from the
    environment. Only HTTP carries tokens: ``serve`` over stdio refuses a
    configuration with ``[auth]``.

    Example:
        ```toml
        [auth]
        type = "jwt"
        jwks_uri = "https://auth.example.com/.well-known/jwks.json"
        issuer = "https://auth.example.com/"
        audience = "mcp-gateway"
        ```
    """

    type: Literal["static", "jwt"]
    required_scopes: list[str] = Field(default_factory=list)
    tokens: list[StaticToken] = Field(default_factory=list)
    jwks_uri: EnvString | None = None
    public_key: EnvString | None = Field(default=None, repr=False)
    issuer: EnvString | list[EnvString] | None = None
    audience: EnvString | list[EnvString] | None = None
    algorithm: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _a_type(cls, data: Any) -> Any:
        if isinstance(data, dict) and "type" not in data:
            raise OptionError(
                'say which tokens to accept: type = "static" (the bearer tokens listed in '
                '[[auth.tokens]]) or type = "jwt" (signed tokens checked with jwks_uri or '
                "public_key)"
            )
        return data

    @model_validator(mode="after")
    def _consistent(self) -> AuthConfig:
        own, foreign = (
            (_STATIC_KEYS, _JWT_KEYS) if self.type == "static" else (_JWT_KEYS, _STATIC_KEYS)
        )
        stray = [k for k in foreign if getattr(self, k)]
        if stray:
            # A [[auth.tokens]] table is found by its first header.
            where: KeyPath = ("auth", "tokens", 0) if stray[0] == "tokens" else ("auth", stray[0])
            raise _CrossReferenceError(
                where,
                f'{stray[0]} does not apply to type = "{self.type}"; remove it (keys of this '
                f"type: {', '.join(own)}, required_scopes)",
            )
        if self.type == "static":
            self._check_tokens()
        else:
            self._check_jwt()
        return self

    def _check_tokens(self) -> None:
        if not self.tokens:
            raise _CrossReferenceError(
                ("auth",),
                'type = "static" needs at least one [[auth.tokens]] table with token, '
                "client_id and scopes",
            )
        seen: dict[str, int] = {}
        for index, token in enumerate(self.tokens):
            if not token.token.strip():
                raise _CrossReferenceError(
                    ("auth", "tokens", index, "token"),
                    "the token is empty (is its environment variable set to nothing?); "
                    "give each client a long random token",
                )
            if token.token in seen:
                # Never the token itself in a message: it is a secret.
                raise _CrossReferenceError(
                    ("auth", "tokens", index, "token"),
                    f"the same token as auth.tokens[{seen[token.token]}]; give each client "
                    "its own token",
                )
            seen[token.token] = index

    def _check_jwt(self) -> None:
        if (self.jwks_uri is None) == (self.public_key is None):
            raise _CrossReferenceError(
                ("auth",),
                'type = "jwt" needs exactly one of jwks_uri (the issuer\'s key set, e.g. '
                '"https://auth.example.com/.well-known/jwks.json") or public_key (a PEM '
                "public key, or the shared secret of an HS256 algorithm)",
            )
        if self.jwks_uri is not None and not re.match(r"https?://", self.jwks_uri):
            raise _CrossReferenceError(
                ("auth", "jwks_uri"),
                f"jwks_uri must start with https:// or http://, got {safe_url(self.jwks_uri)!r}",
            )
        try:
            self.verifier()
        except ValueError as error:
            key = "algorithm" if self.algorithm is not None else "public_key"
            message = _no_secret(str(error))
            if message.startswith("Unsupported algorithm"):
                message = (
                    f"{message.rstrip('.')}; use RS256 (the default), RS384, RS512, ES256, "
                    "ES384, ES512, PS256, PS384, PS512, EdDSA, Ed25519 or Ed448, or HS256, "
                    "HS384, HS512 with the shared secret as public_key"
                )
            raise _CrossReferenceError(("auth", key), message) from None

    def verifier(self) -> TokenVerifier:
        """The FastMCP token verifier this table describes (a new one per call).

        A token it refuses gets HTTP 401 with a plain "invalid token" description
        (``auth_errors.PlainTokenMessages``), not FastMCP's advice to OAuth clients.

        Example:
            ```python
            mcp = FastMCP("gateway", auth=config.auth.verifier())
            ```
        """
        scopes = list(self.required_scopes) or None
        if self.type == "static":
            tokens = {t.token: t.token_data() for t in self.tokens}
            return _PlainStatic(tokens=tokens, required_scopes=scopes)
        return _PlainJWT(
            jwks_uri=self.jwks_uri,
            public_key=self.public_key,
            issuer=self.issuer,
            audience=self.audience,
            algorithm=self.algorithm,
            required_scopes=scopes,
        )

    def describe(self) -> dict[str, Any]:
        """The settings without secrets (no token, no key), for ``check``."""
        shown: dict[str, Any] = {"type": self.type, "required_scopes": list(self.required_scopes)}
        if self.type == "static":
            shown["tokens"] = [
                {"client_id": t.client_id, "subject": t.subject, "scopes": list(t.scopes)}
                for t in self.tokens
            ]
            return shown
        algorithm = self.algorithm or "RS256"
        if self.jwks_uri is not None:
            shown["keys"] = f"jwks_uri {self.jwks_uri}"
        else:
            shown["keys"] = "a shared secret" if algorithm.startswith("HS") else "a public key"
        shown.update(algorithm=algorithm, issuer=self.issuer, audience=self.audience)
        return shown


def _no_secret(message: str) -> str:
    # FastMCP's messages name the problem, never the key; keep it that way if one ever did.
    return message.splitlines()[0][:300]


class _PlainStatic(PlainTokenMessages, StaticTokenVerifier):
    pass


class _PlainJWT(PlainTokenMessages, JWTVerifier):
    pass


class StateConfig(_Model):
    """``[state]``: where per-client state (enabled groups, concerns) lives.

    ``url = "memory://"`` (the default) keeps it in this process. ``redis://``
    (``rediss://`` for TLS, ``unix://`` for a socket) keeps it in Redis, shared
    by every replica pointed at it; ``${NAME}`` is read from the environment.
    Each store operation may take ``timeout`` seconds; past that the request
    is answered as if the store were down (the initial groups, default
    concerns, a refused ``enable_tools``), never held.

    Example:
        ```toml
        [state]
        url = "redis://redis:6379/0"
        timeout = 1.0
        ```
    """

    url: EnvString = "memory://"
    timeout: float = 1.0
    ttl_seconds: float = 86_400.0
    """Seconds a client's stored state (enabled groups, concerns) lives after its last change."""

    @model_validator(mode="after")
    def _usable(self) -> StateConfig:
        if not self.timeout > 0:
            raise _CrossReferenceError(
                ("state", "timeout"),
                f"timeout must be a positive number of seconds, got {self.timeout!r}",
            )
        if not 0 < self.ttl_seconds < float("inf"):
            raise _CrossReferenceError(
                ("state", "ttl_seconds"),
                f"ttl_seconds must be a positive number of seconds, got {self.ttl_seconds!r}; "
                "e.g. ttl_seconds = 86400 (a day, the default)",
            )
        scheme = urlsplit(self.url).scheme
        if scheme == "memory":
            return self
        if scheme not in ("redis", "rediss", "unix"):
            raise _CrossReferenceError(
                ("state", "url"),
                f"unsupported store {_masked(self.url)!r}; use redis://host:6379/0 (rediss:// "
                "for TLS, unix:///path/redis.sock) or memory:// (this process only)",
            )
        try:
            self._redis_client()
        except ImportError:
            raise _CrossReferenceError(
                ("state", "url"),
                "a redis:// store needs the Redis client: pip install 'fastmcp-filtering[redis]'",
            ) from None
        except ValueError as error:
            raise _CrossReferenceError(
                ("state", "url"), f"not a Redis URL ({_no_secret(str(error))}): fix the url"
            ) from None
        return self

    @property
    def shared(self) -> bool:
        """Whether the state lives outside this process (a Redis)."""
        return urlsplit(self.url).scheme != "memory"

    def _redis_client(self) -> Any:
        from redis.asyncio import Redis

        # decode_responses: py-key-value's RedisStore reads strings. Socket timeouts drop a
        # connection that stopped answering, so the next request reconnects.
        return Redis.from_url(
            self.url,
            decode_responses=True,
            socket_timeout=self.timeout,
            socket_connect_timeout=self.timeout,
        )

    def store(self) -> AsyncKeyValue:
        """A new store for ``FastMCP(session_state_store=...)``: this process's memory or Redis.

        Every Redis operation is bounded by ``timeout``; a failing store answers
        clients one plain error and is logged once (``GatewayStore``), and each
        client's state lives ``ttl_seconds``.

        Example:
            ```python
            mcp = FastMCP("gateway", session_state_store=config.state.store())
            ```
        """
        from key_value.aio.stores.memory import MemoryStore

        inner = self._bounded(self._redis_client()) if self.shared else MemoryStore()
        return GatewayStore(inner, where=_masked(self.url), ttl=self.ttl_seconds)

    def _bounded(self, client: Any) -> AsyncKeyValue:
        from key_value.aio.stores.redis import RedisStore
        from key_value.aio.wrappers.timeout import TimeoutWrapper

        return TimeoutWrapper(RedisStore(client=client), timeout=self.timeout)

    async def probe(self) -> str | None:
        """Read one key from the store; None when it answers, else what went wrong."""
        if not self.shared:
            return None
        client = self._redis_client()
        try:
            await self._bounded(client).get(key="fastmcp-filtering:check")
        except Exception as error:
            return f"{type(error).__name__}: {_no_secret(str(error)) or 'no answer'}"
        finally:
            await client.aclose()
        return None

    def describe(self) -> dict[str, Any]:
        """The settings with any password in the URL masked, for ``check``."""
        return {"url": _masked(self.url), "timeout": self.timeout, "ttl_seconds": self.ttl_seconds}


def _masked(url: str) -> str:
    """``url`` with its password (``redis://user:secret@host``) shown as ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port is not None else ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))

"""``access`` in a proxy config's ``[[groups]]``: scopes and claims a token must hold."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastmcp.server.auth import require_scopes
from pydantic import BaseModel, ConfigDict, Field, model_validator

from fastmcp_filtering.access.middleware import AccessPolicy
from fastmcp_filtering.core.errors import OptionError

if TYPE_CHECKING:
    from collections.abc import Callable


class AccessConfig(BaseModel):
    """Who may use a group: every scope in ``scopes`` and every claim in ``claims``.

    A claim passes when the token's claim equals the value, or contains it when
    the claim is a list; a dotted name reaches a nested claim. Tokens come from
    the proxy's ``[auth]``; a client without one gets the group only with
    ``unauthenticated = "allow"``.

    Example:
        ```toml
        [[groups]]
        name = "admin"
        tools = ["delete_*"]
        access = { scopes = ["github:admin"], claims = { tenant = "acme" } }
        ```
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    scopes: list[str] = Field(default_factory=list)
    claims: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _something_required(self) -> AccessConfig:
        if not self.scopes and not self.claims:
            raise OptionError(
                'access needs scopes = [...] or claims = { name = "value" }; leave access '
                "out for a group open to every client"
            )
        for scope in self.scopes:
            if not scope.strip():
                raise OptionError("access scopes must be non-empty strings like 'github:admin'")
        for claim in self.claims:
            if not claim.strip("."):
                raise OptionError("access claims are claim names like 'tenant', not empty")
        return self

    def checks(self) -> list[Callable[..., Any]]:
        """The library's checks: ``require_scopes`` and one ``AccessPolicy`` per claim."""
        checks: list[Callable[..., Any]] = []
        if self.scopes:
            checks.append(require_scopes(*self.scopes))
        checks.extend(AccessPolicy(claim=name, value=value) for name, value in self.claims.items())
        return checks

"""Secrets written as values: found in an upstream's ``env`` and ``headers``, and moved out.

A configuration file is copied, committed and shared; a token written in it is
leaked with it. ``literal_secrets`` names the values that look like secrets
(by their key: ``MY_API_TOKEN``, ``Authorization``; or by their shape:
``sk-...``, ``ghp_...``, a long random string) and are not ``${NAME}``
references; ``Referencer`` rewrites an upstream table so each such value is a
``${NAME}`` reference, remembering which variables must be set.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_SECRET_KEY = re.compile(
    r"token|secret|passw(or)?d|api[-_]?key|auth|credential|private[-_]?key|access[-_]?key"
    r"|cookie|session",
    re.IGNORECASE,
)
# Well-known token prefixes (OpenAI, GitHub, GitLab, Slack, AWS, Stripe), and a bearer token.
_SECRET_SHAPE = re.compile(
    r"^(Bearer|Basic|Token)\s+\S{4,}$|^(sk|pk|rk)-\S{8,}$|^(ghp|gho|ghu|ghs|ghr)_\w{8,}$"
    r"|^github_pat_\w{8,}$|^glpat-\S{8,}$|^xox[abposr]-\S{8,}$|^AKIA[0-9A-Z]{16}$"
    r"|^(sk|rk)_(live|test)_\w{8,}$",
    re.IGNORECASE,
)
# A long run of letters and digits mixed, as random keys are (paths and words are not).
_RANDOM = re.compile(r"^(?=.*[A-Za-z])(?=.*\d)[A-Za-z0-9_+=.-]{32,}$")
_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
# What a header value keeps before its secret: ``Bearer ${TOKEN}`` still says the scheme.
_SCHEME = re.compile(r"^(Bearer|Basic|Token)\s+", re.IGNORECASE)
_SHORTEST = 4


def looks_secret(key: str, value: str) -> bool:
    """Whether ``value`` (under ``key``) looks like a secret written out, not a reference.

    Example:
        ```python
        assert looks_secret("MY_API_TOKEN", "sk-abc123def456")
        assert not looks_secret("MY_API_TOKEN", "${MY_API_TOKEN}")
        assert not looks_secret("NODE_ENV", "production")
        ```
    """
    if _REFERENCE.search(value) or len(value) < _SHORTEST:
        return False
    if _SECRET_SHAPE.match(value) or _RANDOM.match(value):
        return True
    # A key named like a secret holding a word (``AUTH_MODE = "oauth"``) is no secret.
    return bool(_SECRET_KEY.search(key)) and not re.fullmatch(r"[a-z]+|true|false|\d+", value)


def literal_secrets(table: Mapping[str, Any]) -> list[str]:
    """Where an upstream table (as written) holds a secret-looking value: ``env.NAME``,
    ``headers.NAME``.

    Example:
        ```python
        assert literal_secrets({"env": {"API_KEY": "sk-123456789"}}) == ["env.API_KEY"]
        ```
    """
    found = []
    for section in ("env", "headers"):
        values = table.get(section)
        if not isinstance(values, Mapping):
            continue
        found += [
            f"{section}.{key}"
            for key, value in values.items()
            if isinstance(value, str) and looks_secret(str(key), value)
        ]
    return found


def _variable(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").upper()
    return name if name and not name[0].isdigit() else f"_{name}"


@dataclass
class Referencer:
    """Rewrites upstream tables so that no secret is written: each a ``${NAME}`` reference.

    ``variables`` maps each variable to set to where it is used (``upstream
    'web' header Authorization``), in the order met. An ``env`` value takes its
    key's name; a header ``{UPSTREAM}_{HEADER}`` (``WEB_AUTHORIZATION``), keeping
    its scheme (``Bearer ${WEB_AUTHORIZATION}``). Two different secrets never
    share a name.

    Example:
        ```python
        referencer = Referencer()
        table = referencer.table("web", {"headers": {"X-Key": "sk-1234567890"}})
        assert table["headers"] == {"X-Key": "${WEB_X_KEY}"}
        ```
    """

    variables: dict[str, str] = field(default_factory=dict)
    _values: dict[str, str] = field(default_factory=dict)

    def table(self, upstream: str, table: Mapping[str, Any]) -> dict[str, Any]:
        """``table`` with each secret-looking ``env`` and ``headers`` value a reference."""
        written = dict(table)
        for section in ("env", "headers"):
            values = table.get(section)
            if not isinstance(values, Mapping):
                continue
            written[section] = {
                key: self._reference(upstream, section, key, value)
                if isinstance(value, str) and looks_secret(key, value)
                else value
                for key, value in values.items()
            }
        return written

    def _reference(self, upstream: str, section: str, key: str, value: str) -> str:
        scheme = _SCHEME.match(value) if section == "headers" else None
        secret = value[scheme.end() :] if scheme else value
        wanted = _variable(key if section == "env" else f"{upstream}_{key}")
        name = wanted
        if self._values.get(name, secret) != secret:
            name = _variable(f"{upstream}_{wanted}")
        number = 2
        while self._values.get(name, secret) != secret:
            name = f"{wanted}_{number}"
            number += 1
        self._values[name] = secret
        kind = "env" if section == "env" else "header"
        self.variables.setdefault(name, f"upstream {upstream!r} {kind} {key}")
        return (scheme.group(0) if scheme else "") + "${" + name + "}"

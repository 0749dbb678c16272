"""Text about an upstream that may reach a client, a log or ``check``, without its secrets.

An upstream's configuration holds secrets (tokens in ``args``, ``env`` and
``headers``, credentials and keys in a URL) and the operator's internals (paths on
the proxy's machine). ``safe_url`` keeps a URL's scheme, host, port and path;
``Redactor`` rewrites any text: each configured secret becomes ``***``, each URL
its safe form, each absolute path ``<path>``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from collections.abc import Iterable

# Shorter values (``1``, ``on``) are too common to find as secrets without mangling text.
_SHORTEST_SECRET = 4
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
# An absolute path: not the tail of a URL or of another path, not a lone slash.
_PATH = re.compile(r"(?<![\w:/.<>*-])/(?:[^\s'\":;,()<>]+)")


def safe_url(url: str) -> str:
    """``url`` with no user, password, query or fragment: ``https://host:8443/mcp``.

    Example:
        ```python
        assert safe_url("http://u:pw@svc/mcp?api_key=k") == "http://svc/mcp"
        ```
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "<url>"
    return f"{parts.scheme}://{host}{port}{parts.path}"


class Redactor:
    """Rewrite text so that no configured secret, URL credential or absolute path remains.

    ``secrets`` are the literal values to hide (``env`` and ``headers`` values,
    ``args``); those shorter than four characters are left (they would match
    ordinary words). ``paths=False`` keeps paths: for the operator's own tools (``check``,
    ``init``), who must see which file is missing, where a client must not.

    Example:
        ```python
        redact = Redactor(["KEY-123"])
        assert redact("bad key KEY-123 in /opt/x") == "bad key *** in <path>"
        ```
    """

    def __init__(self, secrets: Iterable[str] = (), *, paths: bool = True) -> None:
        # Longest first, so a secret containing another is hidden whole.
        found = {s for s in secrets if len(s) >= _SHORTEST_SECRET}
        self._secrets = sorted(found, key=len, reverse=True)
        self._paths = paths

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        text = _URL.sub(lambda m: safe_url(m.group(0)), text)
        return _PATH.sub("<path>", text) if self._paths else text

"""The ``mcpServers`` JSON that agents' hosts keep, read as a list of upstreams.

``{"mcpServers": {"name": {"command", "args", "env", "cwd"} | {"url", "headers"}}}``
(also under ``"servers"``, or at the top level, as FastMCP's ``MCPConfig``
reads it). Each server becomes an upstream table named after its key. Servers
with ``"disabled": true`` are skipped, and so is an entry that runs the proxy
itself (``fastmcp-filtering serve`` on the same configuration file). Keys that
would change what is reached and that a proxy cannot honour (``"auth": "oauth"``,
FastMCP's ``tools``/``include_tags``/``exclude_tags`` transforms, ``envFile``)
are errors; other keys (``description``, ``timeout``, hosts' own) are ignored.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from fastmcp.mcp_config import infer_transport_type_from_url

from fastmcp_filtering.core.errors import OptionError

_UNSUPPORTED = {
    "tools": "FastMCP tool transforms are not applied by the proxy; remove it",
    "include_tags": "FastMCP tag filters are not applied by the proxy; use [[groups]] instead",
    "exclude_tags": "FastMCP tag filters are not applied by the proxy; use [[groups]] instead",
    "envFile": "env files are not read; put the variables in env",
}


class McpJsonError(OptionError):
    """A mistake in an ``mcpServers`` file, naming the file and the key."""


def namespace_of(key: str) -> str:
    """A server key as an upstream namespace: letters, digits, ``_`` and ``-`` only."""
    text = re.sub(r"[^A-Za-z0-9_-]+", "_", key).lstrip("_-")[:64].rstrip("_-")
    return text or "server"


def read_servers(path: Path, *, proxy_file: Path | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The servers of an ``mcpServers`` file as upstream tables, in file order.

    A relative ``cwd`` or a ``command`` with a slash is made absolute against the
    file's directory; ``${NAME}`` references are kept for the reader to expand.
    Raises ``McpJsonError`` naming the file and the key.

    Example:
        ```python
        for key, table in read_servers(Path("mcp.json")):
            print(key, table.get("command") or table["url"])
        ```
    """
    shown = str(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise McpJsonError(f"{shown}: cannot read it ({error.strerror or error})") from None
    except json.JSONDecodeError as error:
        raise McpJsonError(f"{shown}:{error.lineno}: not valid JSON: {error.msg}") from None
    servers = _servers(data, shown)
    found = []
    for key, server in servers.items():
        where = f"{shown}: mcpServers.{key}"
        if not isinstance(server, dict):
            raise McpJsonError(f"{where}: must be an object with command or url")
        if server.get("disabled") is True:
            continue
        table = _table(server, where, path.parent)
        if proxy_file is not None and _runs(table, proxy_file, path.parent):
            continue
        found.append((key, table))
    return found


def _servers(data: object, shown: str) -> dict[str, Any]:
    if isinstance(data, dict):
        for key in ("mcpServers", "servers"):
            if key in data:
                if not isinstance(data[key], dict):
                    raise McpJsonError(f"{shown}: {key} must be an object of servers by name")
                servers: dict[str, Any] = data[key]
                return servers
        looks = [isinstance(v, dict) and ("command" in v or "url" in v) for v in data.values()]
        if looks and all(looks):
            return data
    raise McpJsonError(
        f'{shown}: no servers found; the file needs {{"mcpServers": {{"name": {{"command": '
        '"...", "args": [...]}}}}'
    )


def _strings(value: object, where: str, kind: type) -> Any:
    if kind is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise McpJsonError(f"{where}: must be a list of strings")
        return list(value)
    if not isinstance(value, dict):
        raise McpJsonError(f"{where}: must be an object of strings")
    table = {}
    for name, item in value.items():
        if isinstance(item, (int, float, bool)):
            item = json.dumps(item)
        if not isinstance(item, str):
            raise McpJsonError(f"{where}.{name}: must be a string")
        table[name] = item
    return table


def _table(server: dict[str, Any], where: str, base: Path) -> dict[str, Any]:
    for key, fix in _UNSUPPORTED.items():
        if server.get(key):
            raise McpJsonError(f"{where}.{key}: {fix}")
    kind = server.get("type", server.get("transport"))
    table: dict[str, Any] = {}
    if "url" in server:
        url = server["url"]
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise McpJsonError(f"{where}.url: must be an http:// or https:// URL")
        inferred = infer_transport_type_from_url(url)
        if kind in ("sse", "http", "streamable-http") and (kind == "sse") != (inferred == "sse"):
            raise McpJsonError(
                f"{where}.type: {kind!r} for this url is not supported: the proxy speaks SSE "
                "only to URLs ending in /sse and streamable HTTP to the others"
            )
        table["url"] = url
        headers = _strings(server.get("headers", {}), f"{where}.headers", dict)
        auth = server.get("auth")
        if auth == "oauth" or (auth is not None and not isinstance(auth, str)):
            raise McpJsonError(
                f"{where}.auth: only a bearer token string is supported; put the token in "
                'headers = {"Authorization": "Bearer ..."} or remove auth'
            )
        if auth:
            headers.setdefault("Authorization", f"Bearer {auth}")
        if headers:
            table["headers"] = headers
        return table
    command = server.get("command")
    if not isinstance(command, str) or not command.strip():
        raise McpJsonError(f'{where}: give "command" (a stdio server) or "url" (an HTTP server)')
    if command.startswith("~"):
        command = str(Path(command).expanduser())
    table["command"] = str((base / command).resolve()) if _relative_path(command) else command
    if server.get("args"):
        table["args"] = _strings(server["args"], f"{where}.args", list)
    if server.get("env"):
        table["env"] = _strings(server["env"], f"{where}.env", dict)
    cwd = server.get("cwd")
    if cwd is not None:
        if not isinstance(cwd, str):
            raise McpJsonError(f"{where}.cwd: must be a string")
        table["cwd"] = str((base / Path(cwd).expanduser()).resolve())
    return table


def _relative_path(command: str) -> bool:
    return "/" in command and not Path(command).is_absolute()


def _runs(table: dict[str, Any], proxy_file: Path, base: Path) -> bool:
    """Whether a server entry serves ``proxy_file`` itself (the host's one proxy entry)."""
    args = table.get("args", [])
    if "serve" not in args:
        return False
    cwd = Path(table.get("cwd", base))
    return any((cwd / Path(a).expanduser()).resolve() == proxy_file for a in args)

"""``fastmcp-filtering init``: connect to a server (or an ``mcpServers`` file's) and propose a TOML.

The upstream is listed through the proxy that will serve it (namespaced as it
will be), so the proposed patterns are checked against the names the proxy
really serves: tools, prompts, resources and templates.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pydantic import ValidationError

from fastmcp_filtering.core.catalog import ComponentKind, match_names
from fastmcp_filtering.core.errors import FilteringError, UpstreamError
from fastmcp_filtering.core.request import unrestricted
from fastmcp_filtering.gateway.config.mcp_json import McpJsonError, namespace_of, read_servers
from fastmcp_filtering.gateway.config.models import FilteringConfig
from fastmcp_filtering.gateway.config.secret_values import Referencer
from fastmcp_filtering.gateway.grouping.suggest import DEFAULT_META_TOOLS, suggest_config
from fastmcp_filtering.gateway.grouping.suggestion import SuggestedConfig, counted
from fastmcp_filtering.gateway.proxy import _build
from fastmcp_filtering.gateway.upstreams.provider import patiently

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fastmcp.utilities.components import FastMCPComponent


@dataclass
class InitRequest:
    """What ``init`` was asked: a command or URL, or an ``mcpServers`` file, and where to write."""

    target: list[str] = field(default_factory=list)
    from_file: str | None = None
    output: str | None = None
    force: bool = False
    mode: str = "auto"
    max_group_size: int = 15
    env: list[str] = field(default_factory=list)
    """``NAME=VALUE``, or ``NAME`` for ``${NAME}`` read from the environment."""
    headers: list[str] = field(default_factory=list)
    """``NAME=VALUE`` headers for a URL; ``${NAME}`` in a value is read from the environment."""
    quiet: bool = False
    """Print errors only: no summary, no upstream stderr."""


class InitError(FilteringError):
    """A reason ``init`` cannot go on, said to the user as is."""


def _looks_like_path(value: str, base: Path) -> bool:
    relative = not value.startswith("-") and not Path(value).is_absolute()
    return relative and ("/" in value or "." in value) and (base / value).exists()


def _cwd_for(table: dict[str, Any], base: Path, out_dir: Path) -> str | None:
    """``cwd`` to write when relative paths in ``args`` are relative to ``base``, not the file's."""
    if "url" in table or "cwd" in table or base.resolve() == out_dir.resolve():
        return None
    if not any(_looks_like_path(a, base) for a in table.get("args", [])):
        return None
    return os.path.relpath(base.resolve(), out_dir.resolve())


def _pairs(items: list[str], what: str) -> dict[str, str]:
    pairs = {}
    for item in items:
        name, equals, value = item.partition("=")
        if not name or (not equals and what == "header"):
            raise InitError(f"--{what} {item!r}: write NAME=VALUE")
        pairs[name] = value if equals else "${" + name + "}"
    return pairs


def _target_table(request: InitRequest) -> dict[str, Any]:
    target = request.target
    if len(target) == 1 and re.match(r"https?://", target[0]):
        if request.env:
            raise InitError("--env applies to a command; a URL takes --header NAME=VALUE")
        return {"url": target[0], "headers": _pairs(request.headers, "header")}
    if request.headers:
        raise InitError("--header applies to a URL; a command takes --env NAME=VALUE")
    return {"command": target[0], "args": list(target[1:]), "env": _pairs(request.env, "env")}


# A script with one of these names is known by its package's directory: .../server-x/dist/index.js.
_GENERIC_SCRIPTS = frozenset({"index", "main", "server", "cli", "app", "run", "__main__"})
_BUILD_DIRS = frozenset({"dist", "build", "lib", "src", "bin", "out", "esm", "cjs"})


def _label(target: list[str]) -> str:
    """A short name for the server: the URL's host, or the package, module or script it runs.

    Not a subcommand (``run``), an option's value, or a directory it is given to work on
    (``-r /tmp/repo``): ``python -m mcp_server_git -r /tmp/repo`` is ``mcp_server_git``.
    """
    if re.match(r"https?://", target[0]):
        return re.sub(r"^https?://([^/:]+).*", r"\1", target[0])
    args = target[1:]
    if "-m" in args[:-1]:
        return args[args.index("-m") + 1]
    words = [a for a in args if not a.startswith("-")]
    # A package or script (server-github@1.0, ghcr.io/x/y, server.py), not a subcommand (run).
    named = [a for a in words if re.search(r"[-./@]", a) and not Path(a).is_dir()]
    return _package_name((named or words or target[:1])[0])


def _package_name(word: str) -> str:
    path = Path(word)
    if path.suffix in {".py", ".js", ".mjs", ".cjs", ".ts"} and path.stem in _GENERIC_SCRIPTS:
        for parent in path.parents:
            if parent.name and parent.name not in _BUILD_DIRS:
                return parent.name
    name = path.name
    return re.sub(r"(@[^@/]+|==.+|:[^:/]+|\.(py|js|mjs|cjs|ts))$", "", name) or name


def _tables(request: InitRequest, out_dir: Path) -> tuple[list[dict[str, Any]], str]:
    """The ``[[upstreams]]`` tables to write, and what they are (for messages)."""
    if request.from_file is not None:
        if request.env or request.headers:
            raise InitError("--env and --header are for a command or a URL, not --from")
        path = Path(request.from_file).expanduser()
        try:
            # An entry serving the file being written is the proxy itself: not an upstream.
            proxy_file = Path(request.output).resolve() if request.output else None
            servers = read_servers(path, proxy_file=proxy_file)
        except McpJsonError as error:
            raise InitError(str(error)) from None
        if not servers:
            raise InitError(f"{path}: no enabled server to proxy")
        tables = []
        taken: set[str] = set()
        for key, table in servers:
            entry: dict[str, Any] = {"name": key, **table}
            if len(servers) > 1:
                namespace = namespace_of(key)
                while namespace in taken:
                    namespace += "_"
                taken.add(namespace)
                entry["namespace"] = namespace
            cwd = _cwd_for(table, path.parent, out_dir)
            if cwd is not None:
                entry["cwd"] = cwd
            tables.append(entry)
        return tables, str(path)
    table = _target_table(request)
    cwd = _cwd_for(table, Path.cwd(), out_dir)
    if cwd is not None:
        table["cwd"] = cwd
    if request.mode != "auto":
        table["mode"] = request.mode
    return [table], " ".join(request.target)


class _UpstreamsDown(UpstreamError):
    """Upstreams that did not answer, each with the reason."""

    def __init__(self, dead: dict[str, str]) -> None:
        self.dead = dead
        super().__init__(", ".join(f"{label}: {reason}" for label, reason in dead.items()))


async def _listing(config: FilteringConfig, log: TextIO) -> tuple[list[Any], list[str]]:
    """The proxied tools, and every name and URI of the prompts, resources and templates."""
    # Every upstream is asked; each that fails is recorded by name, so all are reported (here,
    # not logged). Their stderr goes to ``log``, and their notifications to no client.
    proxy = _build(
        config, on_upstream_error="warn", upstream_log=log, log_failures=False, relay=False
    )
    try:
        with unrestricted(), patiently():
            server = proxy.server
            tools = list(await server.list_tools(run_middleware=False))
            others: list[tuple[ComponentKind, FastMCPComponent]] = [
                *(("prompt", p) for p in await server.list_prompts(run_middleware=False)),
                *(("resource", r) for r in await server.list_resources(run_middleware=False)),
                *(
                    ("template", t)
                    for t in await server.list_resource_templates(run_middleware=False)
                ),
            ]
    finally:
        await proxy.close()
    if proxy.health.unavailable:
        raise _UpstreamsDown(dict(proxy.health.unavailable))
    return tools, [n for kind, c in others for n in match_names(c, kind)]


def _by_namespace(tools: Sequence[Any], namespaces: list[str]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {n: [] for n in namespaces}
    for tool in tools:
        # The longest namespace first: "git" must not take "github_..." tools.
        for namespace in sorted(namespaces, key=len, reverse=True):
            if tool.name.startswith(f"{namespace}_"):
                found[namespace].append(
                    {
                        "name": tool.name[len(namespace) + 1 :],
                        "title": tool.title,
                        "description": tool.description,
                        "annotations": tool.annotations,
                    }
                )
                break
    return found


def _print_tail(log: TextIO, err: TextIO, lines: int = 20) -> None:
    """The last ``lines`` the upstreams wrote to stderr, if any: often why one failed."""
    log.flush()
    log.seek(0)
    tail = log.read().splitlines()[-lines:]
    if any(line.strip() for line in tail):
        print("the upstreams' stderr ended with:", file=err)
        for line in tail:
            print(f"  {line}", file=err)


def _host_entry(output: str | None) -> str:
    """The ``mcpServers`` entry serving ``output``: by absolute path, since a desktop host
    starts it without this shell's PATH (or virtual environment), and ``--quiet``, since the
    host shows a stdio server's stderr as its log."""
    path = str(Path(output).resolve()) if output else "proxy.toml"
    serve = ["serve", path, "--quiet"]
    cli = _cli_path()
    if cli is not None:
        command, args = cli, serve
    else:
        command, args = sys.executable, ["-m", "fastmcp_filtering", *serve]
    entry = {"mcpServers": {"fastmcp-filtering": {"command": command, "args": args}}}
    return json.dumps(entry, indent=2)


def _cli_path() -> str | None:
    """The absolute path of the ``fastmcp-filtering`` script installed with this Python (the
    one beside it first: the environment ``init`` runs in), or None."""
    beside = Path(sys.executable).parent / "fastmcp-filtering"
    if beside.is_file():
        return str(beside.absolute())
    found = shutil.which("fastmcp-filtering")
    return str(Path(found).absolute()) if found else None


def run_init(request: InitRequest, out: TextIO, err: TextIO) -> int:
    """Write the proposed configuration; 0 done, 1 failed (said on ``err``), 2 usage."""
    if (request.from_file is None) == (not request.target):
        print(
            "init needs a server: a command with its arguments (init npx -y some-server), "
            "a URL (init https://example.com/mcp), or --from mcp.json",
            file=err,
        )
        return 2
    if request.output and Path(request.output).exists() and not request.force:
        print(f"{request.output} exists; remove it or pass --force to replace it", file=err)
        return 1
    out_dir = Path(request.output).resolve().parent if request.output else Path.cwd()
    try:
        tables, source = _tables(request, out_dir)
    except InitError as error:
        print(f"error: {error}", file=err)
        return 1
    try:
        config = FilteringConfig.model_validate(
            {"upstreams": tables, "search": {"enabled": False}}, context={"base_dir": out_dir}
        )
    except ValidationError as error:
        for detail in error.errors():
            where = ".".join(str(p) for p in detail["loc"])
            reason = detail["msg"].removeprefix("Value error, ")
            print(f"error: {where}: {reason}", file=err)
        return 1
    # The upstreams' stderr (banners, "running on stdio") is shown only when one fails.
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
        try:
            tools, others = asyncio.run(_listing(config, log))
        except _UpstreamsDown as down:
            for label, reason in down.dead.items():
                print(f"error: upstream {label!r} cannot be listed: {reason}", file=err)
            if not request.quiet:
                _print_tail(log, err)
            return 1
    namespaces = [t["namespace"] for t in tables if "namespace" in t]
    suggestion = suggest_config(
        _by_namespace(tools, namespaces) if namespaces else tools,
        others=others,
        max_group_size=request.max_group_size,
        meta_tools=DEFAULT_META_TOOLS,
    )
    variables = _write(request, suggestion, tables, source, out)
    if not request.quiet:
        _print_summary(request, suggestion.tool_count, len(suggestion.groups), source, out, err)
        _print_variables(variables, err if not request.output else out)
    return 0


def _write(
    request: InitRequest,
    suggestion: SuggestedConfig,
    tables: list[dict[str, Any]],
    source: str,
    out: TextIO,
) -> dict[str, str]:
    """Write the TOML (to ``--output`` or ``out``); the variables it reads its secrets from."""
    name = f"{_label(request.target)} (filtered)" if request.target else "fastmcp-filtering"
    # The upstreams were listed with the secrets as given; the file gets references to them.
    referencer = Referencer()
    written = [
        referencer.table(t.get("namespace") or t.get("name") or _label(request.target), t)
        for t in tables
    ]
    text = suggestion.to_toml(
        upstreams=written, name=name, source=source, variables=referencer.variables
    )
    if request.output:
        Path(request.output).write_text(text, encoding="utf-8")
    else:
        out.write(text)
    return referencer.variables


def _print_variables(variables: dict[str, str], notes: TextIO) -> None:
    """The environment variables the written file reads its secrets from, to set before serving."""
    if not variables:
        return
    print(
        "\nNo secret was written to the file: it reads each from the environment. "
        "Set these before check and serve (the host entry's env, or your shell):",
        file=notes,
    )
    for variable, where in variables.items():
        print(f"  {variable}  ({where})", file=notes)


def _print_summary(
    request: InitRequest, tools: int, groups: int, source: str, out: TextIO, err: TextIO
) -> None:
    """What was written, how to check it, and the one server entry to give the host."""
    shown = request.output or "proxy.toml"
    notes = err if not request.output else out
    print(
        f"\n{counted(tools, 'tool')} in {counted(groups, 'group')}"
        f"{f' written to {request.output}' if request.output else ''}. "
        f"Check it: fastmcp-filtering check {shown}\n"
        f"Then give your MCP host this one server"
        f"{' instead of those in ' + source if request.from_file else ''}:\n"
        f"{_host_entry(request.output)}",
        file=notes,
    )

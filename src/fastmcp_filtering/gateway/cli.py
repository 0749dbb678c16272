"""The ``fastmcp-filtering`` command: ``serve`` a proxy, ``check`` or ``init`` a configuration.

``fastmcp-filtering serve CONFIG`` proxies the configured upstream(s) with the
filtering stack over stdio (default) or streamable HTTP (``--http``); a
configuration with ``[auth]`` is served over HTTP only (stdio carries no token).
``fastmcp-filtering check CONFIG`` validates the file, connects to the
upstream(s), and prints each group with its member count, the tags, the tools in
no group, patterns that match nothing, and the auth and state settings (no
secrets); it exits 1 on an invalid file, an unreachable upstream or state
store, or a group that matches no tool. Both take ``--quiet`` (hide the stdio
upstreams' stderr, log warnings and errors only) and ``--log-level LEVEL``.
``fastmcp-filtering init COMMAND [ARGS...]`` (or a URL, or ``--from mcp.json``)
connects to the server(s) and writes a proposed configuration
(``fastmcp_filtering.gateway.grouping.suggest``).

Example:
    ```bash
    fastmcp-filtering check examples/server-github.toml
    fastmcp-filtering serve examples/server-github.toml --http --port 8000
    fastmcp-filtering serve examples/server-github.toml --quiet
    ```
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import fnmatch
import json
import logging
import os
import sys
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from fastmcp_filtering.core.catalog import match_names
from fastmcp_filtering.gateway.audit import Listing, findings, list_unfiltered
from fastmcp_filtering.gateway.config.models import ConfigError, FilteringConfig, load_config
from fastmcp_filtering.gateway.init import InitRequest, run_init
from fastmcp_filtering.gateway.proxy import _build
from fastmcp_filtering.gateway.serve import (
    LEVELS,
    configure_logs,
    serve_http,
    serve_stdio,
    upstream_log,
)
from fastmcp_filtering.gateway.upstreams.provider import UPSTREAM_MARK, patiently
from fastmcp_filtering.progressive.middleware import FIXED_CALL_TOOL

logger = logging.getLogger("fastmcp_filtering")

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fastmcp.tools import Tool
    from fastmcp.utilities.components import FastMCPComponent

    from fastmcp_filtering.core.catalog import Catalog, ComponentKind


@dataclass
class CheckReport:
    """What ``check`` found: the upstream tools as the proxy lists them, sorted into groups.

    ``groups`` holds each group's direct members (``tools``, and ``others``:
    prompts, resources and templates) and its count of every kind with
    subgroups; ``ungrouped`` the tools in no group; ``errors`` fail the check, ``warnings``
    do not.

    Example:
        ```python
        report = await check(load_config("proxy.toml"))
        assert report.ok, report.errors
        ```
    """

    file: str
    tools: list[str] = field(default_factory=list)
    upstreams: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)
    tags: list[dict[str, Any]] = field(default_factory=list)
    concerns: list[dict[str, Any]] = field(default_factory=list)
    ungrouped: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)
    """The upstream prompts, resources and templates, as ``"prompt name"``, ``"resource uri"``."""
    auth: dict[str, Any] | None = None
    """``[auth]`` without secrets (no token, no key); None: requests are not authenticated."""
    state: dict[str, Any] = field(default_factory=dict)
    """``[state]``: the store's URL (password masked) and timeout."""
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing is wrong enough to fail the check."""
        return not self.errors


async def check(
    config: FilteringConfig, *, file: str = "<config>", upstream_log: TextIO | None = None
) -> CheckReport:
    """Connect to the upstream(s) through the proxy and sort their tools into the declarations.

    Lists tools as the proxy serves them before any filtering (namespaced, with
    the configured tags), counts each group's members (direct, and with its
    subgroups), and reports tools in no group. An upstream that cannot be listed
    is an error naming it and the reason (the others are still checked); so is
    a group with no tool even through its subgroups. Tag and ``concern_mapping``
    patterns that match nothing are warnings. Stdio upstreams write their stderr
    to ``upstream_log`` (default: this process's).

    Example:
        ```python
        report = await check(load_config("proxy.toml"))
        print(report.ungrouped, report.errors)
        ```
    """
    report = CheckReport(file=file, auth=config.auth.describe() if config.auth else None)
    report.state = config.state.describe()
    problem = await config.state.probe()
    if problem is not None:
        report.errors.append(
            f"the state store {report.state['url']} does not answer ({problem}); start it, "
            "or fix [state] url"
        )
    _warn_written_secrets(report, config)
    meta_names = _meta_names(config)
    listing = await _list_upstreams(config, upstream_log=upstream_log)
    for (label, name), reason in listing.dropped.items():
        report.errors.append(
            f"upstream {label!r} lists the tool {name[:130]!r}, which the proxy does not "
            f"serve: {reason}; fix the upstream or its namespace"
        )
    for label, reason in listing.dead.items():
        report.errors.append(
            f"upstream {label!r} cannot be listed: {reason}; check its command/args (run it "
            "by hand) or url, and that it speaks MCP"
        )
    if len(listing.dead) == len(config.upstreams):
        return report
    tools = [t for t in listing.tools if t.name not in meta_names]
    catalog = config.catalog()
    report.tools = sorted({t.name for t in tools})
    _count_upstreams(report, config, listing.dead)
    _sort_into_groups(report, catalog, tools, listing.others)
    found = findings(catalog, listing)
    report.errors.extend(found.errors)
    report.warnings.extend(found.warnings)
    _warn_meta_patterns(report, catalog, meta_names)
    _report_tags(report, config, catalog, tools)
    _report_concerns(report, config, tools)
    return report


async def _list_upstreams(config: FilteringConfig, *, upstream_log: TextIO | None) -> Listing:
    """List every upstream's tools, prompts, resources and templates through a fresh proxy.

    An upstream that fails is left out and named in ``dead``; the proxy is closed
    before returning.
    """
    # Each upstream that fails is recorded (health) and left out, whatever serve would do;
    # the report names it, so it is not logged too.
    proxy = _build(
        config, on_upstream_error="warn", upstream_log=upstream_log, log_failures=False, relay=False
    )
    try:
        with patiently():
            listing = await list_unfiltered(proxy.server)
    finally:
        await proxy.close()
    health = proxy.health
    listing.dead = dict(health.unavailable)
    listing.dropped = {key: health.redact(r) for key, r in health.dropped_tools.items()}
    return listing


def _count_upstreams(report: CheckReport, config: FilteringConfig, dead: dict[str, str]) -> None:
    """Add each upstream with its tool count (None: not countable) and its error, if any."""
    names = report.tools
    for upstream in config.upstreams:
        prefix = f"{upstream.namespace}_" if upstream.namespace else ""
        if prefix:
            count: int | None = sum(1 for n in names if n.startswith(prefix))
        else:
            # Un-namespaced tools of several upstreams cannot be told apart by name.
            count = len(names) if len(config.upstreams) == 1 else None
        error = dead.get(upstream.label)
        report.upstreams.append(
            {
                "name": upstream.label,
                "namespace": upstream.namespace,
                "tools": None if error else count,
                "error": error,
            }
        )


def _sort_into_groups(
    report: CheckReport,
    catalog: Catalog,
    tools: list[Tool],
    others: list[tuple[ComponentKind, FastMCPComponent]],
) -> None:
    """Add each group with its members, and the tools in no group."""
    direct: dict[str, list[str]] = {g.name: [] for g in catalog.groups}
    effective: dict[str, list[str]] = {g.name: [] for g in catalog.groups}
    for tool in sorted(tools, key=lambda t: t.name):
        membership = catalog.membership(tool)
        for name in membership.direct:
            direct[name].append(tool.name)
        for name in membership.effective:
            effective[name].append(tool.name)
        if not membership.direct:
            report.ungrouped.append(tool.name)
    other_direct: dict[str, list[str]] = {g.name: [] for g in catalog.groups}
    for kind, component in others:
        label = f"{kind} {match_names(component, kind)[-1]}"
        report.others.append(label)
        membership = catalog.membership(component)
        for name in membership.direct:
            other_direct[name].append(label)
        for name in membership.effective:
            effective[name].append(label)
    for group in catalog.groups:
        report.groups.append(
            {
                "name": group.name,
                "title": group.title,
                "parents": list(group.parents),
                "tools": direct[group.name],
                "others": other_direct[group.name],
                "with_subgroups": len(effective[group.name]),
            }
        )


def _unmet_needs(config: FilteringConfig, *, http: bool) -> str | None:
    """One line on what the configured features cannot do as served, or None."""
    if not http or config.auth is not None:
        return None
    progressive = config.progressive is not None and config.progressive.enabled
    kept = [
        what
        for what, used in (("enabled groups", progressive), ("stated concerns", config.concerns))
        if used
    ]
    if not kept:
        return None
    # Without [auth] a 2026-07-28 HTTP request names no client to keep state for.
    reach = ", and reach other groups' tools through search_tools and by exact name"
    return (
        f"over HTTP without [auth], 2026-07-28 (stateless) clients keep no {' and no '.join(kept)}"
        f" (each request starts from the initial ones{reach if progressive else ''}); 2025-11-25 "
        "clients keep them per session. Add [auth] to keep them per client"
    )


def _warn_written_secrets(report: CheckReport, config: FilteringConfig) -> None:
    """Warn of each secret-looking value written in the file, not read from the environment."""
    for upstream in config.upstreams:
        for key in upstream.written_secrets:
            variable = key.partition(".")[2].upper().replace("-", "_")
            report.warnings.append(
                f"upstream {upstream.label!r} {key} holds what looks like a secret written in "
                f'the file; write "${{{variable}}}" there and set {variable} in the '
                "environment, so the file can be shared without it"
            )


def _warn_meta_patterns(report: CheckReport, catalog: Catalog, meta_names: set[str]) -> None:
    """Warn of each group pattern that also matches one of the stack's meta-tools."""
    for group in catalog.groups:
        for pattern in group.tools:
            for meta_name in sorted(fnmatch.filter(meta_names, pattern)):
                report.warnings.append(
                    f"group {group.name!r} pattern {pattern!r} also matches the meta-tool "
                    f"{meta_name!r}, which then follows the group; name the tools instead"
                )


def _report_tags(
    report: CheckReport, config: FilteringConfig, catalog: Catalog, tools: list[Tool]
) -> None:
    """Add each tag (declared first, then found) with its tools; warn of patterns matching none."""
    declared = {t.name: t.description for t in catalog.tags}
    found = [*declared, *sorted({tag for t in tools for tag in t.tags} - set(declared))]
    for tag in found:
        members = sorted(t.name for t in tools if tag in t.tags)
        report.tags.append({"name": tag, "description": declared.get(tag), "tools": members})
    for tag_config in config.tags:
        for pattern in tag_config.tools:
            if not fnmatch.filter(report.tools, pattern):
                report.warnings.append(
                    f"tag {tag_config.name!r} pattern {pattern!r} matches no tool"
                )


def _report_concerns(report: CheckReport, config: FilteringConfig, tools: list[Tool]) -> None:
    """Add each concern's count of tools per value; warn of mapping keys matching no tool."""
    for concern in config.concerns:
        counts = {value: 0 for value in concern.values or ()}
        unmapped = 0
        for tool in tools:
            value = ((tool.meta or {}).get("concerns") or {}).get(concern.name)
            if value in counts:
                counts[value] += 1
            else:
                unmapped += 1
        report.concerns.append(
            {
                "name": concern.name,
                "default": concern.default,
                "values": counts,
                "unmapped": unmapped,
            }
        )
    for pattern in config.concern_mapping:
        if not fnmatch.filter(report.tools, pattern):
            report.warnings.append(f"concern_mapping key {pattern!r} matches no tool")


def _meta_names(config: FilteringConfig) -> set[str]:
    """The stack's own tools (search_tools, enable_tools, ...): not the upstream's."""
    names: set[str | None] = set()
    if config.search.enabled:
        names.add(config.search.to_options().search_tool)
    if config.progressive is not None and config.progressive.enabled:
        progressive = config.progressive.to_options()
        names |= {progressive.enable_tool_name, progressive.disable_tool_name}
        # Without a call_tool_name, 2026-07-28 clients are offered a proxy of this name.
        names.add(progressive.call_tool_name or FIXED_CALL_TOOL)
    return {n for n in names if n is not None}


# -- output -------------------------------------------------------------------------------


def _print_report(report: CheckReport, out: TextIO) -> None:
    if not report.tools and report.errors:
        for error in report.errors:
            print(f"error: {error}", file=out)
        print(f"\nFAILED: {len(report.errors)} error(s)", file=out)
        return
    width = max(
        [len(g["name"]) for g in report.groups] + [len(t["name"]) for t in report.tags] + [12]
    )
    kinds = f", {len(report.others)} prompts, resources and templates" if report.others else ""
    print(f"{report.file}: {len(report.tools)} upstream tools{kinds}", file=out)
    for upstream in report.upstreams:
        count = "" if upstream["tools"] is None else f": {upstream['tools']} tools"
        if upstream["error"]:
            count = f": unavailable ({upstream['error']})"
        namespace = f" (namespace {upstream['namespace']})" if upstream["namespace"] else ""
        print(f"  upstream {upstream['name']}{namespace}{count}", file=out)
    print(f"\ngroups ({len(report.groups)})", file=out)
    print(f"  {'name':<{width}}  {'tools':>5}  {'other':>5}  {'+sub':>5}  parent", file=out)
    for group in report.groups:
        parents = ", ".join(group["parents"])
        print(
            f"  {group['name']:<{width}}  {len(group['tools']):>5}  {len(group['others']):>5}  "
            f"{group['with_subgroups']:>5}  {parents}",
            file=out,
        )
    print(f"\ntags ({len(report.tags)})", file=out)
    for tag in report.tags:
        description = f"  {tag['description']}" if tag["description"] else ""
        print(f"  {tag['name']:<{width}}  {len(tag['tools']):>5}{description}", file=out)
    if report.concerns:
        print(f"\nconcerns ({len(report.concerns)})", file=out)
        for concern in report.concerns:
            values = ", ".join(f"{v} {n}" for v, n in concern["values"].items())
            default = f" (default {concern['default']})" if concern["default"] else ""
            print(
                f"  {concern['name']}{default}: {values}, unmapped {concern['unmapped']}", file=out
            )
    print(f"\ntools in no group ({len(report.ungrouped)})", file=out)
    for name in report.ungrouped:
        print(f"  {name}", file=out)
    print(f"\n{_auth_line(report.auth)}\n{_state_line(report.state)}", file=out)
    for warning in report.warnings:
        print(f"warning: {warning}", file=out)
    for error in report.errors:
        print(f"error: {error}", file=out)
    print("\nOK" if report.ok else f"\nFAILED: {len(report.errors)} error(s)", file=out)


def _auth_line(auth: dict[str, Any] | None) -> str:
    if auth is None:
        return "auth: none (HTTP clients are not authenticated)"
    required = auth["required_scopes"]
    needs = f"; every token needs scopes {', '.join(required)}" if required else ""
    if auth["type"] == "static":
        tokens = "; ".join(
            t["client_id"]
            + (f" (subject {t['subject']})" if t["subject"] else "")
            + f" [{', '.join(t['scopes'])}]"
            for t in auth["tokens"]
        )
        return f"auth: {len(auth['tokens'])} static bearer token(s): {tokens}{needs}"
    checks = [f"{name} {_listed(auth[name])}" for name in ("issuer", "audience") if auth[name]]
    return f"auth: JWT ({auth['algorithm']}), {', '.join([auth['keys'], *checks])}{needs}"


def _listed(value: str | list[str]) -> str:
    return value if isinstance(value, str) else " or ".join(value)


def _state_line(state: dict[str, Any]) -> str:
    kept = f"client state kept {state['ttl_seconds']:g} s"
    if state["url"] == "memory://":
        return f"state: in this process (memory://, {kept})"
    return f"state: {state['url']} (timeout {state['timeout']} s, {kept})"


# -- entry point --------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastmcp-filtering",
        description="Put groups, tags, concerns, search and progressive disclosure "
        "in front of any MCP server.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve the filtering proxy (stdio by default)")
    serve.add_argument("config", help="configuration file (.toml, .json, .yaml)")
    serve.add_argument("--http", action="store_true", help="serve streamable HTTP, not stdio")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP host (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    serve.add_argument("--path", default="/mcp", help="HTTP path of the endpoint (default /mcp)")
    check_cmd = commands.add_parser(
        "check", help="validate a configuration against the upstream's tools"
    )
    check_cmd.add_argument("config", help="configuration file (.toml, .json, .yaml)")
    check_cmd.add_argument("--json", action="store_true", help="print a JSON report")
    init = commands.add_parser(
        "init",
        help="connect to a server and write a proposed configuration",
        usage="%(prog)s [-o FILE] [--from MCP_JSON] [COMMAND [ARGS...] | URL]",
    )
    init.add_argument("-o", "--output", help="write the TOML here (default: print it)")
    init.add_argument("--force", action="store_true", help="replace an existing --output file")
    init.add_argument("--from", dest="from_file", help="an mcpServers JSON file: proxy them all")
    init.add_argument("--mode", choices=["auto", "legacy"], default="auto", help="upstream era")
    init.add_argument("--max-group-size", type=int, default=15, help="tools per group at most")
    init.add_argument(
        "--env", action="append", default=[], help="NAME=VALUE, or NAME for ${NAME}, for a command"
    )
    init.add_argument("--header", dest="headers", action="append", default=[], help="NAME=VALUE")
    init.add_argument(
        "-q", "--quiet", action="store_true", help="print errors only (no summary, no stderr)"
    )
    init.add_argument("target", nargs=argparse.REMAINDER, help="the server's command or URL")
    for command in (serve, check_cmd):
        command.add_argument(
            "-q",
            "--quiet",
            action="store_true",
            help="hide the stdio upstreams' stderr; log warnings and errors only",
        )
        command.add_argument(
            "--log-level",
            type=str.upper,
            choices=LEVELS,
            metavar="LEVEL",
            help=f"log level: {', '.join(LEVELS)} (default INFO, WARNING with --quiet)",
        )
    return parser


def _started_by_a_gateway(command: str) -> bool:
    """Whether a gateway started this process as its upstream (then say why it stops)."""
    if not os.environ.get(UPSTREAM_MARK):
        return False
    print(
        f"fastmcp-filtering {command}: refused: this process was started as an upstream of "
        "a fastmcp-filtering gateway, and a gateway proxying itself starts gateways without "
        "end; list the servers this configuration proxies in the other one instead, or "
        "reach a running gateway by url",
        file=sys.stderr,
    )
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 failed, 2 usage).

    Example:
        ```python
        raise SystemExit(main(["check", "examples/server-github.toml"]))
        ```
    """
    args = _parser().parse_args(argv)
    if args.command in ("serve", "check") and _started_by_a_gateway(args.command):
        return 2
    if args.command == "init":
        request = InitRequest(
            **{f.name: getattr(args, f.name) for f in dataclasses.fields(InitRequest)}
        )
        return run_init(request, sys.stdout, sys.stderr)
    try:
        config = load_config(args.config)
    except ConfigError as error:
        if getattr(args, "json", False):
            problems = [
                {"file": error.file, "key": key, "line": line, "message": message}
                for key, line, message in error.problems
            ]
            print(json.dumps({"ok": False, "config_errors": problems}, indent=2))
        else:
            print(f"invalid configuration:\n{error}", file=sys.stderr)
        return 1
    level = configure_logs(args.log_level, quiet=args.quiet)
    log = upstream_log(quiet=args.quiet)
    if args.command == "check":
        report = asyncio.run(check(config, file=args.config, upstream_log=log))
        if args.json:
            print(json.dumps({"ok": report.ok, **asdict(report)}, indent=2))
        else:
            _print_report(report, sys.stdout)
        return 0 if report.ok else 1
    return _serve(config, args, level=level, log=log)


def _serve(
    config: FilteringConfig, args: argparse.Namespace, *, level: str, log: TextIO | None
) -> int:
    """``serve``: refuse what cannot be served, say what will not work, then serve."""
    if config.auth is not None and not args.http:
        print(
            f"{args.config}: [auth] applies to HTTP: a stdio server's client is the process "
            "that started it, and sends no token. Serve with --http, or serve a configuration "
            "without [auth] over stdio.",
            file=sys.stderr,
        )
        return 2
    if config.state.shared and not args.http:
        print(
            f"{args.config}: warning: over stdio a 2026-07-28 client is its process, and every "
            "stdio proxy on this [state] store keeps that client's state under one key: "
            "proxies of different users must not share the store",
            file=sys.stderr,
        )
    needs = _unmet_needs(config, http=args.http)
    if needs is not None:
        logger.warning("%s", needs)
    proxy = _build(config, upstream_log=log, audit=True)
    if args.http:
        serve_http(proxy, host=args.host, port=args.port, path=args.path, log_level=level)
    else:
        serve_stdio(proxy, log_level=level)
    return 0

"""An MCP server over stdio that misbehaves on purpose, as a hostile or broken upstream would.

A bare JSON-RPC loop (no SDK), so it can do what no SDK lets a server do: never answer,
answer with the wrong id, list a schema nested past any parser's limit, rename its tools on
every listing, return a result that is not a ``CallToolResult``; with ``--readable`` it serves
a prompt, a resource and a template, so ``--hang prompts/get`` (or ``resources/read``) hangs.
It speaks the 2025-11-25 handshake only (``server/discover`` is an unknown method), as many
real servers still do.

Run as ``python misbehaving.py [--hang METHOD] [--wrong-id METHOD] [--deep N] ...``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hang", action="append", default=[], help="never answer METHOD")
    parser.add_argument("--wrong-id", action="append", default=[], help="answer METHOD wrongly")
    parser.add_argument("--deep", type=int, default=0, help="one tool nests N objects")
    parser.add_argument("--tools", default="echo", help="comma-separated tool names")
    parser.add_argument("--rename", action="store_true", help="new names on every listing")
    parser.add_argument("--instructions", default=None)
    parser.add_argument("--bad-result", action="store_true", help="tools/call result is invalid")
    parser.add_argument("--env-out", default=None, help="write os.environ as JSON to this file")
    parser.add_argument("--api-key", default=None, help="a secret, as servers take them")
    parser.add_argument("--exit", action="store_true", help="exit at once, answering nothing")
    parser.add_argument(
        "--fail-when", default=None, help="answer every listing with an error once FILE exists"
    )
    parser.add_argument(
        "--grow", action="store_true", help="a tool 'grow' adds a tool, then says list_changed"
    )
    parser.add_argument("--crash-on-call", action="store_true", help="exit on tools/call")
    parser.add_argument("--stderr", type=int, default=0, help="write N lines to stderr at start")
    parser.add_argument(
        "--crash-on-read", action="store_true", help="exit on prompts/get and resources/read"
    )
    parser.add_argument(
        "--count-listings", default=None, help="append the method of each listing asked to FILE"
    )
    parser.add_argument(
        "--readable", action="store_true", help="a prompt, a resource and a template to read"
    )
    return parser.parse_args(argv)


_LISTINGS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")


# What ``--readable`` lists, by listing method.
_READABLE = {
    "prompts/list": {"prompts": [{"name": "greet", "description": "Say hello."}]},
    "resources/list": {"resources": [{"uri": "memo://note", "name": "note"}]},
    "resources/templates/list": {
        "resourceTemplates": [{"uriTemplate": "memo://notes/{id}", "name": "notes"}]
    },
}


def _read(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """``--readable``'s answer to ``prompts/get`` or ``resources/read``."""
    if method == "prompts/get":
        text = {"type": "text", "text": "Hello."}
        return {"messages": [{"role": "user", "content": text}]}
    return {"contents": [{"uri": params.get("uri"), "text": f"read {params.get('uri')}"}]}


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


class Upstream:
    """The state of one run: how many listings so far (``--rename``)."""

    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.listings = 0
        self.grown = 0
        self.notifications: list[str] = []
        """Methods of the notifications to send before the next answer."""

    def tools(self) -> list[dict[str, Any]]:
        self.listings += 1
        names = [n for n in self.options.tools.split(",") if n]
        if self.options.grow:
            names += ["grow", *(f"grown_{i}" for i in range(1, self.grown + 1))]
        if self.options.rename:
            names = [f"{n}_{self.listings}" for n in names]
        tools = [
            {"name": n, "description": f"The tool {n}.", "inputSchema": {"type": "object"}}
            for n in names
        ]
        if self.options.deep:
            deep = {"type": "object", "properties": {"x": _nested(self.options.deep)}}
            tools.append({"name": "deep", "description": "Nested.", "inputSchema": deep})
        return tools

    def readable(self) -> dict[str, Any]:
        """The capabilities ``--readable`` adds to ``initialize``'s."""
        return {"prompts": {}, "resources": {}} if self.options.readable else {}

    def answer(self, method: str, params: dict[str, Any]) -> tuple[str, Any]:
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {"listChanged": self.options.grow}, **self.readable()},
                "serverInfo": {"name": "misbehaving", "version": "1"},
            }
            if self.options.instructions:
                result["instructions"] = self.options.instructions
            return "result", result
        if method in _LISTINGS:
            if self.options.count_listings:
                with open(self.options.count_listings, "a", encoding="utf-8") as out:
                    out.write(f"{method}\n")
            if self.options.fail_when and os.path.exists(self.options.fail_when):
                return "error", {"code": -32603, "message": "backend down"}
        if method == "tools/list":
            return "result", {"tools": self.tools()}
        if method == "tools/call":
            if self.options.bad_result:
                return "result", {"content": "not a list", "isError": "maybe"}
            if self.options.grow and params.get("name") == "grow":
                self.grown += 1
                self.notifications.append("notifications/tools/list_changed")
            text = json.dumps({"tool": params.get("name"), "arguments": params.get("arguments")})
            return "result", {"content": [{"type": "text", "text": text}]}
        if method == "ping":
            return "result", {}
        if self.options.readable and method in _READABLE:
            return "result", _READABLE[method]
        if self.options.readable and method in ("prompts/get", "resources/read"):
            return "result", _read(method, params)
        if method in _LISTINGS:
            key = {"prompts/list": "prompts", "resources/list": "resources"}.get(
                method, "resourceTemplates"
            )
            return "result", {key: []}
        return "error", {"code": -32601, "message": f"Method not found: {method}"}


def main() -> None:
    options = _options(sys.argv[1:])
    for number in range(options.stderr):
        print(f"noise {number}", file=sys.stderr)
    sys.stderr.flush()
    if options.exit:
        sys.exit(3)
    if options.env_out:
        with open(options.env_out, "w", encoding="utf-8") as out:
            json.dump(dict(os.environ), out)
    upstream = Upstream(options)
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        method = message.get("method", "")
        if "id" not in message or not method:
            continue  # a notification or a response: nothing to answer
        if method in options.hang:
            continue
        if method == "tools/call" and options.crash_on_call:
            sys.exit(1)
        if method in ("prompts/get", "resources/read") and options.crash_on_read:
            sys.exit(1)
        kind, payload = upstream.answer(method, message.get("params") or {})
        for notification in upstream.notifications:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": notification}) + "\n")
        upstream.notifications.clear()
        ident = message["id"]
        if method in options.wrong_id:
            ident = f"not-{ident}"
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": ident, kind: payload}) + "\n")
        sys.stdout.flush()
    time.sleep(0)


if __name__ == "__main__":
    main()

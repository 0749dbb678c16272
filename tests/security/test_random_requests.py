"""Random JSON of every shape into every parameter and method the package adds.

Each example builds a fresh server with all four middlewares on one ``Catalog``,
puts the client in a random valid state, sends one random request and checks what
a user relies on: the server answers (a result, a documented JSON-RPC error, or a
tool error for meta-tools), within a bound; a list is never wider than the
client's state allows, computed from the test's own declarations; bad input
changes no state; and the next valid request still works.
"""

from __future__ import annotations

import unicodedata
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as mt
import pytest
from fastmcp import Client
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError

from fastmcp_filtering.client import CONCERNS_META_KEY, call_method

from .._faults_stack import (
    CONCERNS,
    GROUPS,
    MAX_RESULTS,
    META_TOOLS,
    TAGS,
    ClientState,
    allowed,
    make_stack,
    searchable,
    visible_tags,
)
from .._principals import as_principal
from ..conftest import ERAS

# Hypothesis: hundreds of random requests, each on a fresh server. The model is the
# client state that enable_tools and concerns/update change: on 2026-07-28 that is the
# side_effect_lists opt-in (fixed lists: tests/progressive/test_fixed_lists.py).
pytestmark = [pytest.mark.slow, pytest.mark.side_effect_lists]


CALL_TIMEOUT = 15.0
"""Bound on one request: a server that has not answered by then is hung, not slow."""

PAGE_SIZE = 3
"""Small pages, so cursors are issued and followed."""

PROPERTY_SETTINGS = settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

LIST_METHODS = {
    "tools/list": "tool",
    "prompts/list": "prompt",
    "resources/list": "resource",
    "resources/templates/list": "template",
}
_KEY_FIELD = {"tool": "name", "prompt": "name", "resource": "uri", "template": "uriTemplate"}

GROUP_NAMES = [g.name for g in GROUPS]
TAG_NAMES = [t.name for t in TAGS]
CONCERN_WORDS = [c.name for c in CONCERNS] + [v for c in CONCERNS for v in c.values]
TOOL_NAMES = [
    "create_issue",
    "list_issues",
    "create_repo",
    "delete_repo",
    "delete_branch",
    "encrypt_data",
    "dump_plaintext",
    "ping",
    "typo",
    *sorted(META_TOOLS),
]


# -- strategies ---------------------------------------------------------------------------

text = st.text(st.characters(codec="utf-8"), max_size=40)
"""Random text, any plane, no lone surrogates (they cannot be encoded as UTF-8 JSON)."""

huge_text = st.builds(
    lambda chunk, times: chunk * times, st.text(min_size=1, max_size=4), st.integers(200, 4000)
)
"""Strings of hundreds to tens of thousands of characters, cheap to generate."""

known_word = st.sampled_from(GROUP_NAMES + TAG_NAMES + CONCERN_WORDS + TOOL_NAMES)
"""Names the server knows, so random input also reaches the valid paths."""

small_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
    | known_word
)
scalars = small_scalars | huge_text
long_lists = st.builds(lambda item, times: [item] * times, small_scalars, st.integers(90, 300))
"""Long lists of small items: a long list of huge items would test the test machine's memory."""


def _nest(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


json_values = st.recursive(
    scalars | long_lists,
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(text | known_word, children, max_size=6)
    ),
    max_leaves=20,
) | st.builds(_nest, scalars, st.integers(20, 200))
"""JSON of every shape: scalars, big numbers, huge strings, long lists, deep nesting.

Depth stays within what a JSON parser on a real transport accepts (pydantic's
parser stops at about 250 levels); deeper input is a test of its own below.
"""

name_lists = st.lists(known_word | text | huge_text | json_values, max_size=8) | st.builds(
    lambda item, times: [item] * times, known_word | text, st.integers(95, 120)
)

filters = (
    json_values
    | st.fixed_dictionaries(
        {}, optional={"groups": name_lists | json_values, "tags": name_lists | json_values}
    )
    | st.dictionaries(text | st.sampled_from(["groups", "tags"]), json_values, max_size=3)
)
queries = json_values | text | huge_text | st.sampled_from(["issue", "repo delete", " ", "\x00"])
CONFIGS: list[dict[str, str]] = [
    {},
    {"security": "low"},
    {"security": "high"},
    {"cost": "minimal"},
    {"security": "low", "cost": "high"},
]
overrides = (
    st.sampled_from(CONFIGS)
    | json_values
    | st.dictionaries(known_word | text, known_word | json_values, max_size=4)
    | st.builds(lambda n: {f"c{i}": "high" for i in range(n)}, st.integers(60, 70))
)
CURSOR_RECIPES = ["none", "plain", "filtered", "overridden"]
cursors = st.sampled_from(CURSOR_RECIPES) | json_values

ENABLE_SETS: list[list[str]] = [
    [],
    ["admin"],
    ["code"],
    ["code", "repos"],
    ["admin", "code"],
    ["vault"],
    ["vault", "code"],
]
PRINCIPALS: list[str | None] = [None, "reader", "keeper"]
"""Unauthenticated, a token the vault group refuses, and one it admits (tests/_principals.py)."""
starts = st.tuples(
    st.sampled_from(ENABLE_SETS), st.sampled_from(CONFIGS), st.sampled_from(PRINCIPALS)
)


# -- talking to the server ----------------------------------------------------------------


@dataclass
class Answer:
    """What the server answered: a result, or a JSON-RPC error code."""

    result: dict[str, Any] | None = None
    code: int | None = None
    message: str = ""

    @property
    def tool_error(self) -> bool:
        return self.result is not None and bool(self.result.get("isError"))


async def ask(client: Client[Any], method: str, params: Mapping[str, Any] | None) -> Answer:
    """Send one raw request; fail the test if the server does not answer within the bound."""
    try:
        with anyio.fail_after(CALL_TIMEOUT):
            return Answer(result=await call_method(client, method, params))
    except MCPError as error:
        return Answer(code=error.error.code, message=error.error.message)
    except TimeoutError:
        pytest.fail(f"{method} got no answer within {CALL_TIMEOUT} s: {_short(params)}")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) < 300 else text[:300] + "..."


@asynccontextmanager
async def started(
    era: str, start: tuple[list[str], dict[str, str]]
) -> AsyncIterator[tuple[Client[Any], ClientState]]:
    """A fresh stack, a client in ``era`` and a state reached with valid requests only."""
    enable, configured, *who = start
    principal = who[0] if who else None
    server = make_stack(page_size=PAGE_SIZE)
    identity = as_principal(principal) if principal else {}
    async with Client(server, **ERAS[era], **identity) as client:
        state = ClientState(principal=principal)
        if enable:
            reply = await ask(
                client, "tools/call", {"name": "enable_tools", "arguments": {"groups": enable}}
            )
            assert reply.result is not None, reply
            assert not reply.tool_error, reply
            state.enable(enable)
        if configured:
            reply = await ask(client, "concerns/update", {"concerns": configured})
            assert reply.result is not None, reply
            state.configured = dict(configured)
        yield client, state


def keys_of(result: Mapping[str, Any], kind: str) -> list[str]:
    field = {
        "tool": "tools",
        "prompt": "prompts",
        "resource": "resources",
        "template": "resourceTemplates",
    }[kind]
    return [str(item[_KEY_FIELD[kind]]) for item in result[field]]


async def listed(client: Client[Any], kind: str) -> set[str]:
    """Every page of a plain listing of ``kind``."""
    method = next(m for m, k in LIST_METHODS.items() if k == kind)
    found: list[str] = []
    cursor: str | None = None
    for _ in range(20):
        answer = await ask(client, method, {"cursor": cursor} if cursor else None)
        assert answer.result is not None, f"a valid {method} failed: {answer}"
        found += keys_of(answer.result, kind)
        cursor = answer.result.get("nextCursor")
        if not cursor:
            break
    assert len(found) == len(set(found)), f"{method} pages repeat entries: {found}"
    return set(found)


async def still_serves(client: Client[Any], state: ClientState) -> None:
    """The next valid requests work and show exactly what the client's state allows."""
    for kind in ("tool", "prompt", "resource", "template"):
        assert await listed(client, kind) == allowed(kind, state), kind
    ping = await ask(client, "tools/call", {"name": "ping", "arguments": {}})
    assert ping.result is not None, ping
    assert not ping.tool_error, ping


def accepted_override(raw: object) -> dict[str, str] | None:
    """The concerns a request's override stands for, once the server has accepted it."""
    if raw is None:
        return None
    assert isinstance(raw, Mapping), "a non-object override must be refused"
    declared = {c.name for c in CONCERNS}
    return {k: v for k, v in raw.items() if k in declared}


def ranked(query: object) -> bool:
    """Whether ``query`` asks for a ranking (a non-blank string once control chars are spaces)."""
    if not isinstance(query, str):
        return False
    return bool("".join(" " if unicodedata.category(c)[0] == "C" else c for c in query).strip())


# -- properties ---------------------------------------------------------------------------


@pytest.mark.parametrize("era", list(ERAS))
class TestLists:
    @PROPERTY_SETTINGS
    @given(
        start=starts,
        method=st.sampled_from(sorted(LIST_METHODS)),
        params=st.fixed_dictionaries(
            {},
            optional={
                "filter": filters,
                "query": queries,
                "override": overrides,
                "cursor": cursors,
            },
        ),
    )
    @example(
        start=([], {}),
        method="tools/list",
        params={"filter": {"groups": _nest("issues", 200)}},
    )
    @example(start=([], {}), method="tools/list", params={"filter": {"groups": ["issues"] * 101}})
    @example(start=([], {}), method="tools/list", params={"filter": {"tags": ["x" * 257]}})
    @example(start=([], {}), method="prompts/list", params={"query": "x" * 1001})
    @example(start=(["admin"], {}), method="tools/list", params={"override": {"security": "low"}})
    @example(
        start=(["vault"], {}, "reader"),
        method="tools/list",
        params={"filter": {"groups": ["vault"]}},
    )
    @example(start=(["vault"], {}, "keeper"), method="resources/list", params={"query": "ledger"})
    @example(
        start=([], {}), method="tools/list", params={"override": {f"c{i}": "x" for i in range(65)}}
    )
    async def test_a_list_is_never_wider_than_the_state_allows(
        self, era: str, start: tuple[list[str], dict[str, str]], method: str, params: dict[str, Any]
    ) -> None:
        kind = LIST_METHODS[method]
        async with started(era, start) as (client, state):
            request: dict[str, Any] = {k: v for k, v in params.items() if k in ("filter", "query")}
            if "override" in params:
                request["_meta"] = {CONCERNS_META_KEY: params["override"]}
            recipe = params.get("cursor")
            if recipe in CURSOR_RECIPES:
                request["cursor"] = await _cursor(client, method, recipe)
            elif "cursor" in params:
                request["cursor"] = recipe
            if request.get("cursor") is None:
                request.pop("cursor", None)

            pages = 0
            while True:
                answer = await ask(client, method, request)
                if answer.result is None:
                    assert answer.code == mt.INVALID_PARAMS, answer
                    break
                pages += 1
                got = keys_of(answer.result, kind)
                sent_filter = params.get("filter")
                raw_filter: Mapping[str, Any] = (
                    sent_filter if isinstance(sent_filter, Mapping) else {}
                )
                may = allowed(
                    kind,
                    state,
                    override=accepted_override(params.get("override")),
                    filter_groups=raw_filter.get("groups"),
                    filter_tags=raw_filter.get("tags") or (),
                )
                assert set(got) <= may, f"{method} listed {sorted(set(got) - may)} beyond the state"
                if ranked(params.get("query")):
                    assert len(got) <= MAX_RESULTS
                cursor = answer.result.get("nextCursor")
                if not cursor or pages == 10:
                    break
                request["cursor"] = cursor
            await still_serves(client, state)


async def _cursor(client: Client[Any], method: str, recipe: str) -> str | None:
    """A real cursor: from a plain, a filtered or an overridden first page."""
    params: dict[str, Any] = {}
    if recipe == "none":
        return None
    if recipe == "filtered":
        params["filter"] = {"tags": []}
    if recipe == "overridden":
        params["_meta"] = {CONCERNS_META_KEY: {"security": "low"}}
    answer = await ask(client, method, params)
    assert answer.result is not None, answer
    cursor = answer.result.get("nextCursor")
    return cursor if isinstance(cursor, str) else None


@pytest.mark.parametrize("era", list(ERAS))
class TestDeclarations:
    @PROPERTY_SETTINGS
    @given(
        start=starts,
        method=st.sampled_from(["groups/list", "tags/list", "concerns/list"]),
        params=st.none() | st.dictionaries(text | known_word, json_values, max_size=4),
    )
    async def test_declaration_lists_ignore_their_params(
        self,
        era: str,
        start: tuple[list[str], dict[str, str]],
        method: str,
        params: dict[str, Any] | None,
    ) -> None:
        async with started(era, start) as (client, state):
            answer = await ask(client, method, params)
            if method == "groups/list" and isinstance(params, dict) and "cursor" in params:
                # groups/list pages like the other lists: a cursor it did not issue is -32602.
                assert answer.code == -32602 or answer.result is not None, answer
                return
            assert answer.result is not None, answer
            if method == "groups/list":
                # Every page, following nextCursor, gives the declared groups once, in order.
                names = [g["name"] for g in answer.result["groups"]]
                cursor = answer.result.get("nextCursor")
                while isinstance(cursor, str):
                    page = await ask(client, method, {"cursor": cursor})
                    assert page.result is not None, page
                    names += [g["name"] for g in page.result["groups"]]
                    cursor = page.result.get("nextCursor")
                assert names == state.groups()
            elif method == "tags/list":
                # Declared tags, then tags of components the client can see: never others.
                assert {t["name"] for t in answer.result["tags"]} == visible_tags(state)
            else:
                assert [c["name"] for c in answer.result["concerns"]] == [c.name for c in CONCERNS]
            await still_serves(client, state)


@pytest.mark.parametrize("era", list(ERAS))
class TestConcernsUpdate:
    @PROPERTY_SETTINGS
    @given(
        start=starts,
        params=st.none()
        | st.fixed_dictionaries({}, optional={"concerns": overrides})
        | st.dictionaries(text | st.just("concerns"), json_values, max_size=3),
    )
    @example(start=([], {"security": "low"}), params={"concerns": {"security": "top"}})
    @example(start=([], {"security": "low"}), params={"concerns": {"security": "x" * 100_000}})
    async def test_bad_update_changes_nothing_and_good_update_applies(
        self, era: str, start: tuple[list[str], dict[str, str]], params: dict[str, Any] | None
    ) -> None:
        async with started(era, start) as (client, state):
            answer = await ask(client, "concerns/update", params)
            if answer.result is None:
                assert answer.code == mt.INVALID_PARAMS, answer
                # Never echoes a huge value back.
                assert len(answer.message) < 2_000
            else:
                assert params is not None
                accepted = accepted_override(params["concerns"])
                assert accepted is not None
                state.configured = accepted
                assert answer.result["concerns"] == {"security": "medium", **accepted}
            await still_serves(client, state)


_CALL_TARGETS = {
    "tools/call": st.sampled_from(TOOL_NAMES) | text | huge_text,
    "prompts/get": st.sampled_from(["triage", "hello", "leak_prompt", "review_prompt"]) | text,
    "resources/read": st.sampled_from(
        ["repo://readme", "misc://notes", "secret://dump", "repo://a/license", "secret://a/key"]
    )
    | text,
}
_COMPONENT_OF = {
    "repo://a/license": ("template", "repo://{name}/license"),
    "secret://a/key": ("template", "secret://{name}/key"),
}


@pytest.mark.parametrize("era", list(ERAS))
class TestCallsWithOverride:
    @PROPERTY_SETTINGS
    @given(
        start=starts,
        call=st.sampled_from(sorted(_CALL_TARGETS)).flatmap(
            lambda method: st.tuples(st.just(method), _CALL_TARGETS[method])
        ),
        override=st.none() | overrides,
    )
    @example(start=([], {}), call=("tools/call", "dump_plaintext"), override={"security": "low"})
    @example(start=(["admin"], {}), call=("tools/call", "delete_repo"), override={"cost": "high"})
    @example(start=([], {}), call=("prompts/get", "leak_prompt"), override={"security": "low"})
    @example(
        start=([], {}), call=("resources/read", "secret://a/key"), override={"security": "low"}
    )
    @example(start=(["code"], {}), call=("resources/read", "repo://readme"), override=None)
    async def test_a_call_succeeds_only_for_what_the_request_may_list(
        self,
        era: str,
        start: tuple[list[str], dict[str, str]],
        call: tuple[str, str],
        override: object,
    ) -> None:
        method, target = call
        async with started(era, start) as (client, state):
            params: dict[str, Any]
            if method == "tools/call":
                params = {"name": target, "arguments": _arguments_for(target)}
            elif method == "prompts/get":
                params = {"name": target}
            else:
                params = {"uri": target}
            if override is not None:
                params["_meta"] = {CONCERNS_META_KEY: override}
            answer = await ask(client, method, params)
            if answer.result is None:
                codes = (
                    {mt.INVALID_PARAMS}
                    if method == "tools/call"
                    else {mt.INVALID_PARAMS, mt.INTERNAL_ERROR}
                )
                assert answer.code in codes, answer
            elif not answer.tool_error and target not in META_TOOLS:
                kind, key = {
                    "tools/call": ("tool", target),
                    "prompts/get": ("prompt", target),
                    "resources/read": _COMPONENT_OF.get(target, ("resource", target)),
                }[method]
                may = allowed(kind, state, override=accepted_override(override))
                assert key in may, (
                    f"{method} {target!r} succeeded though the request may not list it"
                )
            await still_serves(client, state)


def _arguments_for(name: str) -> dict[str, Any]:
    if name in {"create_issue"}:
        return {"title": "t"}
    if name in {"create_repo", "delete_repo", "delete_branch"}:
        return {"name": "n"}
    if name in {"encrypt_data", "dump_plaintext"}:
        return {"data": "d"}
    if name == "search_tools":
        return {"query": "issue"}
    if name in {"enable_tools", "disable_tools"}:
        return {"groups": []}
    if name == "call_tool":
        return {"name": "ping"}
    return {}


@pytest.mark.parametrize("era", list(ERAS))
class TestMetaTools:
    @PROPERTY_SETTINGS
    @given(
        start=starts,
        tool=st.sampled_from(["enable_tools", "disable_tools"]),
        arguments=st.fixed_dictionaries({}, optional={"groups": name_lists | json_values})
        | st.dictionaries(text | st.just("groups"), json_values, max_size=3),
    )
    @example(start=([], {}), tool="enable_tools", arguments={"groups": ["repos", "code"]})
    @example(start=(["code", "repos"], {}), tool="disable_tools", arguments={"groups": ["code"]})
    # Access control: the checked group opens to the token it admits and to no other.
    @example(start=([], {}, "keeper"), tool="enable_tools", arguments={"groups": ["vault"]})
    @example(start=([], {}, "reader"), tool="enable_tools", arguments={"groups": ["vault"]})
    @example(start=(["vault"], {}, None), tool="disable_tools", arguments={"groups": ["vault"]})
    async def test_enable_and_disable_change_only_what_they_say(
        self,
        era: str,
        start: tuple[list[str], dict[str, str]],
        tool: str,
        arguments: dict[str, Any],
    ) -> None:
        async with started(era, start) as (client, state):
            answer = await ask(client, "tools/call", {"name": tool, "arguments": arguments})
            assert answer.result is not None, answer
            if not answer.tool_error:
                groups = arguments.get("groups")
                if tool == "enable_tools":
                    state.enable(groups)
                else:
                    state.disable(groups)
                reply = answer.result["structuredContent"]
                assert reply["enabled_groups"] == [g for g in GROUP_NAMES if g in state.enabled]
                assert set(reply["available_tools"]) <= allowed("tool", state)
            await still_serves(client, state)

    @PROPERTY_SETTINGS
    @given(
        start=starts,
        arguments=st.fixed_dictionaries({}, optional={"query": queries})
        | st.dictionaries(text | st.just("query"), json_values, max_size=3),
    )
    async def test_search_tools_never_returns_a_hidden_tool(
        self, era: str, start: tuple[list[str], dict[str, str]], arguments: dict[str, Any]
    ) -> None:
        async with started(era, start) as (client, state):
            answer = await ask(
                client, "tools/call", {"name": "search_tools", "arguments": arguments}
            )
            assert answer.result is not None, answer
            if not answer.tool_error:
                found = answer.result["structuredContent"]["tools"]
                assert searchable(found, state)
                assert len(found) <= MAX_RESULTS
            await still_serves(client, state)

    @PROPERTY_SETTINGS
    @given(
        start=starts,
        arguments=st.fixed_dictionaries(
            {},
            optional={
                "name": st.sampled_from(TOOL_NAMES) | text | json_values,
                "arguments": json_values | st.dictionaries(text, json_values, max_size=3),
            },
        ),
    )
    @example(start=([], {}), arguments={"name": "delete_repo", "arguments": {"name": "x"}})
    @example(
        start=(["admin"], {}), arguments={"name": "dump_plaintext", "arguments": {"data": "x"}}
    )
    async def test_call_tool_calls_only_what_the_client_may_list(
        self, era: str, start: tuple[list[str], dict[str, str]], arguments: dict[str, Any]
    ) -> None:
        async with started(era, start) as (client, state):
            answer = await ask(client, "tools/call", {"name": "call_tool", "arguments": arguments})
            assert answer.result is not None, answer
            target = arguments.get("name")
            if not answer.tool_error and target not in META_TOOLS:
                assert target in allowed("tool", state), f"call_tool ran hidden {target!r}"
            if not answer.tool_error and target in ("enable_tools", "disable_tools"):
                # The proxy may call the meta-tools too; the model follows.
                groups = (arguments.get("arguments") or {}).get("groups")
                state.enable(groups) if target == "enable_tools" else state.disable(groups)
            await still_serves(client, state)


DEEP = 1500
"""Deeper than any JSON parser on stdio or HTTP lets through, but an in-process client can."""


async def ask_unserialized(client: Client[Any], method: str, params: dict[str, Any]) -> Answer:
    """Send ``params`` as Python objects, past the client's serializer and its depth limit."""
    data: dict[str, Any] = {"method": method, "params": params}
    options: dict[str, Any] = {}
    client.session._stamp(data, options)  # type: ignore[arg-type]
    try:
        with anyio.fail_after(CALL_TIMEOUT):
            dispatcher = client.session._dispatcher
            return Answer(result=await dispatcher.send_raw_request(method, data["params"], options))  # type: ignore[arg-type]
    except MCPError as error:
        return Answer(code=error.error.code, message=error.error.message)


@pytest.mark.parametrize("era", list(ERAS))
class TestDeepNesting:
    @pytest.mark.parametrize(
        ("params", "field"),
        [
            ({"filter": {"groups": _nest("issues", DEEP)}}, "filter.groups"),
            ({"query": _nest("issue", DEEP)}, "query"),
            ({"_meta": {CONCERNS_META_KEY: {"security": _nest("low", DEEP)}}}, None),
        ],
        ids=["filter", "query", "override"],
    )
    async def test_deep_nesting_in_a_list_parameter_is_invalid_params(
        self, era: str, params: dict[str, Any], field: str | None
    ) -> None:
        async with started(era, ([], {})) as (client, state):
            answer = await ask_unserialized(client, "tools/list", params)
            await still_serves(client, state)
        # On a 2025-11-25 session the SDK's own envelope check can refuse it first (-32600):
        # a clear client error either way, never an internal one.
        assert answer.code in {mt.INVALID_PARAMS, mt.INVALID_REQUEST}, answer

    async def test_deeply_nested_group_name_is_an_errors_entry(self, era: str) -> None:
        async with started(era, ([], {})) as (client, state):
            arguments = {"groups": ["admin", _nest("x", DEEP)]}
            answer = await ask_unserialized(
                client, "tools/call", {"name": "enable_tools", "arguments": arguments}
            )
            state.enable(["admin"])  # the valid name in the call is enabled; the other is an error
            await still_serves(client, state)
        assert answer.result is not None, answer
        assert not answer.tool_error, answer.result["content"][0]["text"][:200]

    async def test_deep_nesting_never_stops_the_server(self, era: str) -> None:
        """Whatever the error, the server answers with an error and keeps serving."""
        async with started(era, ([], {})) as (client, state):
            for params in (
                {"filter": {"groups": _nest("issues", DEEP)}},
                {"query": _nest("issue", DEEP)},
                {"_meta": {CONCERNS_META_KEY: {"security": _nest("low", DEEP)}}},
            ):
                answer = await ask_unserialized(client, "tools/list", params)
                assert answer.result is None, answer
            answer = await ask_unserialized(
                client, "concerns/update", {"concerns": _nest({"security": "low"}, DEEP)}
            )
            assert answer.code == mt.INVALID_PARAMS, answer
            await still_serves(client, state)


@pytest.mark.parametrize("era", list(ERAS))
class TestEcho:
    async def test_concerns_errors_never_echo_a_huge_value(self, era: str) -> None:
        async with started(era, ([], {})) as (client, state):
            answer = await ask(client, "concerns/update", {"concerns": {"security": "x" * 200_000}})
            await still_serves(client, state)
        assert answer.code == mt.INVALID_PARAMS
        assert len(answer.message) < 1_000

    @pytest.mark.parametrize(
        "groups",
        [["y" * 200_000], [{"k": "x" * 200_000}], "z" * 200_000],
        ids=["unknown-name", "non-string-name", "not-a-list"],
    )
    async def test_meta_tool_errors_never_echo_a_huge_name(self, era: str, groups: object) -> None:
        async with started(era, ([], {})) as (client, state):
            answer = await ask(
                client, "tools/call", {"name": "enable_tools", "arguments": {"groups": groups}}
            )
            await still_serves(client, state)
        assert answer.result is not None
        assert len(repr(answer.result)) < 10_000

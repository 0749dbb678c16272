"""Background tasks (FastMCP's tasks extension): a hidden tool is not started, polled or fetched.

FastMCP 4 runs ``task=True`` tools as SEP-2663 tasks for 2026-07-28 clients only:
``tools/call`` answers a task, followed with ``tasks/get`` (which carries the
result), ``tasks/update`` and ``tasks/cancel``; there is no ``tasks/list`` or
``tasks/result``. On 2025-11-25 FastMCP runs the same tools as ordinary calls and
has no ``tasks/*`` method. Starting is checked in both eras; following a task,
on 2026-07-28, and shown to fail on 2025-11-25.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.auth import require_scopes
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.server.middleware.tool_injection import ToolInjectionMiddleware
from fastmcp.tools import Tool
from fastmcp.utilities.tests import asgi_server
from mcp.shared.exceptions import MCPError
from typing_extensions import override

from fastmcp_filtering import (
    Concern,
    ConcernMiddleware,
    FilterMiddleware,
    Group,
    GroupAccessMiddleware,
    ProgressiveDisclosureMiddleware,
    add_filtering,
    concerns,
    in_group,
    unrestricted,
)
from fastmcp_filtering.client import call_method, concerns_meta

from .._faults_stores import OUR_PREFIX, FaultyStore
from ..conftest import Connect, use

try:
    from fastmcp_tasks import TasksExtension, ToolTask, call_tool_task
except ImportError as missing:
    # fastmcp[tasks] installs it; it is published for some FastMCP versions only (none for 4.2).
    pytest.skip(
        f"FastMCP's tasks extension (fastmcp-tasks) is not importable: {missing}",
        allow_module_level=True,
    )

# A tool of a group not enabled is hidden here: on 2026-07-28 that is the side_effect_lists
# opt-in (fixed lists run it when called by name, as a task too: its own documented choice).
pytestmark = pytest.mark.side_effect_lists

SECRET = "SECRET"
GROUPS = [Group("public"), Group("admin")]
# apply_defaults="all" below: these tests are about what the default hides from every client.
RISK = [Concern("risk", values=["safe", "destructive"], ordered=True, default="safe")]
DESTRUCTIVE = concerns_meta({"risk": "destructive"})


class Ran:
    """What the server's tools did, and a gate the slow ones wait on."""

    def __init__(self) -> None:
        self.tools: list[str] = []
        self.gate = asyncio.Event()


def task_server(*middlewares: Any, store: Any = None) -> tuple[FastMCP, Ran]:
    """A server whose tools all run as tasks when the client asks, with ``middlewares``."""
    mcp = FastMCP("tasks", session_state_store=store)
    # A queue of its own, so two servers in one test never run each other's tasks.
    mcp.add_extension(TasksExtension(name=f"tasks-{uuid.uuid4().hex}"))
    ran = Ran()

    @in_group("public")
    @mcp.tool(task=True)
    async def report(n: int = 1) -> str:
        ran.tools.append("report")
        return f"report {n}"

    @in_group("admin")
    @mcp.tool(task=True)
    async def purge() -> str:
        ran.tools.append("purge")
        return SECRET

    @in_group("admin")
    @mcp.tool(task=True)
    async def slow_purge() -> str:
        await ran.gate.wait()
        ran.tools.append("slow_purge")
        return SECRET

    @in_group("public")
    @concerns(risk="destructive")
    @mcp.tool(task=True)
    async def wipe() -> str:
        await ran.gate.wait()
        ran.tools.append("wipe")
        return SECRET

    @in_group("public")
    @mcp.tool(name="deploy", version="1", task=True)
    async def deploy_v1() -> str:
        ran.tools.append("deploy v1")
        return "deployed v1"

    @in_group("admin")
    @mcp.tool(name="deploy", version="2", task=True)
    async def deploy_v2() -> str:
        await ran.gate.wait()
        ran.tools.append("deploy v2")
        return SECRET

    @mcp.tool(task=True)
    async def ping() -> str:
        return "pong"

    # Claims only a group nobody declares: concealed, never hinted.
    @in_group("undeclared")
    @mcp.tool(task=True)
    async def ghost() -> str:
        ran.tools.append("ghost")
        return SECRET

    use(mcp, *middlewares)
    return mcp, ran


def progressive(**options: Any) -> ProgressiveDisclosureMiddleware:
    options.setdefault("initial_groups", ["public"])
    return ProgressiveDisclosureMiddleware(groups=GROUPS, **options)


async def get_task(client: Client[Any], task_id: str, **meta: Any) -> dict[str, Any]:
    """``tasks/get`` on the wire: the raw result, ``_meta`` included."""
    params: dict[str, Any] = {"taskId": task_id}
    if meta:
        params["_meta"] = meta
    return await call_method(client, "tasks/get", params)


async def finished(client: Client[Any], task_id: str, **meta: Any) -> dict[str, Any]:
    """``tasks/get`` until the task is no longer working."""
    for _ in range(500):
        task = await get_task(client, task_id, **meta)
        if task["status"] != "working":
            return task
        await asyncio.sleep(0.01)
    raise AssertionError(f"task {task_id} still working")


async def until(condition: Callable[[], bool]) -> None:
    """Wait (at most 5 s) for the worker to do what ``condition`` checks."""
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the task worker did not get there")


async def refused(request: Any) -> MCPError:
    with pytest.raises(MCPError) as error:
        await request
    return error.value


async def unknown_task_answer(client: Client[Any], task_id: str) -> tuple[int, str, Any]:
    """What FastMCP itself answers for an id it never issued, as if it were ``task_id``."""
    error = await refused(get_task(client, "no-such-task"))
    return error.error.code, error.error.message.replace("no-such-task", task_id), error.error.data


def answer(error: MCPError) -> tuple[int, str, Any]:
    return error.error.code, error.error.message, error.error.data


def text(result: mt.CallToolResult) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


class TestStarting:
    """A hidden tool cannot start as a task: the refusal is the one an ordinary call gets."""

    async def test_a_tool_whose_group_is_not_enabled_gets_the_hint(
        self, connect: Connect, era: str
    ) -> None:
        mcp, ran = task_server(progressive())
        async with connect(mcp) as client:
            # FastMCP's client asks for a task on every 2026-07-28 call.
            result = await client.call_tool_mcp("purge", {})
            assert result.is_error
            assert text(result) == (
                "Tool 'purge' is in group 'admin', which is not enabled. "
                'Call enable_tools(groups=["admin"]) first. Enabled now: ["public"].'
            )
            if era == "modern":
                with pytest.raises(ToolError, match="did not run as a task"):
                    await call_tool_task(client, "purge", {})
            await client.call_tool("enable_tools", {"groups": ["admin"]})
            if era == "modern":
                task = await call_tool_task(client, "purge", {})
                assert (await task.result()).data == SECRET
            else:
                assert (await client.call_tool("purge", {})).data == SECRET
        assert ran.tools == ["purge"]

    async def test_a_tool_the_concerns_exclude_gets_the_concerns_refusal(
        self, connect: Connect, era: str
    ) -> None:
        mcp, ran = task_server(ConcernMiddleware(concerns=RISK, apply_defaults="all"))
        ran.gate.set()
        async with connect(mcp) as client:
            result = await client.call_tool_mcp("wipe", {})
            assert result.is_error
            assert "risk" in text(result)
            assert "destructive" in text(result)
            assert SECRET not in text(result)
            if era == "legacy":
                assert (await client.call_tool("wipe", {}, meta=DESTRUCTIVE)).data == SECRET
            else:
                # The override is per request: following the task needs it too.
                task = await call_tool_task(client, "wipe", {}, meta=DESTRUCTIVE)
                done = await finished(client, task.task_id, **DESTRUCTIVE)
                assert done["result"]["structuredContent"] == {"result": SECRET}
        assert ran.tools == ["wipe"]

    async def test_a_concealed_tool_is_unknown_word_for_word(self, connect: Connect) -> None:
        mcp, ran = task_server(progressive())
        async with connect(mcp) as client:
            concealed = await client.call_tool_mcp("ghost", {})
            unknown = await client.call_tool_mcp("no_such_tool", {})
        assert concealed.is_error
        assert text(concealed) == text(unknown).replace("no_such_tool", "ghost")
        assert ran.tools == []

    async def test_a_hidden_version_is_not_started(self, connect: Connect) -> None:
        mcp, ran = task_server(progressive())
        async with connect(mcp) as client:
            result = await client.call_tool_mcp("deploy", {}, meta={"fastmcp": {"version": "2"}})
            assert result.is_error
            # The highest version this client may see runs instead.
            assert (await client.call_tool("deploy", {})).data == "deployed v1"
        assert ran.tools == ["deploy v1"]

    async def test_the_whole_stack_refuses_too(self, connect: Connect) -> None:
        mcp, ran = task_server()
        add_filtering(
            mcp,
            groups=GROUPS,
            concerns=RISK,
            apply_concern_defaults="all",
            progressive={"initial_groups": ["public"]},
        )
        async with connect(mcp) as client:
            for name in ("purge", "wipe", "ghost"):
                assert (await client.call_tool_mcp(name, {})).is_error, name
        assert ran.tools == []

    async def test_a_filter_is_a_view_so_a_filtered_out_tool_still_starts(self) -> None:
        mcp, ran = task_server(FilterMiddleware(groups=GROUPS))
        async with Client(mcp) as client:
            task = await call_tool_task(client, "purge", {})
            assert (await task.result()).data == SECRET
        assert ran.tools == ["purge"]


class TestVisibleTasks:
    """A tool the client may see runs as usual: a task on 2026-07-28, a call on 2025-11-25."""

    async def test_it_runs_as_a_task_on_2026_07_28(self) -> None:
        mcp, ran = task_server(
            progressive(), ConcernMiddleware(concerns=RISK, apply_defaults="all")
        )
        async with Client(mcp) as client:
            task = await call_tool_task(client, "report", {"n": 3})
            assert task.create_result.status == "working"
            assert (await task.result()).data == "report 3"
            done = await finished(client, task.task_id)
            assert done["status"] == "completed"
            assert done["result"]["structuredContent"] == {"result": "report 3"}
            # The client's own call_tool runs it as a task and returns the result.
            assert (await client.call_tool("report", {"n": 4})).data == "report 4"
        assert ran.tools == ["report", "report"]

    async def test_it_runs_as_an_ordinary_call_on_2025_11_25(self) -> None:
        mcp, ran = task_server(progressive())
        async with Client(mcp, mode="legacy") as client:
            assert (await client.call_tool("report", {"n": 2})).data == "report 2"
            with pytest.raises(ToolError, match="did not run as a task"):
                await call_tool_task(client, "report", {})
        assert ran.tools == ["report", "report"]

    async def test_tasks_run_with_filtering_installed(self) -> None:
        """FastMCP registers task tools when it starts, outside any request: all of them."""
        mcp, _ = task_server(progressive())
        # Outside a request the policy shows nothing to anybody, the meta-tools included...
        assert {t.name for t in await mcp.list_tools()} == set()
        # ...but the task queue is the server's: it registers every task tool.
        names = {c.name for c in await mcp.get_tasks()}
        assert {"purge", "report", "ghost"} <= names
        with unrestricted():
            assert {t.name for t in await mcp.list_tools()} >= {"purge", "report"}

    async def test_task_tools_without_the_extension_still_fail_at_startup(self) -> None:
        """FastMCP refuses to serve task tools it cannot run; the policy does not hide them."""
        mcp = FastMCP("no-extension")

        @in_group("admin")
        @mcp.tool(task=True)
        async def purge() -> str:
            return SECRET

        use(mcp, progressive())
        with pytest.raises(RuntimeError, match=r"Task-enabled tools \(purge\)"):
            async with Client(mcp):
                pass


class TestFollowingAHiddenTask:
    """A task whose tool the client may not see now does not exist for it, on every method.

    The answer is FastMCP's own for an id it never issued, before FastMCP runs
    anything: polling gets no status and no result, and nothing is cancelled or
    answered. Once the tool is visible again, so is the task.
    """

    async def test_a_group_disabled_after_the_start_hides_the_task(self) -> None:
        mcp, ran = task_server(progressive())
        async with Client(mcp) as client:
            await client.call_tool("enable_tools", {"groups": ["admin"]})
            task = await call_tool_task(client, "slow_purge", {})
            task_id = task.task_id
            assert (await get_task(client, task_id))["status"] == "working"
            await call_method(client, "tasks/update", {"taskId": task_id, "inputResponses": {}})
            await client.call_tool("disable_tools", {"groups": ["admin"]})

            expected = await unknown_task_answer(client, task_id)
            assert answer(await refused(get_task(client, task_id))) == expected
            update = {"taskId": task_id, "inputResponses": {}}
            assert answer(await refused(call_method(client, "tasks/update", update))) == expected
            assert answer(await refused(task.cancel())) == expected

            ran.gate.set()
            await until(lambda: ran.tools == ["slow_purge"])
            # Finished, and still nothing: no status, no result.
            error = await refused(get_task(client, task_id))
            assert answer(error) == expected
            assert SECRET not in str(error)

            await client.call_tool("enable_tools", {"groups": ["admin"]})
            # The refused cancel did not reach FastMCP: the task completed.
            done = await finished(client, task_id)
            assert done["status"] == "completed"
            assert done["result"]["structuredContent"] == {"result": SECRET}

    async def test_the_concerns_that_exclude_the_tool_hide_its_task(self) -> None:
        mcp, ran = task_server(ConcernMiddleware(concerns=RISK, apply_defaults="all"))
        async with Client(mcp) as client:
            task = await call_tool_task(client, "wipe", {}, meta=DESTRUCTIVE)
            expected = await unknown_task_answer(client, task.task_id)
            # Without the override the default, "safe", excludes wipe: no such task.
            assert answer(await refused(get_task(client, task.task_id))) == expected
            ran.gate.set()
            done = await finished(client, task.task_id, **DESTRUCTIVE)
            assert done["result"]["structuredContent"] == {"result": SECRET}
            assert answer(await refused(get_task(client, task.task_id))) == expected

    async def test_the_version_that_runs_is_judged_not_the_name(self) -> None:
        """deploy v2 (admin) runs; once admin is disabled, deploy v1 being visible does not help."""
        mcp, ran = task_server(progressive())
        async with Client(mcp) as client:
            await client.call_tool("enable_tools", {"groups": ["admin"]})
            task = await call_tool_task(client, "deploy", {})
            await client.call_tool("disable_tools", {"groups": ["admin"]})
            ran.gate.set()
            expected = await unknown_task_answer(client, task.task_id)
            assert answer(await refused(get_task(client, task.task_id))) == expected
            await client.call_tool("enable_tools", {"groups": ["admin"]})
            done = await finished(client, task.task_id)
        assert done["result"]["structuredContent"] == {"result": SECRET}
        assert ran.tools == ["deploy v2"]

    async def test_a_task_the_server_has_no_record_of_is_refused(self) -> None:
        """Fail closed: FastMCP knows the task, but nothing says which tool it runs."""
        store = Forgetful()
        mcp, _ = task_server(progressive(), store=store)
        async with Client(mcp) as client:
            task = await call_tool_task(client, "report", {})
            assert (await finished(client, task.task_id))["status"] == "completed"
            store.forgetting = True
            expected = await unknown_task_answer(client, task.task_id)
            assert answer(await refused(get_task(client, task.task_id))) == expected

    async def test_when_the_store_fails_nothing_is_followed(self) -> None:
        store = FaultyStore()
        mcp, _ = task_server(progressive(), store=store)
        async with Client(mcp) as client:
            task = await call_tool_task(client, "report", {})
            store.set("raise")
            error = await refused(get_task(client, task.task_id))
            assert error.error.code == mt.INTERNAL_ERROR
            assert "session state store failed (StoreDown)" in error.error.message
            # A task started while the store is down cannot be followed: its id is withheld.
            error = await refused(call_tool_task(client, "report", {}))
            assert error.error.code == mt.INTERNAL_ERROR
            assert error.error.message == (
                "tool 'report' may have started as a background task, but the session state "
                "store failed (StoreDown), so the task cannot be followed"
            )
            store.set("up")
            assert (await finished(client, task.task_id))["status"] == "completed"


class Forgetful(FaultyStore):
    """A store that, once ``forgetting``, has none of this package's keys."""

    forgetting = False

    @override
    async def get(self, key: str, *, collection: str | None = None) -> dict[str, Any] | None:
        if self.forgetting and key.startswith(OUR_PREFIX):
            return None
        return await super().get(key, collection=collection)


class TestClientsApart:
    """One client's tasks never show in another's."""

    async def test_another_principal_cannot_follow_a_task(self) -> None:
        mcp, ran = task_server(progressive())
        mcp.auth = StaticTokenVerifier(
            tokens={
                "alice-token": {"client_id": "agent", "sub": "alice", "scopes": []},
                "bob-token": {"client_id": "agent", "sub": "bob", "scopes": []},
            }
        )
        async with (
            asgi_server(mcp) as running,
            running.client(auth="alice-token") as alice,
            running.client(auth="bob-token") as bob,
        ):
            for client in (alice, bob):
                await client.call_tool("enable_tools", {"groups": ["admin"]})
            alices = await call_tool_task(alice, "slow_purge", {})
            bobs = await call_tool_task(bob, "report", {})
            expected = await unknown_task_answer(bob, alices.task_id)
            assert answer(await refused(get_task(bob, alices.task_id))) == expected
            bob_cancels = ToolTask(bob, "slow_purge", alices.create_result).cancel()
            assert answer(await refused(bob_cancels)) == expected
            ran.gate.set()
            assert (await alices.result()).data == SECRET
            assert (await bobs.result()).data == "report 1"
            assert answer(await refused(get_task(bob, alices.task_id))) == expected
            expected = await unknown_task_answer(alice, bobs.task_id)
            assert answer(await refused(get_task(alice, bobs.task_id))) == expected

    async def test_a_request_that_may_not_see_the_tool_cannot_follow_its_task(self) -> None:
        """Unauthenticated, FastMCP asks only for the task id; the policy also judges the tool."""
        mcp, ran = task_server(ConcernMiddleware(concerns=RISK, apply_defaults="all"))
        async with Client(mcp) as allowed, Client(mcp) as other:
            task = await call_tool_task(allowed, "wipe", {}, meta=DESTRUCTIVE)
            ran.gate.set()
            assert (await finished(allowed, task.task_id, **DESTRUCTIVE))["status"] == "completed"
            expected = await unknown_task_answer(other, task.task_id)
            assert answer(await refused(get_task(other, task.task_id))) == expected


class TestAccessControl:
    """A group's access check hides its tools' tasks from a token it refuses."""

    async def test_a_refused_token_neither_starts_nor_follows_a_task(self) -> None:
        mcp, ran = task_server(
            GroupAccessMiddleware(
                groups=[Group("public"), Group("admin", access=require_scopes("github:admin"))]
            )
        )
        mcp.auth = StaticTokenVerifier(
            tokens={
                "admin-token": {"client_id": "agent", "sub": "alice", "scopes": ["github:admin"]},
                # The same user with a token that lacks the scope (demoted, or a narrower grant).
                "narrow-token": {"client_id": "agent", "sub": "alice", "scopes": []},
            }
        )
        async with (
            asgi_server(mcp) as running,
            running.client(auth="admin-token") as admin,
            running.client(auth="narrow-token") as narrow,
        ):
            hidden = await narrow.call_tool_mcp("purge", {})
            unknown = await narrow.call_tool_mcp("no_such_tool", {})
            assert hidden.is_error
            assert text(hidden).replace("purge", "X") == text(unknown).replace("no_such_tool", "X")
            with pytest.raises(ToolError, match="did not run as a task"):
                await call_tool_task(narrow, "purge", {})
            task = await call_tool_task(admin, "slow_purge", {})
            expected = await unknown_task_answer(narrow, task.task_id)
            assert answer(await refused(get_task(narrow, task.task_id))) == expected
            ran.gate.set()
            assert (await task.result()).data == SECRET
            assert answer(await refused(get_task(narrow, task.task_id))) == expected
        assert "purge" not in ran.tools


class TestInjectedTaskTools:
    """A ``ToolInjectionMiddleware``'s task tool is not registered as a background task once
    the stack is set up: a task runs under its name whatever a lookup judged."""

    async def test_an_open_tool_of_the_same_name_runs_its_own_code(self, connect: Connect) -> None:
        mcp = FastMCP("injected")
        mcp.add_extension(TasksExtension(name=f"tasks-{uuid.uuid4().hex}"))

        async def x() -> str:
            return SECRET

        mcp.add_middleware(
            ToolInjectionMiddleware([in_group("admin")(Tool.from_function(x, task=True))])
        )

        @mcp.tool(name="x", task=True)
        async def open_x() -> str:
            return "open x"

        add_filtering(mcp, groups=[Group("admin", access=require_scopes("github:admin"))])
        async with connect(mcp) as client:
            assert [t.name for t in await client.list_tools() if t.name == "x"] == ["x"]
            assert (await client.call_tool("x", {})).data == "open x"


class TestGroupsInTaskMeta:
    """A task carries its tool's groups in ``_meta``, as the tool does in ``tools/list``.

    SEP-2663 merges the task into the result of ``tools/call`` and ``tasks/get``;
    a result's ``_meta`` (where the SDK already puts ``serverInfo``) is the task's.
    """

    async def test_tools_call_and_tasks_get_carry_the_groups(self) -> None:
        mcp, _ = task_server(FilterMiddleware(groups=GROUPS))
        async with Client(mcp) as client:
            listed = {t.name: (t.meta or {}) for t in await client.list_tools()}
            purge = await call_tool_task(client, "purge", {})
            ping = await call_tool_task(client, "ping", {})
            for task, groups in ((purge, ["admin"]), (ping, [])):
                meta = task.create_result.meta or {}
                assert meta["io.modelcontextprotocol/groups"] == groups
                assert "io.modelcontextprotocol/serverInfo" in meta
                done = await finished(client, task.task_id)
                assert done["_meta"]["io.modelcontextprotocol/groups"] == groups
                assert "io.modelcontextprotocol/serverInfo" in done["_meta"]
            assert listed["purge"]["io.modelcontextprotocol/groups"] == ["admin"]
            assert (await purge.result()).data == SECRET

    async def test_with_the_whole_stack_the_marks_follow_the_version(self) -> None:
        mcp, ran = task_server()
        add_filtering(
            mcp,
            groups=GROUPS,
            concerns=RISK,
            apply_concern_defaults="all",
            progressive={"initial_groups": ["public"]},
        )
        ran.gate.set()
        async with Client(mcp) as client:
            v1 = await call_tool_task(client, "deploy", {})
            await client.call_tool("enable_tools", {"groups": ["admin"]})
            v2 = await call_tool_task(client, "deploy", {})
            assert (v1.create_result.meta or {})["io.modelcontextprotocol/groups"] == ["public"]
            assert (v2.create_result.meta or {})["io.modelcontextprotocol/groups"] == ["admin"]
            assert (await finished(client, v2.task_id))["_meta"][
                "io.modelcontextprotocol/groups"
            ] == ["admin"]

    async def test_without_filter_middleware_tasks_are_not_marked(self) -> None:
        """As with lists: group marks are FilterMiddleware's."""
        mcp, _ = task_server(progressive())
        async with Client(mcp) as client:
            task = await call_tool_task(client, "report", {})
            assert "io.modelcontextprotocol/groups" not in (task.create_result.meta or {})
            done = await finished(client, task.task_id)
            assert "io.modelcontextprotocol/groups" not in done["_meta"]


class TestInsideARunningTask:
    """A task runs in FastMCP's worker, outside any request: there is nobody to judge for.

    As outside any request, a lookup the tool makes finds nothing (fail closed);
    the server's author opens it deliberately with ``unrestricted()``.
    """

    @staticmethod
    def chained() -> FastMCP:
        mcp, _ = task_server(progressive())

        @in_group("public")
        @mcp.tool(task=True)
        async def chain(ctx: Context, trusted: bool = False) -> str:
            if trusted:
                with unrestricted():
                    nested = await ctx.fastmcp.call_tool("report", {"n": 5})
            else:
                nested = await ctx.fastmcp.call_tool("report", {"n": 5})
            return str((nested.structured_content or {})["result"])

        return mcp

    async def test_a_nested_lookup_in_a_task_finds_nothing(self) -> None:
        async with Client(self.chained()) as client:
            task = await call_tool_task(client, "chain", {})
            with pytest.raises(ToolError, match="Unknown tool: 'report'"):
                await task.result()
            trusted = await call_tool_task(client, "chain", {"trusted": True})
            assert (await trusted.result()).data == "report 5"

    async def test_the_same_tool_called_inline_is_judged_for_its_client(self) -> None:
        async with Client(self.chained(), mode="legacy") as client:
            assert (await client.call_tool("chain", {})).data == "report 5"


class TestLegacyEra:
    """2025-11-25: FastMCP serves no ``tasks/*`` method, so no task is followed there.

    A task id that a 2026-07-28 client started is refused in the guard's words
    when its tool is hidden for the asking client (the guard does not depend on
    the era), and in FastMCP's otherwise.
    """

    async def test_tasks_methods_are_not_served(self) -> None:
        mcp, _ = task_server(progressive())
        async with Client(mcp, mode="legacy") as legacy:
            error = await refused(get_task(legacy, "no-such-task"))
        assert error.error.code == mt.METHOD_NOT_FOUND
        assert "not available at protocol version '2025-11-25'" in error.error.message

    async def test_a_hidden_task_started_on_2026_07_28_is_not_followed(self) -> None:
        mcp, ran = task_server(progressive())
        async with Client(mcp) as modern, Client(mcp, mode="legacy") as legacy:
            await modern.call_tool("enable_tools", {"groups": ["admin"]})
            task = await call_tool_task(modern, "slow_purge", {})
            ran.gate.set()
            await finished(modern, task.task_id)
            hidden = await refused(get_task(legacy, task.task_id))
            assert answer(hidden) == (mt.INVALID_PARAMS, f"Task {task.task_id} not found", None)
            await legacy.call_tool("enable_tools", {"groups": ["admin"]})
            visible = await refused(get_task(legacy, task.task_id))
            assert visible.error.code == mt.METHOD_NOT_FOUND
            assert SECRET not in str(visible)

"""Background tasks (FastMCP's ``tasks`` extension, SEP-2663): a hidden tool's task does not exist.

FastMCP 4 runs a ``task=True`` tool as a task when a 2026-07-28 client opts in:
``tools/call`` answers ``{resultType: "task", taskId, ...}`` and the client
follows the task with ``tasks/get`` (which also carries the result),
``tasks/update`` and ``tasks/cancel``. Those three name a task id only, and
FastMCP answers them without looking the tool up again (except to shape a
finished result), so the access policy never sees them.

``TaskGuard``, installed once per server by ``install``, closes that gap:

- when a ``tools/call`` becomes a task, it records which tool (name and version)
  the task runs, under the task id, in the server's session state store (shared
  by replicas, like the rest of the package's state);
- a ``tasks/*`` request for a recorded task is answered by FastMCP only if the
  tool is visible to this client now, through the same lookup (and so the same
  policy) as a call; otherwise, before FastMCP runs anything, the answer is
  FastMCP's own reply for an id that does not exist. An id without a record goes
  to FastMCP first, so its own errors stand (an unknown id, a method it does not
  serve in this era); if FastMCP knew the task (its record was lost), the reply
  is replaced by the same "not found", though an update or a cancel has then
  reached FastMCP;
- with ``FilterMiddleware``, the task results (``tools/call``'s and
  ``tasks/get``'s) carry the tool's groups in ``_meta``, as listed tools do.

Starting a task needs nothing here: FastMCP's tasks extension looks the tool up
with ``get_tool`` (through ``AccessTransform``) and runs a hidden one as the
ordinary call, which fails with FastMCP's "Unknown tool" or the policy's hint.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as mt
from fastmcp.exceptions import NotFoundError
from fastmcp.server.middleware import Middleware
from fastmcp.tools.base import ToolResult
from fastmcp.utilities.versions import VersionSpec
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict
from typing_extensions import override

from fastmcp_filtering._fastmcp import state_store
from fastmcp_filtering.core.declarations import GROUPS_META_KEY
from fastmcp_filtering.core.request import request_info, requested_version
from fastmcp_filtering.policy.access import access_of
from fastmcp_filtering.server.transform import AccessTransform

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from fastmcp.server.middleware import CallNext, MiddlewareContext
    from fastmcp.tools.base import Tool

    from fastmcp_filtering.core.catalog import Catalog

logger = logging.getLogger("fastmcp_filtering")

TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
"""SEP-2663's methods on an existing task (it has no ``tasks/list`` or ``tasks/result``)."""

_KEY_PREFIX = "fastmcp-filtering:task:"
# How much longer than the task's own ttlMs a record lives; every answered tasks/*
# request extends it again, as FastMCP extends the task's own keys while it is polled.
_RECORD_MARGIN_SECONDS = 3600
_DEFAULT_TTL_SECONDS = 86_400

GUARDED_METHODS = TASK_METHODS | {"tools/call"}
"""What the guard acts on: task methods, and the calls that may start a task."""


@functools.cache
def _open(cls: type[BaseModel]) -> type[BaseModel]:
    """A subclass of ``cls`` that keeps extra keys, so a task result can carry ``_meta``
    (one per class: a pure function of it, remembered so the class is made once)."""
    config = ConfigDict(**{**cls.model_config, "extra": "allow"})
    return type(cls.__name__, (cls,), {"model_config": config})


def task_not_found(task_id: str) -> MCPError:
    """FastMCP's own answer for a task id it does not know, word for word."""
    return MCPError(code=mt.INVALID_PARAMS, message=f"Task {task_id} not found")


class TaskGuard(Middleware):
    """Answer ``tasks/*`` only for a task whose tool this client may see; mark task results.

    Judging needs the server's ``AccessTransform`` (a concern or progressive
    layer is set up); marking needs a catalog (``mark_with``, from
    ``FilterMiddleware``). With neither, the guard lets everything through.
    """

    def __init__(self, server: FastMCP) -> None:
        self._server = weakref.ref(server)
        self._catalog: Catalog | None = None

    def __repr__(self) -> str:
        return f"TaskGuard(marks={self._catalog is not None})"

    def mark_with(self, catalog: Catalog) -> None:
        """Carry each task's tool's groups (as ``catalog`` resolves them) in its ``_meta``."""
        if self._catalog is None:
            self._catalog = catalog

    @override
    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, Any],
    ) -> Any:
        result = await call_next(context)
        server = self._server()
        if server is None or isinstance(result, ToolResult) or not isinstance(result, BaseModel):
            return result
        created = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        task_id = created.get("taskId")
        if created.get("resultType") != "task" or not isinstance(task_id, str):
            return result
        guarding = AccessTransform.of(server) is not None
        if not guarding and self._catalog is None:
            return result
        # The tool the tasks extension tasked: the same lookup, in the same request, under
        # the same policy (a hidden one was never tasked: it ran as the ordinary call).
        tool = await _lookup(server, context.message.name, requested_version(context))
        if tool is None:
            if guarding:
                # Hidden since the tasks extension looked: nobody may follow this task.
                raise _unfollowable(context.message.name, "the tool is no longer visible")
            return result
        try:
            await _save_record(server, task_id, tool, _ttl_seconds(created.get("ttlMs")))
        except Exception as exc:
            if guarding:
                # The exception's text may name the store's address: the client gets its type.
                raise _unfollowable(
                    tool.name, f"the session state store failed ({type(exc).__name__})"
                ) from exc
            # Only marks need the record: tasks/get of this task goes unmarked.
            logger.warning("could not record which tool a task runs (%r)", exc)
        return self._marked_model(result, await self._groups(tool))

    @override
    async def on_request(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        server = self._server()
        if context.method not in TASK_METHODS or server is None:
            return await call_next(context)
        guarding = AccessTransform.of(server) is not None
        info = request_info(context)
        task_id = info.params.get("taskId") if info is not None else None
        if (not guarding and self._catalog is None) or not isinstance(task_id, str):
            # Nothing to judge or mark; a malformed request is FastMCP's to refuse.
            return await call_next(context)
        try:
            record = await _load_record(server, task_id)
        except Exception as exc:
            if guarding:
                # Fail closed: without the record the task's tool cannot be judged.
                raise MCPError(
                    code=mt.INTERNAL_ERROR,
                    message=(
                        f"the session state store failed ({type(exc).__name__}); this task "
                        "cannot be followed until it is back"
                    ),
                ) from exc
            logger.warning("could not read which tool a task runs (%r)", exc)
            return await call_next(context)
        if record is None:
            result = await call_next(context)
            if guarding:
                # Not a task this server started, or its record is lost: FastMCP refuses an
                # id it does not know in its own words; one it does know is refused here.
                raise task_not_found(task_id)
            return result
        tool = await _lookup(server, record.name, record.version)
        if tool is None:
            if guarding:
                # The task's tool is hidden from this client now: so is the task, on every
                # method, before FastMCP answers or changes anything.
                raise task_not_found(task_id)
            return await call_next(context)
        result = await call_next(context)
        try:
            # FastMCP extends a task's life each time it is followed: so does its record.
            await _save_record(server, task_id, tool, record.ttl)
        except Exception as exc:
            logger.warning("could not extend the record of a task (%r)", exc)
        if context.method == "tasks/get":
            return self._marked_mapping(result, await self._groups(tool))
        return result

    # -- marks: the tool's groups in the task's _meta ------------------------------------

    async def _groups(self, tool: Tool) -> list[str] | None:
        """The tool's groups, as this client's principal may know them (None: no marks)."""
        if self._catalog is None:
            return None
        tree = await access_of(self._catalog).tree()
        return list(tree.membership(tool).direct)

    def _marked_model(self, result: BaseModel, groups: list[str] | None) -> BaseModel:
        """The task result ``tools/call`` returns, with the tool's groups in ``_meta``.

        The task result class declares no ``_meta`` (the draft schema's task object
        has none), while the protocol's ``Result`` does, and the SDK adds its own
        ``_meta`` keys to this very result: the copy is of a subclass that keeps
        the key, so middleware and the tasks extension still see their own class.
        """
        if groups is None:
            return result
        cls = type(result)
        open_cls = _open(cls)
        fields = {name: getattr(result, name) for name in cls.model_fields}
        return open_cls.model_construct(
            _fields_set=set(result.model_fields_set),
            **fields,
            **{"_meta": {GROUPS_META_KEY: groups}},
        )

    def _marked_mapping(self, result: Any, groups: list[str] | None) -> Any:
        """A ``tasks/get`` result (a mapping on the wire) with the tool's groups in ``_meta``."""
        if groups is None or not isinstance(result, Mapping):
            return result
        meta = result.get("_meta")
        meta = dict(meta) if isinstance(meta, Mapping) else {}
        return {**result, "_meta": {**meta, GROUPS_META_KEY: groups}}


def _unfollowable(tool: str, why: str) -> MCPError:
    """The task just created cannot be followed: its id is not returned, so nobody can.

    FastMCP forgets the task after its ttl; the tool may have started meanwhile.
    """
    return MCPError(
        code=mt.INTERNAL_ERROR,
        message=f"tool {tool!r} may have started as a background task, but {why}, so the "
        "task cannot be followed",
    )


@dataclass(frozen=True, slots=True)
class _Record:
    """Which tool (name and exact version) a task runs, and how long its record lives."""

    name: str
    version: VersionSpec | None
    ttl: int


async def _save_record(server: FastMCP, task_id: str, tool: Tool, ttl: int) -> None:
    from fastmcp.server.server import StateValue

    value = {"name": tool.name, "version": tool.version, "ttl": ttl}
    await state_store(server).put(key=_record_key(task_id), value=StateValue(value=value), ttl=ttl)


async def _load_record(server: FastMCP, task_id: str) -> _Record | None:
    stored = await state_store(server).get(key=_record_key(task_id))
    value = None if stored is None else stored.value
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
        return None
    version, ttl = value.get("version"), value.get("ttl")
    return _Record(
        name=value["name"],
        version=VersionSpec(eq=version) if isinstance(version, str) else None,
        ttl=ttl if isinstance(ttl, int) and ttl > 0 else _DEFAULT_TTL_SECONDS,
    )


async def _lookup(server: FastMCP, name: str, version: VersionSpec | None) -> Tool | None:
    """The tool as this request may see it (through the policy), or None."""
    try:
        return await server.get_tool(name, version)
    except NotFoundError:
        return None


def _record_key(task_id: str) -> str:
    # A digest: the id is client-sent on tasks/*, of any length and any characters.
    return _KEY_PREFIX + hashlib.sha256(task_id.encode()).hexdigest()


def _ttl_seconds(ttl_ms: object) -> int:
    """How long a record lives: the task's own ``ttlMs`` and a margin (a day if none)."""
    if isinstance(ttl_ms, int) and not isinstance(ttl_ms, bool) and ttl_ms > 0:
        return ttl_ms // 1000 + _RECORD_MARGIN_SECONDS
    return _DEFAULT_TTL_SECONDS

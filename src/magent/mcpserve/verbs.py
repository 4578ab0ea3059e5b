"""The task tools and resources every server has. Each calls the Python API on the server's home;
an id is checked by the store before it becomes a path, so a client reaches only the home's tasks."""

from __future__ import annotations

import asyncio
import json
import re
from functools import partial
from typing import Any

from magent.errors import UsageError
from magent.mcpserve.catalog import WAIT_PROPERTY
from magent.mcpserve.runs import Caller, Runs, reply_of

_ID = {"type": "string", "description": "The task's id (or its first characters)."}
SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    "tasks_list": ("List magent tasks in the home, newest first: id, status, workflow, task text.", {
        "type": "object", "additionalProperties": False, "properties": {
            "status": {"type": "string", "description": "Only tasks with this status (completed, failed, "
                                                        "awaiting_human, running, interrupted, cancelled...)."},
            "limit": {"type": "integer", "minimum": 1, "description": "At most this many (default 20)."}}}),
    "task_status": ("A magent task's status and result: its output, its error, or the question it waits "
                    "on with the resume call to make.", {
        "type": "object", "additionalProperties": False, "required": ["task_id"],
        "properties": {"task_id": _ID, "wait_seconds": {
            "type": "number", "minimum": 0,
            "description": "Wait up to this long for a task this server is running to stop (default 0)."}}}),
    "resume": ("Continue a magent task: answer a pause (approve, reject, or modify with state updates, "
               "with an optional message), or continue a task that was interrupted.", {
        "type": "object", "additionalProperties": False, "required": ["task_id"], "properties": {
            "task_id": _ID,
            "action": {"type": "string", "enum": ["approve", "reject", "modify"],
                       "description": "The answer to a pause (leave it out to continue an interrupted task)."},
            "message": {"type": "string", "description": "What the person says (the next nodes see it)."},
            "state_updates": {"type": "object", "description": "With modify: State fields to change "
                                                               "(e.g. {\"output\": \"edited text\"})."},
            "wait_seconds": WAIT_PROPERTY}}),
    "chat": ("Send a follow-up message to a finished (or paused) magent task and get the reply.", {
        "type": "object", "additionalProperties": False, "required": ["task_id", "message"], "properties": {
            "task_id": _ID, "message": {"type": "string", "description": "The follow-up."},
            "wait_seconds": WAIT_PROPERTY}}),
    "steer": ("Send a running magent task a message: its agent reads it as the operator's at its next "
              "turn. Returns at once; task_status or trace shows what the agent made of it.", {
        "type": "object", "additionalProperties": False, "required": ["task_id", "message"], "properties": {
            "task_id": _ID, "message": {"type": "string", "description": "What the agent should know."}}}),
    "trace": ("A magent task's trace: every step (nodes, model calls, tool calls, pauses) with tokens "
              "and cost, as text or as the TraceLog JSON.", {
        "type": "object", "additionalProperties": False, "required": ["task_id"], "properties": {
            "task_id": _ID, "format": {"type": "string", "enum": ["text", "json"],
                                       "description": "text (default) or json."}}}),
}
READ_ONLY = ("tasks_list", "task_status", "trace")
"""The verbs that change nothing (clients may call them without asking)."""
RESOURCE = re.compile(r"^magent://tasks/([0-9a-fA-F-]{1,36})/(trace|result)$")
TEMPLATES = {"trace": ("magent://tasks/{task_id}/trace", "A task's trace (TraceLog JSON)"),
             "result": ("magent://tasks/{task_id}/result", "A task's AgentResult (JSON)")}


async def call_verb(runs: Runs, name: str, args: dict[str, Any], caller: Caller
                    ) -> tuple[dict[str, Any] | str, bool]:
    """Answer verb ``name``: ``(reply, whether it is text)``. Bad input is a ``UsageError``."""
    from magent import api

    unknown = sorted(set(args) - set(SCHEMAS[name][1]["properties"]))
    if unknown:
        raise UsageError(f"{name}: unknown argument {unknown[0]!r}")
    if name == "tasks_list":
        return {"tasks": await asyncio.to_thread(_list, args.get("status"), args.get("limit", 20))}, False
    task_id = _text(args, "task_id")
    if name == "task_status":
        result = await asyncio.to_thread(api.task, task_id)
        if result.status.value == "running" and args.get("wait_seconds"):
            await runs.wait_for(result.task_id, float(args["wait_seconds"]))
            result = await asyncio.to_thread(api.task, task_id)
        return reply_of(result), False
    if name == "steer":
        sent = await api.asteer(task_id, _text(args, "message"))
        return {"task_id": sent.task_id, "status": "queued", "signal": sent.signal,
                "message": "the agent reads it at its next turn"}, False
    if name == "trace":
        form = args.get("format", "text")
        if form not in ("text", "json"):
            raise UsageError("trace: format is text or json")
        reading = await asyncio.to_thread(api.read_trace, task_id)
        if form == "json":
            return reading.as_dict(), False
        return reading.text(), True
    wait = args.get("wait_seconds")
    if name == "chat":
        start = partial(api.achat, task_id, _text(args, "message"))
    else:
        action = args.get("action")
        if action not in (None, "approve", "reject", "modify"):
            raise UsageError("resume: action is approve, reject or modify")
        updates = args.get("state_updates")
        if updates is not None and action != "modify":
            raise UsageError("resume: state_updates go with action modify")
        if updates is not None and not isinstance(updates, dict):
            raise UsageError(f"resume: state_updates is an object of State fields, not {updates!r}")
        if not isinstance(args.get("message"), (str, type(None))):
            raise UsageError(f"resume: message is text, not {args['message']!r}")
        start = partial(api.aresume, task_id, approve=action == "approve", reject=action == "reject",
                        modify=(updates or {}) if action == "modify" else None, message=args.get("message"))
    return await runs.call(start, caller, wait=wait), False


def read_resource(uri: str) -> str:
    """The JSON text of resource ``uri`` (a task's trace or result); another URI is a ``UsageError``."""
    from magent import api

    found = RESOURCE.match(uri)
    if found is None:
        raise UsageError(f"no resource {uri!r}: magent serves magent://tasks/ID/trace and magent://tasks/ID/result")
    task_id, what = found.groups()
    if what == "result":
        return api.task(task_id).to_json()
    return json.dumps(api.read_trace(task_id).as_dict(), ensure_ascii=False, default=str)


def recent_tasks(limit: int = 50) -> list[tuple[str, str, str]]:
    """``(id, workflow, status)`` of the newest tasks, for the resource list."""
    return [(row.id, row.workflow, row.status) for row in _rows(None)[:limit]]


def _list(status: str | None, limit: Any) -> list[dict[str, Any]]:
    from magent.vocabulary import TASK_STATUSES

    if not isinstance(limit, int) or limit < 1:
        raise UsageError("tasks_list: limit is a whole number, 1 or more")
    if status is not None and status not in TASK_STATUSES:  # (the API's own words name --status)
        raise UsageError(f"tasks_list: status {status!r} is not one of {', '.join(TASK_STATUSES)}")
    return [{"task_id": row.id, "status": row.status, "workflow": row.workflow, "task": row.description,
             "created_at": row.created_at.isoformat(), "model_calls": row.calls, "cost_usd": row.cost}
            for row in _rows(status)[:limit]]


def _rows(status: str | None) -> list[Any]:
    from magent import api

    return list(api.tasks(status))


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"argument {key!r} is required (a non-empty string)")
    return value.strip()

"""Starting tasks for MCP clients and waiting for them as long as a call may.

A run is an asyncio task apart from its call: past the wait the call returns the task id and the
run goes on. A call the client cancels cancels its run (``cancelled``); a run stopped because the
server closes stays ``interrupted`` for ``magent resume``."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from magent.errors import MagentError

if TYPE_CHECKING:
    from magent.api.result import AgentResult
    from magent.models import Event, Task

Progress = Callable[[float, str], Awaitable[None]]
"""Sends one progress notification: a count that grows, and what happened."""
Start = Callable[..., Awaitable["AgentResult"]]
"""``arun`` / ``aresume`` / ``achat`` with their arguments bound, taking ``on_event`` and ``on_start``."""

SHOWN = frozenset({"node_started", "tool_call", "awaiting_human", "run_finished"})
"""Events a waiting client hears of."""


@dataclass(frozen=True)
class Caller:
    """What a run started for a tool call needs to know of the call."""

    progress: Progress | None = None
    """Sends a progress notification to the waiting client (a no-op if it asked for none)."""
    cancelled_by_client: Callable[[], bool] = lambda: False
    """Once a cancelled call's run has stopped: whether the client (not the server closing) cancelled it."""
    settled: Callable[[], Awaitable[None]] | None = None
    """Awaited when the run stops with a result, whether the call still waits for it or not (to
    tell the client; a run refused at once, e.g. a task another run holds, changed nothing)."""


class Runs:
    """The runs this server started or continued, and how long a call waits for one."""

    def __init__(self, wait_seconds: float):
        self.wait_seconds = wait_seconds
        self._running: set[asyncio.Future[Any]] = set()
        self._telling: set[asyncio.Future[Any]] = set()
        self._by_task: dict[str, asyncio.Future[Any]] = {}
        """The run of each task this server is running now, by the task's full id."""
        """Notifications on their way (kept so they are not collected before they run)."""

    async def call(self, start: Start, caller: "Caller", *, wait: float | None = None) -> dict[str, Any]:
        """Start a run for ``caller`` and wait up to ``wait`` seconds for its reply (``reply_of``)."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Event] = asyncio.Queue()
        listening = [True]
        started: list[Task] = []

        def on_event(event: Event) -> None:
            if listening[0] and event.type in SHOWN:
                loop.call_soon_threadsafe(events.put_nowait, event)

        def on_start(task: Task) -> None:
            started.append(task)
            self._by_task.setdefault(task.id, run)  # a second run of a live task is refused: keep the first

        run = asyncio.ensure_future(start(on_event=on_event, on_start=on_start))
        self._running.add(run)
        run.add_done_callback(self._forget)
        run.add_done_callback(lambda _: self._tell(run, caller))
        deadline = loop.time() + (self.wait_seconds if wait is None else max(0.0, float(wait)))
        count = 0
        try:
            while not run.done() and (not started or loop.time() < deadline):
                getter = asyncio.ensure_future(events.get())
                left = max(deadline - loop.time(), 0.05)
                try:
                    await asyncio.wait({run, getter}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    getter.cancel()
                if getter.done() and not getter.cancelled() and caller.progress is not None:
                    count += 1
                    await caller.progress(count, describe(getter.result()))
        except BaseException:
            listening[0] = False
            run.cancel()
            run.add_done_callback(lambda _: _mark_cancelled(started, caller.cancelled_by_client))
            raise
        listening[0] = False
        if not run.done():
            return still_running(started[0])
        try:
            return reply_of(run.result())
        except MagentError as exc:
            return {"error": str(exc), "task_id": started[0].id if started else None}

    async def wait_for(self, task_id: str, seconds: float) -> None:
        """Wait up to ``seconds`` for this server's run of task ``task_id`` (a full id) to stop;
        at once when the server runs no such task. Leaving early leaves the run going."""
        run = self._by_task.get(task_id)
        if run is not None and seconds > 0:
            await asyncio.wait({run}, timeout=seconds)

    def _forget(self, run: "asyncio.Future[Any]") -> None:
        self._running.discard(run)
        for task_id in [t for t, r in self._by_task.items() if r is run]:
            del self._by_task[task_id]
        if not run.cancelled():
            run.exception()  # a run no call waits for any more: its error is in its task, not the log

    def _tell(self, run: "asyncio.Future[Any]", caller: Caller) -> None:
        """Tell the caller its run stopped with a result (a refused or cancelled one changed nothing)."""
        settled = caller.settled
        if settled is None or run.cancelled() or run.exception() is not None:
            return

        async def safely() -> None:
            with contextlib.suppress(Exception):  # noqa: BLE001 - a client gone away is not the run's business
                await settled()

        telling = asyncio.ensure_future(safely())
        self._telling.add(telling)
        telling.add_done_callback(self._telling.discard)

    async def close(self) -> None:
        """Stop every run still going (each writes its checkpoint and stays resumable)."""
        for run in list(self._running):
            run.cancel()
        if self._running:
            await asyncio.wait(set(self._running), timeout=30)


def _mark_cancelled(started: list["Task"], client_cancelled: Callable[[], bool]) -> None:
    """After a cancelled call's run stopped: a client's cancel makes the task ``cancelled``."""
    if not started or not client_cancelled():
        return
    from magent.api.steering import cancel

    with contextlib.suppress(MagentError):  # it finished or paused before the cancel landed: it stays as it is
        cancel(started[0].id, wait=False)


def describe(event: "Event") -> str:
    """One line for a progress notification."""
    if event.type == "node_started":
        return f"node {event.node} started"
    if event.type == "tool_call":
        return f"calling {event.field('tool')}" + (f" (node {event.node})" if event.node else "")
    if event.type == "awaiting_human":
        return f"paused for a person at {event.node}"
    return event.type.replace("_", " ")


def still_running(task: "Task") -> dict[str, Any]:
    return {"task_id": task.id, "status": "running",
            "message": f"task {task.id} is still running; ask task_status with this task_id for its "
                       f"result (or read magent://tasks/{task.id}/result)"}


def reply_of(result: "AgentResult") -> dict[str, Any]:
    """What a tool call answers about a task: its status, and the output, error or question."""
    reply: dict[str, Any] = {"task_id": result.task_id, "status": result.status.value}
    if result.success:
        reply["output"] = result.output
    if result.error is not None:
        reply["error"] = result.error.message
    if result.pause is not None:
        pause = result.pause
        reply["question"] = pause.question
        if pause.output is not None:
            reply["output_to_review"] = pause.output
        reply["allowed_actions"] = list(pause.allowed_actions)
        reply["resume_call"] = {"tool": "resume", "arguments": {
            "task_id": result.task_id, "action": pause.allowed_actions[0] if pause.allowed_actions else "approve"}}
    reply["model_calls"] = result.answered_calls
    if result.cost_estimate is not None:
        reply["cost_usd"] = result.cost_estimate
    return reply


def reply_text(reply: dict[str, Any]) -> str:
    """The reply as text for the model reading it: the answer first, then the rest as JSON."""
    status = reply.get("status")
    if status is None:
        return json.dumps(reply, ensure_ascii=False, default=str)
    if status == "completed":
        output = reply.get("output")
        head = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    elif status == "awaiting_human":
        call = reply["resume_call"]
        head = (f"Task {reply['task_id']} is paused for a person: {reply['question']}\n"
                f"Answer with the resume tool: {json.dumps(call['arguments'], ensure_ascii=False)} "
                f"(action: one of {', '.join(reply['allowed_actions'])}; add \"message\" with what the "
                f"person said).")
    elif "error" in reply:
        head = f"Task {reply.get('task_id')} {status or 'failed'}: {reply['error']}"
    else:
        head = reply.get("message") or f"Task {reply.get('task_id')} is {status}."
    return f"{head}\n\n{json.dumps(reply, ensure_ascii=False, default=str)}"

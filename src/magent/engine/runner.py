"""The executor: run the node at the current position, persist, route, repeat.

The loop is deliberately short (pydantic_graph's lesson): everything durable
happens at the named points of ``ctx.checkpoints``, everything a node kind knows lives in its module.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from magent import failpoints
from magent.engine import conditions, fanout, steering
from magent.engine.checkpointing import masked
from magent.engine.context import RunContext
from magent.engine.control import CancelRun, NodeFailed, PauseRun
from magent.engine.graph import END
from magent.engine.sessions import Session
from magent.engine.tooluse import check_logins
from magent.engine.wiring import need_tools
from magent.errors import EXIT_FAILED, EXIT_OK, EXIT_PAUSED, LLMError
from magent.ids import now
from magent.memory import run as memory
from magent.models import EdgeDef, HumanRequest, TaskStatus
from magent.models.progress import FanOutProgress, blank
from magent.store.events import truncate


NO_TOOLS = frozenset({"human", "condition"})
"""Node kinds that call no tool: running one starts no tool server (``wiring.need_tools``)."""


@dataclass
class RunOutcome:
    task_id: str
    status: TaskStatus
    result: str | None = None
    error: str | None = None
    request: HumanRequest | None = None
    model_calls: int = 0
    report: Any = None
    """What ``RunOptions.report`` read from the task before its lock was let go."""

    @property
    def exit_code(self) -> int:
        return {TaskStatus.completed: EXIT_OK, TaskStatus.awaiting_human: EXIT_PAUSED}.get(
            self.status, EXIT_FAILED)


class Executor:
    def __init__(self, ctx: RunContext):
        self.ctx = ctx
        self.started = time.perf_counter()

    async def run(self) -> RunOutcome:
        ctx = self.ctx
        try:
            await self.walk(ctx.state.main, END)
            return self._finish()
        except PauseRun as pause:
            return self.pause(pause.request)
        except NodeFailed as exc:
            return self.fail(str(exc), exc.kind)
        except LLMError as exc:
            return self.fail(str(exc), "model_error")
        except CancelRun:
            return self.cancel()
        except asyncio.CancelledError:
            self._interrupted()
            raise

    async def walk(self, session: Session, stop_at: str) -> None:
        """Run ``session`` through the graph from its position until it reaches ``stop_at``:
        ``END`` for the main session, the join for a branch of a fan-out."""
        ctx = self.ctx
        view = ctx.node(session)
        while session.position not in (stop_at, END):
            if isinstance(session.progress, FanOutProgress):  # waiting at a fan-out (after a resume: still)
                await fanout.run(self, session)
                continue
            if not session.node_done:
                view.check_stop()
                steering.drain(view, session.here)  # between nodes: what an operator sent
                await self._run_node(session)
            self._gate(session)
            edge = self._route(session)
            if edge is not None and edge.fans_out:
                fanout.start(self, session, next(i for i, e in enumerate(ctx.deps.graph.workflow.edges) if e is edge))
                continue
            nxt = END if edge is None else edge.to
            assert isinstance(nxt, str)  # (a fan-out went on above)
            view.bus.emit("route", session.position, to=nxt, routing_key=session.state.routing_key)
            session.position, session.node_done, session.progress = nxt, False, blank()

    async def _run_node(self, session: Session) -> None:
        ctx = self.ctx
        view = ctx.node(session)
        name = session.here
        node = ctx.deps.graph.nodes[name]
        progress = session.progress_as(node.Progress)
        if not progress.entered:
            total = sum(ctx.state.visits.values())
            limit = ctx.deps.graph.workflow.max_iterations
            if total >= limit:
                raise NodeFailed(f"workflow '{ctx.deps.graph.name}' stopped after max_iterations ({limit}) "
                                 f"node visits; it was about to run '{name}' again", kind="max_iterations")
            ctx.state.visits[name] = ctx.state.visits.get(name, 0) + 1
            progress.entered = True
            view.bus.emit("node_started", name, kind=node.kind, agent=node.agent_name,
                          visit=ctx.state.visits[name])
        else:
            view.bus.emit("node_started", name, kind=node.kind, agent=node.agent_name,
                          visit=ctx.state.visits.get(name, 1), resumed=True)
        if node.kind not in NO_TOOLS:
            await need_tools(ctx)
            check_logins(view, name)
        started = time.perf_counter()
        result = await node.run(view)
        view.set_output(name, result.output, result.value)
        if name in ctx.deps.graph.workflow.result_nodes:
            ctx.state.metadata["result"] = view.last_output
            if result.value is None:
                ctx.state.metadata.pop("result_value", None)
            else:
                ctx.state.metadata["result_value"] = result.value
        session.node_done, session.progress = True, blank()
        view.bus.emit("node_finished", name, kind=node.kind, status="ok",
                      duration_ms=int((time.perf_counter() - started) * 1000),
                      output=truncate(ctx.deps.redactor.text(result.output or ""), 1000) or None,
                      routing_key=session.state.routing_key)
        ctx.checkpoints.node_done()
        failpoints.hit("after_node_end")

    def _gate(self, session: Session) -> None:
        """Approval gates (the workflow's ``checkpoints:``): a person approves before routing on."""
        ctx = self.ctx
        view = ctx.node(session)
        name = session.here
        if name in ctx.deps.graph.workflow.checkpoints and view.take_feedback(name) is None:
            raise PauseRun(HumanRequest(
                kind="approval", node=name, question=f"Node '{name}' has finished. Approve its output to go on?",
                output=view.last_output or None, session=session.tag))

    def _route(self, session: Session) -> EdgeDef | None:
        """The edge to take from ``session``'s node (None: the run ends there)."""
        ctx = self.ctx
        view = ctx.node(session)
        name = session.here
        edges = ctx.deps.graph.edges_from(name)
        human = ctx.state.metadata.get("human") or {}
        rejecting = (human.get("action") == "reject" and human.get("node") == name
                     and human.get("session") == session.tag and not human.get("routed"))
        if rejecting:
            human["routed"] = True
        if not edges:
            if rejecting:
                raise NodeFailed(_rejected(name, human), kind="rejected")
            return None
        state = session.state
        names = conditions.names_of(state, ctx.state.visits, human or None, view.last_output)
        for edge in edges:
            if edge.condition is None:
                if rejecting:
                    continue  # a rejection only goes where a condition sends it
                return edge
            if conditions.evaluate(edge.condition, names):
                return edge
        if rejecting:
            raise NodeFailed(_rejected(name, human), kind="rejected")
        raise NodeFailed(f"no edge from '{name}' matches (routing_key={state.routing_key!r}); add a "
                         "condition for this case or an edge without a condition", kind="routing")

    # endings
    def _finish(self) -> RunOutcome:
        ctx = self.ctx
        ctx.checkpoints.run_ended("finish")
        named = ctx.deps.graph.workflow.result_nodes and "result" in ctx.state.metadata
        result = (ctx.state.metadata["result"] if named else ctx.node().last_output) or None
        value = ctx.state.metadata.get("result_value" if named else "last_value")
        return self.end(TaskStatus.completed, result=result, value=value)

    def fail(self, message: str, kind: str = "node_failed") -> RunOutcome:
        """End the run as failed; ``kind`` goes into the error event as ``error_type``."""
        ctx = self.ctx
        ctx.deps.bus.emit("error", ctx.state.main.position, message=ctx.deps.redactor.text(message), error_type=kind)
        return self.end(TaskStatus.failed, error=message)

    def pause(self, request: HumanRequest) -> RunOutcome:
        ctx = self.ctx
        failpoints.hit("before_pause")
        ctx.checkpoints.run_ended("pause", request=request)
        ctx.deps.bus.emit("awaiting_human", request.node, kind=request.kind, question=request.question,
                     output=truncate(ctx.deps.redactor.text(request.output or ""), 2000) or None,
                     allowed_actions=request.allowed_actions, details=ctx.deps.redactor.data(request.details) or None,
                     **({"session": request.session} if request.session else {}))
        return self.end(TaskStatus.awaiting_human, request=request)

    def cancel(self) -> RunOutcome:
        """An operator cancelled the task (``magent tasks cancel`` while it ran): checkpoint, end."""
        self.ctx.checkpoints.run_ended("cancel")
        return self.end(TaskStatus.cancelled, error="cancelled by a person")

    def _interrupted(self) -> None:
        """Ctrl-C / SIGTERM: leave a checkpoint of the last consistent position and a resumable task."""
        ctx = self.ctx
        ctx.checkpoints.interrupted()
        ctx.deps.bus.emit("interrupted", ctx.state.main.position, message="stopped by a signal; resume with magent resume")
        task = ctx.deps.task.model_copy(update={"status": TaskStatus.interrupted, "error": "stopped by a signal"})
        ctx.deps.task = ctx.deps.task_dir.save_task(self._with_usage(task))

    def end(self, status: TaskStatus, *, result: str | None = None, error: str | None = None,
            request: HumanRequest | None = None, value: Any = None) -> RunOutcome:
        ctx = self.ctx
        finished = status.finished
        kept = ctx.deps.redactor.text(result) if result is not None else None
        completed = status == TaskStatus.completed
        task = ctx.deps.task.model_copy(update={
            "status": status, "result": kept if completed else ctx.deps.task.result,
            "result_value": ctx.deps.redactor.data(value) if completed else ctx.deps.task.result_value,
            "error": ctx.deps.redactor.text(error) if error else None, "completed_at": now() if finished else None})
        # What the status sums up is made durable before the status (mode exit has synced
        # nothing yet): a power loss must never leave a task that says completed or paused
        # beside a history it lost.
        ctx.deps.task_dir.sync()
        ctx.deps.task = ctx.deps.task_dir.save_task(self._with_usage(task))
        memory.finish(ctx.node())  # consolidation after a task, when config/memory.yaml asks for it
        ctx.deps.bus.emit("run_finished", None, status=status.value, result=ctx.deps.redactor.text(result or "") or None,
                     error=ctx.deps.redactor.text(error) if error else None, model_calls=ctx.state.total_usage.calls,
                     tokens_in=ctx.state.total_usage.input, tokens_out=ctx.state.total_usage.output,
                     cost=ctx.state.total_usage.cost, unpriced=ctx.state.total_usage.unpriced or None,
                     estimated=ctx.state.total_usage.estimated or None,
                     duration_ms=int((time.perf_counter() - self.started) * 1000))
        # What the command line prints (the answer, --json's result line, an inline question) is
        # masked like the task's files: what a person saw is what the trace shows later.
        return RunOutcome(task_id=ctx.deps.task.id, status=status, result=kept, error=task.error,
                          request=masked(ctx.deps.redactor, request) if request is not None else None,
                          model_calls=ctx.state.total_usage.calls)

    def _with_usage(self, task):
        ctx = self.ctx
        return task.model_copy(update={"usage": ctx.state.total_usage})


def _rejected(node: str, human: dict) -> str:
    message = human.get("message")
    return f"rejected by a person at '{node}'" + (f": {message}" if message else "")

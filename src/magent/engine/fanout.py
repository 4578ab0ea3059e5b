"""Parallel branches: a fan-out edge runs its targets side by side, and they meet at the join.

Each branch is a child session that continues its parent's conversation from the
fan-out (it sees the history so far, not its siblings') and walks the graph on its own
— nodes, gates, routing — until it reaches the join node (``engine/joins.py``). The
parent waits at the fan-out; when every branch is in, their outputs are put into the
parent's conversation as one message and the parent goes on at the join.

The parent's progress records the fan-out (``FanOutProgress``): which session runs
each branch and what each finished branch gave, so a resumed run continues the open
branches and never runs a finished one again. A failed branch fails the fan-out and
stops its siblings (``on_error: fail``, the default) or is reported to the join
(``on_error: collect``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from magent.engine.children import stamp
from magent.engine.control import NodeFailed, PauseRun
from magent.engine.react import raise_first
from magent.engine.sessions import Session
from magent.errors import LLMError
from magent.models import Message
from magent.models.progress import BranchResult, FanOut, FanOutProgress, blank
from magent.store.events import truncate

if TYPE_CHECKING:
    from magent.engine.runner import Executor


def start(executor: "Executor", session: Session, edge_index: int) -> None:
    """Open one branch session per target, durably (a checkpoint lists them before they act)."""
    ctx = executor.ctx
    join = ctx.deps.graph.joins[edge_index]
    state = FanOut(edge=edge_index, join=join.node)
    session.progress = FanOutProgress(kind="fan_out", fanout=state)
    ctx.node(session).bus.emit("fan_out", join.source, targets=list(join.targets), join=join.node,
                               on_error=join.on_error)
    for target in join.targets:
        child = ctx.open_session(session, kind="branch", key=f"branch:{target}", node=join.source,
                                 fork=True, position=target, stop_at=join.node)
        state.branches[target] = child.id
    ctx.checkpoints.node_step("fan_out")


async def run(executor: "Executor", session: Session) -> None:
    """Run the open branches of ``session``'s fan-out to the join, then move ``session`` there."""
    ctx = executor.ctx
    assert isinstance(session.progress, FanOutProgress)
    state = session.progress.fanout
    join = ctx.deps.graph.joins[state.edge]
    group = session.stop.child()

    async def branch(target: str) -> None:
        child = ctx.state.sessions[state.branches[target]]
        child.stop = group
        try:
            await executor.walk(child, join.node)
        except (NodeFailed, LLMError) as exc:
            ctx.close_session(child, "failed", error=str(exc))
            state.done[target] = BranchResult(error=ctx.deps.redactor.text(str(exc)))
            if join.on_error == "fail":
                group.set("fail")
                raise NodeFailed(f"branch '{target}' of the fan-out from '{join.source}' failed: {exc}") from None
        except PauseRun as pause:
            stamp(pause, child)
            raise
        else:
            output = ctx.node(child).last_output
            ctx.close_session(child, "completed", output=output)
            state.done[target] = BranchResult(output=ctx.deps.redactor.text(truncate(output, 4000)))
        ctx.checkpoints.node_step("branch_end")

    pending = [t for t in join.targets if t not in state.done]
    raise_first(await asyncio.gather(*(branch(t) for t in pending), return_exceptions=True))
    text = joined(state.done, join.targets)
    ctx.add_message(Message(role="user", name="workflow", content=text), node=join.node, session=session)
    if session.is_main:
        ctx.state.metadata["last_output"] = text
    else:
        session.output = text
    failed = [t for t in join.targets if state.done[t].error is not None]
    ctx.node(session).bus.emit("join", join.node, branches=list(join.targets), failed=failed or None,
                               source=join.source)
    session.position, session.node_done, session.progress = join.node, False, blank()
    ctx.checkpoints.node_step("join")


def joined(done: dict[str, BranchResult], targets: tuple[str, ...]) -> str:
    """The message the join brings into its conversation: every branch's output, in order."""
    parts = ["The parallel branches have finished."]
    for target in targets:
        record = done[target]
        if record.error is not None:
            parts.append(f"## {target} (failed)\n{record.error}")
        else:
            parts.append(f"## {target}\n{record.output or '(no output)'}")
    return "\n\n".join(parts)

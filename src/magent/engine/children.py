"""Running an agent in a child session: what sub-agent calls, map items and plan subtasks share.

The child's loop is the ReAct loop in a ``NodeContext`` of its own, handed in by the
caller (``react`` itself for a sub-agent call: a loop that runs children is not imported
back here). When it ends
the session is closed — ``completed`` with its final answer, or ``failed`` with the
reason (its iterations ran out, its model could not be reached). A pause for a
person inside it is stamped with the session's id and asks every other session to
stop at its next safe point, so the task pauses as a whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable

from magent.engine.context import NodeContext, RunContext
from magent.engine.control import NodeFailed, PauseRun
from magent.engine.sessions import Session
from magent.errors import LLMError
from magent.models import Agent

AgentLoop = Callable[[NodeContext, Agent, str], Awaitable[str]]
"""An agent's loop run in a session's context until its final answer: ``react.react``."""


@dataclass(eq=False)
class ChildOutcome:
    ok: bool
    text: str
    """The final answer, or what went wrong."""
    entry_id: str | None = None
    """The entry holding the final answer (a finished child's result, for its parent's record)."""


async def run_agent_session(run: RunContext, session: Session, node: str, loop: AgentLoop) -> ChildOutcome:
    """Run ``session.agent``'s ``loop`` in ``session`` to its end and close the session."""
    ctx = run.node(session)
    agent = run.deps.graph.agent(session.agent)
    try:
        answer = await loop(ctx, agent, node)
    except (NodeFailed, LLMError) as exc:
        run.close_session(session, "failed", error=str(exc))
        return ChildOutcome(ok=False, text=str(exc))
    except PauseRun as pause:
        stamp(pause, session)
        raise
    run.close_session(session, "completed", output=answer)
    return ChildOutcome(ok=True, text=answer, entry_id=session.leaf)


def stamp(pause: PauseRun, session: Session) -> None:
    """Name the session a pause comes from (the innermost one), and stop the others."""
    if pause.request.session is None and not session.is_main:
        pause.request = pause.request.model_copy(update={"session": session.id})
    root = session.stop
    while root.parent is not None:
        root = root.parent
    root.set("pause")

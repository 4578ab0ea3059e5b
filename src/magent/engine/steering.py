"""Control signals at a run's safe points: steering messages, pause and cancel (issue 32).

Another process sends them (``store/signals.py``); the first session to reach a safe point
applies them here — between model turns (``engine/react.py``) and between nodes
(``engine/runner.py``), never inside a turn — or the session a signal names. Each is applied
once and in order: the number of the last one applied is in every checkpoint, and what applying
one writes is checkpointed at once. A run killed before that
checkpoint applies the signal again from the previous one (a message's entry written meanwhile
is off the checkpoint's path, so the conversation holds it once).
"""

from __future__ import annotations

from magent import failpoints
from magent.engine.context import NodeContext, RunContext
from magent.engine.control import CancelRun, PauseRun
from magent.engine.sessions import Session
from magent.models import HumanRequest, Message
from magent.store.signals import pending

PAUSED = "Paused by an operator (magent tasks pause). Approve to go on."


def drain(ctx: NodeContext, node: str) -> None:
    """A safe point of ``ctx``'s session: apply the signals sent since the last one applied. A
    message becomes an ``injection`` entry; a pause raises ``PauseRun`` (kind ``operator``), a
    cancel ``CancelRun`` and stops the other sessions at their next safe point. A signal naming
    a session (``chat --session``) waits for it while it is open, and so do those after it."""
    run = ctx.run
    waiting = pending(run.deps.task_dir.path, run.state.signals_applied)
    here = ctx.session.id
    applied = False
    for signal in waiting:
        target = signal.get("session")
        if target and target != here and _open(run, target):
            break
        number, kind = signal["signal"], signal["kind"]
        run.state.signals_applied, applied = number, True
        if kind == "message":
            text = str(signal.get("text") or "")
            run.add_message(Message(role="user", content=text), node=node, session=ctx.session, signal=number)
            ctx.bus.emit("injection", node, signal=number, message=run.deps.redactor.text(text))
            failpoints.hit("after_injection")
        elif kind == "pause":
            ctx.bus.emit("signal", node, signal=number, kind="pause")
            raise PauseRun(HumanRequest(kind="operator", node=node, question=PAUSED, allowed_actions=["approve"]))
        elif kind == "cancel":
            ctx.bus.emit("signal", node, signal=number, kind="cancel")
            _stop_all(ctx.session)
            raise CancelRun()
        else:
            ctx.bus.emit("warning", node, message=f"control signal {number} could not be read "
                                                  f"({signal.get('error')}); skipped")
    if applied:
        run.checkpoints.inputs_taken("signal")
        failpoints.hit("after_signals_applied")


def _open(run: RunContext, session_id: str) -> bool:
    """The session is still running: it takes the signals that name it."""
    session = run.state.sessions.get(session_id)
    return session is not None and session.status == "running"


def _stop_all(session: Session) -> None:
    """Ask every session of the run to stop at its next safe point (the run is cancelled)."""
    root = session.stop
    while root.parent is not None:
        root = root.parent
    root.set("cancel")

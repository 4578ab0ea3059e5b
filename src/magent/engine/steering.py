"""Control signals at a run's safe points: steering messages, pause and cancel (issue 32).

Another process sends them (``store/signals.py``); the main session applies them here, between
model turns (``engine/react.py``) and between nodes (``engine/runner.py``), never inside a
turn. Each is applied once and in order: the number of the last one applied is in every
checkpoint, and what applying one writes is checkpointed at once. A run killed before that
checkpoint applies the signal again from the previous one (a message's entry written meanwhile
is off the checkpoint's path, so the conversation holds it once).
"""

from __future__ import annotations

from magent import failpoints
from magent.engine.control import CancelRun, PauseRun
from magent.models import HumanRequest, Message
from magent.store.signals import pending

PAUSED = "Paused by an operator (magent tasks pause). Approve to go on."


def drain(ctx, node: str) -> None:
    """A safe point of ``ctx``'s session: apply the signals sent since the last one applied.

    Messages become ``injection`` entries (the model reads them as user messages on its next
    turn); a pause raises ``PauseRun`` (kind ``operator``), a cancel ``CancelRun``. Only the
    main session takes signals: it is the one a sender names by default."""
    if not ctx.session.is_main:
        return
    run = ctx.run
    waiting = pending(run.td.path, run.signals_applied)
    if not waiting:
        return
    for signal in waiting:
        number, kind = signal["signal"], signal["kind"]
        run.signals_applied = number
        if kind == "message":
            text = str(signal.get("text") or "")
            run.add_message(Message(role="user", content=text), node=node, signal=number)
            ctx.bus.emit("injection", node, signal=number, message=run.redactor.text(text))
            failpoints.hit("after_injection")
        elif kind == "pause":
            ctx.bus.emit("signal", node, signal=number, kind="pause")
            raise PauseRun(HumanRequest(kind="operator", node=node, question=PAUSED, allowed_actions=["approve"]))
        elif kind == "cancel":
            ctx.bus.emit("signal", node, signal=number, kind="cancel")
            raise CancelRun()
        else:
            ctx.bus.emit("warning", node, message=f"control signal {number} could not be read "
                                                  f"({signal.get('error')}); skipped")
    run.checkpoint("signal")
    failpoints.hit("after_signals_applied")

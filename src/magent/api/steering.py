"""``magent.steer``, ``pause`` and ``cancel`` from another process: each writes a control signal
(``store/signals.py``) the run applies at its next safe point, never taking the run's lock."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from magent import paths
from magent.api.definition import PathLike
from magent.errors import TaskStateError

if TYPE_CHECKING:
    from magent.api.result import AgentResult
    from magent.store.tasks import TaskDir

POLL = 0.1


@dataclass
class Sent:
    """A signal sent to a running task."""

    task_id: str
    signal: int
    """Its number: the run records the last one it applied in each checkpoint."""
    kind: str
    """``message``, ``pause`` or ``cancel``."""


def running(task_dir: "TaskDir") -> bool:
    """A live run holds the task's lock."""
    return not task_dir.lock().is_free()


def steer(task_id: str, message: str, *, session: str | None = None, home: PathLike | None = None) -> Sent:
    """Queue ``message`` for the running task as a user message on its next turn; durable on
    return. It goes to the first conversation to reach its turn, or to ``session`` (an id,
    prefix, agent or key). ``TaskStateError`` when no run holds the task; ``UsageError`` when
    no or several open sessions match."""
    from magent.errors import UsageError
    from magent.store.tasks import Store
    from magent.store.signals import send

    if not message.strip():
        raise UsageError("the message is empty; say what the agent should know")
    with paths.using_home(home):
        task_dir = Store().task(task_id)
        if not running(task_dir):
            raise TaskStateError(f"task {task_dir.id[:8]} is not running; `magent chat {task_dir.id[:8]} MESSAGE` "
                                 "continues it with a follow-up")
        target = None if session is None else _session(task_dir, session)
        return Sent(task_dir.id, send(task_dir.path, "message", message, session=target), "message")


def _session(task_dir: "TaskDir", name: str) -> str:
    """The id of the open session ``name`` names (``main`` for the main conversation)."""
    from magent.errors import UsageError
    from magent.models.session import MAIN_SESSION

    if name == MAIN_SESSION:
        return name
    last = task_dir.checkpoints.latest(repair=False)[0]
    open_ = last.sessions if last is not None else []
    found = [s for s in open_ if name in (s.agent, s.key, s.node) or s.session_id.startswith(name)]
    if len(found) == 1:
        return found[0].session_id
    shown = ", ".join(f"{s.agent or s.key} ({s.session_id[:8]})" for s in (found or open_)) or "none"
    if found:
        raise UsageError(f"--session {name!r} matches {len(found)} open sessions of task {task_dir.id[:8]}: "
                         f"{shown}; give a session id")
    raise UsageError(f"no open session of task {task_dir.id[:8]} is {name!r}; open now: main, {shown}"
                     if open_ else f"task {task_dir.id[:8]} has no open session but main; leave out --session")


def answer_after(task_id: str, signal: int, *, home: PathLike | None = None,
                 timeout: float | None = None) -> str | None:
    """Wait for the agent's next answer after the message sent as ``signal``: the first reply
    without tool calls in the conversation that took it, after its ``injection`` entry. None
    when the run stopped first (or ``timeout`` seconds passed)."""
    from magent.store.tasks import Store

    deadline = None if timeout is None else time.monotonic() + timeout
    with paths.using_home(home):
        task_dir = Store().task(task_id)
        while True:
            seen, where = False, None
            for entry in task_dir.entries.load().values():  # in file order
                if entry.entry_type == "injection" and entry.signal == signal:
                    seen, where = True, entry.session
                elif (seen and entry.role == "assistant" and entry.session == where and not entry.tool_calls
                      and entry.content.strip()):
                    return entry.content
            if not running(task_dir) or (deadline is not None and time.monotonic() > deadline):
                return None
            time.sleep(POLL)


def pause(task_id: str, *, home: PathLike | None = None, wait: bool = True) -> "AgentResult | Sent":
    """Ask the running task to pause at its next safe point (kind ``operator``; ``magent resume
    ID --approve`` continues it). With ``wait`` (the default), wait until it has stopped and
    return its ``AgentResult``. ``TaskStateError`` when no run holds the task."""
    return _stop(task_id, "pause", home, wait)


def cancel(task_id: str, *, home: PathLike | None = None, wait: bool = True) -> "AgentResult | Sent":
    """Cancel a task: a running one stops at its next safe point as ``cancelled`` (its tool
    servers and processes ended); a paused or dead one is abandoned at once. With ``wait`` (the
    default) return its ``AgentResult`` once it has stopped. ``TaskStateError`` for a finished one."""
    from magent.api.result import result_of
    from magent.engine.session import cancel_task
    from magent.errors import TaskLockedError
    from magent.store.tasks import Store

    with paths.using_home(home):
        task_dir = Store().task(task_id)
        if running(task_dir):
            return _stop(task_id, "cancel", home, wait)
        try:
            return cancel_task(task_dir.id, result_of)
        except TaskLockedError:  # a run took it just now
            return _stop(task_id, "cancel", home, wait)


def _stop(task_id: str, kind: str, home: PathLike | None, wait: bool) -> "AgentResult | Sent":
    from magent.api.result import result_of
    from magent.store.tasks import Store
    from magent.store.signals import send

    with paths.using_home(home):
        task_dir = Store().task(task_id)
        if not running(task_dir):
            status = task_dir.load_task().status.value
            raise TaskStateError(f"task {task_dir.id[:8]} is not running ({status}); there is nothing to {kind}")
        number = send(task_dir.path, kind)
        if not wait:
            return Sent(task_dir.id, number, kind)
        while running(task_dir):
            time.sleep(POLL)
        _withdraw(task_dir, number)
        return result_of(task_dir)


def _withdraw(task_dir: "TaskDir", number: int) -> None:
    """The run ended before it reached signal ``number`` (it finished, or paused for another
    reason): take the signal back, under the task's lock, so the task's next run does not act
    on it. Applied or not, it stays if the lock cannot be had (another run took the task)."""
    from magent.errors import TaskLockedError
    from magent.store.signals import folder

    try:
        lock = task_dir.lock().acquire()
    except TaskLockedError:
        return
    try:
        last = task_dir.checkpoints.latest(repair=False)[0]
        if last is None or last.signals_applied < number:
            (folder(task_dir.path) / f"{number:06d}.json").unlink(missing_ok=True)
    finally:
        lock.release()


async def asteer(task_id: str, message: str, *, session: str | None = None,
                 home: PathLike | None = None) -> Sent:
    """``steer`` for asyncio."""
    return await asyncio.to_thread(steer, task_id, message, session=session, home=home)


async def apause(task_id: str, *, home: PathLike | None = None, wait: bool = True) -> "AgentResult | Sent":
    """``pause`` for asyncio (waiting for the run to stop does not block the event loop)."""
    return await asyncio.to_thread(pause, task_id, home=home, wait=wait)


async def acancel(task_id: str, *, home: PathLike | None = None, wait: bool = True) -> "AgentResult | Sent":
    """``cancel`` for asyncio (waiting for the run to stop does not block the event loop)."""
    return await asyncio.to_thread(cancel, task_id, home=home, wait=wait)

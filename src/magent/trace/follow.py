"""Following a task live (``magent trace ID --follow``): poll ``events.jsonl`` and hand each new
complete line to a sink until the run finishes, is interrupted, or no one holds its lock."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Callable

from magent.store.files import loads, open_nofollow

if TYPE_CHECKING:
    from magent.store.tasks import TaskDir

ENDINGS = ("run_finished", "interrupted")
REPLAY = 60
"""Events replayed before following; older ones are summed up in one line."""


class Tail:
    """Reads the complete lines appended to a JSON Lines file since the last read."""

    def __init__(self, path: Any, *, events: bool = False):
        self.path = path
        self.offset = 0
        self.partial = b""
        self.unpack: Any = None
        """For events.jsonl: what its lines leave out, put back (``store.events.unpack``)."""
        if events:
            from magent.store.events import Unpacker

            self.unpack = Unpacker()

    def read(self) -> list[dict[str, Any]]:
        try:
            with os.fdopen(open_nofollow(self.path, os.O_RDONLY | os.O_NONBLOCK), "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size < self.offset:  # truncated (a torn tail repaired): read its new end again
                    self.offset, self.partial = 0, b""
                    if self.unpack is not None:
                        self.unpack = type(self.unpack)()
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        out = []
        for line in lines:
            if not line.strip():
                continue
            try:
                doc = loads(line)
            except ValueError:
                doc = None
            if not isinstance(doc, dict):
                if self.unpack is not None:
                    self.unpack(None)
                continue
            out.append(self.unpack(doc) if self.unpack is not None else doc)
        return out


def _replay_start(events: list[dict[str, Any]]) -> int:
    """Where to start replaying a long history: the last node started within the last REPLAY
    events, else the first model turn in them (so the replay starts at a boundary)."""
    if len(events) <= REPLAY:
        return 0
    floor = len(events) - REPLAY
    for i in range(len(events) - 1, floor - 1, -1):
        if events[i].get("type") == "node_started":
            return i
    return next((i for i in range(floor, len(events)) if events[i].get("type") == "llm_call"), floor)


def follow(task_dir: "TaskDir", sink: Callable[[Any], None], *, say: Callable[[str], None] | None = None,
           poll: float = 0.2, grace: int = 3) -> str:
    """Send the task's events to ``sink`` as they are written; returns why it stopped
    (``finished``'s status, ``interrupted`` or ``not running``). ``grace`` idle polls are waited
    for a run that is just starting (it locks a moment after its directory appears)."""
    from magent.models import Event
    from magent.store.events import needed_entries, with_texts

    tail = Tail(task_dir.events_file, events=True)
    entry_tail = Tail(task_dir.entries.path)
    recent: dict[str, dict[str, Any]] = {}  # the latest entries (a model's reply is written just
                                            # after its event), bounded: entries can be large

    def texts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The texts events.jsonl leaves to entries.jsonl, put back (see store.events)."""
        wanted = needed_entries(events)
        for raw in entry_tail.read():
            recent[raw.get("id")] = raw
            while len(recent) > 256:
                recent.pop(next(iter(recent)))
        if wanted - set(recent):  # a replay of old history: look the rest up in the file
            from magent.store.files import read_jsonl

            recent.update({raw["id"]: raw for raw in read_jsonl(task_dir.entries.path)
                           if raw.get("id") in wanted})
        return with_texts(events, recent)

    history = texts(tail.read())
    start = _replay_start(history)
    if say is not None:
        say(f"following task {task_dir.id} — Ctrl-C to stop")
        if start:
            say(f"… {start} earlier events (magent trace {task_dir.id[:8]} shows them all)")
    running = False
    ended = ""
    for ev in history:
        if ev.get("type") == "run_started":
            running, ended = True, ""
        elif ev.get("type") in ENDINGS:
            running, ended = False, (ev.get("status") or ev.get("type"))
    for ev in history[start:]:
        sink(Event.model_validate(ev))
    if not running and history:
        return ended or "not running"
    idle = 0
    while True:
        time.sleep(poll)
        fresh = texts(tail.read())
        for ev in fresh:
            sink(Event.model_validate(ev))
            if ev.get("type") == "run_started":
                running = True
            elif ev.get("type") in ENDINGS:
                return ev.get("status") or ev.get("type")
        if fresh:
            idle = 0
            continue
        if task_dir.lock().is_free():
            idle += 1
            if idle >= grace:
                if say is not None:
                    say("the run is not live: no process holds the task's lock (resume it with magent resume)")
                return "not running"
        else:
            idle = 0

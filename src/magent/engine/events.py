"""The event bus: one typed stream, three sinks (events.jsonl, the terminal, ``--json``). The
event types and what each says: ``models.published.EVENT_TYPES``."""

from __future__ import annotations

from datetime import datetime, timezone
from time import time_ns
from typing import Any, Callable

from magent.models import Event
from magent.store.events import LIVE_ONLY
from magent.store.files import plain_json

Sink = Callable[[Event], None]

_SCALARS = frozenset({str, int, float, bool, type(None)})


class EventBus:
    def __init__(self, start_seq: int = 0):
        self.seq = start_seq
        self._sinks: list[tuple[Callable[[Any], None], bool]] = []
        """Each sink, and whether it takes the event as a plain dict (``raw``)."""
        self._live = 0
        """How many sinks want the live-only events (``LIVE_ONLY``)."""
        self._typed = 0
        """How many sinks take an ``Event``."""

    def subscribe(self, sink: Callable[[Any], None], *, live: bool = True, raw: bool = False) -> None:
        """``live`` false: ``sink`` ignores the live-only events, so it is not given them. ``raw``:
        ``sink`` takes the event as a dict, ``Event.model_dump(exclude_none=True)``'s form (no
        model is built for it); its values may be the emitter's own: the sink must not change them."""
        self._sinks.append((sink, raw))
        self._live += live
        self._typed += not raw

    @property
    def wants_live(self) -> bool:
        """Whether a sink wants the live-only events (a terminal, ``--json``, ``on_event``)."""
        return self._live > 0

    def emit(self, type: str, node: str | None = None, **fields: Any) -> None:
        """Give the event to the sinks. A live-only event that no sink wants is not built, but it
        still takes its number, so that every event keeps the same ``seq``."""
        self.seq += 1
        if not self._live and type in LIVE_ONLY:
            return
        doc: dict[str, Any] = {"seq": self.seq, "ts": stamp(time_ns()), "type": type}
        if node is not None:
            doc["node"] = node
        # An event is made of plain values (an answer, a call, a result) nearly always: it goes
        # to the sinks as it is. Anything else is dumped as the model dumps it.
        plain = True
        for key, value in fields.items():
            if value is not None:
                doc[key] = value
                if plain and value.__class__ not in _SCALARS:  # (``type`` is the event's here)
                    plain = plain_json(value)
        if not plain:
            doc = Event(**doc).model_dump(exclude_none=True)
        event = Event.model_validate(doc) if self._typed else None
        for sink, raw in self._sinks:
            sink(doc if raw else event)


RESUME_GAP = 1000
"""How far past the last recorded number a run resumed after a kill numbers its events: more
than the live-only events that can follow the last one written (the checkpoint notice, and the
start of each model attempt in flight: one per session calling a model at that moment)."""
_ENDS = frozenset({"run_finished", "interrupted"})


def resumed_seq(recorded: int, checkpoint_seq: int, later: list[Any]) -> int:
    """The ``seq`` a resumed run's bus starts from, so that no number its live stream gives an
    event was given to another event of the task's live stream before (a consumer may dedupe by it).

    ``recorded``: the last ``seq`` events.jsonl holds; ``checkpoint_seq``: the ``events_seq`` of
    the checkpoint the run resumes from; ``later``: the events written after that checkpoint. A
    run that stopped on its own wrote ``run_finished`` (or ``interrupted``) last, after every
    live-only event it showed, so numbering goes on from ``recorded`` (what is written is as
    before). A run that was killed may have shown live-only events after the last event it
    wrote, whose numbers are recorded nowhere: its checkpoint notice (``checkpoint_seq + 1``) and
    its attempts' starts; the resumed run starts ``RESUME_GAP`` past them."""
    if later and later[-1].type in _ENDS:
        return recorded
    return max(recorded, checkpoint_seq + 1) + RESUME_GAP


_second: tuple[int, str] = (-1, "")
"""The last second ``stamp`` wrote, and its text up to the seconds."""


def stamp(ns: int) -> str:
    """``ns`` (nanoseconds since the epoch, as ``time.time_ns()`` gives) as an event's ``ts``:
    what ``datetime.now(timezone.utc).isoformat(timespec="milliseconds")`` gives at that instant
    (the same clock, its microseconds cut to milliseconds), the text up to the seconds made once
    a second."""
    global _second
    second, rest = divmod(ns, 1_000_000_000)
    if second != _second[0]:
        _second = (second, datetime.fromtimestamp(second, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"))
    return f"{_second[1]}.{rest // 1_000_000:03d}+00:00"

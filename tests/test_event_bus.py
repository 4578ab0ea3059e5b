"""The event bus gives a sink that takes dicts (``raw``) what the event model would dump, built
without the model; a typed sink still gets the ``Event``."""

from __future__ import annotations

import dataclasses

from magent.engine.events import EventBus
from magent.models import Event, Usage


@dataclasses.dataclass
class _Point:
    x: int = 1


def test_a_raw_sink_gets_the_model_dump_of_every_event() -> None:
    raw: list[dict] = []
    typed: list[Event] = []
    bus = EventBus(start_seq=4)
    bus.subscribe(raw.append, raw=True)
    bus.subscribe(typed.append)
    sent = [
        ("llm_call", "writer", {"agent": "writer", "cost": None, "tokens_in": 3, "request": {"params": "p"},
                                "response": {"content": "hi", "tool_calls": [{"id": "c", "arguments": None}]}}),
        ("tool_call", None, {"call_id": "c", "arguments": {"n": 1.5, "deep": [{"k": None}]}}),
        # not plain: a model, a dataclass, a tuple, a dict with a key that is not a string
        ("warning", "w", {"usage": Usage(input=2), "where": [_Point()], "pair": (1, 2), "keys": {1: "a"}}),
    ]
    for kind, node, fields in sent:
        bus.emit(kind, node, **fields)
    assert [d["seq"] for d in raw] == [5, 6, 7]
    for doc, event, (kind, node, fields) in zip(raw, typed, sent):
        expected = Event(seq=doc["seq"], ts=doc["ts"], type=kind, node=node, **fields).model_dump(exclude_none=True)
        assert doc == expected
        assert list(doc) == list(expected)  # the same order: the line written keeps it
        assert event.model_dump(exclude_none=True) == expected
    assert raw[2]["usage"] == {"input": 2, "output": 0, "cost": 0.0, "calls": 0, "unpriced": 0}
    assert raw[2]["where"] == [{"x": 1}]


def test_a_live_only_event_no_sink_wants_takes_its_number_only() -> None:
    raw: list[dict] = []
    bus = EventBus()
    bus.subscribe(raw.append, live=False, raw=True)
    bus.emit("checkpoint", "a", sequence=1)
    bus.emit("node_started", "a")
    assert [(d["seq"], d["type"]) for d in raw] == [(2, "node_started")]


def test_an_events_ts_is_the_time_in_utc_to_the_millisecond() -> None:
    """``stamp`` gives what ``datetime.now(timezone.utc).isoformat(timespec="milliseconds")`` gives
    at the same instant, within a second it has seen and across seconds, minutes and years."""
    from datetime import datetime, timedelta, timezone

    from magent.engine.events import stamp

    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    instants = [1_795_000_000_000_000_000, 1_795_000_000_000_999_999, 1_795_000_000_999_999_999,
                1_795_000_000_123_456_789, 1_795_000_001_000_000_000, 1_795_000_000_500_000_000,
                1_798_761_599_999_999_999, 1_798_761_600_000_000_001]  # (the last two: a new year, UTC)
    for ns in instants:
        expected = (epoch + timedelta(microseconds=ns // 1000)).isoformat(timespec="milliseconds")
        assert stamp(ns) == expected
    assert stamp(1_798_761_600_000_000_001) == "2027-01-01T00:00:00.000+00:00"
    bus, got = EventBus(), []
    bus.subscribe(got.append, raw=True)
    before = datetime.now(timezone.utc).replace(microsecond=0)
    bus.emit("warning", None, message="m")
    after = datetime.now(timezone.utc)
    assert before <= datetime.fromisoformat(got[0]["ts"]) <= after

"""The event bus gives a sink that takes dicts (``raw``) what the event model would dump, built
without the model; a typed sink still gets the ``Event``."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from pathlib import Path

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


def _watched_run(tmp_path: Path, watch: bool) -> tuple[list[Event], bytes]:
    """A run with one tool call: what a live sink was given (``watch``), and events.jsonl with
    ids and times taken out."""
    from magent.engine.context import RunOptions
    from magent.engine.graph import load_target
    from magent.engine.session import start_run
    from magent.store.tasks import Store
    from magent.testing import QueueModel, client_factory
    from magent.tools.function import FunctionProvider
    from support.engine import agent_yaml, write

    shown: list[Event] = []
    tools = FunctionProvider("t")
    tools.add("read", lambda: "r" * 3000, "Read.", idempotent=True)
    agent = write(tmp_path, "a.yaml", agent_yaml("a", tools="[t.*]"))
    model = QueueModel([{"content": "reading", "tool_calls": [{"name": "t.read", "arguments": {}}]}, "done"])
    options = RunOptions(llm_factory=client_factory(model), extra_providers=[tools])
    outcome = asyncio.run(start_run(load_target(str(agent)), "go", options=options,
                                    sinks=[shown.append] if watch else []))
    assert outcome.status.value == "completed", outcome
    written = Store().task(outcome.task_id).events_file.read_bytes()
    written = re.sub(rb'[0-9a-f]{8}-[0-9a-f-]{27}|"ts":"[^"]*",?|"(latency|duration)_ms":\d+,?', b"", written)
    return shown, written


def test_a_live_sink_gets_the_texts_events_jsonl_leaves_to_the_entries(tmp_path: Path, magent_home: Path) -> None:
    """A model's answered reply and a tool's result are in entries.jsonl, which their events name:
    events.jsonl leaves them out, watched or not; a live sink gets them."""
    _, written_alone = _watched_run(tmp_path / "alone", watch=False)
    shown, written_watched = _watched_run(tmp_path / "watched", watch=True)
    assert written_alone == written_watched
    assert b'"response"' not in written_alone and b"r" * 100 not in written_alone
    live = {e.type: e.model_extra for e in shown if e.type in ("llm_call", "tool_result")}
    assert live["llm_call"]["response"]["content"] == "done"
    assert live["tool_result"]["result"].startswith("r" * 999)

"""What a resume reads: events.jsonl from the end back to its checkpoint, not the whole history
(and entries.jsonl only along the checkpoint's path, tests/test_store_entries.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from magent.engine import recovery
from magent.engine.recovery import events_after


def _write_events(path: Path, count: int, *, pad: int = 0, torn: bool = False) -> None:
    lines = [json.dumps({"seq": n, "ts": "2026-01-01T00:00:00+00:00", "type": "tool_result",
                         "output": "x" * (pad if n % 3 else pad * 5)}, separators=(",", ":"))
             for n in range(1, count + 1)]
    text = "\n".join(lines) + "\n"
    if torn:
        text += '{"seq":%d,"ts":"2026-01-01T' % (count + 1)
    path.write_text(text)


def _reference(path: Path, after: int) -> tuple[int, list[int]]:
    """Every line read, as a resume did before: lines numbered up to ``after`` counted for the
    last number without being parsed, later ones parsed."""
    last, out = 0, []
    for line in path.read_bytes().split(b"\n"):
        if not line.startswith(b'{"seq":'):
            continue
        seq = int(line[7:line.index(b",")])
        if seq <= after:
            last = max(last, seq)
            continue
        try:
            json.loads(line)
        except ValueError:
            continue
        last = max(last, seq)
        out.append(seq)
    return last, out


@pytest.mark.parametrize("block", [7, 64, 1 << 16])
@pytest.mark.parametrize("torn", [False, True])
def test_events_after_a_checkpoint_are_the_same_read_from_the_end(tmp_path, monkeypatch, block, torn):
    """Blocks smaller than a line, lines across block edges, a torn last line: the same events."""
    monkeypatch.setattr(recovery, "_BLOCK", block)
    path = tmp_path / "events.jsonl"
    _write_events(path, 40, pad=30, torn=torn)
    for after in (0, 1, 2, 17, 39, 40, 41):
        last, events = events_after(path, after)
        assert (last, [e.seq for e in events]) == _reference(path, after), after


def test_a_missing_or_empty_events_file_reads_as_no_events(tmp_path):
    assert events_after(tmp_path / "none.jsonl", 3) == (0, [])
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert events_after(tmp_path / "empty.jsonl", 3) == (0, [])


def _bytes_read() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar")


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux's /proc/self/io")
def test_a_resume_late_in_a_long_task_reads_only_the_end_of_its_events(tmp_path):
    """8 MB of events before the checkpoint, a few after: well under a megabyte is read."""
    path = tmp_path / "events.jsonl"
    _write_events(path, 4000, pad=1000)
    assert path.stat().st_size > 8_000_000
    before = _bytes_read()
    last, events = events_after(path, 3990)
    read = _bytes_read() - before
    assert last == 4000 and [e.seq for e in events] == list(range(3991, 4001))
    assert read < 1_000_000, read



def _turns() -> list[dict]:
    """Two model turns of one agent as a run emits them (a routed tool, a failed call, a call
    whose result is not right after it, an agent that is not its node's), in full."""
    ts = "2026-01-01T00:00:0{}.000+00:00"
    return [
        {"seq": 1, "ts": ts.format(0), "type": "llm_call", "node": "n", "agent": "n", "latency_ms": 0,
         "entry_id": "e1", "request": {"params": "p", "conversation": {"leaf": "e0", "count": 1}}},
        {"seq": 2, "ts": ts.format(1), "type": "tool_call", "node": "n", "call_id": "c1", "tool": "kv.get"},
        {"seq": 3, "ts": ts.format(1), "type": "tool_result", "node": "n", "call_id": "c1", "tool": "kv.get_v2",
         "outcome": "SUCCESS", "duration_ms": 0, "entry_id": "e2"},
        {"seq": 5, "ts": ts.format(2), "type": "llm_call", "node": "n", "agent": "helper", "latency_ms": 7,
         "entry_id": "e3", "request": {"params": "p", "conversation": {"leaf": "e2", "count": 3}}},
        {"seq": 6, "ts": ts.format(3), "type": "tool_call", "node": "n", "call_id": "c2", "tool": "kv.get"},
        {"seq": 7, "ts": ts.format(3), "type": "tool_call", "node": "n", "call_id": "c3", "tool": "kv.set"},
        {"seq": 8, "ts": ts.format(4), "type": "tool_result", "node": "n", "call_id": "c2", "tool": "kv.get",
         "outcome": "ERROR", "entry_id": "e4"},
        {"seq": 9, "ts": ts.format(4), "type": "tool_result", "node": "n", "call_id": "c3", "tool": "kv.set",
         "outcome": "SUCCESS", "entry_id": "e5"},
        {"seq": 10, "ts": ts.format(5), "type": "llm_call", "node": "n", "agent": "n", "latency_ms": 3,
         "entry_id": "e6", "request": {"params": "p", "conversation": {"leaf": "e0", "count": 6}}},
    ]


def test_compact_events_read_back_whole_from_any_point(tmp_path):
    """Schemas 10 to 17 left out of a line of events.jsonl what it could be told from, itself or
    the line before (its ts too, when that line wrote the same): every reader (the whole file, a
    follower, a resume from any checkpoint) gets those events back whole; lines written in full
    (schema 18, and before 10) read as they are."""
    from magent.store.events import unpack_all
    from magent.store.files import read_jsonl
    from magent.trace.follow import Tail

    events = _turns()
    z = "2026-01-01T00:00:0{}.000Z"
    # the lines a schema 16/17 magent wrote for those events (schema 18 writes them whole)
    packed = [
        {"seq": 1, "ts": z.format(0), "type": "llm_call", "node": "n", "entry_id": "e1",
         "request": {"params": "p", "conversation": {"leaf": "e0", "count": 1}}},   # nothing before it
        {"seq": 2, "ts": z.format(1), "type": "tool_call", "node": "n", "call_id": "c1", "tool": "kv.get"},
        {"seq": 3, "type": "tool_result", "tool": "kv.get_v2", "duration_ms": 0, "entry_id": "e2"},  # the ts before it
        {"seq": 5, "ts": z.format(2), "type": "llm_call", "node": "n", "agent": "helper", "latency_ms": 7,
         "entry_id": "e3", "request": {"params": "p", "conversation": {"count": 3}}},
        {"seq": 6, "ts": z.format(3), "type": "tool_call", "node": "n", "call_id": "c2", "tool": "kv.get"},
        {"seq": 7, "type": "tool_call", "node": "n", "call_id": "c3", "tool": "kv.set"},
        {"seq": 8, "ts": z.format(4), "type": "tool_result", "node": "n", "call_id": "c2", "tool": "kv.get",
         "outcome": "ERROR", "entry_id": "e4"},                                      # not after its call
        {"seq": 9, "type": "tool_result", "node": "n", "call_id": "c3", "tool": "kv.set", "entry_id": "e5"},
        {"seq": 10, "ts": z.format(5), "type": "llm_call", "node": "n", "latency_ms": 3, "entry_id": "e6",
         "request": {"params": "p", "conversation": {"leaf": "e0", "count": 6}}},
    ]
    for lines in (packed, events):
        path = tmp_path / "events.jsonl"
        path.write_text("".join(json.dumps(d, separators=(",", ":")) + "\n" for d in lines))
        assert unpack_all(read_jsonl(path)) == events
        assert Tail(path, events=True).read() == events
        for ev in [{"seq": 0}, *events]:
            last, later = events_after(path, ev["seq"])
            assert [e.model_dump(exclude_none=True) for e in later] == [e for e in events if e["seq"] > ev["seq"]]

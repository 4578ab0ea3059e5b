"""The API behind ``magent batch``: ``magent.batch``/``abatch``, ``resume_batch``, ``batches``,
``batch_details`` and ``batch_results`` give a Python user what the commands show (checked against
their own ``--json`` on the same home), with the commands' typed errors — and the commands still
print those as one line and exit 2."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import magent
from magent.errors import BatchNotFoundError, UsageError
from support.batchflow import make_batch_flow
from support.cli import invoke

ROOT = Path(__file__).resolve().parent.parent
TRIAGE = ROOT / "examples" / "workflows" / "triage.yaml"
TICKETS = ROOT / "examples" / "batches" / "tickets.jsonl"


def _json(*args: str) -> object:
    r = invoke(*args)
    assert r.code == 0, r.err
    return json.loads(r.out)


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _refused(args: list[str], message: str) -> None:
    r = invoke(*args)
    assert r.code == 2 and message in r.err, (r.code, r.out, r.err)
    assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err


def test_batch_runs_every_row_and_reads_back_as_the_commands_show(magent_home: Path) -> None:
    started: list[magent.BatchStart] = []
    seen: list[magent.BatchProgress] = []
    done = magent.batch(TRIAGE, TICKETS, concurrency=2, tags=["api"], on_start=started.append,
                        on_progress=seen.append)
    (start,) = started
    assert start.batch_id == done.batch_id and start.rows == 4 and start.executor == "local"
    assert [r.row for r in done.rows] == [1, 2, 3, 4]
    assert [r.status for r in done.rows] == ["completed", "completed", "awaiting_human", "completed"]
    assert done.counts == {"completed": 3, "awaiting_human": 1} and done.stopped_by is None
    paused = done.rows[2]
    assert paused.result is not None and paused.result.pause is not None
    assert paused.result.pause.node == "escalate" and paused.task_id == paused.result.task_id
    assert all(r.result is not None and r.result.output for r in done.rows if r.status == "completed")
    assert [r.task_id for r in done.results] == [r.task_id for r in done.rows]
    assert set(magent.task_details(done.rows[0].task_id or "").task.tags) == {f"batch:{done.batch_id}", "api"}
    finished = [p for p in seen if p.finished is not None]
    assert sorted(p.row for p in finished) == [1, 2, 3, 4] and finished[-1].done == 4
    assert done.tokens == finished[-1].tokens

    short = done.batch_id[:8]
    assert [r.as_dict() for r in magent.batch_results(short)] == _lines(invoke("batch", "results", short).out)
    assert magent.batch_results(short)[2].task == "Checkout is down for every customer"
    assert magent.batch_details(short).as_dict() == _json("batch", "show", short, "--json")
    assert [r.row for r in magent.batch_details(short).not_completed] == [3]
    (listed,) = magent.batches()
    assert [listed.to_json()] == _json("batch", "list", "--json")
    assert listed.id == done.batch_id and listed.counts == done.counts and not listed.running


def test_a_batch_from_the_api_is_the_batch_the_command_starts(magent_home: Path) -> None:
    api = magent.batch(TRIAGE, TICKETS)
    r = invoke("batch", str(TRIAGE), "--inputs", str(TICKETS), "--json")
    assert r.code == 3, r.err
    cli = sorted(_lines(r.out), key=lambda line: line["row"])

    def same(line: dict) -> tuple:
        return line["row"], line["status"], line["output"], line["provenance"]["config_hash"], line["model_calls"]

    assert [same(x.as_dict()) for x in api.rows] == [same(x) for x in cli]
    assert {b.id: b.counts for b in magent.batches()} == {
        b["id"]: b["counts"] for b in _json("batch", "list", "--json")}


def test_rows_given_as_a_list_are_kept_and_a_resume_answers_the_paused_ones(magent_home: Path) -> None:
    rows = [{"task": f"outage {n}", "set": {"ticket": f"T{n}"}} for n in range(3)]
    first = magent.batch(TRIAGE, rows, set={"priority": "high"})
    assert first.counts == {"awaiting_human": 3}
    kept = magent_home / "batches" / first.batch_id / "inputs.jsonl"
    assert [json.loads(line) for line in kept.read_text().splitlines()] == rows
    assert magent.batch_details(first.batch_id).summary.doc["inputs"]["path"] == str(kept)

    waiting = magent.resume_batch(first.batch_id)           # no answer: nothing runs
    assert waiting.rows == [] and waiting.counts == {"awaiting_human": 3} == waiting.already
    tasks = {r.task_id for r in first.rows}
    done = magent.resume_batch(first.batch_id[:8], approve_all=True)
    assert [r.status for r in done.rows] == ["completed"] * 3 and {r.task_id for r in done.rows} == tasks
    assert [r.task for r in magent.batch_results(first.batch_id)] == ["outage 0", "outage 1", "outage 2"]


def test_bad_rows_and_options_are_typed_errors_and_nothing_is_written(magent_home: Path, tmp_path: Path) -> None:
    flow = make_batch_flow(tmp_path)
    bad = tmp_path / "rows.jsonl"
    bad.write_text('{"task": "fine", "label": "a", "nap": 0}\n{"label": "b", "nap": 0}\n')
    with pytest.raises(UsageError, match='rows.jsonl:2: the row has no "task"; nothing was started'):
        magent.batch(flow, bad)
    _refused(["batch", str(flow), "--inputs", str(bad)], 'rows.jsonl:2: the row has no "task"')
    with pytest.raises(UsageError, match='inputs.jsonl:2: the row has no "task"'):
        magent.batch(flow, [{"task": "fine", "label": "a", "nap": 0}, {"label": "b"}])
    with pytest.raises(UsageError, match="--concurrency must be 1 or more, not 0"):
        magent.batch(TRIAGE, TICKETS, concurrency=0)
    with pytest.raises(UsageError, match="--executor 'spark': choose one of local, ray"):
        magent.batch(TRIAGE, TICKETS, executor="spark")
    with pytest.raises(UsageError, match="inputs= has no rows"):
        magent.batch(TRIAGE, [])
    with pytest.raises(UsageError, match="inputs row 1: a row is a mapping"):
        magent.batch(TRIAGE, ["just text"])  # type: ignore[list-item]
    with pytest.raises(magent.ConfigError):
        magent.batch(tmp_path / "nothing.yaml", TICKETS)
    assert not (magent_home / "batches").exists() and not (magent_home / "tasks").exists()


def test_unknown_batches_are_typed_errors(magent_home: Path) -> None:
    for call in (magent.batch_details, magent.batch_results, magent.resume_batch):
        with pytest.raises(BatchNotFoundError, match=r"no batch matches '0123abcd' \(see `magent batch list`\)"):
            call("0123abcd")
    for args in (["batch", "show", "0123abcd"], ["batch", "results", "0123abcd"], ["batch", "resume", "0123abcd"]):
        _refused(args, "no batch matches '0123abcd'")
    assert magent.batches() == [] and _json("batch", "list", "--json") == []


def test_batches_use_the_home_given_per_call(magent_home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    done = magent.batch(TRIAGE, TICKETS, home=other)
    assert (other / "batches" / done.batch_id / "batch.json").is_file()
    assert [b.id for b in magent.batches(home=other)] == [done.batch_id] and magent.batches() == []
    assert len(magent.batch_results(done.batch_id, home=other)) == 4
    with pytest.raises(BatchNotFoundError):
        magent.batch_details(done.batch_id)


def test_abatch_runs_in_an_event_loop_where_batch_refuses(magent_home: Path) -> None:
    async def inside() -> magent.BatchRun:
        with pytest.raises(UsageError, match=r"use `await magent.abatch\(...\)`"):
            magent.batch(TRIAGE, TICKETS)
        return await magent.abatch(TRIAGE, TICKETS, max_rpm=600)

    done = asyncio.run(inside())
    assert done.counts == {"completed": 3, "awaiting_human": 1}
    assert len(magent.batches()) == 1          # the refused call wrote nothing

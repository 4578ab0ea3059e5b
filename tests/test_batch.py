"""magent batch with the local executor: rows as ordinary tasks, results, paused rows, shared MCP
servers, bad inputs, and a batch killed with SIGKILL then resumed."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.batchflow import make_batch_flow, stamps, write_inputs
from support.cli import invoke

ROOT = Path(__file__).resolve().parent.parent
TRIAGE = ROOT / "examples" / "workflows" / "triage.yaml"
TICKETS = ROOT / "examples" / "batches" / "tickets.jsonl"


def _json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _only_batch(home: Path) -> str:
    (batch,) = [p.name for p in (home / "batches").iterdir() if not p.name.startswith(".")]
    return batch


def _tasks(home: Path) -> list[str]:
    folder = home / "tasks"
    return [p.name for p in folder.iterdir() if not p.name.startswith(".")] if folder.exists() else []


def test_batch_runs_every_row_as_a_tagged_task_and_reports_results(magent_home: Path) -> None:
    r = invoke("batch", str(TRIAGE), "--inputs", str(TICKETS), "--json")
    assert r.code == 3, r.err  # the urgent ticket waits for a person
    lines = _json_lines(r.out)
    assert sorted(line["row"] for line in lines) == [1, 2, 3, 4]
    by_row = {line["row"]: line for line in lines}
    assert by_row[3]["status"] == "awaiting_human" and by_row[3]["pause"]["node"] == "escalate"
    assert all(by_row[n]["status"] == "completed" and by_row[n]["output"] for n in (1, 2, 4))
    batch = _only_batch(magent_home)

    listed = invoke("tasks", "list", "--tag", f"batch:{batch}", "--json")
    assert listed.code == 0, listed.err
    assert {t["id"] for t in json.loads(listed.out)} == {line["task_id"] for line in lines}
    # the short id every batch command takes finds the same tasks
    short = invoke("tasks", "list", "--tag", f"batch:{batch[:8]}", "--json")
    assert short.code == 0, short.err
    assert {t["id"] for t in json.loads(short.out)} == {line["task_id"] for line in lines}

    shown = invoke("batch", "list")
    assert f"{batch[:8]}" in shown.out and "3 completed, 1 paused" in shown.out

    results = invoke("batch", "results", batch[:8], "--csv")
    table = list(csv.DictReader(io.StringIO(results.out)))
    assert [row["row"] for row in table] == ["1", "2", "3", "4"]
    assert table[2]["task"] == "Checkout is down for every customer"
    assert table[2]["status"] == "awaiting_human" and table[0]["status"] == "completed"

    # the paused row answered one by one, with the ordinary resume: the batch sees it at once
    answered = invoke("resume", by_row[3]["task_id"][:8], "--approve", "--no-input")
    assert answered.code == 0, answered.err
    after = invoke("batch", "show", batch[:8], "--json")
    assert json.loads(after.out)["counts"] == {"completed": 4}


def test_the_batch_exits_0_only_when_every_row_completed(magent_home: Path, tmp_path: Path) -> None:
    """The exit code of a batch (and of its resume) for completed, paused and cancelled rows (failed
    ones: test_max_failures_stops_starting_rows), as the README says: 1 as soon as one row did not
    complete and does not wait (it wins over waiting), else 3 when rows wait for a person, 0 when all
    completed."""
    inputs = write_inputs(tmp_path / "urgent.jsonl", [
        {"task": f"outage {n}", "set": {"ticket": f"T{n}", "priority": "high"}} for n in range(3)])
    first = invoke("batch", str(TRIAGE), "--inputs", str(inputs), "--json")
    assert first.code == 3, first.err
    batch = _only_batch(magent_home)
    one, two, three = (line["task_id"] for line in sorted(_json_lines(first.out), key=lambda x: x["row"]))
    assert invoke("resume", one[:8], "--approve", "--no-input").code == 0
    assert invoke("batch", "resume", batch[:8]).code == 3  # two rows still wait
    assert invoke("tasks", "cancel", two[:8]).code == 0
    cancelled = invoke("batch", "resume", batch[:8])
    assert cancelled.code == 1, cancelled.out  # a cancelled row did not complete; one still waits
    assert invoke("resume", three[:8], "--approve", "--no-input").code == 0
    assert invoke("batch", "resume", batch[:8]).code == 1
    assert json.loads(invoke("batch", "show", batch[:8], "--json").out)["counts"] == {"completed": 2, "cancelled": 1}


def test_approve_all_answers_every_paused_row(magent_home: Path, tmp_path: Path) -> None:
    inputs = write_inputs(tmp_path / "urgent.jsonl", [
        {"task": f"outage {n}", "set": {"ticket": f"T{n}", "priority": "high"}} for n in range(3)])
    first = invoke("batch", str(TRIAGE), "--inputs", str(inputs))
    assert first.code == 3, first.err
    assert "3 paused" in first.out and "--approve-all" in first.out
    batch = _only_batch(magent_home)
    tasks = set(_tasks(magent_home))

    again = invoke("batch", "resume", batch[:8], "--json")  # without an answer nothing runs
    assert again.code == 3 and _json_lines(again.out) == []
    done = invoke("batch", "resume", batch[:8], "--approve-all", "--json")
    assert done.code == 0, done.err
    assert sorted(line["status"] for line in _json_lines(done.out)) == ["completed"] * 3
    assert set(_tasks(magent_home)) == tasks  # the same tasks continued, none added


def test_rows_share_one_process_of_each_mcp_server(magent_home: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    env = {"LEDGER": str(ledger)}
    flow = make_batch_flow(tmp_path / "shared")
    inputs = write_inputs(tmp_path / "rows.jsonl", [{"task": f"row {n}", "label": f"r{n}", "nap": 0.2}
                                                    for n in range(6)])
    r = invoke("batch", str(flow), "--inputs", str(inputs), "--concurrency", "3", env=env)
    assert r.code == 0, r.err
    marks = stamps(ledger)
    assert sorted(label for _, label in marks if label != "nap") == [f"r{n}" for n in range(6)]
    assert len({pid for pid, label in marks if label != "nap"}) == 1  # one server process served all six rows

    # a server that opts out (shared: false) gets a process per row, as a single run does
    ledger.unlink()
    own = make_batch_flow(tmp_path / "own", shared=False)
    r = invoke("batch", str(own), "--inputs", str(inputs), "--concurrency", "3", env=env)
    assert r.code == 0, r.err
    assert len({pid for pid, label in stamps(ledger) if label != "nap"}) == 6


def test_every_row_runs_the_workflow_as_the_batch_found_it(magent_home: Path, tmp_path: Path) -> None:
    """The batch loads its target once: an agent file edited while the batch runs changes only the
    next batch (or resume), never the rows still to start."""
    ledger, wake = tmp_path / "ledger.txt", tmp_path / "wake"
    env = {**os.environ, "LEDGER": str(ledger), "LEDGER_WAKE": str(wake)}
    flow = make_batch_flow(tmp_path)
    (tmp_path / "edited.script.yaml").write_text("responses:\n  - content: from the edited file\n")
    rows = [{"task": f"row {n}", "label": f"r{n}", "nap": 120 if n == 1 else 0} for n in (1, 2, 3)]
    inputs = write_inputs(tmp_path / "rows.jsonl", rows)
    proc = subprocess.Popen([sys.executable, "-m", "magent", "batch", str(flow), "--inputs", str(inputs),
                             "--concurrency", "1", "--json"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while "r1" not in [label for _, label in stamps(ledger)]:  # row 1 is in its nap
            assert time.time() < deadline and proc.poll() is None, "row 1 never reached its nap"
            time.sleep(0.05)
        answerer = tmp_path / "answerer.yaml"
        answerer.write_text(answerer.read_text().replace("answer.script.yaml", "edited.script.yaml"))
        wake.touch()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert {line["row"]: line["output"] for line in _json_lines(out)} == {1: "row done", 2: "row done",
                                                                           3: "row done"}


@pytest.mark.parametrize("content, message", [
    ('{"task": "fine", "label": "a", "nap": 0}\n{"task": oops}\n', "rows.jsonl:2: not valid JSON"),
    ('{"task": "fine", "label": "a", "nap": 0}\n["a list"]\n', "rows.jsonl:2: a row is a JSON object"),
    ('{"task": "fine", "label": "a", "nap": 0}\n\n{"label": "b", "nap": 0}\n', "rows.jsonl:3: the row has no \"task\""),
    ('{"task": "fine", "label": "a", "nap": 0}\n{"task": "no label", "nap": 0}\n',
     "rows.jsonl:2: row 2 (line 2) has no value for 'label', which node 'stamp' passes to its tool"),
])
def test_a_bad_row_stops_the_batch_before_anything_starts(magent_home: Path, tmp_path: Path, content: str,
                                                         message: str) -> None:
    flow = make_batch_flow(tmp_path)
    inputs = tmp_path / "rows.jsonl"
    inputs.write_text(content)
    r = invoke("batch", str(flow), "--inputs", str(inputs), env={"LEDGER": str(tmp_path / "ledger")})
    assert r.code == 2
    assert r.err.startswith("magent: error: --inputs ") and message in r.err, r.err
    assert "Traceback" not in r.err and "nothing was started" in r.err
    assert not (magent_home / "batches").exists() and _tasks(magent_home) == []


def test_skip_bad_rows_runs_the_good_ones_and_records_the_rest(magent_home: Path, tmp_path: Path) -> None:
    flow = make_batch_flow(tmp_path)
    inputs = tmp_path / "rows.csv"
    inputs.write_text("task,label,set.nap\nfirst,a,0\nsecond,,0\nthird,c,0,extra\nfourth,d,0\n")
    r = invoke("batch", str(flow), "--inputs", str(inputs), "--skip-bad-rows", "--json",
            env={"LEDGER": str(tmp_path / "ledger")})
    assert r.code == 0, r.err
    assert sorted(line["row"] for line in _json_lines(r.out)) == [1, 4]
    assert "skipped: rows.csv:3: row 2 (line 3) has no value for 'label'" in r.err
    assert "skipped: rows.csv:4: 4 cells, the header has 3" in r.err
    results = _json_lines(invoke("batch", "results", _only_batch(magent_home)[:8]).out)
    assert [x["status"] for x in results] == ["completed", "skipped", "skipped", "completed"]


def test_unknown_batch_and_bad_options_are_one_line_errors(magent_home: Path, tmp_path: Path) -> None:
    for args in (("batch", "resume", "0123abcd"), ("batch", "show", "0123abcd"), ("batch", "results", "0123abcd")):
        r = invoke(*args)
        assert r.code == 2 and r.err == "magent: error: no batch matches '0123abcd' (see `magent batch list`)\n"
    r = invoke("batch", str(TRIAGE), "--inputs", str(tmp_path / "missing.jsonl"))
    assert r.code == 2 and "missing.jsonl: no such file" in r.err
    r = invoke("batch", str(TRIAGE), "--inputs", str(TICKETS), "--concurrency", "0")
    assert r.code == 2 and "--concurrency must be 1 or more" in r.err
    assert not (magent_home / "batches").exists()


def test_max_failures_stops_starting_rows(magent_home: Path, tmp_path: Path) -> None:
    flow = make_batch_flow(tmp_path)
    # a nap that is not a number fails the row at its tool node; the others would succeed
    rows = [{"task": f"row {n}", "label": f"r{n}", "nap": "soon" if n < 2 else 0} for n in range(6)]
    inputs = write_inputs(tmp_path / "rows.jsonl", rows)
    r = invoke("batch", str(flow), "--inputs", str(inputs), "--concurrency", "1", "--max-failures", "2", "--json",
            env={"LEDGER": str(tmp_path / "ledger")})
    assert r.code == 1
    lines = _json_lines(r.out)
    assert [(x["row"], x["status"]) for x in lines] == [(1, "failed"), (2, "failed")]
    assert "stopped starting rows after 2 failed (--max-failures 2)" in r.err
    rest = invoke("batch", "resume", _only_batch(magent_home)[:8], "--json", env={"LEDGER": str(tmp_path / "ledger")})
    assert rest.code == 1  # the failed rows stay failed (not run again); the others complete
    assert sorted(x["row"] for x in _json_lines(rest.out)) == [3, 4, 5, 6]
    assert all(x["status"] == "completed" for x in _json_lines(rest.out))


def test_batch_killed_with_sigkill_resumes_where_it_stopped(magent_home: Path, tmp_path: Path) -> None:
    ledger, wake = tmp_path / "ledger.txt", tmp_path / "wake"
    env = {**os.environ, "LEDGER": str(ledger), "LEDGER_WAKE": str(wake)}
    flow = make_batch_flow(tmp_path)
    rows = [{"task": f"row {n}", "label": f"r{n}", "nap": 0 if n <= 2 else 120} for n in range(1, 6)]
    inputs = write_inputs(tmp_path / "rows.jsonl", rows)
    proc = subprocess.Popen([sys.executable, "-m", "magent", "batch", str(flow), "--inputs", str(inputs),
                             "--concurrency", "2", "--json"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:  # rows 1-2 done, rows 3-4 inside their nap
            if [label for _, label in stamps(ledger)].count("nap") >= 2 and \
                    sum('"tool":"stamp.nap"' in p.read_text() for p in (magent_home / "tasks").glob("*/events.jsonl")) >= 4:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the batch never had two rows done and two napping")
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGKILL)  # the batch process (its MCP server ends with its stdin)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    done_before = {line["row"]: line["task_id"] for line in _json_lines(out)}
    assert set(done_before) == {1, 2}
    batch = _only_batch(magent_home)
    before = set(_tasks(magent_home))
    assert len(before) == 4  # row 5 never started

    shown = json.loads(invoke("batch", "show", batch[:8], "--json").out)
    assert shown["counts"] == {"completed": 2, "interrupted": 2, "not_started": 1}

    wake.touch()
    resumed = invoke("batch", "resume", batch[:8], "--json", env={"LEDGER": str(ledger), "LEDGER_WAKE": str(wake)})
    assert resumed.code == 0, resumed.err
    lines = _json_lines(resumed.out)
    assert sorted(x["row"] for x in lines) == [3, 4, 5]  # finished rows are not run again
    assert all(x["status"] == "completed" for x in lines)
    after = set(_tasks(magent_home))
    assert before <= after and len(after) == 5  # rows 3-4 continued their own tasks
    labels = [label for _, label in stamps(ledger)]
    assert labels.count("r1") == labels.count("r2") == labels.count("r5") == 1
    results = _json_lines(invoke("batch", "results", batch[:8]).out)
    assert [x["status"] for x in results] == ["completed"] * 5
    assert {x["row"]: x["task_id"] for x in results if x["row"] <= 2} == done_before

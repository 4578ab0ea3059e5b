"""``magent trace ID --html``: the report's content, its safety, and its errors (the page itself is
driven in a real browser by test_trace_browser.py)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

from magent.models import TaskStatus
from magent.testing import QueueModel
from magent.tools.function import FunctionProvider
from magent.trace.graphsvg import graph_svg
from magent.trace.timeline import timeline
from support.cli import invoke
from support.crashflow import only_task
from support.delegateflow import make_delegation
from support.engine import agent_yaml, run_with, task_dir, write
from support.holders import hold_task

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KEY = "sk-" + "abcdefghijklmnopqrstuvwx"  # shaped like an API key: masked by default


def run_example(target: str, *args: str) -> str:
    result = invoke("run", str(EXAMPLES / target), "-t", "example task", "--no-input", *args)
    assert result.code in (0, 3), result.out + result.err
    return result.out.splitlines()[0].split()[1]


def page_data(page: str) -> dict:
    blob = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert blob, "no report data in the page"
    return json.loads(blob.group(1))


def test_the_report_holds_steps_tool_results_and_totals(tmp_path: Path) -> None:
    task_id = run_example("workflows/write_review.yaml")
    out = tmp_path / "report.html"
    result = invoke("trace", task_id[:8], "--html", str(out))
    assert result.code == 0, result.err
    assert result.out.startswith(f"wrote {out} (7 steps, ") and result.out.rstrip().endswith("open it in a browser")
    page = out.read_text()
    data = page_data(page)
    assert [s["n"] for s in data["steps"]] == list(range(1, 8))  # numbered as magent trace --step N
    assert [s["type"] for s in data["steps"]] == ["node", "turn", "turn", "node", "node", "turn", "node"]
    call = data["steps"][1]["tools"][0]
    assert call["name"] == "kv.set" and call["outcome"] == "SUCCESS"
    assert data["entries"][call["entry"]]["t"] == "stored title"
    assert data["entries"][call["entry"]]["step"] == 2
    reply = data["steps"][1]["llm"][0]
    assert data["entries"][reply["entry"]]["t"] == "Let me save a working title before drafting."
    assert data["entries"][reply["entry"]]["p"]  # its parent: the prompt is put together from the tree
    assert "verdict revise" in data["steps"][3]["msg"] and "Too vague" in data["steps"][3]["llm"][0]["reply"]["t"]
    (model,) = data["totals"]["model"]
    assert model["name"] == "scripted" and model["calls"] == 5
    assert sum(r["calls"] for r in data["totals"]["agent"]) == 5
    assert {r["name"] for r in data["totals"]["agent"]} == {"writer", "critic"}
    assert "You write short, concrete product copy" in data["system"]["writer"]
    assert [n["name"] for n in data["graph"]["nodes"]] == ["write", "review"]
    assert data["task"]["status"] == "completed"


def test_the_page_is_self_contained(tmp_path: Path) -> None:
    task_id = run_example("workflows/write_review.yaml")
    page = invoke("trace", task_id, "--html", "-").out
    assert page.startswith("<!doctype html>")
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert csp.startswith("default-src 'none'")  # the browser refuses any fetch, even if something tried
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "@import" not in page and not re.search(r"url\((?!#)", page)  # only in-page references
    assert '<svg class="graph"' in page and 'data-node="review"' in page
    assert f"magent trace {task_id[:8]} --step N" in page


def test_default_file_name_and_stdout(tmp_path: Path, monkeypatch) -> None:
    task_id = run_example("workflows/write_review.yaml")
    monkeypatch.chdir(tmp_path)
    assert invoke("trace", task_id, "--html").code == 0
    assert (tmp_path / f"trace-{task_id[:8]}.html").is_file()
    assert oct((tmp_path / f"trace-{task_id[:8]}.html").stat().st_mode & 0o777) == "0o600"


def test_secrets_stay_masked_and_texts_inert(tmp_path: Path, magent_home: Path) -> None:
    tools = FunctionProvider("t")
    tools.add("leak", lambda: f"the key is {KEY} and ACME-12345678 </script><script>alert(1)</script>", "leak")
    model = QueueModel([{"content": "Looking.", "tool_calls": [{"name": "t.leak", "arguments": {}}]}, "Done."])
    outcome = run_with(model, write(tmp_path, "w.yaml", agent_yaml("w", "[t.*]")), providers=[tools])
    # A pattern added after the run: the files still hold the text; the report masks it anyway.
    (magent_home / "config").mkdir(parents=True, exist_ok=True)
    (magent_home / "config" / "redaction.yaml").write_text("patterns: ['ACME-[0-9]{8}']\n")
    assert "ACME-12345678" in task_dir(outcome.task_id).entries.path.read_text()
    page = invoke("trace", outcome.task_id, "--html", "-").out
    assert KEY not in page and "ACME-12345678" not in page
    assert "[REDACTED]" in page
    assert "</script><script>alert(1)" not in page  # the text cannot close the data element
    data = page_data(page)
    result = data["entries"][data["steps"][1]["tools"][0]["entry"]]["t"]
    assert result == "the key is [REDACTED] and [REDACTED] </script><script>alert(1)</script>"


def test_trace_tool_io_false_keeps_tool_results_out(tmp_path: Path, magent_home: Path) -> None:
    (magent_home / "config").mkdir(parents=True, exist_ok=True)
    (magent_home / "config" / "redaction.yaml").write_text("trace_tool_io: false\n")
    tools = FunctionProvider("t")
    tools.add("read", lambda page: f"page {page}: private words", "read",
              {"type": "object", "properties": {"page": {"type": "integer"}}})
    model = QueueModel([{"content": "Reading.", "tool_calls": [{"name": "t.read", "arguments": {"page": 7}}]}, "Done."])
    outcome = run_with(model, write(tmp_path, "w.yaml", agent_yaml("w", "[t.*]")), providers=[tools])
    page = invoke("trace", outcome.task_id, "--html", "-").out
    assert "private words" not in page and "trace_tool_io is false" in page
    data = page_data(page)
    (call,) = data["steps"][1]["tools"]
    assert json.loads(call["args"]["t"]) == {"_omitted": "[left out: trace_tool_io is false in config/redaction.yaml]"}
    assert all("page" not in c["args"]["t"] for e in data["entries"].values() for c in e.get("calls", []))


def test_big_results_are_cut_with_their_size(tmp_path: Path) -> None:
    tools = FunctionProvider("t")
    tools.add("big", lambda: "".join(f"line {i:05d}\n" for i in range(1000)), "big")  # 11,000 characters
    model = QueueModel([{"content": "Reading.", "tool_calls": [{"name": "t.big", "arguments": {}}]}, "Done."])
    outcome = run_with(model, write(tmp_path, "w.yaml", agent_yaml("w", "[t.*]")), providers=[tools])
    data = page_data(invoke("trace", outcome.task_id, "--html", "-").out)
    entry = data["entries"][data["steps"][1]["tools"][0]["entry"]]
    assert len(entry["t"]) == data["text_cap"] == 2000 and entry["size"] > 10_000
    assert entry["t"].startswith("line 00000\n") and entry["step"] == 2  # the page points at --step 2


def test_a_pause_and_a_decision_are_in_the_report(tmp_path: Path) -> None:
    task_id = run_example("workflows/triage.yaml", "--set", "ticket=checkout down", "--set", "priority=high")
    assert invoke("resume", task_id, "--approve", "-m", "paged them", "--no-input").code == 0
    data = page_data(invoke("trace", task_id, "--html", "-").out)
    names = [s["name"] for s in data["steps"]]
    assert "awaiting_human" in names and "human_decision" in names
    decision = data["steps"][names.index("human_decision")]
    assert decision["msg"] == "a person chose approve: paged them"
    marks = {m[3] for m in data["timeline"]["marks"]}
    assert {"awaiting_human", "human_decision", "resumed"} <= marks


def test_a_failed_run_is_highlighted(tmp_path: Path) -> None:
    model = QueueModel([{"content": "Calling.", "tool_calls": [{"name": "kv.get", "arguments": {"key": "x"}}]}])
    agent = write(tmp_path, "w.yaml", agent_yaml("w", extra="max_iterations: 1\n"))
    outcome = run_with(model, agent)
    assert outcome.status == TaskStatus.failed
    data = page_data(invoke("trace", outcome.task_id, "--html", "-").out)
    assert data["task"]["status"] == "failed" and "max_iterations" in data["task"]["error"]
    errors = [s for s in data["steps"] if s["status"] == "error"]
    assert errors and any(s["name"] == "error" for s in errors)


def test_sub_agent_sessions_have_their_own_lanes_and_totals(tmp_path: Path, magent_home: Path) -> None:
    flow = make_delegation(tmp_path)  # lead delegates to worker (3 turns), then to scribe (2 turns)
    assert invoke("run", str(flow), "-t", "the lead's task", env={"LEDGER": str(tmp_path / "ledger.txt")}).code == 0
    task_id = only_task(magent_home)
    data = page_data(invoke("trace", task_id, "--html", "-").out)
    main, worker, scribe = data["sessions"]
    assert (main["id"], main["label"]) == ("", "main")
    assert (worker["agent"], worker["status"], worker["depth"], worker["kind"]) == ("worker", "completed", 1, "agent")
    assert worker["label"] == f"worker · {worker['id'][:8]}" and scribe["agent"] == "scribe"
    steps = data["steps"]
    assert [(s["name"], s["session"]) for s in steps] == [
        ("lead", ""), ("lead:0", ""), ("worker:0", worker["id"]), ("worker:1", worker["id"]),
        ("worker:2", worker["id"]), ("lead:1", ""), ("scribe:0", scribe["id"]), ("scribe:1", scribe["id"]),
        ("lead:2", ""), ("record", "")]
    # Each session says which step opened it (the lead's turn that called agents.NAME) and where it starts;
    # the sub-agents' turns sit inside the lead node they ran in.
    assert (worker["opened_by"], worker["first"], scribe["opened_by"], scribe["first"]) == (2, 3, 6, 7)
    assert worker["key"] == "call:" + steps[1]["tools"][0]["id"] and steps[1]["tools"][0]["name"] == "agents.worker"
    assert data["entries"][steps[1]["tools"][0]["entry"]]["t"] == "all done"  # the worker's answer
    assert all(s.get("parent") == 1 for s in steps[1:9])
    assert [c["name"] for c in steps[2]["tools"]] == ["ledger.append", "kv.set"]
    # One timeline lane per session, holding that session's model calls.
    timeline = data["timeline"]
    assert timeline["lanes"] == ["", worker["id"], scribe["id"]]
    model_bars = [sum(1 for b in timeline["bars"] if b[1] == lane and b[2] == 1) for lane in range(3)]
    assert model_bars == [3, 3, 2]
    per_session = {r["name"]: r["calls"] for r in data["totals"]["session"]}
    assert per_session == {"": 3, worker["id"]: 3, scribe["id"]: 2}
    assert {r["name"]: r["calls"] for r in data["totals"]["agent"]} == {"lead": 3, "worker": 3, "scribe": 2}


def test_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    task_id = run_example("workflows/write_review.yaml")
    out = tmp_path / "out"
    out.mkdir()
    for args, message in [
        (["--html", str(out / "missing" / "r.html")], f"cannot write {out / 'missing' / 'r.html'}: "),
        (["--html", str(out)], f"cannot write {out}: "),
        ([str(out / "r.html")], "FILE goes with --html"),
        (["--html", "--json"], "--html does not go with --follow, --step or --json"),
    ]:
        result = invoke("trace", task_id, *args)
        assert result.code == 2, (args, result.out, result.err)
        assert result.err.startswith("magent: error: ") and message in result.err and result.err.count("\n") == 1
    assert list(out.iterdir()) == []  # nothing half-written left behind


def test_a_running_task_without_steps_has_no_report_yet(tmp_path: Path) -> None:
    task_id = run_example("workflows/write_review.yaml")
    td = task_dir(task_id)
    lines = td.events_file.read_text().splitlines(keepends=True)
    td.events_file.write_text(lines[0])  # only run_started so far
    td.trace_file.unlink()
    td.save_task(td.load_task().model_copy(update={"status": TaskStatus.running}))
    with hold_task(task_id):
        result = invoke("trace", task_id, "--html", str(tmp_path / "r.html"))
        assert result.code == 2
        assert result.err == (f"magent: error: task {task_id[:8]} has no trace yet: it is running and has recorded "
                              "no step; try again in a moment, or watch it with magent trace --follow\n")
        assert not (tmp_path / "r.html").exists()
        td.events_file.write_text("".join(lines[:4]))  # a node and a model turn in
        result = invoke("trace", task_id, "--html", str(tmp_path / "r.html"))
        assert result.code == 0 and "is still running: the report shows its 2 steps so far" in result.err
        assert page_data((tmp_path / "r.html").read_text())["task"]["live"] is True


def test_the_timeline_squeezes_long_pauses() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def step(n: int, seconds: float, ms: int, kind: str = "node", name: str = "n") -> dict:
        return {"n": n, "type": kind, "name": name, "session": "", "status": "info", "done": True,
                "ts": (t0 + timedelta(seconds=seconds)).isoformat(), "ms": ms, "llm": [], "tools": []}

    steps = [step(1, 0, 1000), step(2, 1.0, 0, "event", "awaiting_human"),
             step(3, 7200, 0, "event", "human_decision"), step(4, 7200.5, 1000)]
    t = timeline(steps, None)
    (brk,) = t["breaks"]
    assert abs(brk[1] - 7_199_000) < 1000  # labelled with its real length
    first, second = t["bars"]
    assert first[3] == 0 and second[4] == 1.0
    # 2.5 s of work and short gaps share the 97 % the one break leaves: each second-long node ~39 %
    assert first[4] - first[3] > 0.35 and second[4] - second[3] > 0.35
    assert t["segments"][-1][3] >= 7_201_000


def test_the_graph_svg_draws_nodes_edges_and_gates() -> None:
    spec = {"entry_point": "a", "nodes": [
        {"name": "a", "kind": "agent", "detail": "writer", "approval_gate": False},
        {"name": "b", "kind": "reflection", "detail": "judged by <critic>", "approval_gate": True}],
        "edges": [{"from": "a", "to": "b", "condition": None}, {"from": "b", "to": "a", "condition": "x == 'y'"},
                  {"from": "b", "to": "END", "condition": None}]}
    svg = graph_svg(spec, {"a": 2})
    assert svg.startswith('<svg class="graph"') and svg.endswith("</svg>")
    assert 'class="node k-reflection gate unvisited" data-node="b"' in svg
    assert "×2" in svg and "judged by &lt;critic&gt;" in svg
    assert " C" in svg  # the loop back from b to a curves round the side
    assert "x == &#x27;y&#x27;" in svg and ">END<" in svg
    assert graph_svg(None) == ""


def test_the_graph_from_a_snapshot_matches_the_loaded_workflow() -> None:
    """The report draws the workflow from task.json as written; it agrees with magent graph."""
    from magent.engine.graph import load_target
    from magent.trace.diagram import describe, describe_snapshot

    for path in sorted((EXAMPLES / "workflows").glob("*.yaml")) + [EXAMPLES / "agents" / "note_taker.yaml"]:
        graph = load_target(str(path))
        loaded, raw = describe(graph), describe_snapshot(graph.snapshot)
        assert raw["entry_point"] == loaded["entry_point"], path
        assert raw["edges"] == loaded["edges"], path
        pick = ("name", "kind", "agent", "approval_gate")
        assert [{k: n[k] for k in pick} for n in raw["nodes"]] == [{k: n[k] for k in pick} for n in loaded["nodes"]]
        for mine, theirs in zip(raw["nodes"], loaded["nodes"]):
            assert theirs["detail"].startswith(mine["detail"]), (path, mine, theirs)

"""The API behind ``magent trace``, ``tasks show``, ``mcp list``, ``init`` and ``examples``: each
call gives a Python user what the command shows (checked against the command's own output), with
the command's errors, and takes ``home=``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

import magent
from magent.errors import TaskNotFoundError, TaskStateError, UsageError
from magent.models import Event
from support.cli import invoke

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / "examples" / "workflows"


def _json(*args: str) -> object:
    r = invoke(*args)
    assert r.code == 0, r.err
    return json.loads(r.out)


# trace ------------------------------------------------------------------------------------

def test_read_trace_gives_the_tree_the_steps_and_the_json_the_command_prints(magent_home: Path) -> None:
    done = magent.run(WORKFLOWS / "write_review.yaml", "Write copy for Tidy")
    reading = magent.read_trace(done.task_id[:6])
    assert reading.task_id == done.task_id and reading.status == "completed" and not reading.live
    assert reading.source == "trace.json" and reading.notes == []
    assert len(reading.steps) == done.steps
    assert reading.text() == invoke("trace", done.task_id).out
    assert reading.as_dict() == _json("trace", done.task_id, "--json")
    assert reading.as_dict() == magent.trace_log(done.task_id).model_dump(mode="json")
    first_turn = next(n for n, s in enumerate(reading.steps, 1) if s.get("llm_calls"))
    assert reading.step(first_turn) == _json("trace", done.task_id, "--step", str(first_turn), "--json")
    sent = reading.requests(first_turn)
    assert sent.calls == _json("trace", done.task_id, "--step", str(first_turn), "--request", "--json")
    assert sent.calls[0]["request"]["messages"] and sent.problems == []
    with pytest.raises(UsageError, match=f"task {done.task_id[:8]} has no step 99"):
        reading.step(99)
    with pytest.raises(TaskNotFoundError):
        magent.read_trace("ffffffff")


def test_read_trace_shows_one_session_alone_in_text_and_json(magent_home: Path) -> None:
    done = magent.run(WORKFLOWS / "review_sections.yaml", "Tidy launch")
    reading = magent.read_trace(done.task_id)
    item = next(sid for sid, info in reading.sessions.items() if info["key"] == "item:1")
    assert reading.text(session="item:1") == invoke("trace", done.task_id, "--session", "item:1").out
    alone = reading.as_dict(session=item[:8])
    assert alone == _json("trace", done.task_id, "--session", "item:1", "--json")
    assert list(alone["sub_agent_sessions"]) == [item]
    assert alone["steps"] and all(s["session"] == item for s in alone["steps"])
    # its own calls only: two turns of section_writer (a tool call, then the answer)
    assert alone["usage_by_model"]["scripted"]["calls"] == 2
    assert len(alone["actions"]) == 2
    whole = reading.as_dict()
    assert len(whole["steps"]) == len(reading.steps) and len(whole["sub_agent_sessions"]) == 5
    assert whole["usage_by_model"]["scripted"]["calls"] == len(done.model_calls)
    with pytest.raises(UsageError, match="no session 'nope' in this task"):
        reading.as_dict(session="nope")


def test_trace_html_returns_the_page_and_writes_it_where_asked(magent_home: Path, tmp_path: Path) -> None:
    done = magent.run(WORKFLOWS / "write_review.yaml", "Write copy for Tidy")
    only = magent.trace_html(done.task_id)
    assert only.path is None and only.page.startswith("<!doctype html>") and only.steps == done.steps
    assert not list(tmp_path.glob("*.html"))
    target = tmp_path / "report.html"
    written = magent.trace_html(done.task_id[:8], target)
    assert written.path == target and target.read_text() == written.page
    assert written.bytes == len(target.read_bytes())


def test_follow_trace_sends_a_finished_runs_events_and_says_how_it_ended(magent_home: Path) -> None:
    done = magent.run(WORKFLOWS / "write_review.yaml", "Write copy for Tidy")
    seen: list[Event] = []
    ids: list[str] = []
    said: list[str] = []
    ended = magent.follow_trace(done.task_id[:8], seen.append, on_start=said.append, on_task=ids.append)
    assert ended == "completed" and ids == [done.task_id]
    assert said == [f"following task {done.task_id} — Ctrl-C to stop"]
    assert seen[0].type == "run_started" and seen[-1].type == "run_finished"
    assert sum(e.type == "llm_call" for e in seen) == len(done.model_calls)


def test_export_trace_refuses_a_task_with_no_events(magent_home: Path) -> None:
    done = magent.run(WORKFLOWS / "write_review.yaml", "Write copy for Tidy")
    home = magent.init()
    (home.root / "tasks" / done.task_id / "events.jsonl").unlink()
    with pytest.raises(TaskStateError, match="has no events.jsonl: nothing to export"):
        magent.export_trace(done.task_id, "http://127.0.0.1:9")


# tasks show -------------------------------------------------------------------------------

def test_task_details_are_what_tasks_show_prints(magent_home: Path) -> None:
    done = magent.run(WORKFLOWS / "review_sections.yaml", "Tidy launch")
    details = magent.task_details(done.task_id[:8])
    assert details.task.id == done.task_id and details.task.status == "completed"
    assert details.result == magent.task(done.task_id)
    assert details.checkpoints == len(magent.checkpoints(done.task_id).checkpoints)
    assert sorted(s["key"] for s in details.sessions) == [
        "branch:facts", "branch:style", "item:0", "item:1", "item:2"]
    assert details.as_dict() == _json("tasks", "show", done.task_id, "--json")
    shown = invoke("tasks", "show", done.task_id).out
    assert re.search(rf"^\s*checkpoints\s+{details.checkpoints}\s*$", shown, re.M), shown
    assert re.search(r"^\s*id\s+" + done.task_id, shown, re.M), shown


# mcp list ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_mcp_servers_says_which_answer(magent_home: Path, tmp_path: Path, toolbox_url: str) -> None:
    servers = tmp_path / "servers.yaml"
    servers.write_text(yaml.safe_dump({"servers": [
        {"name": "tb", "transport": "streamable_http", "config": {"url": toolbox_url}},
        {"name": "ghost", "transport": "stdio", "config": {"command": "no-such-server-xyz"}},
    ]}, sort_keys=False))
    statuses = magent.mcp_servers(mcp=[servers])
    by_name = {s.name: s for s in statuses}
    assert [s.name for s in statuses] == ["ghost", "tb"]
    assert by_name["tb"].ok and by_name["tb"].tools == 18 and by_name["tb"].source == str(servers)
    assert not by_name["ghost"].ok and "not found on PATH" in (by_name["ghost"].error or "")
    assert magent.mcp_servers() == []


# init and examples ------------------------------------------------------------------------

def test_init_makes_a_home_and_keeps_what_is_there(tmp_path: Path) -> None:
    root = tmp_path / "home"
    made = magent.init(home=root)
    assert made.root == root and {p.name for p in made.created} == {
        "mcp_servers.yaml", "retention_policy.yaml", "defaults.yaml"}
    assert all(p.is_file() for p in made.created)
    (root / "config" / "defaults.yaml").write_text("model: scripted\n")
    again = magent.init(home=root)
    assert again.created == [] and (root / "config" / "defaults.yaml").read_text() == "model: scripted\n"


def test_examples_lists_and_copies_what_the_command_does(tmp_path: Path) -> None:
    found = magent.examples()
    assert [{"path": e.path, "about": e.about} for e in found] == _json("examples", "list", "--json")
    assert "workflows/write_review.yaml" in {e.path for e in found}
    assert (magent.examples_folder() / "workflows" / "write_review.yaml").is_file()
    dest = tmp_path / "mine"
    report = magent.copy_examples(dest)
    assert (dest / "workflows" / "write_review.yaml").is_file() and report.copied and not report.unchanged
    assert magent.copy_examples(dest).copied == []
    (dest / "workflows" / "write_review.yaml").write_text("# mine\n")
    with pytest.raises(UsageError, match="already exists with other content; nothing copied"):
        magent.copy_examples(dest)
    assert magent.copy_examples(dest, force=True).copied == [Path("workflows/write_review.yaml")]

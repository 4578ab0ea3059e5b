"""The read side of the CLI on a home built by the fixtures: tasks and checkpoints, text and JSON."""

from __future__ import annotations

import json

import pytest

from magent.schema import SCHEMA_VERSION
from support.cli import invoke, normalise
from support.homes import HomeBuilder, snapshot_tree, standard_home


@pytest.fixture
def std():
    return standard_home()


def _json(result):
    assert result.code == 0, result.err
    return json.loads(result.out)


# tasks list -------------------------------------------------------------------------------

def test_tasks_list_shows_every_task_newest_first(std):
    r = invoke("tasks", "list")
    assert r.code == 0 and r.err == ""
    lines = r.out.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "WORKFLOW", "TASK", "CREATED", "CALLS", "TOKENS", "COST"]
    assert [line.split()[0] for line in lines[1:]] == [t.id[:8] for t in reversed(std.all)]
    row = next(line for line in lines if line.startswith(std.completed.id[:8]))
    assert "completed" in row and "report" in row and "Summarise the quarterly report" in row
    assert "5h ago" in row and "$0.0012" in row


def test_tasks_list_json_parses_and_has_the_fields(std):
    rows = _json(invoke("tasks", "list", "--json"))
    assert [r["id"] for r in rows] == [t.id for t in reversed(std.all)]
    first = rows[-1]
    assert first["status"] == "completed" and first["schema_version"] == SCHEMA_VERSION
    assert first["usage"]["cost"] == 0.0012 and first["tags"] == ["critical"]
    assert "config_snapshot" not in first


@pytest.mark.parametrize("status,expected", [
    ("completed", ["forked", "completed"]), ("failed", ["failed"]),
    ("awaiting_human", ["paused"]), ("cancelled", []), ("running", []),
    # a pending task no process holds never got going: it shows (and filters) as interrupted
    ("pending", []), ("interrupted", ["empty"]),
])
def test_tasks_list_status_filter(std, status, expected):
    rows = _json(invoke("tasks", "list", "--status", status, "--json"))
    assert [r["id"] for r in rows] == [getattr(std, name).id for name in expected]
    text = invoke("tasks", "list", "-s", status)
    assert text.code == 0
    shown = [line.split()[0] for line in text.out.splitlines()[1:]]
    if expected:
        assert shown == [getattr(std, name).id[:8] for name in expected]
    else:
        assert text.out == "no tasks match\n"


def test_tasks_list_on_an_empty_home():
    r = invoke("tasks", "list")
    assert r.code == 0 and "no tasks yet" in r.out
    assert _json(invoke("tasks", "list", "--json")) == []


def test_tasks_list_shows_a_running_task_without_a_live_holder_as_interrupted():
    home = HomeBuilder()
    dead = home.task("crashed mid-run", status="running")
    live = home.task("running now", status="running")
    with live.dir.lock():
        out = invoke("tasks", "list").out
        listed = {r["id"]: r["status"] for r in _json(invoke("tasks", "list", "--json"))}
        only = _json(invoke("tasks", "list", "--status", "interrupted", "--json"))
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:]}
    assert rows == {dead.id[:8]: "interrupted", live.id[:8]: "running"}
    assert listed == {dead.id: "interrupted", live.id: "running"}
    assert [r["id"] for r in only] == [dead.id]


def test_tasks_list_warns_about_a_broken_task_and_lists_the_rest(std):
    (std.failed.path / "task.json").write_text("{broken")
    r = invoke("tasks", "list")
    assert r.code == 0
    assert r.err.startswith(f"magent: warning: task {std.failed.id}: task.json is unreadable")
    assert std.failed.id[:8] not in r.out and std.completed.id[:8] in r.out


def test_user_text_is_shown_literally_not_as_markup():
    t = HomeBuilder().task("fix [bold]this[/bold] and [/] that", workflow="w[red]x",
                           error="boom [/oops]", status="failed")
    r = invoke("tasks", "list")
    assert r.code == 0 and "fix [bold]this[/bold] and [/] that" in r.out and "w[red]x" in r.out
    r = invoke("tasks", "show", t.id)
    assert r.code == 0 and "boom [/oops]" in r.out and "fix [bold]this[/bold] and [/] that" in r.out


def test_a_long_description_is_not_cut_in_a_pipe():
    HomeBuilder().task("word " * 10 + "end")
    assert "word word word word word word word word word word end" in invoke("tasks", "list").out


# tasks show -------------------------------------------------------------------------------

def test_tasks_show_by_prefix(std):
    r = invoke("tasks", "show", std.completed.id[:6])
    assert r.code == 0 and r.err == ""
    fields = dict(line.split(None, 1) for line in r.out.splitlines() if line and not line[0].isspace()
                  and len(line.split(None, 1)) == 2)
    assert fields["id"] == std.completed.id
    assert fields["status"] == "completed"
    assert fields["workflow"] == "report"
    assert fields["checkpoints"] == "3"
    assert fields["tokens"] == "120 in / 45 out"
    assert fields["tags"] == "critical"
    assert "Revenue rose 4% this quarter." in r.out


def test_tasks_show_failed_task_shows_the_error(std):
    r = invoke("tasks", "show", std.failed.id)
    assert "LLM call failed: rate limited [429] after 3 retries" in r.out


def test_tasks_show_json_is_task_json_with_its_agent_result(std):
    doc = _json(invoke("tasks", "show", std.paused.id[:8], "--json"))
    on_disk = json.loads((std.paused.path / "task.json").read_text())
    result = doc.pop("agent_result")
    assert doc == on_disk
    assert result["task_id"] == std.paused.id and result["status"] == "awaiting_human"
    assert result["pause"]["allowed_actions"] and result["output"] is None and not result["success"]


# checkpoints list -------------------------------------------------------------------------

def test_checkpoints_list(std):
    r = invoke("checkpoints", "list", std.completed.id[:8])
    assert r.code == 0 and r.err == ""
    lines = r.out.splitlines()
    assert lines[0].split() == ["#", "WHEN", "NODE", "REASON", "WHAT"]
    rows = [line.split(None, 5) for line in lines[1:]]
    assert [(row[0], row[3], row[4], row[5]) for row in rows] == [
        ("0", "writer", "run_start", "the start: nothing has run yet"),
        ("1", "writer", "llm_turn", "writer: a model turn and its tool calls done"),
        ("2", "END", "finish", "the end")]


def test_checkpoints_list_notes_a_pause(std):
    out = invoke("checkpoints", "list", std.paused.id).out
    assert out.splitlines()[-1].split(None, 5)[3:] == ["review", "pause", "waiting for a person at review"]


def test_checkpoints_list_json(std):
    doc = _json(invoke("checkpoints", "list", std.forked.id, "--json"))
    assert doc["task_id"] == std.forked.id and doc["parent_task_id"] is None and doc["forks"] == []
    assert [c["sequence"] for c in doc["checkpoints"]] == [0, 1, 2]
    assert [c["checkpoint_id"] for c in doc["checkpoints"]] == [
        c.checkpoint_id for c in std.forked.checkpoints]
    assert [c["entry_count"] for c in doc["checkpoints"]] == [1, 2, 2]


def test_checkpoints_list_of_a_task_without_any(std):
    r = invoke("checkpoints", "list", std.empty.id)
    assert r.code == 0 and "no checkpoints" in r.out
    assert _json(invoke("checkpoints", "list", std.empty.id, "--json"))["checkpoints"] == []


def test_checkpoints_list_shows_a_corrupt_one_and_warns_without_repairing(std):
    path = std.completed.checkpoint_file(1)
    path.write_bytes(path.read_bytes()[:40])
    before = snapshot_tree(std.root)
    r = invoke("checkpoints", "list", std.completed.id)
    assert r.code == 0
    assert "corrupt" in r.out.splitlines()[2]
    assert "damaged: a newer checkpoint is sound: resume goes on from that" in r.out.splitlines()[2]
    assert r.err.startswith(f"magent: warning: task {std.completed.id[:8]} checkpoint_001.json: "
                            "not valid JSON")
    assert r.err.rstrip().endswith("(a newer checkpoint is sound: resume goes on from that)")
    assert snapshot_tree(std.root) == before


def test_checkpoints_list_says_resume_falls_back_from_a_damaged_newest_one(std):
    path = std.completed.checkpoint_file(2)
    path.write_bytes(path.read_bytes()[:40])
    r = invoke("checkpoints", "list", std.completed.id)
    assert r.code == 0
    assert "damaged: resume falls back to the checkpoint before it" in r.out.splitlines()[3]
    assert r.err.rstrip().endswith("(resume falls back to the checkpoint before it)")


def test_checkpoints_list_shows_forks_and_parents():
    home = HomeBuilder()
    parent = home.task("parent")
    parent.say("user", "q")
    parent.checkpoint("a")
    parent.checkpoint("b")
    child = home.task("child", parent_task_id=parent.id, parent_checkpoint=0)
    parent.update(forks=[{"task_id": child.id, "checkpoint": 0}])
    out = invoke("checkpoints", "list", parent.id).out
    assert f"forked → {child.id[:8]}" in out.splitlines()[1]
    out = invoke("checkpoints", "list", child.id).out
    assert out.splitlines()[0] == f"forked from task {parent.id[:8]} at checkpoint 0"
    doc = _json(invoke("checkpoints", "list", child.id, "--json"))
    assert (doc["parent_task_id"], doc["parent_checkpoint"]) == (parent.id, 0)


# checkpoints show -------------------------------------------------------------------------

def test_checkpoints_show_latest_with_full_messages(std):
    r = invoke("checkpoints", "show", std.completed.id[:8])
    assert r.code == 0 and r.err == ""
    out = normalise(r.out)
    assert "checkpoint      2 (<id>)" in out
    assert "position        END" in out and "routing_key     pass" in out
    assert '"score": 0.9' in out
    assert "messages (5)" in out
    assert "  2 assistant → kv.get({'key': 'report'})" in out
    assert '  3 tool kv.get {"value": "revenue up 4%"}' in out
    assert "  4 assistant Revenue rose 4% this quarter." in out


def test_checkpoints_show_a_numbered_one(std):
    out = invoke("checkpoints", "show", std.completed.id, "0").out
    assert "messages (2)" in out and "reason          run_start" in out


def test_checkpoints_show_follows_each_branch_of_a_fork(std):
    first = invoke("checkpoints", "show", std.forked.id, "1").out
    second = invoke("checkpoints", "show", std.forked.id, "2").out
    assert "  1 assistant magent" in first and "agentctl" not in first
    assert "  1 assistant agentctl" in second and "magent\n" not in second


def test_checkpoints_show_a_pause_shows_the_question(std):
    out = invoke("checkpoints", "show", std.paused.id).out
    assert "awaiting_human  True" in out and "question        Publish this draft?" in out


def test_checkpoints_show_json_has_the_full_state(std):
    doc = _json(invoke("checkpoints", "show", std.completed.id, "2", "--json"))
    assert doc["sequence"] == 2 and doc["task_id"] == std.completed.id
    assert doc["parent_id"] == std.completed.checkpoints[1].checkpoint_id
    msgs = doc["state"]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "assistant"]
    assert msgs[2]["tool_calls"][0] == {"id": "call_1", "server": "kv", "tool": "get",
                                        "arguments": {"key": "report"}, "raw_arguments": None}
    assert msgs[3]["tool_call_id"] == "call_1" and msgs[4]["content"] == "Revenue rose 4% this quarter."
    assert doc["state"]["metadata"] == {"score": 0.9} and doc["state"]["current_agent"] == "writer"
    assert doc["leaf_entry_id"] == std.completed.entries[-1].id


def test_checkpoints_show_json_of_the_paused_one(std):
    doc = _json(invoke("checkpoints", "show", std.paused.id, "--json"))
    assert doc["awaiting_human"] is True
    assert doc["human_request"]["question"] == "Publish this draft?"


@pytest.mark.parametrize("args", [
    ("tasks", "list"), ("tasks", "list", "--json"), ("tasks", "show", "PREFIX"),
    ("checkpoints", "list", "PREFIX"), ("checkpoints", "show", "PREFIX"),
    ("checkpoints", "show", "PREFIX", "0", "--json"),
])
def test_read_commands_change_nothing_on_disk(std, args):
    """Nothing but the listing's caches (``cache/``, which ``tasks list`` writes as git
    refreshes its index), and that only when a task changed since the last listing."""
    running = std.home.task("live one", status="running")
    with running.dir.lock():
        pass  # leaves a lock file behind, as a finished run does
    argv = [std.completed.id[:8] if a == "PREFIX" else a for a in args]

    def data() -> dict:
        # (the home's own times change as cache/ is made; anything added or removed is a key)
        return {k: v for k, v in snapshot_tree(std.root).items() if k != "." and not k.startswith("cache")}

    before = data()
    assert invoke(*argv).code == 0
    assert data() == before
    cache = snapshot_tree(std.root / "cache")
    assert invoke(*argv).code == 0
    assert snapshot_tree(std.root / "cache") == cache


# in a terminal ----------------------------------------------------------------------------

def test_in_a_narrow_terminal_only_the_description_is_shortened(monkeypatch):
    import io

    from rich.console import Console

    from magent import render
    from magent.store.listing import list_rows

    home = HomeBuilder()
    t = home.task("a rather long description of what this [bold]task[/] should do", workflow="flow",
                  status="awaiting_human")
    buf = io.StringIO()
    monkeypatch.setattr(render, "is_terminal", lambda: True)
    monkeypatch.setattr(render, "console", lambda stderr=False: Console(
        file=buf, width=110, force_terminal=True, color_system=None, highlight=False))
    render.task_table(list_rows())
    lines = buf.getvalue().splitlines()
    assert lines[0].split() == ["ID", "STATUS", "WORKFLOW", "TASK", "CREATED", "CALLS", "TOKENS", "COST"]
    assert all(len(line) <= 110 for line in lines) and len(lines[1]) == 110
    row = lines[1]
    assert row.startswith(f"{t.id[:8]}  awaiting_human  flow      ")
    assert "  a rather long description of what this […  " in row  # cut, and not markup
    assert row.endswith("0s ago   0      0       $0.0000")


def test_long_text_is_not_rewrapped_in_a_pipe():
    long = "This result is one long line. " * 12
    t = HomeBuilder().task("x", result=long.strip())
    t.say("assistant", long.strip())
    t.checkpoint("END")
    t.close()
    assert long.strip() in invoke("tasks", "show", t.id).out.splitlines()
    assert f"  0 assistant {long.strip()}" in invoke("checkpoints", "show", t.id).out.splitlines()


def test_tasks_show_says_whether_a_running_task_is_live():
    t = HomeBuilder().task("crashed", status="running")
    shown = invoke("tasks", "show", t.id).out
    assert f"status       interrupted (continue with `magent resume {t.id[:8]}`)" in shown
    assert _json(invoke("tasks", "show", t.id, "--json"))["status"] == "interrupted"
    with t.dir.lock():
        out = invoke("tasks", "show", t.id).out
        doc = _json(invoke("tasks", "show", t.id, "--json"))
    assert "status       running\n" in out and doc["status"] == "running"

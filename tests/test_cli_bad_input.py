"""Every bad input of issue 2: one clear ``magent: error:`` line, exit 2, no traceback, nothing changed.

Most cases run in-process through the real Typer app (``invoke``); one of each
kind also runs as a subprocess (``run``), so the exit code and stderr are the
ones a shell sees.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import invoke, run
from support.homes import snapshot_tree, standard_home, unwritable_home  # noqa: F401

FIXTURES = Path(__file__).parent / "fixtures" / "configs"


def _id_with_prefix(prefix: str, like: str) -> str:
    return prefix + like[len(prefix):]


def assert_one_error_line(r, *words: str) -> str:
    assert r.code == 2, (r.code, r.out, r.err)
    assert r.out == ""
    lines = r.err.splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith("magent: error: "), r.err
    assert "Traceback" not in r.err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


# config files -----------------------------------------------------------------------------

CONFIG_CASES = [
    ("malformed.yaml", ["bad/malformed.yaml:3:14:", "a '[' begins a list that is not closed"]),
    ("python_tag.yaml", ["bad/python_tag.yaml:2:7:", "!!python/object/apply:os.system is not allowed"]),
    ("python_tag_mapping.yaml", ["bad/python_tag_mapping.yaml:4:13:", "!!python/object:builtins.dict"]),
    ("duplicate_key.yaml", ["bad/duplicate_key.yaml:6:3: llm_config.model: duplicate key 'model'"]),
    ("unknown_field.yaml", ["bad/unknown_field.yaml:6:3: llm_config.fallback_modle: unknown field",
                            "did you mean 'fallback_model'?"]),
    ("wrong_type.yaml", ["bad/wrong_type.yaml:4:1: max_iterations: expected a whole number, got 'lots'"]),
    ("missing_var.yaml", ["bad/missing_var.yaml:6:3: llm_config.api_key: environment variable "
                          "MAGENT_TEST_UNSET_KEY is not set"]),
]


@pytest.mark.parametrize("name,words", CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_bad_config_file(name, words, magent_home, monkeypatch):
    monkeypatch.chdir(FIXTURES)
    monkeypatch.setenv("MAGENT_TEST_API_KEY", "sk-test")
    monkeypatch.delenv("MAGENT_TEST_UNSET_KEY", raising=False)
    before = snapshot_tree(FIXTURES), snapshot_tree(magent_home)
    assert_one_error_line(invoke("validate", f"bad/{name}"), *words)
    assert (snapshot_tree(FIXTURES), snapshot_tree(magent_home)) == before


def test_bad_config_file_in_a_real_process(monkeypatch):
    monkeypatch.delenv("MAGENT_TEST_UNSET_KEY", raising=False)
    r = run("validate", "bad/missing_var.yaml", "bad/python_tag.yaml", cwd=str(FIXTURES))
    assert r.code == 2 and r.out == "" and "Traceback" not in r.err
    assert [line.split(":")[0:3] for line in r.err.splitlines()] == [
        ["magent", " error", " bad/missing_var.yaml"], ["magent", " error", " bad/python_tag.yaml"]]


def test_the_python_tag_was_not_executed(tmp_path):
    marker = tmp_path / "pwned"
    cfg = tmp_path / "agent.yaml"
    cfg.write_text(f"name: w\nrole: !!python/object/apply:os.system ['touch {marker}']\n"
                   "system_prompt: s\nllm_config: {model: gpt}\n")
    assert_one_error_line(run("validate", str(cfg)), "is not allowed")
    assert not marker.exists()


# task ids ---------------------------------------------------------------------------------

@pytest.fixture
def std():
    return standard_home()


@pytest.mark.parametrize("args", [
    ("tasks", "show", "{id}"), ("checkpoints", "list", "{id}"), ("checkpoints", "show", "{id}"),
    ("checkpoints", "show", "{id}", "0", "--json"), ("tasks", "show", "{id}", "--json"),
])
@pytest.mark.parametrize("bad", ["../../etc", "/etc/passwd", "..", "abc/../../x", "g00d"])
def test_task_id_that_is_not_an_id(std, args, bad):
    before = snapshot_tree(std.root)
    r = invoke(*[a.format(id=bad) for a in args])
    assert_one_error_line(r, f"{bad!r} is not a task id or id prefix")
    assert snapshot_tree(std.root) == before


def test_task_id_that_is_not_an_id_in_a_real_process(std):
    assert_one_error_line(run("checkpoints", "show", "../../etc"), "'../../etc' is not a task id")


def test_ambiguous_prefix_lists_the_matches(std):
    home = std.home
    # Two letters no task of the standard home starts with (its ids are random), so the two
    # tasks made here are the only matches.
    taken = {p.name[:2] for p in (std.root / "tasks").iterdir()}
    two = next(x + y for x in "0123456789abcdef" for y in "0123456789abcdef" if x + y not in taken)
    a = home.task("one", task_id=_id_with_prefix(two + "ef1", std.completed.id)).id
    b = home.task("two", task_id=_id_with_prefix(two + "ef2", std.failed.id)).id
    before = snapshot_tree(std.root)
    for args in (("tasks", "show", two + "ef"), ("checkpoints", "list", two + "e"),
                 ("checkpoints", "show", two, "0")):
        line = assert_one_error_line(invoke(*args), "matches 2 tasks", a[:13], b[:13],
                                     "give more characters")
        assert line.startswith(f"magent: error: '{args[2]}' matches 2 tasks: ")
    assert snapshot_tree(std.root) == before


def test_unknown_task(std):
    assert_one_error_line(invoke("tasks", "show", "0000"), "no task matches '0000'")


# checkpoints damaged on disk --------------------------------------------------------------

def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


def _hand_edit(path: Path) -> None:
    doc = json.loads(path.read_text())
    doc["position"] = "skip-review"
    path.write_text(json.dumps(doc, indent=2))


@pytest.mark.parametrize("damage,words", [
    (_truncate, ["checkpoint_002.json: not valid JSON (truncated or edited?)"]),
    (_hand_edit, ["checkpoint_002.json: content does not match its sha256"]),
], ids=["truncated", "hand-edited"])
@pytest.mark.parametrize("number", [[], ["2"], ["2", "--json"]], ids=["latest", "N", "json"])
def test_damaged_checkpoint(std, damage, words, number):
    damage(std.completed.checkpoint_file(2))
    before = snapshot_tree(std.root)
    r = invoke("checkpoints", "show", std.completed.id[:8], *number)
    assert_one_error_line(r, *words, "the latest valid one is 1",
                          f"magent checkpoints show {std.completed.id[:8]} 1")
    assert snapshot_tree(std.root) == before  # a read command never moves it aside


def test_damaged_checkpoint_in_a_real_process(std):
    _truncate(std.completed.checkpoint_file(2))
    assert_one_error_line(run("checkpoints", "show", std.completed.id),
                          "checkpoint_002.json: not valid JSON", "the latest valid one is 1")


def test_no_such_checkpoint_number(std):
    assert_one_error_line(invoke("checkpoints", "show", std.completed.id, "9"),
                          f"task {std.completed.id[:8]} has no checkpoint 9 (it has checkpoints 0-2)")


def test_conversation_missing_an_entry(std):
    lines = std.completed.entries_file.read_bytes().splitlines(keepends=True)
    std.completed.entries_file.write_bytes(b"".join(lines[:1] + lines[2:]))
    before = snapshot_tree(std.root)
    assert_one_error_line(invoke("checkpoints", "show", std.completed.id),
                          f"entry {std.completed.entries[1].id} is missing from entries.jsonl")
    assert snapshot_tree(std.root) == before


def test_task_json_damaged(std):
    (std.failed.path / "task.json").write_text('{"id": "')
    assert_one_error_line(invoke("tasks", "show", std.failed.id), "task.json is unreadable")


# the home ---------------------------------------------------------------------------------

def test_unwritable_home(unwritable_home):
    before = snapshot_tree(unwritable_home)
    r = run("init")
    assert_one_error_line(r, f"cannot create {unwritable_home / 'tasks'}")
    assert snapshot_tree(unwritable_home) == before
    # reading an unwritable (empty) home still works
    assert run("tasks", "list").code == 0


def test_home_that_is_a_file(magent_home):
    magent_home.write_text("not a directory")
    for args in (("init",), ("tasks", "list"), ("tasks", "show", "abcd")):
        assert_one_error_line(invoke(*args), "not a directory")
    assert magent_home.read_text() == "not a directory"


def test_bad_status_filter(std):
    assert_one_error_line(invoke("tasks", "list", "--status", "done"),
                          "--status 'done' is not a status (one of: pending, running, awaiting_human,")


def test_magent_debug_shows_the_traceback(std):
    r = run("tasks", "show", "../../etc", env={"MAGENT_DEBUG": "1"})
    assert r.code != 0
    assert "Traceback (most recent call last)" in r.err
    assert "InvalidTaskIdError" in r.err

"""``magent memory`` through the real CLI: every command, --json, and bad input (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

from magent import paths
from support.cli import invoke, normalise


def add(*args: str) -> str:
    r = invoke("memory", "add", *args, "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)["id"]


def test_add_list_show_search_forget(magent_home: Path) -> None:
    sync = add("The weekly sync is in room Atlas", "--scope", "workflow:office", "--tag", "meetings",
               "--importance", "0.8")
    tea = add("Alice prefers tea", "--type", "semantic")
    listed = invoke("memory", "list")
    assert listed.code == 0
    lines = listed.out.splitlines()
    assert lines[0].split() == ["ID", "TYPE", "SCOPE", "IMPORTANCE", "USED", "LAST", "USED", "CONTENT"]
    assert lines[1].startswith(f"{tea[:8]}  semantic  global ") and lines[1].endswith("Alice prefers tea")
    assert lines[2].startswith(f"{sync[:8]}  semantic  workflow:office  0.80 ")
    assert lines[3].startswith("2 memories · memory.db ")
    as_json = json.loads(invoke("memory", "list", "--scope", "workflow", "--json").out)
    assert [m["id"] for m in as_json] == [sync] and as_json[0]["tags"] == ["meetings"]
    assert json.loads(invoke("memory", "list", "--scope", "global", "--json").out)[0]["id"] == tea

    shown = invoke("memory", "show", sync[:6])
    assert shown.code == 0 and f"id               {sync}" in shown.out
    assert shown.out.rstrip().endswith("The weekly sync is in room Atlas")

    found = invoke("memory", "search", "where is the weekly sync?")
    assert found.code == 0
    assert found.out.splitlines() == [
        f"1.00  {sync[:8]}  semantic   workflow:office          The weekly sync is in room Atlas",
        "      matched weekly, sync (2 of 2 words)"]
    hits = json.loads(invoke("memory", "search", "tea OR sync", "--json").out)
    assert hits["mode"] == "text" and hits["searched"] == "tea OR sync"
    assert {h["id"] for h in hits["hits"]} == {sync, tea} and all(h["score"] == 0.5 for h in hits["hits"])

    gone = invoke("memory", "forget", tea[:8])
    assert gone.code == 0 and gone.out == f"forgot {tea[:8]}: Alice prefers tea\n"
    assert invoke("memory", "search", "tea").out == "no memories match\n"


def test_a_search_with_broken_syntax_says_what_it_searched(magent_home: Path) -> None:
    add("The weekly sync is in room Atlas")
    r = invoke("memory", "search", 'sync AND (')
    assert r.code == 0
    assert r.err == ('magent: warning: not valid full-text syntax (syntax error near ""); '
                     "searched for the words sync instead\n")
    assert "The weekly sync" in r.out


def test_export_and_import_round_trip(magent_home: Path, tmp_path: Path, monkeypatch) -> None:
    ids = {add("first memory"), add("second memory", "--scope", "agent:writer")}
    out = tmp_path / "memories.jsonl"
    r = invoke("memory", "export", "-o", str(out))
    assert r.code == 0 and r.err == f"exported 2 memories to {out}\n"
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert {m["id"] for m in lines} == ids and {m["scope"] for m in lines} == {"global", "agent"}
    assert invoke("memory", "export").out == out.read_text()

    monkeypatch.setenv("MAGENT_HOME", str(tmp_path / "other-home"))
    first = invoke("memory", "import", str(out))
    assert first.code == 0 and first.out == "imported 2 of 2 memories\n"
    again = invoke("memory", "import", str(out), "--json")
    assert json.loads(again.out) == {"read": 2, "imported": 0, "skipped": 2}
    assert {m["id"] for m in json.loads(invoke("memory", "list", "--json").out)} == ids


def test_import_checks_every_line_before_storing_any(magent_home: Path, tmp_path: Path) -> None:
    good = json.dumps({"id": "0a0a0a0a-0000-4000-8000-000000000000", "content": "fine",
                       "created_at": "2026-01-01T00:00:00Z", "last_accessed": "2026-01-01T00:00:00Z"})
    cases = {
        "not json": ("{nope", "bad.jsonl:2: not JSON"),
        "a list": ("[1, 2]", "bad.jsonl:2: expected a JSON object"),
        "bad scope": (good.replace('"fine"', '"x", "scope": "team"').replace("0a0a", "0b0b"),
                      "bad.jsonl:2: scope: 'team' is not one of agent, workflow, global"),
        "bad type": (good.replace("0a0a", "0c0c").replace('"fine"', '"x", "memory_type": "short_term"'),
                     "bad.jsonl:2: memory_type: 'short_term' is not one of episodic, semantic, procedural"),
    }
    for name, (line, message) in cases.items():
        bad = tmp_path / "bad.jsonl"
        bad.write_text(good + "\n" + line + "\n")
        r = invoke("memory", "import", str(bad))
        assert r.code == 2, name
        assert r.err.startswith(f"magent: error: {bad.parent}/{message}"), (name, r.err)
        assert r.err.rstrip().endswith("nothing was imported"), name
    assert json.loads(invoke("memory", "list", "--json").out) == []
    missing = invoke("memory", "import", str(tmp_path / "nope.jsonl"))
    assert missing.code == 2 and "no such file" in missing.err


def test_bad_input_is_one_line_and_exit_2(magent_home: Path) -> None:
    add("something")
    cases = [
        (("list", "--scope", "team:a"), "unknown scope 'team:a': use agent:NAME, workflow:NAME or global"),
        (("add", "x", "--scope", "agent"), "scope 'agent' needs a name: agent:NAME"),
        (("add", "x", "--type", "short_term"), "unknown memory type 'short_term': use episodic, semantic, procedural"),
        (("add", "   "), "a memory needs some content"),
        (("show", "zz"), "'zz' is not a memory id"),
        (("show", "ffffffff"), "no memory with id 'ffffffff'"),
        (("forget", "ffffffff"), "no memory with id 'ffffffff'"),
        (("list", "--archived", "--all"), "--archived and --all cannot be used together"),
        (("search", "x", "--type", "bogus"), "unknown memory type 'bogus'"),
    ]
    for args, message in cases:
        r = invoke("memory", *args)
        assert r.code == 2, (args, r.out, r.err)
        assert r.err.startswith(f"magent: error: {message}") and r.err.count("\n") == 1, (args, r.err)
    over = invoke("memory", "add", "x", "--importance", "2")
    assert over.code == 2 and "--importance" in over.err and len(over.err.splitlines()) == 1


def test_forget_checks_every_id_before_deleting(magent_home: Path) -> None:
    keep = add("keep me")
    r = invoke("memory", "forget", keep[:8], "ffffffff")
    assert r.code == 2
    assert [m["id"] for m in json.loads(invoke("memory", "list", "--json").out)] == [keep]


def test_reading_commands_on_a_fresh_home_create_nothing(magent_home: Path) -> None:
    for args in (("list",), ("search", "x"), ("export",), ("consolidate", "--dry-run")):
        r = invoke("memory", *args)
        assert r.code == 0, (args, r.err)
    assert invoke("memory", "list").out.startswith("no memories")
    assert not paths.memory_dir().exists()


def test_a_corrupt_database_is_named_and_kept(magent_home: Path) -> None:
    db = paths.memory_db()
    db.parent.mkdir(parents=True)
    db.write_bytes(b"garbage" * 100)
    for args in (("list",), ("add", "x"), ("search", "x"), ("consolidate",)):
        r = invoke("memory", *args)
        assert r.code == 2, args
        assert r.err.startswith(f"magent: error: the memory database {db} cannot be read (file is not a database)")
        assert "left as it is" in r.err and len(r.err.splitlines()) == 1
    assert db.read_bytes() == b"garbage" * 100


def test_consolidate_dry_run_then_for_real(magent_home: Path) -> None:
    a = add("The weekly sync is in room Atlas", "--importance", "0.9")
    b = add("the weekly sync is in room atlas.")
    add("barely matters", "--importance", "0.01")
    dry = invoke("memory", "consolidate", "--dry-run")
    assert dry.code == 0
    assert normalise(dry.out).splitlines() == [
        f"would merge  {b[:8]} into {a[:8]} (jaccard 1.00): the weekly sync is in room atlas.",
        dry.out.splitlines()[1],
        "memory consolidation (dry run): 3 active memories: would merge 1 near-duplicate, decay 0, "
        "archive 1 below importance 0.05"]
    assert dry.out.splitlines()[1].startswith("would archive  ") and "barely matters" in dry.out
    assert len(json.loads(invoke("memory", "list", "--json").out)) == 3
    done = json.loads(invoke("memory", "consolidate", "--json").out)
    assert [m["duplicate"] for m in done["merged"]] == [b] and len(done["archived"]) == 1
    assert [m["id"] for m in json.loads(invoke("memory", "list", "--json").out)] == [a]
    archived = json.loads(invoke("memory", "list", "--archived", "--json").out)
    assert {m["merged_into"] for m in archived} == {a, None}
    evicted = invoke("memory", "consolidate", "--evict")
    assert evicted.code == 0 and "evicted 0 below" in evicted.out


def test_the_memory_tools_can_be_tried_from_the_command_line(magent_home: Path) -> None:
    stored = invoke("tools", "call", "memory.remember", "--args", '{"content": "Deploys happen on Thursdays"}')
    assert stored.code == 0 and "remembered [" in stored.out and "(semantic, global)" in stored.out
    found = invoke("tools", "call", "memory.search", "--args", '{"query": "when are deploys"}')
    assert found.code == 0 and "Deploys happen on Thursdays" in found.out
    listed = invoke("tools", "list", "--server", "memory", "--json")
    assert sorted(t["name"] for t in json.loads(listed.out)["tools"]) == ["memory.forget", "memory.remember",
                                                                          "memory.search"]

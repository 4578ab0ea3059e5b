"""The API behind ``magent memory``: each call gives a Python user what the command shows
(checked against the command's own ``--json`` on the same home), raises the command's typed
error for bad input — and the command still prints that as one line and exits 2."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import magent
from magent import paths
from magent.errors import MemoryNotFoundError, UsageError
from support.cli import invoke


def _json(*args: str) -> object:
    r = invoke(*args)
    assert r.code == 0, r.err
    return json.loads(r.out)


def _refused(args: list[str], message: str) -> None:
    r = invoke(*args)
    assert r.code == 2 and r.err.startswith(f"magent: error: {message}"), (r.code, r.out, r.err)
    assert r.err.count("\n") == 1 and "Traceback" not in r.err


def _dumps(entries: list) -> list[dict]:
    return [e.model_dump(mode="json") for e in entries]


def test_add_list_show_and_search_as_the_commands_do(magent_home: Path) -> None:
    sync = magent.add_memory("The weekly sync is in room Atlas", scope="workflow:office", tags=["meetings"],
                             importance=0.8)
    assert sync.notes == [] and sync.entry.scope_label == "workflow:office" and sync.entry.source == "user"
    tea = magent.add_memory("Alice prefers tea", memory_type="semantic").entry
    by_cli = _json("memory", "add", "Bob takes the stairs", "--type", "episodic", "--json")

    listed = magent.memories()
    assert [e.id for e in listed.entries] == [by_cli["id"], tea.id, sync.entry.id]
    assert listed.total == 3 and listed.size_bytes > 0
    assert _dumps(listed.entries) == _json("memory", "list", "--json")
    assert _dumps(magent.memories(scope="workflow").entries) == _json("memory", "list", "--scope", "workflow", "--json")
    assert [e.id for e in magent.memories(types=["episodic"], limit=1).entries] == [by_cli["id"]]
    assert magent.memories(limit=1).total == 3

    assert magent.memory_entry(sync.entry.id[:6]).model_dump(mode="json") == \
        _json("memory", "show", sync.entry.id[:6], "--json")

    found = magent.search_memory("where is the weekly sync?")
    assert [(h.entry.id, h.score) for h in found.hits] == [(sync.entry.id, 1.0)] and found.mode == "text"
    assert found.hits[0].why() == "matched weekly, sync (2 of 2 words)"
    either = magent.search_memory("tea OR sync", top_k=5)
    assert either.searched == "tea OR sync" and {h.entry.id for h in either.hits} == {sync.entry.id, tea.id}
    cli = _json("memory", "search", "tea OR sync", "--top-k", "5", "--json")
    api = magent.search_memory("tea OR sync", top_k=5).as_dict()   # the same search, one use later each
    assert {k: v for k, v in api.items() if k != "hits"} == {k: v for k, v in cli.items() if k != "hits"}
    assert [(h["id"], h["score"], h["why"]) for h in api["hits"]] == [(h["id"], h["score"], h["why"]) for h in cli["hits"]]


def test_forget_export_import_and_consolidate_as_the_commands_do(magent_home: Path, tmp_path: Path) -> None:
    keep = magent.add_memory("The weekly sync is in room Atlas", importance=0.9).entry
    twin = magent.add_memory("the weekly sync is in room atlas.").entry
    low = magent.add_memory("barely matters", importance=0.01, scope="agent:writer").entry

    lines = magent.export_memories()
    assert "".join(lines) == invoke("memory", "export").out and len(lines) == 3
    out = tmp_path / "all.jsonl"
    assert [json.loads(x)["id"] for x in magent.export_memories(out, scope="agent:writer")] == [low.id]
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == [low.id]
    assert magent.export_memories(status="archived") == []

    dry = magent.consolidate_memory(dry_run=True)
    assert dry.dry_run and [m.duplicate for m in dry.merged] == [twin.id] and [c.id for c in dry.archived] == [low.id]
    cli_dry = _json("memory", "consolidate", "--dry-run", "--json")
    assert {k: v for k, v in dry.as_dict().items() if k != "at"} == {k: v for k, v in cli_dry.items() if k != "at"}
    assert magent.memories().total == 3                      # a dry run changed nothing

    everything = tmp_path / "everything.jsonl"
    magent.export_memories(everything)
    other = tmp_path / "other"
    first = magent.import_memories(everything, home=other)
    assert (first.read, first.imported, first.skipped) == (3, 3, 0)
    again = magent.import_memories(io.StringIO(everything.read_text()), home=other)
    assert again.as_dict() == {"read": 3, "imported": 0, "skipped": 3}

    gone = magent.forget_memories([twin.id[:8], low.id[:8]], home=other)
    assert [e.id for e in gone] == [twin.id, low.id]
    assert [e.id for e in magent.memories(home=other).entries] == [keep.id]
    assert magent.memories().total == 3                      # $MAGENT_HOME untouched

    done = magent.consolidate_memory(evict=True)
    assert done.evict and not done.dry_run and [c.id for c in done.archived] == [low.id]
    assert [m.duplicate for m in done.merged] == [twin.id]
    assert [e.id for e in magent.memories(status="all").entries] == [keep.id]


def test_memory_mistakes_are_typed_errors_and_one_line_from_the_command(magent_home: Path, tmp_path: Path) -> None:
    keep = magent.add_memory("keep me").entry
    with pytest.raises(UsageError, match="unknown scope 'team:a': use agent:NAME, workflow:NAME or global"):
        magent.memories(scope="team:a")
    _refused(["memory", "list", "--scope", "team:a"], "unknown scope 'team:a'")
    with pytest.raises(UsageError, match="scope 'agent' needs a name: agent:NAME"):
        magent.add_memory("x", scope="agent")
    with pytest.raises(UsageError, match="unknown memory type 'short_term'"):
        magent.add_memory("x", memory_type="short_term")
    with pytest.raises(UsageError, match="unknown memory type 'bogus'"):
        magent.search_memory("x", types=["bogus"])
    with pytest.raises(UsageError, match="--importance must be between 0 and 1, not 2"):
        magent.add_memory("x", importance=2)
    with pytest.raises(UsageError, match="a memory needs some content"):
        magent.add_memory("   ")
    with pytest.raises(UsageError, match="status 'old': use one of active, archived, all"):
        magent.memories(status="old")
    with pytest.raises(MemoryNotFoundError, match="'zz' is not a memory id"):
        magent.memory_entry("zz")
    with pytest.raises(MemoryNotFoundError, match="no memory with id 'ffffffff'"):
        magent.memory_entry("ffffffff")
    _refused(["memory", "show", "ffffffff"], "no memory with id 'ffffffff'")
    with pytest.raises(MemoryNotFoundError):
        magent.forget_memories([keep.id[:8], "ffffffff"])          # every id checked first
    _refused(["memory", "forget", keep.id[:8], "ffffffff"], "no memory with id 'ffffffff'")
    assert [e.id for e in magent.memories().entries] == [keep.id]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{nope\n")
    with pytest.raises(UsageError, match=f"{bad}:1: not JSON.*nothing was imported"):
        magent.import_memories(bad)
    _refused(["memory", "import", str(bad)], f"{bad}:1: not JSON")
    with pytest.raises(UsageError, match="no such file"):
        magent.import_memories(tmp_path / "missing.jsonl")
    assert magent.memories().total == 1


def test_readers_on_a_fresh_home_create_nothing(magent_home: Path, tmp_path: Path) -> None:
    assert magent.memories().entries == [] and magent.memories().size_bytes == 0
    assert magent.search_memory("anything").hits == [] and magent.export_memories() == []
    report = magent.consolidate_memory(dry_run=True)
    assert report.scanned == 0 and report.merged == []
    assert not paths.memory_dir().exists()
    other = tmp_path / "other"
    assert magent.add_memory("only here", home=other).entry.content == "only here"
    assert (other / "memory").is_dir() and not paths.memory_dir().exists()

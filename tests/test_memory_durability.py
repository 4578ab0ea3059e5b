"""The memory database under concurrent writers and kill -9, with real processes and signals."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from magent import paths
from support.cli import invoke, run

pytestmark = pytest.mark.slow

WRITER = """
import sys, time
from pathlib import Path
from magent.memory.service import Memory
tag, count, go = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
with Memory.open() as memory:
    memory.remember("warm-up " + tag, scope="global")
    while not go.exists():
        time.sleep(0.005)
    for i in range(count):   # one transaction per memory: the writers interleave
        memory.remember(f"{tag} note {i}", scope="global", tags=[tag])
"""

BATCHES = """
import sys
from magent.memory.service import Memory, new_entry
with Memory.open() as memory:
    n = 0
    while True:
        memory.store.add([new_entry(f"batch {n} item {i}", tags=[f"b{n}"]) for i in range(200)])
        n += 1
        print(n, flush=True)
"""


def check_database(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('integrity-check')")  # raises if index ≠ table
    return conn


def test_two_processes_writing_at_once_lose_nothing(magent_home: Path, tmp_path: Path) -> None:
    # (the wait for the other's write lock is not what is tested: a loaded machine may need long)
    paths.memory_settings_file().parent.mkdir(parents=True, exist_ok=True)
    paths.memory_settings_file().write_text("busy_timeout_seconds: 100\n")
    go = tmp_path / "go"
    count = 250
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, tag, str(count), str(go)],
                              stderr=subprocess.PIPE, text=True) for tag in ("alpha", "beta")]
    deadline = time.time() + 60
    while time.time() < deadline and len(list(paths.memory_dir().glob("memory.db"))) == 0:
        time.sleep(0.01)
    time.sleep(0.3)  # both have opened the database and wait at the start line
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    conn = check_database(paths.memory_db())
    for tag in ("alpha", "beta"):
        rows = conn.execute("SELECT content FROM memories WHERE tags LIKE ?", [f'%"{tag}"%']).fetchall()
        assert sorted(int(r[0].split()[-1]) for r in rows) == list(range(count)), tag
        hits = conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?", [tag]).fetchone()[0]
        assert hits == count + 1  # every note and the warm-up are in the index too
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 2 * count + 2


def test_kill_before_commit_leaves_the_database_as_it_was(magent_home: Path, tmp_path: Path) -> None:
    assert invoke("memory", "add", "kept from before").code == 0
    lines = [json.dumps({"id": f"{i:08x}-0000-4000-8000-000000000000", "content": f"imported {i}",
                         "created_at": "2026-01-01T00:00:00Z", "last_accessed": "2026-01-01T00:00:00Z"})
             for i in range(500)]
    dump = tmp_path / "dump.jsonl"
    dump.write_text("\n".join(lines) + "\n")
    killed = run("memory", "import", str(dump), env={"MAGENT_FAILPOINT": "memory_before_commit"})
    assert killed.code == -signal.SIGKILL
    conn = check_database(paths.memory_db())
    assert [r[0] for r in conn.execute("SELECT content FROM memories")] == ["kept from before"]
    conn.close()
    again = invoke("memory", "import", str(dump), "--json")
    assert again.code == 0 and json.loads(again.out) == {"read": 500, "imported": 500, "skipped": 0}


def test_kill_9_in_the_middle_of_batches_keeps_whole_batches_only(magent_home: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", BATCHES], stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(5):  # let several batches land, then kill it wherever it is
            assert proc.stdout is not None and proc.stdout.readline()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    conn = check_database(paths.memory_db())
    total = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    assert total >= 5 * 200 and total % 200 == 0
    batches = total // 200
    for n in range(batches):
        assert conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?",
                            [f'"b{n}"']).fetchone()[0] == 200
    conn.close()
    after = invoke("memory", "add", "written after the kill")
    assert after.code == 0, after.err
    assert check_database(paths.memory_db()).execute("SELECT count(*) FROM memories").fetchone()[0] == total + 1


def memory_rows(db: Path) -> list[tuple]:
    conn = check_database(db)
    rows = conn.execute("SELECT id, content, status, importance, access_count, merged_into, tags "
                        "FROM memories ORDER BY rowid").fetchall()
    conn.close()
    return rows


def test_a_run_killed_inside_a_memory_write_stores_it_once_on_resume(magent_home: Path, tmp_path: Path) -> None:
    """kill -9 while memory.remember's transaction is open in a run: the database is as it was,
    and the resumed task makes the call again and stores the memory exactly once."""
    fact = "The weekly sync is in room Atlas on Tuesdays."
    (tmp_path / "helper.script.yaml").write_text(
        "responses:\n"
        f"  - tool_calls: [{{name: memory.remember, arguments: {{content: \"{fact}\"}}}}]\n"
        "  - content: Stored.\n")
    (tmp_path / "helper.yaml").write_text(
        "name: helper\nrole: remembers\nsystem_prompt: You help.\ntools: [memory.*]\n"
        "memory: {scope: global}\nllm_config: {model: scripted, script: helper.script.yaml}\n")
    assert invoke("memory", "add", "kept from before").code == 0
    killed = run("run", str(tmp_path / "helper.yaml"), "-t", "note it",
                 env={"MAGENT_FAILPOINT": "memory_before_commit"})
    assert killed.code == -signal.SIGKILL
    assert [r[1] for r in memory_rows(paths.memory_db())] == ["kept from before"]
    (task_id,) = [p.name for p in paths.tasks_dir().iterdir()]
    resumed = invoke("resume", task_id[:8])
    assert resumed.code == 0, resumed.err
    assert [r[1] for r in memory_rows(paths.memory_db())] == ["kept from before", fact]
    again = invoke("resume", task_id[:8])  # a finished task: nothing runs, nothing is stored again
    assert [r[1] for r in memory_rows(paths.memory_db())] == ["kept from before", fact], again.err


def test_consolidation_killed_before_it_commits_changes_nothing(magent_home: Path) -> None:
    for args in (("The weekly sync is in room Atlas", "--importance", "0.9"),
                 ("the weekly sync is in room atlas.",), ("barely matters", "--importance", "0.01")):
        assert invoke("memory", "add", *args).code == 0
    before = memory_rows(paths.memory_db())
    planned = json.loads(invoke("memory", "consolidate", "--dry-run", "--json").out)
    assert len(planned["merged"]) == 1 and len(planned["archived"]) == 1
    killed = run("memory", "consolidate", env={"MAGENT_FAILPOINT": "memory_before_commit"})
    assert killed.code == -signal.SIGKILL
    assert memory_rows(paths.memory_db()) == before
    done = invoke("memory", "consolidate", "--json")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert [m["duplicate"] for m in report["merged"]] == [m["duplicate"] for m in planned["merged"]]
    assert [a["id"] for a in report["archived"]] == [a["id"] for a in planned["archived"]]
    assert [r[2] for r in memory_rows(paths.memory_db())] == ["active", "archived", "archived"]

"""The sweep among real processes: live runs holding task locks, concurrent sweeps, and cron."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.cli import invoke
from support.holders import Holder
from support.homes import HomeBuilder
from test_retention_sweep import make_task, task_ids, with_checkpoints, write_policy

pytestmark = pytest.mark.slow

# The line the retention guide suggests; the test runs its command part.
def _readme_crontab_line() -> str:
    """The crontab line exactly as docs/guides/retention.md shows it (so the page and this test agree)."""
    readme = (Path(__file__).resolve().parent.parent / "docs" / "guides" / "retention.md").read_text()
    (line,) = [l for l in readme.splitlines() if l.startswith("17 * * * *")]
    return line


CRONTAB_LINE = _readme_crontab_line()
LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d retention sweep: .+$")


@pytest.fixture
def holders():
    started: list[Holder] = []

    def start(locks_dir: Path, name: str, what: str = "a test") -> Holder:
        h = Holder(locks_dir, name, what)
        started.append(h)
        return h

    yield start
    for h in started:
        h.kill()


def test_a_task_locked_by_a_live_run_is_skipped_until_the_run_dies(magent_home: Path, holders):
    write_policy(magent_home)
    home = HomeBuilder()
    busy = make_task(home, done_days=11)
    idle = make_task(home, done_days=11)
    holder = holders(magent_home / "locks", busy.id, f"task {busy.id}")
    r = invoke("retention", "sweep", "--dry-run")
    assert re.search(rf"would skip    {busy.id}  completed\s+locked  in use by pid "
                     rf"{holder.proc.pid} ", r.out), r.out
    r = invoke("retention", "sweep")
    assert r.code == 0 and "removed 1" in r.out and "skipped 1 (1 locked)" in r.out
    assert task_ids(magent_home) == {busy.id} and not idle.path.exists()
    holder.kill()
    r = invoke("retention", "sweep")
    assert r.code == 0 and "removed 1" in r.out and task_ids(magent_home) == set()


def test_running_and_paused_tasks_when_the_policy_names_them(magent_home: Path, holders):
    write_policy(magent_home, "default_days: 30\nby_status:\n  running: 1\n  interrupted: 1\n"
                              "  awaiting_human: 5\n")
    home = HomeBuilder()
    crashed = make_task(home, "running", updated_days=2)  # says running, nobody holds it: interrupted
    live = make_task(home, "running", updated_days=2)
    fresh = make_task(home, "running", updated_days=0.5)
    abandoned = make_task(home, "awaiting_human", updated_days=6)
    waiting = make_task(home, "awaiting_human", updated_days=4)
    holders(magent_home / "locks", live.id, f"task {live.id}")
    r = invoke("retention", "sweep")
    assert r.code == 0 and "removed 2" in r.out and "kept 2, skipped 1 (1 locked)" in r.out
    assert task_ids(magent_home) == {live.id, fresh.id, waiting.id}
    assert not crashed.path.exists() and not abandoned.path.exists()


def test_checkpoints_of_a_live_run_are_not_trimmed(magent_home: Path, holders):
    write_policy(magent_home, "keep_checkpoints: 1\n")
    home = HomeBuilder()
    live = with_checkpoints(home, 4, "running")
    idle = with_checkpoints(home, 4)
    home.close()
    holders(magent_home / "locks", live.id, f"task {live.id}")
    r = invoke("retention", "sweep")
    assert r.code == 0 and "trimmed 3 checkpoints in 1 task (" in r.out
    assert live.dir.checkpoints.numbers() == [0, 1, 2, 3]
    assert idle.dir.checkpoints.numbers() == [3]


def test_a_second_sweep_exits_at_once_saying_one_is_running(magent_home: Path, holders):
    write_policy(magent_home)
    old = make_task(HomeBuilder(), done_days=11)
    holder = holders(magent_home / "locks", "retention-sweep", "a retention sweep")
    r = invoke("retention", "sweep")  # the holder never lets go by itself: waiting would never end
    assert r.code == 0 and r.err == ""
    assert len(r.out.splitlines()) == 1 and LINE.match(r.out.strip())
    assert f"another sweep is already running (pid {holder.proc.pid} " in r.out
    assert r.out.rstrip().endswith("; nothing done")
    doc = json.loads(invoke("retention", "sweep", "--json").out)
    assert doc["busy"].startswith(f"pid {holder.proc.pid} ") and doc["removed"] == 0
    assert old.path.exists()


def test_two_sweeps_started_together_remove_each_task_once(magent_home: Path):
    write_policy(magent_home)
    home = HomeBuilder()
    ids = {home.task(status="completed", completed_at=None, retention_days=0).id for _ in range(150)}
    cmd = [sys.executable, "-m", "magent", "retention", "sweep", "--json"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    docs = [json.loads(out) for out, _ in outs]
    assert sum(d["removed"] for d in docs) == len(ids)
    assert all(d["problems"] == [] for d in docs)
    for d in docs:  # the loser either saw the lock or found nothing left to do
        assert d["busy"] or d["removed"] in (0, len(ids))
    assert os.listdir(magent_home / "tasks") == []
    assert not [n for n in os.listdir(magent_home / "locks") if not n.startswith("retention-sweep")]


def test_the_crontab_line_works_with_no_terminal_and_a_bare_environment(tmp_path: Path):
    user_home = tmp_path / "user"
    root = user_home / ".multi-agent"
    write_policy(root)
    home = HomeBuilder(root)
    old = make_task(home, done_days=11)
    young = make_task(home, done_days=1)
    magent = Path(sys.executable).parent / "magent"
    command = CRONTAB_LINE.split(None, 5)[5].replace("$HOME/.local/bin/magent", str(magent))
    env = {"HOME": str(user_home), "PATH": "/usr/bin:/bin"}  # what cron gives a job
    for _ in range(2):
        p = subprocess.run(["/bin/sh", "-c", command], env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and p.stdout == "" and p.stderr == ""
    log = (root / "retention.log").read_text()
    lines = log.splitlines()
    assert len(lines) == 2 and all(LINE.match(line) for line in lines), log
    assert "\x1b" not in log
    assert "scanned 2 tasks: removed 1 (" in lines[0] and "kept 1, skipped 0" in lines[0]
    assert "scanned 1 task: removed 0 (0 B), kept 1, skipped 0" in lines[1]
    assert not old.path.exists() and young.path.exists()

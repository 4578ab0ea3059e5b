"""Power-cut trials: a run on the lossy disk, a cut, then ``magent resume`` on what survived.

A trial runs a workflow with its home inside the lossy disk's mount (``powercut.LossyDisk``):
an agent whose every turn calls ``ledger.append`` (not idempotent; the ledger is a file outside
the mount, so it tells what ran whatever the disk forgot) beside ``kv.set``, then a tool node
that stores the answer; with ``human`` an approval gate after the agent, answered by a second
command on the same disk. The power is cut after the K-th fsync the disk sees, after its N-th
change, or (when the commands end first) after they end. Then every command runs on the
image of what was durable, to the end, and the README's promise for the mode is checked
(``Trial.broken``): the task completes; no non-idempotent call ran twice (modes ``sync`` and
``step``); every key the run stored is in its kv journal; every checkpoint left readable and
``trace`` and ``checkpoints list`` answer without a traceback.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from support.cli import run
from support import crashflow
from support.engine import write
from support.powercut import LossyDisk, run_on

TURNS = 4


def make_flow(folder: Path, *, human: bool = False, turns: int = TURNS) -> Path:
    """The crash tests' workflow (``crashflow.make_flow``) in ``folder`` (outside the disk), its
    agent given ``turns`` turns of a ledger line and a key each."""
    flow = crashflow.make_flow(folder, pause=human)
    steps = "\n".join(f"  - tool_calls: [{{name: ledger.append, arguments: {{line: l{i}}}}}, "
                      f"{{name: kv.set, arguments: {{key: k{i}, value: {i}}}}}]" for i in range(turns))
    write(folder, "worker.script.yaml", f"responses:\n{steps}\n  - content: all done\n")
    return flow


@dataclass
class Trial:
    """One run, one cut, one recovery."""

    folder: Path
    mode: str
    human: bool = False
    fresh_home: bool = False
    """The run makes its home itself (else it is made, durable, before the mount)."""
    turns: int = TURNS
    outcome: str = ""
    """How it ended: completed (or failed), or the task was never made."""
    cut_during: str = ""
    """Which command the power cut stopped ("" when it came after them all)."""
    syncs: int = 0
    ops: int = 0
    """The fsyncs and changes the disk saw (only when the power was cut after the commands)."""
    broken: list[str] = field(default_factory=list)
    """The promises it broke."""

    @property
    def ledger(self) -> Path:
        return self.folder / "ledger.txt"

    @property
    def home(self) -> Path:
        return self.folder / "disk" / "image" / "home"

    def env(self, home: Path) -> dict[str, str]:
        return {"MAGENT_HOME": str(home), "LEDGER": str(self.ledger), "MAGENT_DEBUG": ""}

    def run(self, kind: str | None, count: int = 0, seed: int = 0) -> "Trial":
        """Run on a fresh disk; cut after the ``count``-th ``kind`` ("syncs", "ops"; None: after
        the commands); then recover and check."""
        flow = make_flow(self.folder, human=self.human, turns=self.turns)
        disk = LossyDisk(self.folder / "disk")
        if not self.fresh_home:
            from magent.store import Store

            Store(disk.backing / "home").ensure()
        disk.start()
        try:
            if kind is not None:
                disk.arm(kind, count, seed)
            env = self.env(disk.mount / "home")
            magent = [sys.executable, "-m", "magent"]
            code = run_on(disk, [*magent, "run", str(flow), "-t", "work", "--durability", self.mode,
                                 "--no-input", "--quiet"], env)
            if code is None:
                self.cut_during = "run"
            elif self.human and code == 3:
                task_id = _only_task(disk.mount / "home")
                if run_on(disk, [*magent, "resume", task_id, "--approve", "--no-input", "--quiet"], env) is None:
                    self.cut_during = "approve"
            if not disk.was_cut:
                self.syncs, self.ops = disk.stats()
            disk.cut(seed)
        finally:
            disk.stop()
        self._recover()
        return self

    def _recover(self) -> None:
        env = self.env(self.home)
        task_id = _only_task(self.home) if (self.home / "tasks").is_dir() else None
        if task_id is None:
            self.outcome = "no task"
            if self.ledger.exists():
                self.broken.append(f"the task is gone, but its tools ran: {_lines(self.ledger)}")
            return
        result = None
        for _ in range(self.turns + 4):
            result = run("resume", task_id, "--no-input", *self._answer(task_id), env=env, timeout=120)
            self._no_traceback("resume", result)
            if result.code != 3 and "waiting for a person" not in result.err:
                break
        status = _status(self.home, task_id)
        self.outcome = status
        if status != "completed":
            self.broken.append(f"ended {status}: {result.err.strip() if result else ''}"[:400])
        self._check(task_id, env)

    def _answer(self, task_id: str) -> list[str]:
        """What the pause the task waits at (if any) needs: a tool call that may have run is
        rejected if the ledger has its line, else approved; an approval gate is approved."""
        from magent.store import Store

        td = Store(self.home).task(task_id)
        if td.load_task().status.value != "awaiting_human":
            return []   # (a pause whose answer the cut interrupted is asked again)
        cp, _ = td.checkpoints.latest(repair=False)
        if cp is None or not cp.awaiting_human or cp.human_request is None:
            return []
        request = cp.human_request
        if request.kind == "tool_recovery":
            line = (request.details or {}).get("arguments", {}).get("line")
            return ["--reject" if line in _lines(self.ledger) else "--approve"]
        return ["--approve"]

    def _check(self, task_id: str, env: dict[str, str]) -> None:
        counts = Counter(_lines(self.ledger))
        wanted = {f"l{i}" for i in range(self.turns)}
        if set(counts) != wanted:
            self.broken.append(f"ledger {sorted(counts)} is not {sorted(wanted)}")
        twice = sorted(line for line, n in counts.items() if n > 1)
        if twice and self.mode != "exit":
            self.broken.append(f"non-idempotent calls ran twice: {twice}")
        kv = self.home / "tasks" / task_id / "kv.jsonl"
        keys = {json.loads(line).get("key") for line in kv.read_text().splitlines()
                if line.strip()} if kv.exists() else set()
        missing = sorted(({f"k{i}" for i in range(self.turns)} | {"final"}) - keys)
        if missing:
            self.broken.append(f"keys stored but lost: {missing}")
        for command in (["trace", task_id, "--json"], ["checkpoints", "list", task_id, "--json"]):
            result = run(*command, env=env)
            self._no_traceback(command[0], result)
            if result.code != 0:
                self.broken.append(f"{' '.join(command[:2])} exited {result.code}: {result.err.strip()[:300]}")
            if command[0] == "checkpoints" and result.code == 0 and self.mode != "exit":
                # (mode exit may leave an older checkpoint damaged behind a sound newer one:
                # listed as damaged, moved aside if read; README, "Durability")
                if any(cp.get("corrupt") for cp in json.loads(result.out)["checkpoints"]):
                    self.broken.append("a damaged checkpoint was left in place after a resume")

    def _no_traceback(self, what: str, result) -> None:
        if "Traceback" in result.err or "Traceback" in result.out:
            self.broken.append(f"{what}: traceback: {result.err[-600:]}")


def _only_task(home: Path) -> str | None:
    tasks = [p.name for p in (home / "tasks").iterdir() if not p.name.startswith(".")] \
        if (home / "tasks").is_dir() else []
    assert len(tasks) <= 1, tasks
    return tasks[0] if tasks else None


def _status(home: Path, task_id: str) -> str:
    try:
        return json.loads((home / "tasks" / task_id / "task.json").read_text())["status"]
    except (OSError, ValueError, KeyError) as exc:
        return f"unreadable task.json ({exc})"


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []

"""Power-cut trials: a run on the lossy disk, a cut, then ``magent resume`` on what survived.

A trial runs a workflow with its home inside the lossy disk's mount (``powercut.LossyDisk``).
Every flow's tools write a ledger (``ledger.append``, ``stamp.stamp``: not idempotent; the ledger
is a file outside the mount, so it tells what ran whatever the disk forgot):

- ``react``: an agent whose every turn calls ``ledger.append`` beside ``kv.set``, then a tool node
  that stores the answer; with ``human`` an approval gate after the agent, answered by a second
  command on the same disk;
- ``parallel``: a fan-out to two agents that meet at a join, then a ``map`` over three items
  (two at a time), each item's agent appending its line (tests/support/parallelflow.py);
- ``memory``: the react agent, each turn also storing a fact with ``memory.remember`` in the
  home's shared SQLite database, which must pass ``PRAGMA integrity_check`` after the cut;
- ``followup``: the react run, then ``magent chat ID`` with a follow-up whose turn appends one
  more line and stores one more key;
- ``batch``: ``magent batch`` of three rows, each stamping its label (tests/support/batchflow.py),
  recovered with ``magent batch resume``.

The power is cut after the K-th fsync the disk sees, after its N-th change, or (when the
commands end first) after they end. Then every command runs on the image of what was durable,
to the end, and the README's promise for the mode is checked (``Trial.broken``): every task
completes; no non-idempotent call ran twice (modes ``sync`` and ``step``); every key the run
stored is in its kv journal; every checkpoint left readable, and ``trace`` and ``checkpoints
list`` answer without a traceback.
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
FOLLOW_UP = "one more thing"
ROWS = ["r0", "r1", "r2"]


def make_flow(folder: Path, *, human: bool = False, turns: int = TURNS, memory: bool = False,
              follow_up: bool = False) -> Path:
    """The crash tests' workflow (``crashflow.make_flow``) in ``folder`` (outside the disk), its
    agent given ``turns`` turns of a ledger line and a key each (with ``memory``, a fact too);
    with ``follow_up``, one more turn for a follow-up (line ``f0``, key ``f0``)."""
    flow = crashflow.make_flow(folder, pause=human)
    fact = ", {{name: memory.remember, arguments: {{content: 'fact {i}'}}}}" if memory else ""
    steps = "\n".join(f"  - tool_calls: [{{name: ledger.append, arguments: {{line: l{i}}}}}, "
                      f"{{name: kv.set, arguments: {{key: k{i}, value: {i}}}}}" + fact.format(i=i) + "]"
                      for i in range(turns))
    more = ("\n  - tool_calls: [{name: ledger.append, arguments: {line: f0}}, "
            "{name: kv.set, arguments: {key: f0, value: 0}}]\n  - content: followed up") if follow_up else ""
    write(folder, "worker.script.yaml", f"responses:\n{steps}\n  - content: all done{more}\n")
    if memory:
        worker = (folder / "worker.yaml").read_text().replace("tools: [ledger.*, kv.*]",
                                                              "tools: [ledger.*, kv.*, memory.remember]")
        write(folder, "worker.yaml", worker + "memory: {scope: workflow}\n")
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
    flow: str = "react"
    """``react``, ``parallel``, ``memory``, ``followup`` or ``batch`` (the module's docstring)."""
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

    def _make(self) -> list[str]:
        """Write the flow's files; the arguments of its first command after ``magent``."""
        mode = ["--durability", self.mode, "--no-input", "--quiet"]
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.flow == "parallel":
            from support.parallelflow import make_parallel

            return ["run", str(make_parallel(self.folder)), "-t", "work", *mode]
        if self.flow == "batch":
            from support.batchflow import make_batch_flow, write_inputs

            rows = write_inputs(self.folder / "rows.jsonl", [{"task": f"row {label}", "label": label, "nap": 0}
                                                             for label in ROWS])
            flow = make_batch_flow(self.folder)
            # (a stamp that may have run is skipped when the ledger has it: the row goes on)
            text = flow.read_text().replace("arguments: {label: $metadata.label}}",
                                            "arguments: {label: $metadata.label}, fail_on_error: false}")
            flow.write_text(text + f"durability: {self.mode}\n")
            return ["batch", str(flow), "--inputs", str(rows), "--concurrency", "2"]
        flow = make_flow(self.folder, human=self.human, turns=self.turns, memory=self.flow == "memory",
                         follow_up=self.flow == "followup")
        return ["run", str(flow), "-t", "work", *mode]

    def wanted(self) -> tuple[set[str], set[str]]:
        """The ledger lines and the kv keys a whole run leaves."""
        if self.flow == "parallel":
            from support.parallelflow import ITEMS

            return {"L1", "R1", "R2", *ITEMS}, {"final"}
        if self.flow == "batch":
            return set(ROWS), set()
        lines, keys = {f"l{i}" for i in range(self.turns)}, {f"k{i}" for i in range(self.turns)} | {"final"}
        if self.flow == "followup":
            lines, keys = lines | {"f0"}, keys | {"f0"}
        return lines, keys

    def run(self, kind: str | None, count: int = 0, seed: int = 0) -> "Trial":
        """Run on a fresh disk; cut after the ``count``-th ``kind`` ("syncs", "ops"; None: after
        the commands); then recover and check."""
        first = self._make()
        disk = LossyDisk(self.folder / "disk")
        if not self.fresh_home:
            from magent.store.tasks import Store

            Store(disk.backing / "home").ensure()
        disk.start()
        try:
            if kind is not None:
                disk.arm(kind, count, seed)
            self.cut_during = self._commands(disk, first)
            if not disk.was_cut:
                self.syncs, self.ops = disk.stats()
            disk.cut(seed)
        finally:
            disk.stop()
        self._recover()
        return self

    def _commands(self, disk: LossyDisk, first: list[str]) -> str:
        """Run the flow's commands on the disk until the power is cut: the one it stopped ("")."""
        env = self.env(disk.mount / "home")
        magent = [sys.executable, "-m", "magent"]
        code = run_on(disk, [*magent, *first], env)
        if code is None:
            return first[0]
        if self.human and code == 3:
            task_id = _only_task(disk.mount / "home")
            if run_on(disk, [*magent, "resume", task_id, "--approve", "--no-input", "--quiet"], env) is None:
                return "approve"
        if self.flow == "followup" and code == 0:
            task_id = _only_task(disk.mount / "home")
            if run_on(disk, [*magent, "chat", task_id, FOLLOW_UP, "--no-input", "--quiet"], env) is None:
                return "chat"
        return ""

    def _recover(self) -> None:
        if self.flow == "batch":
            self._recover_batch()
            return
        task_id = _only_task(self.home) if (self.home / "tasks").is_dir() else None
        if task_id is None:
            self.outcome = "no task"
            if self.ledger.exists():
                self.broken.append(f"the task is gone, but its tools ran: {_lines(self.ledger)}")
            return
        self._finish(task_id)
        if self.flow == "followup" and self.outcome == "completed" and not self._followed_up(task_id):
            result = run("chat", task_id, FOLLOW_UP, "--no-input", env=self.env(self.home), timeout=120)
            self._no_traceback("chat", result)
            self._finish(task_id)
        if self.outcome != "completed":
            return
        self._check(task_id)

    def _finish(self, task_id: str) -> None:
        """``magent resume`` the task to its end, answering what it asks."""
        result = None
        for _ in range(self.turns + 4):
            result = run("resume", task_id, "--no-input", *self._answer(task_id), env=self.env(self.home),
                         timeout=120)
            self._no_traceback("resume", result)
            if result.code != 3 and "waiting for a person" not in result.err:
                break
        self.outcome = _status(self.home, task_id)
        if self.outcome != "completed":
            self.broken.append(f"ended {self.outcome}: {result.err.strip() if result else ''}"[:400])

    def _followed_up(self, task_id: str) -> bool:
        from magent.store.tasks import Store

        entries = Store(self.home).task(task_id).entries.load().values()
        return any(e.role == "user" and e.content == FOLLOW_UP for e in entries)

    def _recover_batch(self) -> None:
        from magent.store.tasks import Store

        batches = self.home / "batches"
        found = [p.name for p in batches.iterdir() if not p.name.startswith(".")] if batches.is_dir() else []
        if not found:
            self.outcome = "no batch"
            if self.ledger.exists():
                self.broken.append(f"the batch is gone, but its rows ran: {_lines(self.ledger)}")
            return
        (batch,) = found
        env = self.env(self.home)
        for _ in range(4):
            result = run("batch", "resume", batch, env=env, timeout=180)
            self._no_traceback("batch resume", result)
            waiting = [p.name for p in (self.home / "tasks").iterdir() if not p.name.startswith(".")
                       and Store(self.home).task(p.name).load_task().status.value == "awaiting_human"]
            if result.code != 3 or not waiting:
                break
            for task_id in waiting:  # a row's call that may have run: the ledger says
                self._no_traceback("resume", run("resume", task_id, "--no-input", *self._answer(task_id), env=env,
                                                 timeout=120))
        results = run("batch", "results", batch, env=env)
        self._no_traceback("batch results", results)
        rows = [json.loads(line) for line in results.out.splitlines() if line.startswith("{")]
        statuses = sorted(r.get("status", "?") for r in rows)
        self.outcome = "completed" if statuses == ["completed"] * len(ROWS) else f"rows {statuses}"
        if self.outcome != "completed":
            self.broken.append(f"batch ended with {statuses}: {result.err.strip()}"[:400])
            return
        for row in rows:
            self._check(row["task_id"], ledger=False)
        self._check_ledger([line.split(" ", 2)[-1] for line in _lines(self.ledger) if not line.endswith(" nap")
                            and line != "nap"])

    def _answer(self, task_id: str) -> list[str]:
        """What the pause the task waits at (if any) needs: a tool call that may have run is
        rejected if the ledger has its line, else approved; an approval gate is approved."""
        from magent.store.tasks import Store

        td = Store(self.home).task(task_id)
        if td.load_task().status.value != "awaiting_human":
            return []   # (a pause whose answer the cut interrupted is asked again)
        cp, _ = td.checkpoints.latest(repair=False)
        if cp is None or not cp.awaiting_human or cp.human_request is None:
            return []
        request = cp.human_request
        if request.kind == "tool_recovery":
            args = (request.details or {}).get("arguments", {})
            line = args.get("line", args.get("label"))
            ran = [entry.split(" ", 2)[-1] for entry in _lines(self.ledger)]
            return ["--reject" if line in ran else "--approve"]
        return ["--approve"]

    def _check(self, task_id: str, *, ledger: bool = True) -> None:
        env = self.env(self.home)
        wanted_lines, wanted_keys = self.wanted()
        if ledger:
            self._check_ledger(_lines(self.ledger))
        kv = self.home / "tasks" / task_id / "kv.jsonl"
        keys = {json.loads(line).get("key") for line in kv.read_text().splitlines()
                if line.strip()} if kv.exists() else set()
        missing = sorted(wanted_keys - keys)
        if missing:
            self.broken.append(f"keys stored but lost: {missing}")
        if self.flow == "memory":
            self._check_memory()
        for command in (["trace", task_id, "--json"], ["checkpoints", "list", task_id, "--json"]):
            result = run(*command, env=env)
            self._no_traceback(command[0], result)
            if result.code != 0:
                self.broken.append(f"{' '.join(command[:2])} exited {result.code}: {result.err.strip()[:300]}")
            if command[0] == "checkpoints" and result.code == 0:
                # (an older checkpoint may come back damaged behind a sound newer one, listed as
                # damaged: docs/durability.md; the newest, which a resume goes on from, never)
                listed = json.loads(result.out)["checkpoints"]
                if listed and listed[-1].get("corrupt"):
                    self.broken.append("the newest checkpoint was left damaged after a resume")

    def _check_ledger(self, lines: list[str]) -> None:
        counts = Counter(lines)
        wanted = self.wanted()[0]
        if set(counts) != wanted:
            self.broken.append(f"ledger {sorted(counts)} is not {sorted(wanted)}")
        twice = sorted(line for line, n in counts.items() if n > 1)
        if twice and self.mode != "exit":
            self.broken.append(f"non-idempotent calls ran twice: {twice}")

    def _check_memory(self) -> None:
        """The shared database is sound and holds every fact (once: a repeated write of the same
        call is a no-op; in mode exit the calls may run again under new ids)."""
        import sqlite3

        db = self.home / "memory" / "memory.db"
        if not db.exists():
            self.broken.append("memory.db is gone")
            return
        conn = sqlite3.connect(db)
        try:
            check = conn.execute("PRAGMA integrity_check").fetchone()[0]
            facts = Counter(row[0] for row in conn.execute("SELECT content FROM memories"))
        finally:
            conn.close()
        if check != "ok":
            self.broken.append(f"memory.db fails integrity_check: {check}")
        wanted = {f"fact {i}" for i in range(self.turns)}
        if set(facts) != wanted:
            self.broken.append(f"memories {sorted(facts)} are not {sorted(wanted)}")
        if self.mode != "exit" and any(n > 1 for n in facts.values()):
            self.broken.append(f"a memory stored twice: {sorted(facts.items())}")

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

"""The adversarial kill trial of issue 10: `kill -9` at random moments, then resume, many times.

A real workflow (an agent calling a real MCP server over stdio and the built-in key-value
tools, a tool node, an approval gate, a second agent) is run as `magent run` in a
subprocess; after a random delay the magent process gets SIGKILL, as `kill -9 PID` would
give it. Whatever is on disk is then continued with `magent resume` (or `run` again if
the kill came before the task existed), which is itself killed at random moments, until
the task completes. Pauses are answered as a careful person would: an approval gate is
approved; a tool call that may or may not have run (killed mid-call) is approved or
rejected by what the server's ledger shows.

The MCP server (tests/support/ledger_server.py, copied so its processes can be told
apart) appends each call's line to a ledger file outside magent, so a call run twice
shows. Checked after every kill and every exit:

- no file is corrupt: every checkpoint passes its hash and schema (none quarantined as
  ``.corrupt``); after a process that exits on its own every JSON / JSON Lines file parses
  (a torn last line is allowed only until the next open repairs it);
- no tool call ran twice: each ledger line at most once, and exactly once at the end;
- every task is resumable after a kill: shown as ``interrupted`` (or ``awaiting_human``
  when the kill came after the pause was written), and continued by ``magent resume``;
  every task ends ``completed`` with contiguous checkpoints and the expected result;
- no stale temp file survives the next open: a process that exits on its own leaves no
  ``.NAME.PID.HEX.tmp`` in the task directory, whatever the kills before it left;
- no MCP server outlives the run that started it (counted a few seconds after the end).

    python benchmarks/kill_trial.py [--kills 50] [--seed 10] [--keep DIR]

Exits 1 if any check fails; prints the figures either way. A short run of it (a few
kills) is part of the test suite (tests/test_kill_trial.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEDGER_SERVER = ROOT / "tests" / "support" / "ledger_server.py"
EXPECTED_LEDGER = ["a", "b", "c", "d", "z"]
EXPECTED_RESULT = "all done"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def make_flow(folder: Path, server: Path) -> Path:
    """Two agents, a tool node and an approval gate; five non-idempotent MCP calls in all."""
    write(folder, "mcp.yaml", f"""
        servers:
          - name: ledger
            transport: stdio
            config:
              command: {sys.executable}
              args: [{server}]
              env: {{LEDGER: "${{LEDGER}}"}}
        """)
    write(folder, "worker.script.yaml", """
        responses:
          - content: first things
            tool_calls: [{name: ledger.append, arguments: {line: a}}, {name: kv.set, arguments: {key: k1, value: 1}}]
          - tool_calls: [{name: ledger.append, arguments: {line: b}}]
          - tool_calls: [{name: ledger.append, arguments: {line: c}}, {name: ledger.append, arguments: {line: d}}]
          - content: all done
        """)
    write(folder, "closer.script.yaml", """
        responses:
          - tool_calls: [{name: ledger.append, arguments: {line: z}}, {name: kv.get, arguments: {key: final}}]
          - content: closed
        """)
    for name in ("worker", "closer"):
        write(folder, f"{name}.yaml", f"""
            name: {name}
            role: kill trial {name}
            system_prompt: work
            tools: [ledger.*, kv.*]
            llm_config: {{model: scripted, script: {name}.script.yaml}}
            """)
    return write(folder, "flow.yaml", """
        name: killtrial
        mcp_servers: mcp.yaml
        entry_point: work
        nodes:
          work: {type: agent, agent: worker}
          record: {type: tool, tool: kv.set, arguments: {key: final, value: $output}}
          close: {type: agent, agent: closer}
        edges:
          - {from: work, to: record}
          - {from: record, to: close}
        checkpoints: [record]
        result: work
        """)


@dataclass
class Figures:
    kills: int = 0
    processes: int = 0
    kill_phase: Counter = field(default_factory=Counter)
    """Where each kill landed, judged from the disk afterwards."""
    questions: Counter = field(default_factory=Counter)
    """Pauses met, by kind (the approval gate, a tool call that may have run)."""
    temp_after_kill: int = 0
    torn_after_kill: int = 0
    tasks: int = 0
    completed: int = 0
    attempts_per_task: list[int] = field(default_factory=list)
    seconds: float = 0.0
    window: float = 0.0
    """Kill delays are drawn from 0 to this: how long an unkilled run takes to reach the gate."""
    failures: list[str] = field(default_factory=list)
    orphans: int = 0


class Trial:
    def __init__(self, work: Path, rng: random.Random, figures: Figures, window: float | None = None) -> None:
        self.work, self.rng, self.figures = work, rng, figures
        self.server = work / "kill_trial_ledger_server.py"
        shutil.copy(LEDGER_SERVER, self.server)
        self.flow = make_flow(work, self.server)
        self.window = window

    # -- running magent ------------------------------------------------------------------

    def env(self, home: Path, ledger: Path) -> dict[str, str]:
        return {**os.environ, "MAGENT_HOME": str(home), "LEDGER": str(ledger),
                "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MAGENT_FORBID_REMOTE_LLM": "1",
                "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}

    def start(self, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        self.figures.processes += 1
        return subprocess.Popen([sys.executable, "-m", "magent", *args, "--no-input"], env=env, cwd=self.work,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def measure_window(self) -> float:
        """How long an unkilled `magent run` takes to reach the gate: the range kill delays are drawn from."""
        times = []
        for i in range(2):
            home, ledger = self.work / f"measure-{i}", self.work / f"measure-{i}.ledger"
            began = time.monotonic()
            p = self.start(["run", str(self.flow), "-t", "measure"], self.env(home, ledger))
            out, err = p.communicate(timeout=300)
            times.append(time.monotonic() - began)
            if p.returncode != 3:
                raise SystemExit(f"an unkilled run should stop at the gate (exit 3), got {p.returncode}: {err}")
        return statistics.median(times)

    # -- one task, killed again and again ------------------------------------------------

    def one_task(self, index: int, kill_budget: int) -> None:
        f = self.figures
        home, ledger = self.work / f"home-{index}", self.work / f"ledger-{index}.txt"
        env = self.env(home, ledger)
        f.tasks += 1
        args = ["run", str(self.flow), "-t", f"kill trial {index}"]
        kills_here = attempts = 0
        while True:
            attempts += 1
            if attempts > 200:
                return self.fail(index, "did not complete in 200 processes")
            p = self.start(args, env)
            delay = self.rng.uniform(0, self.window) if kills_here < kill_budget else None
            try:
                out, err = p.communicate(timeout=delay if delay is not None else 300)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)      # kill -9 PID: the run only, as a person would
                p.communicate()
            task = self.task_id(home)
            if p.returncode == -signal.SIGKILL:
                f.kills += 1
                kills_here += 1
                shown = self.after_kill(index, home, task, ledger)
                if shown == "completed":            # killed after the end was written
                    f.completed += 1
                    f.attempts_per_task.append(attempts)
                    return self.check_completed(index, home, task, ledger)
                if task is None:                    # nothing on disk yet: start it again
                    args = ["run", str(self.flow), "-t", f"kill trial {index}"]
                elif shown == "awaiting_human":     # killed after its pause was written
                    args = ["resume", task, *self.answer(home, task, ledger)]
                else:
                    args = ["resume", task]
                continue
            problem = self.after_exit(home, task, ledger)
            if problem:
                return self.fail(index, f"{' '.join(args[:2])} exit {p.returncode}: {problem}\n{err[-2000:]}")
            if p.returncode == 0:
                f.completed += 1
                f.attempts_per_task.append(attempts)
                return self.check_completed(index, home, task, ledger)
            if p.returncode == 3:
                args = ["resume", task, *self.answer(home, task, ledger)]
                continue
            return self.fail(index, f"{' '.join(args[:2])} exited {p.returncode}\n{out[-1000:]}\n{err[-2000:]}")

    def answer(self, home: Path, task: str, ledger: Path) -> list[str]:
        td = self.task_dir(home, task)
        request = td.checkpoints.read(td.checkpoints.numbers()[-1]).human_request
        self.figures.questions[request.kind] += 1
        if request.kind == "tool_recovery":   # did the call run? the ledger tells the truth
            line = request.details["arguments"]["line"]
            return ["--reject"] if line in ledger_lines(ledger) else ["--approve"]
        return ["--approve"]

    # -- checks --------------------------------------------------------------------------

    def after_kill(self, index: int, home: Path, task: str | None, ledger: Path) -> str | None:
        """Checks what a kill left; returns the status the task shows (None: no task yet)."""
        f = self.figures
        if task is None:
            f.kill_phase["before the task existed"] += 1
            self.check_ledger(index, ledger, final=False)
            return None
        td = self.task_dir(home, task)
        numbers = td.checkpoints.numbers()
        shown = td.shown_task().status.value
        f.kill_phase["before checkpoint 0" if not numbers else
                     "after the pause was written" if shown == "awaiting_human" else
                     "after the end was written" if shown == "completed" else "during the run"] += 1
        if shown not in ("interrupted", "awaiting_human", "completed"):
            self.fail(index, f"after a kill the task shows as {shown!r}, not interrupted")
        f.temp_after_kill += len(temp_files(td.path))
        f.torn_after_kill += len(torn_files(home))
        self.check_checkpoints(index, td)
        self.check_ledger(index, ledger, final=False)
        return shown

    def after_exit(self, home: Path, task: str | None, ledger: Path) -> str | None:
        """What a process that exited on its own must leave: every file whole, no temp file."""
        if task is None:
            return "no task on disk"
        td = self.task_dir(home, task)
        left = temp_files(td.path)
        if left:
            return f"stale temp files after the task was opened: {[p.name for p in left]}"
        try:
            strict_parse(home)
        except ValueError as exc:
            return str(exc)
        return None

    def check_checkpoints(self, index: int, td) -> None:
        from magent.errors import CheckpointCorruptError

        quarantined = sorted(p.name for p in td.path.glob("*.corrupt"))
        if quarantined:
            self.fail(index, f"checkpoints quarantined as corrupt: {quarantined}")
        numbers = td.checkpoints.numbers()
        if numbers != list(range(len(numbers))):
            self.fail(index, f"checkpoints are not contiguous: {numbers}")
        for n in numbers:
            try:
                td.checkpoints.read(n)
            except CheckpointCorruptError as exc:
                self.fail(index, f"checkpoint {n} is corrupt: {exc}")

    def check_ledger(self, index: int, ledger: Path, *, final: bool) -> None:
        lines = ledger_lines(ledger)
        twice = [line for line, n in Counter(lines).items() if n > 1]
        if twice:
            self.fail(index, f"tool calls ran twice: {twice} (ledger {lines})")
        if final and sorted(lines) != EXPECTED_LEDGER:
            self.fail(index, f"ledger {lines}, expected each of {EXPECTED_LEDGER} once")

    def check_completed(self, index: int, home: Path, task: str, ledger: Path) -> None:
        td = self.task_dir(home, task)
        t = td.load_task()
        if t.status.value != "completed" or t.result != EXPECTED_RESULT:
            self.fail(index, f"ended {t.status.value} with result {t.result!r}")
        self.check_checkpoints(index, td)
        self.check_ledger(index, ledger, final=True)

    def fail(self, index: int, what: str) -> None:
        self.figures.failures.append(f"task {index}: {what}")

    # -- reading the home ----------------------------------------------------------------

    @staticmethod
    def task_id(home: Path) -> str | None:
        tasks = home / "tasks"
        found = [p.name for p in tasks.iterdir() if not p.name.startswith(".")] if tasks.is_dir() else []
        assert len(found) <= 1, found
        return found[0] if found else None

    @staticmethod
    def task_dir(home: Path, task: str):
        os.environ["MAGENT_HOME"] = str(home)
        from magent.store.tasks import Store

        return Store().task(task)


def temp_files(task_dir: Path) -> list[Path]:
    from magent.store.files import temp_files as found

    return found(task_dir)


def torn_files(home: Path) -> list[Path]:
    torn = []
    for path in home.rglob("*.jsonl"):
        text = path.read_bytes()
        if text and not text.endswith(b"\n"):
            torn.append(path)
    return torn


def strict_parse(home: Path) -> None:
    """Every JSON and JSON Lines file under the home parses, with no torn last line."""
    for path in home.rglob("*"):
        if not path.is_file() or path.suffix not in (".json", ".jsonl"):
            continue
        text = path.read_text()
        try:
            if path.suffix == ".json":
                json.loads(text)
                continue
            if text and not text.endswith("\n"):
                raise ValueError("a torn last line")
            for line in text.splitlines():
                json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{path.relative_to(home)} does not parse: {exc}") from None


def ledger_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def servers_alive(server: Path) -> int:
    """Processes still running the trial's copy of the ledger server."""
    alive = 0
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if str(server).encode() in (proc / "cmdline").read_bytes():
                    alive += 1
            except OSError:
                continue
    return alive


def trial(kills: int, seed: int, work: Path, *, per_task: int = 6) -> Figures:
    sys.path.insert(0, str(ROOT / "src"))
    figures = Figures()
    began = time.monotonic()
    t = Trial(work, random.Random(seed), figures)
    t.window = figures.window = t.measure_window()
    index = 0
    while figures.kills < kills and not figures.failures:
        t.one_task(index, min(per_task, kills - figures.kills))
        index += 1
    figures.seconds = time.monotonic() - began
    deadline = time.monotonic() + 10
    figures.orphans = servers_alive(t.server)
    while figures.orphans and time.monotonic() < deadline:
        time.sleep(0.2)
        figures.orphans = servers_alive(t.server)
    if figures.orphans:
        figures.failures.append(f"{figures.orphans} MCP server processes outlived their runs")
    return figures


def report(f: Figures, seed: int) -> str:
    lines = [f"kill trial (seed {seed}): {f.kills} kills (kill -9) in {f.processes} magent processes, "
             f"{f.tasks} tasks, {f.seconds:.0f} s",
             f"  kill delays uniform in 0-{f.window:.1f} s (an unkilled run to the gate: {f.window:.1f} s)"]
    for phase, n in f.kill_phase.most_common():
        lines.append(f"  killed {phase}: {n}")
    lines.append("  pauses answered: " + (", ".join(f"{k} {n}" for k, n in sorted(f.questions.items())) or "none"))
    lines.append(f"  temp files left by kills: {f.temp_after_kill} (any left after the next open is a failure)")
    lines.append(f"  JSON Lines files with a torn last line after a kill: {f.torn_after_kill}")
    if f.attempts_per_task:
        lines.append(f"  processes per task: median {statistics.median(f.attempts_per_task):g}, "
                     f"max {max(f.attempts_per_task)}")
    lines.append(f"  tasks completed: {f.completed} of {f.tasks}; MCP servers left running: {f.orphans}")
    lines.append("  failures: " + ("none" if not f.failures else str(len(f.failures))))
    lines += [f"    {x}" for x in f.failures]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=50, help="how many kills at least (default 50)")
    parser.add_argument("--seed", type=int, default=10, help="seed of the kill delays (default 10)")
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it")
    a = parser.parse_args()
    work = a.keep or Path(tempfile.mkdtemp(prefix="kill-trial-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        figures = trial(a.kills, a.seed, work)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(report(figures, a.seed))
    return 1 if figures.failures or figures.completed != figures.tasks else 0


if __name__ == "__main__":
    sys.exit(main())

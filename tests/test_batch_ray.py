"""magent batch --executor ray against a real local Ray cluster (two worker CPUs, 127.0.0.1 only),
started once for this module: rows on Ray actors writing the shared MAGENT_HOME, a worker killed
with SIGKILL mid-row and the batch resumed, more rows at once than CPUs (--cpus-per-row), actors
kept for a session's next batch, Ray's output quiet unless --verbose, and an address where no
cluster answers. One more cluster, whose workers die at a failpoint, for rows lost before their
task was mapped."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from support.batchflow import make_batch_flow, stamp_lines, stamps, write_inputs
from support.cli import invoke, run

CLUSTER = """
import os, sys
import ray
ctx = ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR")  # never a `ray start` one
print(ctx.address_info["gcs_address"], flush=True)
sys.stdin.read()  # until the test closes stdin
ray.shutdown()
"""
LOCAL_ONLY = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
              "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
"""No usage reports, every Ray address on the loopback interface, and the cluster's token
given to the test's processes only (none written under ~/.ray)."""


@contextlib.contextmanager
def _cluster(folder: Path, **env: str) -> Iterator[str]:
    """A Ray head with two CPUs in a process of ours (its workers inherit its environment); its address."""
    proc = subprocess.Popen([sys.executable, "-c", CLUSTER], env={**os.environ, **LOCAL_ONLY, **env},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    address = proc.stdout.readline().strip()
    assert address.startswith("127.0.0.1:"), address
    try:
        yield address
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    """The module's cluster (its workers inherit LEDGER and LEDGER_WAKE)."""
    folder = tmp_path_factory.mktemp("ray")
    with _cluster(folder, LEDGER=str(folder / "ledger.txt"), LEDGER_WAKE=str(folder / "wake")) as address:
        yield address, folder


MAGENT_SUMMARY = ("batch ", "interrupted rows", "rows not started")
"""How the lines magent itself writes on stderr at a batch's end begin (``--json``)."""


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_rows_run_as_ray_tasks_and_a_killed_worker_s_row_resumes(magent_home: Path, tmp_path: Path,
                                                                  cluster: tuple[str, Path]) -> None:
    address, folder = cluster
    ledger, wake = folder / "ledger.txt", folder / "wake"
    env = {**LOCAL_ONLY, "LEDGER": str(ledger)}
    flow = make_batch_flow(tmp_path)
    rows = [{"task": f"row {n}", "label": f"ray{n}", "nap": 120 if n == 3 else 0} for n in range(1, 6)]
    inputs = write_inputs(tmp_path / "rows.jsonl", rows)
    proc = subprocess.Popen([sys.executable, "-m", "magent", "batch", str(flow), "--inputs", str(inputs),
                             "--executor", "ray", "--ray-address", address, "--concurrency", "2", "--max-rpm", "600",
                             "--json"],
                            env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 180
        while time.time() < deadline:  # row 3 inside its nap, in a Ray worker
            marks = [parent for _, parent, label in stamp_lines(ledger) if label == "ray3"]
            if marks:
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        else:
            pytest.fail("row 3 never started")
        time.sleep(0.5)
        worker = marks[0]  # the stamp server's parent: the Ray worker running row 3
        assert worker != proc.pid
        os.kill(worker, 9)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err  # a row was interrupted
    by_row = {x["row"]: x for x in _lines(out)}
    assert sorted(by_row) == [1, 2, 3, 4, 5]
    assert by_row[3]["status"] == "interrupted" and "Ray worker running row 3 died" in by_row[3]["error"]["message"]
    assert all(by_row[n]["status"] == "completed" for n in (1, 2, 4, 5))
    workers = {parent for _, parent, label in stamp_lines(ledger) if label.startswith("ray")}
    assert worker in workers and len(workers) >= 2  # rows ran in two (or more) Ray worker processes

    batch = json.loads(invoke("batch", "list", "--json").out)[0]["id"]
    assert json.loads(invoke("batch", "show", batch[:8], "--json").out)["counts"] == {"completed": 4, "interrupted": 1}
    wake.touch()
    try:
        again = run("batch", "resume", batch[:8], "--executor", "ray", "--ray-address", address, "--json",
                    env=env, timeout=180)
    finally:
        wake.unlink()
    assert again.code == 0, again.err
    (line,) = _lines(again.out)
    assert line["row"] == 3 and line["status"] == "completed"
    results = _lines(invoke("batch", "results", batch[:8]).out)
    assert [x["status"] for x in results] == ["completed"] * 5
    assert results[2]["task_id"] == by_row[3]["task_id"]  # the same task, continued
    labels = [label for _, label in stamps(ledger)]
    assert all(labels.count(f"ray{n}") == 1 for n in (1, 2, 4, 5))  # finished rows did not run again


def test_an_unreachable_ray_address_is_a_quick_clear_error(magent_home: Path, tmp_path: Path) -> None:
    flow = make_batch_flow(tmp_path)
    inputs = write_inputs(tmp_path / "rows.jsonl", [{"task": "one", "label": "x", "nap": 0}])
    r = run("batch", str(flow), "--inputs", str(inputs), "--executor", "ray", "--ray-address", "127.0.0.1:9",
            env={**LOCAL_ONLY, "LEDGER": str(tmp_path / "ledger")})
    assert r.code == 2
    assert r.err.startswith("magent: error: --ray-address 127.0.0.1:9: cannot reach a Ray cluster there"), r.err
    # Quick whatever the machine's speed: that message comes only from magent's own check of the
    # address, made before ray.init, so Ray's minute of connection retries never began.
    assert "nothing was started" in r.err and "cannot connect to Ray" not in r.err
    assert not (magent_home / "batches").exists() and not (magent_home / "tasks").exists()


def _wait_for(ledger: Path, labels: set[str], proc: subprocess.Popen, seconds: float = 180) -> list[tuple[int, int, str]]:
    """The ledger's lines once every label in ``labels`` is stamped (the batch still running)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        lines = stamp_lines(ledger)
        if labels <= {label for _, _, label in lines}:
            return lines
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    pytest.fail(f"rows {sorted(labels)} never all started")


def test_rows_share_warm_actors_beyond_the_cpu_count_and_a_killed_actor_s_rows_resume(
        magent_home: Path, tmp_path: Path, cluster: tuple[str, Path]) -> None:
    address, folder = cluster
    ledger, wake = folder / "ledger.txt", folder / "wake"
    ledger.unlink(missing_ok=True)
    env = {**LOCAL_ONLY, "LEDGER": str(ledger)}
    flow = make_batch_flow(tmp_path)
    rows = [{"task": f"row {n}", "label": f"act{n}", "nap": 120 if n <= 4 else 0} for n in range(1, 7)]
    inputs = write_inputs(tmp_path / "rows.jsonl", rows)
    proc = subprocess.Popen([sys.executable, "-m", "magent", "batch", str(flow), "--inputs", str(inputs),
                             "--executor", "ray", "--ray-address", address, "--concurrency", "4", "--json"],
                            env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Four rows nap at once on a cluster of two CPUs: a row reserves a quarter of one.
        lines = _wait_for(ledger, {f"act{n}" for n in range(1, 5)}, proc)
        parents = {label: parent for _, parent, label in lines if label.startswith("act")}
        by_actor: dict[int, list[int]] = {}
        for n in range(1, 5):
            by_actor.setdefault(parents[f"act{n}"], []).append(n)
        assert sorted(len(v) for v in by_actor.values()) == [2, 2], by_actor  # two actors, two rows each
        victim, killed = next(iter(by_actor.items()))
        assert victim != proc.pid
        time.sleep(1.5)  # the stamps' results written: the rows are in their naps
        os.kill(victim, 9)
        time.sleep(1)
        wake.touch()  # the other actor's naps end; rows 5 and 6 follow
        out, err = proc.communicate(timeout=240)
    finally:
        wake.unlink(missing_ok=True)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err
    by_row = {x["row"]: x for x in _lines(out)}
    assert sorted(by_row) == [1, 2, 3, 4, 5, 6]
    for n in killed:
        assert by_row[n]["status"] == "interrupted" and f"Ray worker running row {n} died" in by_row[n]["error"]["message"]
    assert all(by_row[n]["status"] == "completed" for n in set(range(1, 7)) - set(killed))
    # Quiet: what Ray's driver says of the dead actor stays out of stderr; only magent's summary is there.
    assert all(line.startswith(MAGENT_SUMMARY) for line in err.splitlines()), err

    batch = json.loads(invoke("batch", "show", "--json", json.loads(invoke("batch", "list", "--json").out)[0]["id"]).out)
    assert batch["counts"] == {"completed": 4, "interrupted": 2}
    assert batch["options"]["cpus_per_row"] == 0.25
    wake.touch()
    try:
        again = run("batch", "resume", batch["id"][:8], "--executor", "ray", "--ray-address", address, "--json",
                    env=env, timeout=180)
    finally:
        wake.unlink()
    assert again.code == 0, again.err
    assert sorted((x["row"], x["status"]) for x in _lines(again.out)) == [(n, "completed") for n in sorted(killed)]
    results = _lines(invoke("batch", "results", batch["id"][:8]).out)
    assert [x["status"] for x in results] == ["completed"] * 6
    assert all(results[n - 1]["task_id"] == by_row[n]["task_id"] for n in killed)  # continued, not run again
    labels = [label for _, label in stamps(ledger)]
    assert all(labels.count(f"act{n}") == 1 for n in set(range(1, 7)) - set(killed))


SESSION = """
import json, sys, magent
address, flow, ledger = sys.argv[1:4]
for batch, concurrency in (("first", 4), ("second", 4), ("third", 2)):  # the third: other actors
    rows = [{"task": f"{batch} {n}", "label": f"{batch}{n}", "nap": 0} for n in range(4)]
    done = magent.batch(flow, rows, executor="ray", ray_address=address, concurrency=concurrency)
    print(json.dumps({"batch": batch, "statuses": sorted(r.status for r in done.rows)}), flush=True)
"""


def test_a_python_session_s_batches_reuse_its_ray_actors(magent_home: Path, tmp_path: Path,
                                                        cluster: tuple[str, Path]) -> None:
    address, folder = cluster
    ledger = folder / "ledger.txt"
    ledger.unlink(missing_ok=True)
    flow = make_batch_flow(tmp_path)
    done = subprocess.run([sys.executable, "-c", SESSION, address, str(flow), str(ledger)], capture_output=True,
                          text=True, timeout=240, env={**os.environ, **LOCAL_ONLY, "LEDGER": str(ledger)})
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["statuses"] for line in done.stdout.splitlines()] == [["completed"] * 4] * 3
    assert done.stderr == ""  # Ray's own output is quiet unless asked for
    lines = stamp_lines(ledger)
    parents = {label: parent for _, parent, label in lines}
    first = {parents[f"first{n}"] for n in range(4)}
    servers = {pid for pid, _, label in lines if label.startswith("first")}
    assert len(servers) == len(first) < 4  # an actor's rows share its MCP server (one process per actor)
    second = {parents[f"second{n}"] for n in range(4)}
    assert second <= first  # the second batch's rows ran in the first batch's actor processes


@pytest.mark.parametrize("value, words", [
    ("0", "--cpus-per-row must be a number of CPUs above 0 (such as 0.25 or 1), not 0"),
    ("-1", "--cpus-per-row must be a number of CPUs above 0 (such as 0.25 or 1), not -1"),
    ("nan", "--cpus-per-row must be a number of CPUs above 0 (such as 0.25 or 1), not nan"),
])
def test_a_bad_cpus_per_row_is_one_clear_line(magent_home: Path, tmp_path: Path, value: str, words: str) -> None:
    flow = make_batch_flow(tmp_path)
    inputs = write_inputs(tmp_path / "rows.jsonl", [{"task": "one", "label": "x", "nap": 0}])
    r = invoke("batch", str(flow), "--inputs", str(inputs), "--executor", "ray", "--ray-address", "127.0.0.1:9",
               "--cpus-per-row", value)
    assert (r.code, r.err.strip()) == (2, f"magent: error: {words}")
    assert not (magent_home / "batches").exists()


def test_cpus_per_row_needs_ray_and_room_on_a_node(magent_home: Path, tmp_path: Path,
                                                  cluster: tuple[str, Path]) -> None:
    address, folder = cluster
    flow = make_batch_flow(tmp_path)
    inputs = write_inputs(tmp_path / "rows.jsonl", [{"task": "one", "label": "x", "nap": 0}])
    local = invoke("batch", str(flow), "--inputs", str(inputs), "--cpus-per-row", "0.5")
    assert (local.code, local.err.strip()) == (2, "magent: error: --cpus-per-row is for --executor ray (a local "
                                                  "batch's rows share this process)")
    big = run("batch", str(flow), "--inputs", str(inputs), "--executor", "ray", "--ray-address", address,
              "--cpus-per-row", "3", env={**LOCAL_ONLY, "LEDGER": str(folder / "unused")}, timeout=120)
    assert (big.code, big.err.strip()) == (2, "magent: error: --cpus-per-row 3: no node of the Ray cluster has "
                                              "that many CPUs (the largest has 2); nothing was started")
    assert not (magent_home / "batches").exists() and not (magent_home / "tasks").exists()


def test_a_row_whose_worker_died_before_its_task_was_mapped_is_not_started_in_every_view(
        magent_home: Path, tmp_path: Path) -> None:
    """Issue 34 item 6: such rows (a raylet killed while its workers start rows) were reported
    ``interrupted`` while the run went, then read ``not_started`` in ``batch show``. Here each
    actor process is killed (SIGKILL) at its second row, after the task exists and before the
    row's line in the batch's map: the row is ``not_started`` in both, and the resume starts it."""
    ledger = tmp_path / "ledger.txt"
    env = {**LOCAL_ONLY, "LEDGER": str(ledger)}
    flow = make_batch_flow(tmp_path)
    inputs = write_inputs(tmp_path / "rows.jsonl", [{"task": f"row {n}", "label": f"fp{n}", "nap": 0}
                                                    for n in range(1, 4)])
    with _cluster(tmp_path, LEDGER=str(ledger), MAGENT_FAILPOINT="after_task_created@2") as address:
        r = run("batch", str(flow), "--inputs", str(inputs), "--executor", "ray", "--ray-address", address,
                "--concurrency", "1", "--json", "--verbose", env=env, timeout=240)
        assert r.code == 1, r.err
        by_row = {x["row"]: x for x in _lines(r.out)}  # stdout: one JSON line a row, Ray's words aside
        assert {n: x["status"] for n, x in by_row.items()} == {1: "completed", 2: "not_started", 3: "completed"}
        assert "`magent batch resume` starts it" in by_row[2]["error"]["message"]
        # --verbose: Ray's own notice of the dead worker, on stderr, without colour into a pipe.
        assert [line for line in r.err.splitlines() if not line.startswith(MAGENT_SUMMARY)], r.err
        assert "\x1b[" not in r.err, r.err
        assert "rows not started start with `magent batch resume" in r.err

        shown = json.loads(invoke("batch", "show", "--json", json.loads(invoke("batch", "list", "--json").out)[0]["id"]).out)
        assert shown["counts"] == {"completed": 2, "not_started": 1}
        assert [(x["row"], x["status"]) for x in shown["rows_not_completed"]] == [(2, "not_started")]

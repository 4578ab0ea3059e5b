"""magent batch --executor ray against a real local Ray cluster (two worker CPUs, 127.0.0.1 only),
started once for this module: rows as Ray tasks writing the shared MAGENT_HOME, a worker killed
with SIGKILL mid-row and the batch resumed, and an address where no cluster answers."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.batchflow import make_batch_flow, stamp_lines, stamps, write_inputs
from support.cli import invoke, run

CLUSTER = """
import os, sys
import ray
ctx = ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
print(ctx.address_info["gcs_address"], flush=True)
sys.stdin.read()  # until the test closes stdin
ray.shutdown()
"""
LOCAL_ONLY = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
              "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
"""No usage reports, every Ray address on the loopback interface, and the cluster's token
given to the test's processes only (none written under ~/.ray)."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    """A Ray head with two CPUs in a process of ours (its workers inherit LEDGER and LEDGER_WAKE)."""
    folder = tmp_path_factory.mktemp("ray")
    env = {**os.environ, **LOCAL_ONLY, "LEDGER": str(folder / "ledger.txt"),
           "LEDGER_WAKE": str(folder / "wake")}
    proc = subprocess.Popen([sys.executable, "-c", CLUSTER], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    address = proc.stdout.readline().strip()
    assert address.startswith("127.0.0.1:"), address
    try:
        yield address, folder
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


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

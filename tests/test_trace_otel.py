"""OpenTelemetry export: ``magent trace ID --otlp URL`` and live export, against a real OTLP/HTTP
receiver on 127.0.0.1 (tests/support/otlp_receiver.py decodes what arrives with OpenTelemetry's
protobuf definitions)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from magent.models import TaskStatus
from magent.trace.spans import SpanBuilder
from support.cli import invoke
from support.crashflow import only_task, wait_for_nap
from support.delegateflow import make_delegation
from support.engine import task_dir
from support.holders import hold_task
from support.otlp_receiver import Receiver, closed_port_url

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
pytestmark = pytest.mark.slow
# magent as if the otel extra were not installed: the SDK and the OTLP exporter cannot be imported.
# (The command runs in-process, cli.app.main: the magent program itself ends with os._exit, so
# nothing would be printed after it.)
# (The small opentelemetry-api package is there either way: the mcp SDK depends on it and imports it.)
EXTRA = ("opentelemetry.sdk", "opentelemetry.exporter", "opentelemetry.proto")
NO_OTEL = ("import sys\n"
           f"EXTRA = {EXTRA!r}\n"
           "class Block:\n"
           "    def find_spec(self, name, path=None, target=None):\n"
           "        if name.startswith(EXTRA):\n"
           "            raise ImportError('blocked for the test: ' + name)\n"
           "sys.meta_path.insert(0, Block())\n"
           "sys.argv = ['magent'] + sys.argv[1:]\n"
           "try:\n    from magent.cli.app import main\n    main()\n"
           "finally:\n    print('MODULES', sorted(m for m in sys.modules if m.startswith(EXTRA)), file=sys.stderr)\n")


def run_example(target: str, *args: str, env: dict[str, str] | None = None):
    result = invoke("run", str(EXAMPLES / target), "-t", "example task", "--no-input", *args, env=env)
    assert result.code in (0, 3), result.out + result.err
    return result, result.out.splitlines()[0].split()[1]


def by_name(spans: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for span in sorted(spans, key=lambda s: s["start"]):
        out.setdefault(span["name"], []).append(span)
    return out


def test_a_finished_task_exports_as_genai_spans() -> None:
    _, task_id = run_example("workflows/write_review.yaml")
    with Receiver() as receiver:
        result = invoke("trace", task_id[:8], "--otlp", receiver.url)
        assert result.code == 0, result.err
        assert result.out == (f"exported 11 spans of task {task_id[:8]} to {receiver.url}/v1/traces "
                              f"(trace id {task_id.replace('-', '')})\n")
        spans = receiver.spans
    assert receiver.paths == ["/v1/traces"]
    assert {s["trace_id"] for s in spans} == {task_id.replace("-", "")}  # one trace: the task
    names = by_name(spans)
    (root,) = names["invoke_workflow write_review"]
    assert root["parent_span_id"] is None and root["attributes"]["gen_ai.operation.name"] == "invoke_workflow"
    assert root["attributes"]["gen_ai.workflow.name"] == "write_review"
    assert root["attributes"]["magent.task.status"] == "completed"
    assert root["resource"]["service.name"] == "magent" and root["scope"] == "magent"
    writers, critics = names["invoke_agent writer"], names["invoke_agent critic"]
    assert len(writers) == 2 and len(critics) == 2
    for node in writers + critics:
        assert node["parent_span_id"] == root["span_id"]
        assert node["attributes"]["gen_ai.operation.name"] == "invoke_agent"
        assert root["start"] <= node["start"] <= node["end"] <= root["end"]
    assert [c["attributes"]["magent.reflection.verdict"] for c in critics] == ["revise", "pass"]
    assert [w["attributes"]["magent.node.visit"] for w in writers] == [1, 2]

    chats = names["chat scripted"]
    trace = json.loads(invoke("trace", task_id, "--json").out)
    calls = [c for step in trace["steps"] for c in step["llm_calls"]]
    assert len(chats) == len(calls) == 5
    for chat, call in zip(chats, calls):
        a = chat["attributes"]
        assert chat["kind"] == "client" and a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.request.model"] == "scripted" and a["gen_ai.provider.name"] == "scripted"
        assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (call["tokens_in"], call["tokens_out"])
        assert a["magent.cost_usd"] == call["cost"]
        assert a["gen_ai.response.finish_reasons"] == [call["stop_reason"]]
    assert [c["parent_span_id"] for c in chats] == [writers[0]["span_id"]] * 2 + [critics[0]["span_id"],
                                                                                   writers[1]["span_id"],
                                                                                   critics[1]["span_id"]]
    assert {c["attributes"]["gen_ai.agent.name"] for c in chats} == {"writer", "critic"}
    (tool,) = names["execute_tool kv.set"]
    assert tool["parent_span_id"] == writers[0]["span_id"]  # beside the model call that asked for it
    assert tool["attributes"]["gen_ai.tool.call.id"] == "call_writer_1_1"
    assert tool["attributes"]["magent.tool.outcome"] == "SUCCESS" and tool["status"]["code"] == 0
    assert not any("Tidy" in json.dumps(s["attributes"]) for s in spans)  # no prompt, reply or result text


def test_a_run_exports_live_the_same_spans_as_afterwards() -> None:
    with Receiver() as live:
        result, task_id = run_example("workflows/triage.yaml", "--set", "ticket=checkout down",
                                      "--set", "priority=high", env={"OTEL_EXPORTER_OTLP_ENDPOINT": live.url})
        assert result.code == 3 and "warning" not in result.err  # paused at the approval gate
        resumed = invoke("resume", task_id, "--approve", "-m", "paged", "--no-input",
                         env={"OTEL_EXPORTER_OTLP_ENDPOINT": live.url})
        assert resumed.code == 0 and resumed.err == ""
        live_spans = list(live.spans)
    with Receiver() as later:
        assert invoke("trace", task_id, "--otlp", later.url).code == 0
        later_spans = list(later.spans)

    def shape(spans: list[dict]) -> dict:
        return {s["span_id"]: (s["parent_span_id"], s["name"], s["start"], s["end"], s["attributes"],
                               [e["name"] for e in s["events"]], s["status"]) for s in spans}

    assert shape(live_spans) == shape(later_spans)  # one trace whether exported live or later
    runs = [s for s in live_spans if s["parent_span_id"] is None]
    assert [r["attributes"]["magent.run.resumed"] for r in sorted(runs, key=lambda r: r["start"])] == [False, True]
    first, second = sorted(runs, key=lambda r: r["start"])
    assert "magent.awaiting_human" in [e["name"] for e in first["events"]]
    decision = next(e for e in second["events"] if e["name"] == "magent.human_decision")
    assert decision["attributes"]["magent.decision.action"] == "approve"
    tool_node = next(s for s in live_spans if s["name"] == "tool store")
    assert tool_node["parent_span_id"] == first["span_id"]
    (kv_set,) = [s for s in live_spans if s["name"] == "execute_tool kv.set"]
    assert kv_set["parent_span_id"] == tool_node["span_id"]


def test_the_endpoint_from_config_with_a_secret_header(magent_home: Path) -> None:
    (magent_home / "config").mkdir(parents=True, exist_ok=True)
    with Receiver() as receiver:
        (magent_home / "config" / "otel.yaml").write_text(
            f"endpoint: {receiver.url}\nheaders: {{x-collector-token: '${{COLLECTOR_TOKEN}}'}}\ntimeout_seconds: 4\n")
        secret = "tok-" + "9" * 24
        result, task_id = run_example("workflows/write_review.yaml", env={"COLLECTOR_TOKEN": secret})
        assert result.code == 0 and result.err == ""
        assert receiver.headers and all(h["x-collector-token"] == secret for h in receiver.headers)
        assert len(receiver.spans) == 11
    for path in magent_home.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


def test_an_unreachable_endpoint_never_fails_a_run() -> None:
    url = closed_port_url()
    result, task_id = run_example("workflows/write_review.yaml", env={"OTEL_EXPORTER_OTLP_ENDPOINT": url})
    assert result.code == 0
    assert result.err == (f"magent: warning: OpenTelemetry: 11 of 11 spans did not reach {url}/v1/traces "
                          f"(connection refused); send them again with magent trace {task_id[:8]} --otlp "
                          f"{url}/v1/traces\n")
    assert "completed" in invoke("trace", task_id).out.splitlines()[0]
    with Receiver() as receiver:  # and they can be sent later, as it says
        assert invoke("trace", task_id[:8], "--otlp", receiver.url).code == 0
        assert len(receiver.spans) == 11


def test_retries_are_bounded() -> None:
    _, task_id = run_example("workflows/write_review.yaml")
    with Receiver(fail_next=1) as flaky:  # one 503, then fine: the retry gets it through
        assert invoke("trace", task_id, "--otlp", flaky.url).code == 0
        assert flaky.requests == 2 and len(flaky.spans) == 11
    with Receiver(fail_next=1000) as down:  # always 503: a few tries, then a clear error
        result = invoke("trace", task_id, "--otlp", down.url)
        assert result.code == 2
        assert result.err.startswith(f"magent: error: could not export task {task_id[:8]} to {down.url}/v1/traces: "
                                     "Service Unavailable (gave up after ")
        assert result.err.endswith("; nothing was sent\n") and result.err.count("\n") == 1
        assert 2 <= down.requests <= 4


def test_bad_input_is_one_line_exit_2(magent_home: Path) -> None:
    _, task_id = run_example("workflows/write_review.yaml")
    for args, message in [
        (["--otlp", "localhost:4318"], "'localhost:4318' is not an OTLP/HTTP endpoint: give an http:// or https:// URL"),
        (["--otlp", "http://127.0.0.1:1", "--html"], "--otlp does not go with --html, --follow, --step or --json"),
        (["--otlp", closed_port_url()], "connection refused (gave up after "),
    ]:
        result = invoke("trace", task_id, *args)
        assert result.code == 2 and message in result.err and result.err.count("\n") == 1, (args, result.err)
    task = task_dir(task_id)
    task.save_task(task.load_task().model_copy(update={"status": TaskStatus.running}))
    with hold_task(task_id):
        result = invoke("trace", task_id, "--otlp", "http://127.0.0.1:1")
        assert result.code == 2 and result.err == (
            f"magent: error: task {task_id[:8]} is still running: export it once it stops (or set "
            "OTEL_EXPORTER_OTLP_ENDPOINT and runs export as they go)\n")
    (magent_home / "config").mkdir(parents=True, exist_ok=True)
    (magent_home / "config" / "otel.yaml").write_text("endpoint: http://127.0.0.1:1\ntimeout: 3\n")
    result = invoke("run", str(EXAMPLES / "workflows/write_review.yaml"), "-t", "x", "--no-input")
    assert result.code == 2 and "otel.yaml:2:1: timeout: unknown field (did you mean 'timeout_seconds'?)" in result.err
    assert not list((magent_home / "tasks").iterdir()) or len(list((magent_home / "tasks").iterdir())) == 1
    (magent_home / "config" / "otel.yaml").unlink()
    result = invoke("run", str(EXAMPLES / "workflows/write_review.yaml"), "-t", "x", "--no-input",
                    env={"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"})
    assert result.code == 2 and "'collector:4318' is not an OTLP/HTTP endpoint" in result.err


def test_without_the_extra_nothing_imports_the_sdk_and_runs_go_on(tmp_path: Path, python_exe: str) -> None:
    import subprocess

    def magent(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        import os

        return subprocess.run([python_exe, "-c", NO_OTEL, *args], capture_output=True, text=True, timeout=120,
                              env={**os.environ, **(env or {})})

    plain = magent("run", str(EXAMPLES / "workflows/write_review.yaml"), "-t", "x", "--no-input")
    assert plain.returncode == 0 and plain.stderr.rsplit("MODULES", 1)[1].strip() == "[]"
    task_id = plain.stdout.split()[1]
    asked = magent("run", str(EXAMPLES / "workflows/write_review.yaml"), "-t", "x", "--no-input",
                   env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"})
    assert asked.returncode == 0
    assert asked.stderr.startswith("magent: warning: OTEL_EXPORTER_OTLP_ENDPOINT asks for OpenTelemetry export, "
                                   "but the SDK is not installed (pip install 'magent-runner[otel]'); this run is not "
                                   "exported\n")
    export = magent("trace", task_id, "--otlp", "http://127.0.0.1:1")
    assert export.returncode == 2
    assert export.stderr.startswith("magent: error: --otlp needs the OpenTelemetry SDK: pip install 'magent-runner[otel]'\n")
    for args in (["trace", task_id], ["trace", task_id, "--html", "-"], ["tasks", "list"]):
        out = magent(*args)
        assert out.returncode == 0 and out.stderr.rsplit("MODULES", 1)[1].strip() == "[]", args


def test_sub_agent_sessions_are_spans_under_the_call_that_delegated(tmp_path: Path, magent_home: Path) -> None:
    flow = make_delegation(tmp_path)  # lead calls agents.worker (3 model calls, 3 tool calls), then agents.scribe
    with Receiver() as live:
        result = invoke("run", str(flow), "-t", "the lead's task",
                        env={"LEDGER": str(tmp_path / "ledger.txt"), "OTEL_EXPORTER_OTLP_ENDPOINT": live.url})
        assert result.code == 0 and result.err == "", result.err
        spans = list(live.spans)
    task_id = only_task(magent_home)
    ids = {s["span_id"]: s for s in spans}
    names = by_name(spans)
    (root,) = names["invoke_workflow delegate"]
    (lead,) = [s for s in names["invoke_agent lead"] if s["attributes"].get("magent.node.name") == "lead"]
    assert lead["parent_span_id"] == root["span_id"]
    (to_worker,) = names["execute_tool agents.worker"]
    (to_scribe,) = names["execute_tool agents.scribe"]
    (worker,) = names["invoke_agent worker"]
    (scribe,) = names["invoke_agent scribe"]
    assert to_worker["parent_span_id"] == lead["span_id"] == to_scribe["parent_span_id"]
    # Each session is a span under the tool call that delegated to it, inside it in time.
    assert worker["parent_span_id"] == to_worker["span_id"] and scribe["parent_span_id"] == to_scribe["span_id"]
    assert to_worker["start"] <= worker["start"] <= worker["end"] <= to_worker["end"]
    trace = json.loads(invoke("trace", task_id, "--json").out)
    sessions = {info["agent"]: sid for sid, info in trace["sub_agent_sessions"].items()}
    a = worker["attributes"]
    assert (a["gen_ai.operation.name"], a["gen_ai.agent.name"], a["magent.session.id"]) == (
        "invoke_agent", "worker", sessions["worker"])
    assert a["gen_ai.conversation.id"] == sessions["worker"] and a["magent.session.status"] == "completed"
    assert a["magent.session.kind"] == "agent" and a["magent.session.depth"] == 1 and worker["status"]["code"] != 2
    # The sub-agents' own model and tool calls hang under their session; the lead's under its node.
    under = {}
    for span in spans:
        if span["name"].startswith(("chat ", "execute_tool ")):
            parent = ids[span["parent_span_id"]]
            under.setdefault(parent["name"], []).append(span["name"])
    assert sorted(under["invoke_agent worker"]) == ["chat scripted"] * 3 + ["execute_tool kv.set"] + [
        "execute_tool ledger.append"] * 2
    assert sorted(under["invoke_agent scribe"]) == ["chat scripted"] * 2 + ["execute_tool ledger.append"]
    assert sorted(under["invoke_agent lead"]) == ["chat scripted"] * 3 + ["execute_tool agents.scribe",
                                                                          "execute_tool agents.worker"]
    worker_chats = [s for s in spans if s["parent_span_id"] == worker["span_id"] and s["name"] == "chat scripted"]
    assert {c["attributes"]["gen_ai.agent.name"] for c in worker_chats} == {"worker"}
    assert {c["attributes"]["gen_ai.conversation.id"] for c in worker_chats} == {sessions["worker"]}
    with Receiver() as later:  # the same spans when the finished task is exported afterwards
        assert invoke("trace", task_id, "--otlp", later.url).code == 0
        assert {s["span_id"]: s["parent_span_id"] for s in later.spans} == {
            s["span_id"]: s["parent_span_id"] for s in spans}


def test_sub_agents_paused_for_approval_across_resumed_runs(tmp_path: Path, magent_home: Path) -> None:
    """Two sub-agents at once, each pausing for approvals: every run is exported live by a new
    process, and each sub-agent's span still sits under its delegating call, named."""
    flow = make_delegation(tmp_path, approve=True, at_once=True)
    with Receiver() as live:
        env = {"LEDGER": str(tmp_path / "ledger.txt"), "OTEL_EXPORTER_OTLP_ENDPOINT": live.url}
        result = invoke("run", str(flow), "-t", "needs approvals", "--no-input", env=env)
        task_id, runs = only_task(magent_home), 1
        while result.code == 3 and runs < 6:
            result = invoke("resume", task_id, "--approve", "--no-input", env=env)
            runs += 1
        assert result.code == 0 and runs == 4, result.err  # paused three times: a, b (worker), c (scribe)
        spans = list(live.spans)
    ids = {s["span_id"]: s for s in spans}
    assert len(ids) == len(spans)  # no span id twice, though sessions span several runs
    roots = [s for s in spans if s["parent_span_id"] is None]
    assert len(roots) == 4 and all(s["parent_span_id"] in ids for s in spans if s not in roots)

    def run_of(span: dict) -> dict:
        while span["parent_span_id"]:
            span = ids[span["parent_span_id"]]
        return span

    sessions = [s for s in spans if "magent.session.id" in s["attributes"]]
    assert {s["name"] for s in sessions} == {"invoke_agent worker", "invoke_agent scribe"}
    for session in sessions:  # in every run it appears in: under that run's call to agents.NAME
        caller = ids[session["parent_span_id"]]
        assert caller["name"] == "execute_tool " + session["name"].replace("invoke_agent ", "agents.")
        assert run_of(caller) is run_of(session)
    finished = [s for s in sessions if s["attributes"].get("magent.session.status") == "completed"]
    assert sorted(s["name"] for s in finished) == ["invoke_agent scribe", "invoke_agent worker"]
    assert all(s["attributes"]["magent.unfinished"] for s in sessions if s not in finished)
    appends = [s for s in spans if s["name"] == "execute_tool ledger.append"]
    assert len(appends) == 3 and all(ids[s["parent_span_id"]] in sessions for s in appends)
    with Receiver() as later:
        assert invoke("trace", task_id, "--otlp", later.url).code == 0
        assert {s["span_id"]: (s["parent_span_id"], s["name"]) for s in later.spans} == {
            s["span_id"]: (s["parent_span_id"], s["name"]) for s in spans}


def test_a_run_killed_with_sigkill_still_has_its_spans_sent(tmp_path: Path, magent_home: Path) -> None:
    """The exporter is a process of its own: when the run dies (kill -9 inside a sub-agent's
    tool call), it ends the open spans as unfinished and sends them."""
    flow = make_delegation(tmp_path, nap=600)
    with Receiver() as live:
        env = {**os.environ, "LEDGER": str(tmp_path / "ledger.txt"), "OTEL_EXPORTER_OTLP_ENDPOINT": live.url}
        proc = subprocess.Popen([sys.executable, "-m", "magent", "run", str(flow), "-t", "nap"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_for_nap(magent_home, proc)
            os.killpg(proc.pid, signal.SIGKILL)
        finally:
            proc.wait(timeout=30)
        deadline = time.monotonic() + 60  # only a hang gets here: the exporter sends at once
        while not any(s["parent_span_id"] is None for s in live.spans) and time.monotonic() < deadline:
            time.sleep(0.1)
        spans = list(live.spans)
    names = by_name(spans)
    (root,) = names["invoke_workflow delegate"]
    (nap,) = names["execute_tool ledger.nap"]
    (worker,) = names["invoke_agent worker"]
    assert root["attributes"]["magent.unfinished"] == nap["attributes"]["magent.unfinished"]
    assert "magent.task.status" not in root["attributes"]  # it never finished
    assert nap["parent_span_id"] == worker["span_id"] and "magent.unfinished" in worker["attributes"]
    assert worker["parent_span_id"] == names["execute_tool agents.worker"][0]["span_id"]
    assert len(names["execute_tool ledger.append"]) == 1  # a, before the nap: what happened is there
    task_id = only_task(magent_home)
    with Receiver() as later:  # the same spans, from what the run wrote before it died
        assert invoke("trace", task_id, "--otlp", later.url).code == 0
        assert {s["span_id"]: s["name"] for s in later.spans} == {s["span_id"]: s["name"] for s in spans}


def test_a_failed_sub_agent_session_is_an_error_span() -> None:
    task_id = "0b0c6a52-7c1e-4b8f-9a51-0f3f2f1c9a10"
    t = "2026-01-01T00:00:0{}.000+00:00"
    events = [
        {"seq": 1, "ts": t.format(0), "type": "run_started", "workflow": "w"},
        {"seq": 2, "ts": t.format(0), "type": "node_started", "node": "plan", "kind": "agent", "agent": "boss", "visit": 1},
        {"seq": 3, "ts": t.format(1), "type": "tool_call", "node": "plan", "call_id": "c1", "tool": "agents.helper"},
        {"seq": 4, "ts": t.format(1), "type": "session_started", "node": "plan", "session": "s-1", "kind": "agent",
         "agent": "helper", "key": "call:c1", "depth": 1},
        {"seq": 5, "ts": t.format(2), "type": "tool_call", "node": "plan", "call_id": "c2", "tool": "agents.deep",
         "session": "s-1"},
        {"seq": 6, "ts": t.format(2), "type": "session_started", "node": "plan", "session": "s-2", "kind": "agent",
         "agent": "deep", "key": "call:c2", "depth": 2, "parent_session": "s-1"},
        {"seq": 7, "ts": t.format(3), "type": "llm_call", "node": "plan", "agent": "deep", "model": "m",
         "tokens_in": 3, "tokens_out": 4, "latency_ms": 500, "session": "s-2"},
        {"seq": 8, "ts": t.format(4), "type": "session_finished", "node": "plan", "session": "s-2",
         "status": "failed", "error": "ran out of iterations"},
        {"seq": 9, "ts": t.format(4), "type": "tool_result", "node": "plan", "call_id": "c2", "tool": "agents.deep",
         "outcome": "FAILURE", "session": "s-1"},
        {"seq": 10, "ts": t.format(5), "type": "session_finished", "node": "plan", "session": "s-1", "status": "completed"},
        {"seq": 11, "ts": t.format(5), "type": "tool_result", "node": "plan", "call_id": "c1", "tool": "agents.helper",
         "outcome": "SUCCESS"},
        {"seq": 12, "ts": t.format(6), "type": "node_finished", "node": "plan", "status": "ok"},
        {"seq": 13, "ts": t.format(6), "type": "run_finished", "status": "completed"},
    ]
    builder = SpanBuilder(task_id)
    spans = {s.name: s for ev in events for s in builder.feed(ev)}
    assert not builder.close()
    helper, deep = spans["invoke_agent helper"], spans["invoke_agent deep"]
    assert helper.parent_id == spans["execute_tool agents.helper"].span_id and helper.error is None
    assert deep.parent_id == spans["execute_tool agents.deep"].span_id  # nested: under the helper's call
    assert spans["execute_tool agents.deep"].parent_id == helper.span_id
    assert spans["chat m"].parent_id == deep.span_id
    assert deep.error == "ran out of iterations" and deep.attributes["magent.session.status"] == "failed"
    assert all(s.end_ns >= s.start_ns for s in spans.values())


def test_a_crashed_run_closes_its_spans_as_unfinished() -> None:
    t = "2026-01-01T00:00:0{}.000+00:00"
    builder = SpanBuilder("0b0c6a52-7c1e-4b8f-9a51-0f3f2f1c9a10")
    for ev in [{"seq": 1, "ts": t.format(0), "type": "run_started", "workflow": "w"},
               {"seq": 2, "ts": t.format(1), "type": "node_started", "node": "a", "kind": "agent", "agent": "x"},
               {"seq": 3, "ts": t.format(2), "type": "tool_call", "node": "a", "call_id": "c", "tool": "t.slow"}]:
        assert builder.feed(ev) == []
    spans = builder.close()
    assert [s.name for s in spans] == ["execute_tool t.slow", "invoke_agent x", "invoke_workflow w"]
    assert all(s.attributes["magent.unfinished"] for s in spans)
    assert all(s.end_ns == spans[-1].end_ns for s in spans)  # at the last thing that was written


def test_a_run_skips_the_telemetry_settings_only_when_none_can_be_set(magent_home: Path, monkeypatch) -> None:
    """``may_export`` (what a run asks before loading ``telemetry``) is False only where
    ``configured()`` finds nothing: an endpoint variable, an otel.yaml (even a broken one, which
    ``configured`` reports) or OTEL_SDK_DISABLED each decide it as they decide ``configured``."""
    from magent.errors import MagentError
    from magent.trace import may_export
    from magent.trace.telemetry import configured

    config = magent_home / "config"
    config.mkdir(parents=True, exist_ok=True)
    files = {"none": None, "empty": "", "endpoint": "endpoint: http://127.0.0.1:4318\n", "broken": "endpoint: [1\n",
             "no endpoint": "timeout_seconds: 3\n", "a folder": ...}
    variables = [{}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
                 {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": " http://127.0.0.1:4318/v1/traces "},
                 {"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
                 {"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}]
    seen = set()
    for name, text in files.items():
        path = config / "otel.yaml"
        if path.is_dir():
            path.rmdir()
        path.unlink(missing_ok=True)
        if text is ...:
            path.mkdir()
        elif text is not None:
            path.write_text(text)
        for env in variables:
            for key in ("OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
                monkeypatch.delenv(key, raising=False)
            for key, value in env.items():
                monkeypatch.setenv(key, value)
            try:
                found = configured() is not None
            except MagentError:
                found = True  # a broken setting: the run must load telemetry to report it
            if not may_export():
                assert not found, (name, env)
            seen.add((may_export(), found))
    assert seen == {(False, False), (True, True), (True, False)}


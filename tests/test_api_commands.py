"""The API behind the rest of the CLI: each function gives a user the facts the command shows
(checked against the command's own output), raises the command's error for bad input, and is
typed for mypy --strict."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

import magent
from magent.errors import (
    CheckpointCorruptError, CheckpointNotFoundError, ConfigError, TaskNotFoundError, TaskStateError,
    ToolError, UsageError,
)
from magent.models import Event
from support.cli import invoke
from support.homes import HomeBuilder, standard_home

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
BAD = Path(__file__).parent / "fixtures" / "configs" / "bad"


def _json(*args: str) -> object:
    r = invoke(*args)
    assert r.code == 0, r.err
    return json.loads(r.out)


# checkpoints ------------------------------------------------------------------------------

def test_checkpoints_lists_what_the_cli_lists(magent_home: Path) -> None:
    std = standard_home()
    listed = magent.checkpoints(std.completed.id[:8])
    assert listed.task.id == std.completed.id and listed.problems == []
    assert [c.sequence for c in listed.checkpoints] == [0, 1, 2]
    assert listed.checkpoints[-1].position == "END"
    assert listed.as_dict() == _json("checkpoints", "list", std.completed.id, "--json")


def test_checkpoints_names_a_corrupt_one_and_changes_nothing(magent_home: Path) -> None:
    std = standard_home()
    path = std.completed.checkpoint_file(1)
    path.write_bytes(path.read_bytes()[:40])
    listed = magent.checkpoints(std.completed.id)
    assert [c.corrupt for c in listed.checkpoints] == [False, True, False]
    (problem,) = listed.problems
    assert problem.startswith(f"task {std.completed.id[:8]} checkpoint_001.json: not valid JSON")
    assert path.exists() and len(path.read_bytes()) == 40


def test_checkpoint_has_the_full_state_with_its_messages(magent_home: Path) -> None:
    std = standard_home()
    latest = magent.checkpoint(std.completed.id)
    assert latest.checkpoint.sequence == 2 and latest.task_id == std.completed.id
    assert len(latest.state.messages) == 5 and latest.state.routing_key == "pass"
    assert latest.checkpoint.state.messages == []     # stored without them: they live in entries
    assert latest.as_dict() == _json("checkpoints", "show", std.completed.id, "2", "--json")
    assert magent.checkpoint(std.completed.id, 0).checkpoint.sequence == 0


def test_checkpoint_errors_say_what_exists(magent_home: Path) -> None:
    std = standard_home()
    with pytest.raises(CheckpointNotFoundError, match=r"has no checkpoint 9 \(it has checkpoints 0-2\)"):
        magent.checkpoint(std.completed.id, 9)
    path = std.completed.checkpoint_file(2)
    path.write_bytes(b"{")
    with pytest.raises(CheckpointCorruptError, match="the latest valid one is 1"):
        magent.checkpoint(std.completed.id, 2)
    with pytest.raises(TaskNotFoundError):
        magent.checkpoints("ffffffff")


def test_checkpoints_read_the_home_given_per_call(tmp_path: Path, magent_home: Path) -> None:
    other = tmp_path / "other"
    std = standard_home(other)
    assert magent.checkpoints(std.completed.id, home=other).task.id == std.completed.id
    with pytest.raises(TaskNotFoundError):
        magent.checkpoints(std.completed.id)      # not in $MAGENT_HOME


# validate ---------------------------------------------------------------------------------

def test_validate_says_kind_and_verdict_per_file_as_the_cli_does() -> None:
    files = [EXAMPLES / "workflows" / "write_review.yaml", EXAMPLES / "agents" / "note_taker.yaml",
             BAD / "duplicate_key.yaml"]
    results = magent.validate(*files)
    assert [(r.kind, r.ok) for r in results[:2]] == [("workflow", True), ("agent", True)]
    assert "nodes, entry" in results[0].summary
    bad = results[2]
    assert not bad.ok and bad.error is not None and "duplicate_key.yaml:" in bad.error
    r = invoke("validate", *map(str, files), "--json")
    assert r.code == 2 and json.loads(r.out) == [x.as_dict() for x in results]
    assert magent.validate() == []


# tools ------------------------------------------------------------------------------------

@pytest.fixture
def mcp_file(tmp_path: Path, toolbox_url: str) -> Path:
    """The toolbox as ``tb`` (the session's server over streamable HTTP: these tests need its tools,
    not a process of their own) and a server that cannot start."""
    path = tmp_path / "servers.yaml"
    path.write_text(yaml.safe_dump({"servers": [
        {"name": "tb", "transport": "streamable_http", "config": {"url": toolbox_url}},
        {"name": "ghost", "transport": "stdio", "config": {"command": "no-such-server-xyz"}},
    ]}, sort_keys=False))
    return path


@pytest.mark.slow
def test_tools_lists_each_tool_with_its_arguments_and_names_servers_that_failed(
        magent_home: Path, mcp_file: Path) -> None:
    tb = magent.list_tools("tb", mcp=[mcp_file])
    add = next(t for t in tb.tools if t.full_name == "tb.add")
    assert "Add two integers." in add.description and add.input_schema["required"] == ["a", "b"]
    assert {t.server for t in tb.tools} == {"tb"} and tb.problems == []
    everything = magent.list_tools(mcp=[mcp_file])
    names = {t.full_name for t in everything.tools}
    assert {"kv.get", "tb.echo"} <= names
    (problem,) = everything.problems
    assert problem.startswith("MCP server 'ghost'") and "not found on PATH" in problem
    with pytest.raises(UsageError, match="no server named 'nosuch'"):
        magent.list_tools("nosuch", mcp=[mcp_file])


@pytest.mark.slow
def test_call_tool_returns_the_result_a_failure_included(magent_home: Path, mcp_file: Path) -> None:
    ok = magent.call_tool("tb.add", {"a": 20, "b": 22}, mcp=[mcp_file])
    assert ok.ok and ok.content == "42" and ok.tool == "tb.add"
    failed = magent.call_tool("tb.fail", {"reason": "no disk"}, mcp=[mcp_file])
    assert not failed.ok and failed.outcome == "FAILURE" and "no disk" in failed.content
    with pytest.raises(UsageError, match="'b' is required"):
        magent.call_tool("tb.add", {"a": 1}, mcp=[mcp_file])
    with pytest.raises(ToolError, match="not found on PATH"):
        magent.call_tool("ghost.anything", mcp=[mcp_file])
    stored = magent.call_tool("kv.set", {"key": "door", "value": "blue"})   # built in: no mcp
    assert stored.ok and stored.content == "stored door"


# replay -----------------------------------------------------------------------------------

def test_replay_runs_a_finished_task_again_and_says_it_matched(magent_home: Path) -> None:
    done = magent.run(EXAMPLES / "workflows" / "write_review.yaml", "Write copy for Tidy")
    seen: list[Event] = []
    report = magent.replay(done.task_id[:8], on_event=seen.append)
    assert report.matched and report.divergence is None and report.original == done.task_id
    assert report.model_calls > 0 and report.step is None and seen[-1].type == "run_finished"
    again = magent.task(report.replay)
    assert again.success and again.output == done.output
    assert {r.id for r in magent.tasks()} == {done.task_id, report.replay}


def test_replay_refuses_a_task_that_has_not_finished(magent_home: Path) -> None:
    paused = magent.run(EXAMPLES / "workflows" / "publish.yaml", "Announce the Friday closure")
    with pytest.raises(TaskStateError, match="awaiting_human; only completed or failed"):
        magent.replay(paused.task_id)


# retention --------------------------------------------------------------------------------

def _aged(home: HomeBuilder, days: float, **fields: object) -> str:
    t = home.task(status="completed",
                  completed_at=datetime.now(timezone.utc) - timedelta(days=days), **fields)
    return t.id


def test_sweep_removes_what_the_policy_lets_go_and_a_dry_run_only_says_so(magent_home: Path) -> None:
    (magent_home / "config").mkdir(parents=True)
    (magent_home / "config" / "retention_policy.yaml").write_text("default_days: 10\n")
    home = HomeBuilder()
    old, young = _aged(home, 30), _aged(home, 1)
    plan = magent.sweep(dry_run=True)
    assert plan.dry_run and [v.task_id for v in plan.verdicts if v.action == "remove"] == [old]
    assert (magent_home / "tasks" / old).is_dir()
    swept = magent.sweep()
    assert not swept.dry_run and swept.count("remove") == 1 and swept.problems == []
    assert swept.bytes_freed > 0
    assert {r.id for r in magent.tasks()} == {young}


def test_retention_plan_shows_the_policy_and_when_each_task_may_go(magent_home: Path) -> None:
    home = HomeBuilder()
    kept = _aged(home, 1, tags=["critical"])
    plan = magent.retention_plan()
    assert plan.policy_file is None and plan.policy.default_days > 0
    (verdict,) = plan.report.verdicts
    assert verdict.task_id == kept and verdict.eligible_at is not None and verdict.eligible_at > plan.report.at
    doc = _json("retention", "show", "--json")
    assert doc["tasks"] == plan.as_dict()["tasks"] and doc["policy"] == plan.as_dict()["policy"]
    (magent_home / "config").mkdir(parents=True, exist_ok=True)
    (magent_home / "config" / "retention_policy.yaml").write_text("default_days: soon\n")
    with pytest.raises(ConfigError, match="retention_policy.yaml"):
        magent.sweep()
    assert {r.id for r in magent.tasks()} == {kept}


# typing -----------------------------------------------------------------------------------

# Type-checked under mypy --strict by tests/test_api.py (one mypy run checks all the API's uses).
TYPED_USE = '''
from pathlib import Path

import magent

listed: magent.Checkpoints = magent.checkpoints("3f2a")
numbers: list[int] = [c.sequence for c in listed.checkpoints]
view: magent.CheckpointView = magent.checkpoint("3f2a", numbers[-1], home=Path("/tmp/h"))
routing: str | None = view.state.routing_key
ok: list[bool] = [r.ok for r in magent.validate("a.yaml", Path("b.yaml"))]
listing: magent.ToolList = magent.list_tools("tb", mcp=["servers.yaml"])
required: object = listing.tools[0].input_schema.get("required")
called: str = magent.call_tool("kv.get", {"key": "door"}).content
matched: bool = magent.replay("3f2a").matched
freed: int = magent.sweep(dry_run=True).bytes_freed
plan: magent.RetentionPlan = magent.retention_plan()
days: int = plan.policy.default_days
reading: magent.TraceReading = magent.read_trace("3f2a", home=Path("/tmp/h"))
tree: str = reading.text(session="item:1")
step: dict[str, object] = reading.step(3)
bodies: list[dict[str, object]] = reading.requests(3).calls
alone: dict[str, object] = reading.as_dict(session="item:1")
page: magent.HtmlReport = magent.trace_html("3f2a", Path("t.html"))
sent: magent.TraceExport = magent.export_trace("3f2a", "http://localhost:4318")
ended: str = magent.follow_trace("3f2a", lambda event: print(event.type))
details: magent.TaskDetails = magent.task_details("3f2a")
calls: int = details.result.answered_calls
answering: list[bool] = [s.ok for s in magent.mcp_servers(mcp=["servers.yaml"])]
home: magent.Home = magent.init(home="/tmp/h")
written: Path = magent.new_agent("bot", folder="agents", model="ollama/llama3.2", force=True)
flow: Path = magent.new_workflow("review", home=Path("/tmp/h"))
stored: list[magent.StoredPrompt] = magent.prompts(home="/tmp/h")
versions: list[str] = magent.prompt("triage", "2").versions
added: str | None = magent.add_prompt("triage", "3", "Hi {{ task }}", description="short").description
from_file: dict[str, object] = magent.add_prompt("triage", "4", file=Path("t.txt")).as_dict(text=False)
folder: Path = magent.prompts_folder()
ran: magent.BatchRun = magent.batch("triage.yaml", Path("rows.jsonl"), concurrency=4, max_failures=2,
                                    set={"priority": "high"}, skip_bad_rows=True, tags=["t"], max_rpm=60)
outputs: list[object] = [r.output for r in ran.results]
rows: list[magent.BatchRow] = magent.batch("triage.yaml", [{"task": "a"}], executor="local").rows
first: magent.AgentResult | None = rows[0].result
again: magent.BatchRun = magent.resume_batch(ran.batch_id, approve_all=True, retry_failed=True, home="/tmp/h")
counted: dict[str, int] = again.counts
listed_batches: list[magent.BatchSummary] = magent.batches()
running: bool = listed_batches[0].running
shown: magent.BatchDetails = magent.batch_details("7c1e")
waiting: list[int] = [r.row for r in shown.not_completed]
lines: list[dict[str, object]] = [r.as_dict() for r in magent.batch_results("7c1e")]
remembered: list[str] = [m.content for m in magent.memories(scope="agent", types=["semantic"], status="all").entries]
total: int = magent.memories(limit=5, home="/tmp/h").total
scores: list[float] = [h.score for h in magent.search_memory("weekly sync", top_k=3, min_score=0.2).hits]
searched: dict[str, object] = magent.search_memory("tea").as_dict()
content: str = magent.memory_entry("3f2a").content
new_id: str = magent.add_memory("Deploys on Thursdays", scope="workflow:release", importance=0.8).entry.id
forgotten: list[str] = [m.id for m in magent.forget_memories(["3f2a", "9c1d"])]
exported: list[str] = magent.export_memories(Path("m.jsonl"), status="active")
imported: int = magent.import_memories("m.jsonl").imported
merged: int = len(magent.consolidate_memory(dry_run=True, evict=False).merged)


def on_start(start: magent.BatchStart) -> None:
    print(start.batch_id, start.rows, [s.error for s in start.skipped])


def on_progress(progress: magent.BatchProgress) -> None:
    print(progress.done, progress.finished.status if progress.finished else "started")
paths: list[str] = [e.path for e in magent.examples()]
copied: list[Path] = magent.copy_examples("examples", force=True).copied


async def later() -> bool:
    batched = await magent.abatch("t.yaml", "rows.csv", on_start=on_start, on_progress=on_progress)
    resumed = await magent.aresume_batch(batched.batch_id, concurrency=2)
    listed = await magent.alist_tools()
    return bool(listed.tools) and (await magent.acall_tool("kv.get", {"key": "x"})).ok \
        and (await magent.areplay("3f2a")).matched and resumed.stopped_by is None
'''


def test_no_api_name_is_shadowed_by_a_module_of_the_same_name() -> None:
    """``import magent.api.x`` sets ``magent.api.x``: a function named like a module would vanish."""
    import importlib
    import pkgutil
    import types

    import magent.api

    for info in pkgutil.iter_modules(magent.api.__path__):
        importlib.import_module(f"magent.api.{info.name}")
    for name in magent.api.__all__:
        assert not isinstance(getattr(magent.api, name), types.ModuleType), name
    for info in pkgutil.iter_modules(magent.__path__):
        if info.name != "__main__":
            importlib.import_module(f"magent.{info.name}")
    for name in magent.__all__:
        assert not isinstance(getattr(magent, name), types.ModuleType), name


# the CLI goes through the API ---------------------------------------------------------------

THROUGH_THE_API = {
    "batch": ["batch.py", "batchview.py"],
    "memory": ["memory.py"],
    "new": ["new.py"],
    "prompts": ["prompts.py"],
}
"""Command groups whose modules reach the library only through ``magent.api``."""

PRESENTATION = {"magent.errors", "magent.render", "magent.liveview", "magent.vocabulary", "magent.money"}
"""Modules a command may use to parse, render (money: how an amount or an unknown cost reads) and
exit besides the API (no library logic)."""
PRESENTATION_NAMES = {"magent.tools.catalog": {"format_table"}, "magent.engine.inputs": {"parse_sets"}}
"""...and single helpers: a text table, and ``--set KEY=VALUE`` read as ``set=`` takes it."""


def _library_imports(path: Path) -> list[str]:
    """``magent.*`` imports of a CLI module that are neither the API, the CLI nor presentation."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules = [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [(node.module, a.name) for a in node.names]
        else:
            continue
        for module, name in modules:
            if module == "magent" and name is not None:
                module, name = f"magent.{name}", None
                if module.removeprefix("magent.") in magent.__all__:
                    continue
            if not module.startswith("magent") or module in PRESENTATION:
                continue
            if module == "magent.api" or module.startswith(("magent.api.", "magent.cli.")) or module == "magent":
                continue
            if name in PRESENTATION_NAMES.get(module, ()):
                continue
            found.append(f"{path.name}:{node.lineno}: {module}" + (f".{name}" if name else ""))
    return found


@pytest.mark.parametrize("group", sorted(THROUGH_THE_API))
def test_a_command_group_calls_the_api_not_library_internals(group: str) -> None:
    cli = ROOT / "src" / "magent" / "cli"
    wrong = [hit for name in THROUGH_THE_API[group] for hit in _library_imports(cli / name)]
    assert wrong == [], f"magent {group} imports library internals instead of magent.api: {wrong}"


def test_the_import_check_sees_a_library_import(tmp_path: Path) -> None:
    module = tmp_path / "cmd.py"
    module.write_text("def f():\n    from magent.store.batches import find\n    from magent import paths\n"
                      "    from magent.api.prompting import prompts\n    from magent.tools.catalog import format_table\n")
    assert _library_imports(module) == ["cmd.py:2: magent.store.batches.find", "cmd.py:3: magent.paths"]

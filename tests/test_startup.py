"""Fast start: the read-side commands never import litellm or mcp (and --help not even pydantic).

Each command runs in a fresh interpreter, which then reports what it imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.homes import standard_home

FIXTURES = Path(__file__).parent / "fixtures" / "configs" / "good"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

WRAPPER = """
import contextlib, io, json, sys
sys.argv = ["magent", *sys.argv[1:]]
from magent.cli.app import main
out = io.StringIO()
code = 0
with contextlib.redirect_stdout(out):
    try:
        main()
    except SystemExit as exc:
        code = exc.code or 0
print(json.dumps({"code": code, "modules": sorted(sys.modules), "out": out.getvalue()}))
"""

HEAVY = ("litellm", "mcp", "openai", "anthropic", "tiktoken")


def _imports(*args: str, prelude: str = "") -> dict:
    p = subprocess.run([sys.executable, "-c", prelude + WRAPPER, *args], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def _roots(modules: list[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    root = tmp_path_factory.mktemp("startup") / "home"
    std = standard_home(root)
    return root, std.completed.id


def _commands(task_id: str) -> list[tuple[str, ...]]:
    workflows = sorted((EXAMPLES / "workflows").glob("*.yaml"))
    validate = [str(FIXTURES / "agent.yaml"), str(FIXTURES / "mcp_servers.yaml"),
                str(FIXTURES / "retention_policy.yaml"), *map(str, workflows[:1])]
    return [
        ("--help",), ("tasks", "--help"),
        ("tasks", "list"), ("tasks", "show", task_id[:8]),
        ("checkpoints", "list", task_id[:8]), ("checkpoints", "show", task_id[:8]),
        ("checkpoints", "show", task_id[:8], "1", "--json"),
        ("validate", *validate), ("migrate", "--all", "--dry-run"), ("migrate", task_id[:8]),
    ]


@pytest.fixture(scope="module")
def read_report(home):
    """``read_report(*args)``: what ``magent ARGS`` imported, against the module's home. Each
    command runs once in a fresh interpreter; the tests below that check the same command
    share that run's report."""
    root, _ = home
    reports: dict[tuple[str, ...], dict] = {}

    def report(*args: str) -> dict:
        if args not in reports:
            with pytest.MonkeyPatch.context() as env:
                env.setenv("MAGENT_HOME", str(root))
                env.setenv("MAGENT_TEST_API_KEY", "sk-test")
                reports[args] = _imports(*args)
        return reports[args]

    return report


def test_read_commands_do_not_import_litellm_or_mcp(home, read_report):
    _, task_id = home
    for args in _commands(task_id):
        report = read_report(*args)
        assert report["code"] == 0, (args, report["out"])
        heavy = sorted(_roots(report["modules"]) & set(HEAVY))
        assert heavy == [], f"`magent {' '.join(args)}` imported {heavy}"


def test_read_commands_leave_the_memory_database_alone(home, read_report):
    """sqlite3 (and magent's memory store) only load for commands that use long-term memory:
    validating a workflow whose agents use memory, or tracing a task, does not."""
    _, task_id = home
    extra = [("validate", str(EXAMPLES / "workflows" / "office_memory.yaml")), ("trace", task_id[:8]),
             ("trace", task_id[:8], "--json"), ("retention", "show")]
    for args in _commands(task_id) + extra:
        report = read_report(*args)
        assert report["code"] == 0, (args, report["out"])
        loaded = [m for m in report["modules"] if m in ("sqlite3", "_sqlite3") or m.startswith("magent.memory.")
                  and m != "magent.memory.run"]
        assert loaded == [], f"`magent {' '.join(args)}` imported {loaded}"


def test_help_does_not_import_pydantic_or_the_models(read_report):
    report = read_report("--help")
    assert "Usage: magent" in report["out"]
    assert "pydantic" not in _roots(report["modules"])
    assert not [m for m in report["modules"] if m.startswith(("magent.models", "magent.store"))]


def test_the_check_has_teeth():
    """The same wrapper does report mcp when something imports it (guards against a blind test)."""
    report = _imports("--help", prelude="import mcp\n")
    assert "mcp" in _roots(report["modules"])


def test_tasks_list_does_not_import_the_models(read_report):
    """The listing reads task.json as plain JSON: this keeps 1,000 tasks well under 0.5 s.

    (Typer itself imports pydantic to convert parameters, so only magent's own
    models, and filelock, are checked.)
    """
    for args in (("tasks", "list"), ("tasks", "list", "--json", "--status", "completed")):
        report = read_report(*args)
        assert report["code"] == 0
        assert not [m for m in report["modules"] if m.startswith("magent.models")], args
        assert "filelock" not in _roots(report["modules"]), args


def test_trace_of_a_finished_task_builds_no_model(tmp_path, monkeypatch):
    """A finished task's tree is drawn from its trace.json as plain JSON: neither the models of
    tasks, checkpoints and entries nor the builder of traces from events are imported (only
    ``models.base``, for the schema version)."""
    monkeypatch.setenv("MAGENT_HOME", str(tmp_path / "home"))
    ran = _imports("run", str(_scripted_agent(tmp_path)), "-t", "note the city", "--json")
    task_id = json.loads(ran["out"].splitlines()[-1])["task_id"]
    report = _imports("trace", task_id[:8])
    assert report["code"] == 0 and "kv" in report["out"], report["out"]
    loaded = [m for m in report["modules"] if m.startswith(("magent.models.", "magent.store.checkpoints",
              "magent.store.entries", "magent.engine", "magent.trace.steps", "magent.trace.build"))]
    assert loaded == ["magent.models.base"]


def test_a_scripted_run_with_builtin_tools_imports_neither_litellm_nor_mcp(tmp_path, monkeypatch):
    """`magent run` of a scripted agent that uses built-in tools (kv) loads no model library and
    no MCP SDK: it has no real model and no server to talk to."""
    monkeypatch.setenv("MAGENT_HOME", str(tmp_path / "home"))
    agent = _scripted_agent(tmp_path)
    report = _imports("run", str(agent), "-t", "note the city", "--json")
    assert report["code"] == 0, report["out"]
    assert json.loads(report["out"].splitlines()[-1])["output"] == "noted"
    heavy = sorted(_roots(report["modules"]) & set(HEAVY))
    assert heavy == [], f"a scripted run imported {heavy}"
    assert "magent.tools.mcp" not in report["modules"]
    # nor what only a run with guardrails uses (its agent declares none)
    assert [m for m in report["modules"] if m.startswith("magent.guardrails.")] == ["magent.guardrails.rails"]
    # nor the telemetry settings, with none set; nor the task readers of the API
    assert "magent.trace.telemetry" not in report["modules"] and "magent.api.reading" not in report["modules"]


DOUBLE = """
import json, sys
from pathlib import Path
import magent
from magent.testing import FunctionModel
agent = Path(sys.argv[1])
agent.write_text("name: noter\\nrole: notes\\nsystem_prompt: Note the city.\\ntools: [kv.set]\\n"
                 "llm_config: {model: openai/gpt-4o-mini, fallback_model: anthropic/claude-3-5-haiku-latest}\\n")
def reply(request):
    if any(m.role == "tool" for m in request.messages):
        return "noted"
    return {"tool_calls": [{"name": "kv.set", "arguments": {"key": "city", "value": "Oslo"}}]}
result = magent.run(agent, "note the city", llm=FunctionModel(reply))
print(json.dumps([result.output, sorted(sys.modules)]))
"""


def test_a_run_answered_by_a_test_double_imports_no_model_library(tmp_path, monkeypatch):
    """``magent.run(..., llm=FunctionModel(...))`` never calls the agent's own models, so it loads
    neither litellm nor a provider's SDK, whatever models the agent names."""
    monkeypatch.setenv("MAGENT_HOME", str(tmp_path / "home"))
    p = subprocess.run([sys.executable, "-c", DOUBLE, str(tmp_path / "noter.yaml")], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    output, modules = json.loads(p.stdout.splitlines()[-1])
    assert output == "noted"
    heavy = sorted(_roots(modules) & set(HEAVY))
    assert heavy == [], f"a run on a test double imported {heavy}"


OFFLINE = """
import os, socket, sys
os.environ.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)   # a user who never heard of it
asked = []
real_getaddrinfo, real_connect = socket.getaddrinfo, socket.socket.connect
def getaddrinfo(host, *a, **k):
    asked.append(str(host))
    raise OSError("no network in this test")
def connect(self, address):
    asked.append(str(address))
    raise OSError("no network in this test")
socket.getaddrinfo, socket.socket.connect = getaddrinfo, connect
from magent.llm.litellm_client import load_litellm
litellm = load_litellm()
print(os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP"), len(litellm.model_cost) > 100, asked)
"""


def test_litellm_uses_its_bundled_cost_map_unless_asked_not_to() -> None:
    """No fetch of the remote cost map (which waits seconds without a network) by default."""
    p = subprocess.run([sys.executable, "-c", OFFLINE], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split(None, 2) == ["True", "True", "[]\n"]


def test_memory_commands_do_not_import_litellm_or_mcp(tmp_path, monkeypatch):
    """Without an embedding model, `magent memory ...` (and a sweep with a memory section) is
    sqlite3 only."""
    monkeypatch.setenv("MAGENT_HOME", str(tmp_path / "home"))
    added = _imports("memory", "add", "The weekly sync is in room Atlas", "--json")
    memory_id = json.loads(added["out"])["id"]
    (tmp_path / "home" / "config").mkdir(parents=True)
    (tmp_path / "home" / "config" / "retention_policy.yaml").write_text("memory: {unused_days: 30}\n")
    dump = tmp_path / "dump.jsonl"
    commands = [("memory", "list"), ("memory", "search", "weekly sync"), ("memory", "show", memory_id[:8]),
                ("memory", "export", "-o", str(dump)), ("memory", "import", str(dump)),
                ("memory", "consolidate", "--dry-run"), ("memory", "consolidate"),
                ("retention", "sweep", "--dry-run"), ("retention", "show"),
                ("memory", "forget", memory_id[:8])]
    for args in [("memory", "add", "x")] + commands:
        report = _imports(*args) if args[1] != "add" else added
        assert report["code"] == 0, (args, report["out"])
        heavy = sorted(_roots(report["modules"]) & set(HEAVY + ("numpy",)))
        assert heavy == [], f"`magent {' '.join(args)}` imported {heavy}"


def _scripted_agent(tmp_path: Path) -> Path:
    (tmp_path / "script.yaml").write_text(
        "responses:\n  - content: noting it\n    tool_calls:\n"
        "      - {name: kv.set, arguments: {key: city, value: Oslo}}\n  - content: noted\n")
    agent = tmp_path / "noter.yaml"
    agent.write_text("name: noter\nrole: notes\nsystem_prompt: Note the city.\ntools: [kv.set]\n"
                     "llm_config: {model: scripted, script: script.yaml}\n")
    return agent


def test_a_quiet_run_draws_nothing_so_imports_no_rich(tmp_path, monkeypatch):
    """`magent run -q` prints only the answer: the live view's consoles are made when something
    is drawn, so rich is never imported."""
    monkeypatch.setenv("MAGENT_HOME", str(tmp_path / "home"))
    report = _imports("run", str(_scripted_agent(tmp_path)), "-t", "note the city", "--quiet")
    assert report["code"] == 0, report["out"]
    assert report["out"].strip() == "noted"
    assert "rich" not in _roots(report["modules"])


def test_the_program_builds_only_the_command_it_runs():
    """Typer turns registered commands into click commands before parsing: `magent run ...`
    gets an app with `run` alone; help, options first, typos and completion see every command."""
    from magent.cli.app import _narrowed, app

    narrow = _narrowed(["run", "x.yaml", "-t", "go"])
    assert [c.name for c in narrow.registered_commands] == ["run"] and narrow.registered_groups == []
    tasks = _narrowed(["tasks", "list"])
    assert tasks.registered_commands == [] and [g.name for g in tasks.registered_groups] == ["tasks"]
    for args in ([], ["--help"], ["-h", "run"], ["rnu"]):
        assert _narrowed(args) is app, args
    assert len(app.registered_commands) > 5  # the whole app is left as it was


def test_the_command_table_names_what_each_module_adds():
    """`magent NAME ...` imports only the module `_PARTS` names for NAME: each module adds
    exactly the commands or group listed for it, and together they are the whole app."""
    import typer
    from typer.main import get_command_name

    from magent.cli.app import _PARTS, _add, app

    for module_name, names in _PARTS:
        one = typer.Typer()
        _add(one, module_name)
        added = [c.name or get_command_name(c.callback.__name__) for c in one.registered_commands]
        added += [g.name for g in one.registered_groups]
        assert tuple(added) == names, module_name
    whole = [c.name for c in app.registered_commands] + [g.name for g in app.registered_groups]
    assert sorted(whole) == sorted(n for _, names in _PARTS for n in names)


RUN_ONLY = """
import sys
sys.argv = ["magent", "run", "--help"]
import magent.cli.app as cli
try:
    cli.main()
except SystemExit:
    pass
print(sorted(m for m in sys.modules if m.startswith("magent.cli.")))
"""


def test_a_command_imports_its_own_module_only():
    p = subprocess.run([sys.executable, "-c", RUN_ONLY], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    loaded = eval(p.stdout.splitlines()[-1])
    assert "magent.cli.run" in loaded and "Usage: magent run" in p.stdout
    assert not {"magent.cli.tasks", "magent.cli.batch", "magent.cli.memory", "magent.cli.trace"} & set(loaded)


ENTRY = """
import os, sys
import magent.cli.app as cli
cli.main = lambda: print(os.environ.get("PYDANTIC_DISABLE_PLUGINS"))
sys.argv = ["magent", "--version"]
cli.entry()
"""


def test_the_program_turns_pydantic_plugins_off_unless_told(monkeypatch):
    """The entry-point scan for pydantic plugins is skipped (pydantic's documented switch); a
    value the user set is kept."""
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    p = subprocess.run([sys.executable, "-c", ENTRY], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "__all__", p.stderr
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "logfire")
    p = subprocess.run([sys.executable, "-c", ENTRY], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "logfire", p.stderr


COLLECTOR = """
import gc, json
usual = gc.get_threshold()
from magent.cli import collector
collector.starting()
seen = []
on_event = collector.after_first(seen.append)
on_event("run_started")
running = [gc.get_threshold() == usual, gc.isenabled()]
on_event("node_started")
print(json.dumps([running, seen]))
"""


def test_once_its_run_is_going_the_program_collects_garbage_as_python_does():
    """Whatever start-up does with the collector, a run's events (and the tools they come
    from) see Python's collector as it was before the program started."""
    p = subprocess.run([sys.executable, "-c", COLLECTOR], capture_output=True, text=True, timeout=60)
    running, seen = json.loads(p.stdout)
    assert running == [True, True], p.stderr
    assert seen == ["run_started", "node_started"]


BATCH_COLLECTOR = """
import gc, json, sys
usual = gc.get_threshold()
seen = []
gc.callbacks.append(lambda phase, info: phase == "start" and seen.append(list(gc.get_threshold())))
from magent.cli import collector
from magent.cli.app import main
sys.argv = ["magent", *sys.argv[1:]]
collector.starting()  # as the program's entry does
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps([code, list(usual), seen, gc.get_threshold() == usual]))
"""


def test_while_a_batch_runs_the_program_collects_garbage_as_python_does(tmp_path, monkeypatch):
    """`magent batch` keeps start-up's seldom collections only until its first row starts: after
    that a row's garbage is collected as Python does, so many rows at once do not pile it up."""
    monkeypatch.setenv("MAGENT_HOME", str(tmp_path / "home"))
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"task": f"note city {n}"}) + "\n" for n in range(24)))
    p = subprocess.run([sys.executable, "-c", BATCH_COLLECTOR, "batch", str(_scripted_agent(tmp_path)),
                        "--inputs", str(rows), "--concurrency", "8", "--json"],
                       capture_output=True, text=True, timeout=120)
    code, usual, seen, usual_at_end = json.loads(p.stdout.splitlines()[-1])
    assert code == 0, p.stderr
    assert usual_at_end
    assert usual in seen, f"no collection ran at Python's thresholds {usual}: {seen[-3:]}"


LIBRARY = """
import gc, json, weakref
gc.set_threshold(500, 5, 5)
from magent.cli import collector
class Row: pass
rows = [Row()]
row = weakref.ref(rows[0])
collector.reading()
collector.keep(rows)
del rows
print(json.dumps([gc.isenabled(), gc.get_threshold(), row() is None]))
"""


def test_imported_as_a_library_magent_leaves_the_hosts_collector_and_objects_alone():
    """A host program that imports magent keeps its own collector settings, and what a read
    command hands over is freed as usual."""
    p = subprocess.run([sys.executable, "-c", LIBRARY], capture_output=True, text=True, timeout=60)
    assert json.loads(p.stdout) == [True, [500, 5, 5], True], p.stderr


INTERNAL_RECORDS = {
    "magent.engine.guard": ("TaskGate", "AnswerCheck"), "magent.engine.railrecords": ("Records",),
    "magent.engine.statekeys": ("Reads",),
    "magent.config.templates": ("Needs",), "magent.engine.templating": ("Templates",),
    "magent.engine.textmode": ("Parsed",), "magent.tools.ratelimit": ("Slot",),
    "magent.engine.children": ("ChildOutcome",), "magent.engine.nodes.base": ("NodeResult",),
    "magent.guardrails.rails": ("RailLists", "GraphRails"), "magent.engine.graph": ("Graph",),
    "magent.tools.setup": ("ToolConfig",), "magent.tools.function": ("FunctionTool",),
    "magent.tools.pinning": ("PinChange",), "magent.llm.limits": ("ModelLimits",),
    "magent.config.files": ("LoadedAgent", "LoadedMCP", "LoadedMemorySettings"),
    "magent.config.yamlfile": ("SourceFile",), "magent.config.prompts": ("PromptTemplate",),
    "magent.memory.run": ("RunMemory",),
}


def test_a_runs_internal_records_compile_no_equality():
    """Python compiles each dataclass's generated methods when its module is imported; these
    records of a run are never compared (an instance is only ever equal to itself), so they
    are declared ``eq=False`` and start-up compiles no ``__eq__`` for them."""
    import dataclasses
    import importlib

    for module, names in INTERNAL_RECORDS.items():
        for name in names:
            cls = getattr(importlib.import_module(module), name)
            assert dataclasses.is_dataclass(cls) and "__eq__" not in cls.__dict__, f"{module}.{name}"
            assert "__repr__" in cls.__dict__, f"{module}.{name}"   # printed as before

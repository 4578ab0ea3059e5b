"""The Python API as a user meets it: the guides' examples run as written, a run from
Python is the same task as one from the CLI, results read the same everywhere, bad input
is a typed error with the CLI's message, and ``home=`` stays with its call."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import magent
from magent import paths
from magent.errors import ConfigError, TaskNotFoundError, TaskStateError, UsageError
from magent.testing import FunctionModel, QueueModel
from support.cli import invoke
from support.engine import agent_yaml, write

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
WRITE_REVIEW = EXAMPLES / "workflows" / "write_review.yaml"
PUBLISH = EXAMPLES / "workflows" / "publish.yaml"


GUIDES = {"Python API": "python-api.md", "Testing your agents": "testing.md"}


def guide_python(section: str) -> str:
    """The one Python example of a guide (docs/guides/), by its title."""
    body = (ROOT / "docs" / "guides" / GUIDES[section]).read_text()
    (code,) = re.findall(r"```python\n(.*?)```", body, re.S)
    return code


def test_the_api_guide_example_runs_as_written(magent_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    p = subprocess.run([sys.executable, "-c", guide_python("Python API")], capture_output=True,
                       text=True, timeout=240)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.startswith("completed 5 model calls")
    assert "Publish this announcement?" in out and "completed publish sha256:" in out
    assert "['completed', 'completed', 'completed']" in out
    assert "usage: give only one of approve=True, reject=True, modify=..." in out
    assert "config: no file 'no/such/workflow.yaml'" in out
    assert len(magent.tasks()) == 5   # in the home the test gave it, as the CLI would


def test_the_testing_guide_example_passes_under_pytest(tmp_path: Path) -> None:
    test_file = tmp_path / "test_greeter.py"
    test_file.write_text(guide_python("Testing your agents"))
    env = {k: v for k, v in os.environ.items() if k not in ("MAGENT_FORBID_REMOTE_LLM", "OPENAI_API_KEY")}
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n0",
                        "--rootdir", str(tmp_path), str(test_file)], capture_output=True, text=True,
                       timeout=240, cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "3 passed" in p.stdout


def _volatile(doc: dict) -> dict:
    drop = {"id", "created_at", "updated_at", "started_at", "completed_at", "target"}
    return {k: v for k, v in doc.items() if k not in drop}


def test_a_run_from_python_is_the_same_task_as_one_from_the_cli(magent_home: Path) -> None:
    from_api = magent.run(str(WRITE_REVIEW), "Write copy for Tidy", tags=["x"])
    shown = invoke("run", str(WRITE_REVIEW), "-t", "Write copy for Tidy", "--tag", "x", "--json")
    assert shown.code == 0
    last = json.loads(shown.out.splitlines()[-1])
    from_cli = magent.task(last["task_id"])
    tasks = magent_home / "tasks"
    api_doc = json.loads((tasks / from_api.task_id / "task.json").read_text())
    cli_doc = json.loads((tasks / from_cli.task_id / "task.json").read_text())
    assert _volatile(api_doc) == _volatile(cli_doc)
    assert sorted(p.name for p in (tasks / from_api.task_id).iterdir()) == \
        sorted(p.name for p in (tasks / from_cli.task_id).iterdir())
    # the --json result line is exactly the AgentResult, and reads the same later
    assert last == json.loads(from_cli.to_json())
    assert last["output"] == from_api.output and last["steps"] == from_api.steps
    assert last["provenance"]["config_hash"] == from_api.provenance.config_hash


def test_the_agent_result_of_a_completed_run(magent_home: Path) -> None:
    result = magent.run(WRITE_REVIEW, "Write copy for Tidy")
    assert result.success and result.status == "completed" and result.error is None
    assert "20 cm" in result.output
    assert result.started_at and result.finished_at and result.started_at <= result.finished_at
    log = magent.trace_log(result.task_id)
    assert result.steps == len(log.steps) > 0
    assert len(result.model_calls) == sum(u.calls for u in log.usage_by_model.values()) == 5
    assert result.token_usage.by_model == log.usage_by_model
    assert result.token_usage.total == result.token_usage.input + result.token_usage.output > 0
    p = result.provenance
    assert (p.workflow, p.kind, p.agents) == ("write_review", "workflow", ["critic", "writer"])
    assert p.models == {"writer": "scripted", "critic": "scripted"}
    assert p.magent_version == magent.__version__ and p.config_hash.startswith("sha256:")
    again = magent.run(WRITE_REVIEW, "Something else", model="openai/gpt-4o-mini",
                       llm=QueueModel(["draft", '{"verdict": "pass", "feedback": "fine"}']))
    assert again.provenance.config_hash == p.config_hash   # same files, same hash
    assert again.provenance.models == {"writer": "openai/gpt-4o-mini", "critic": "openai/gpt-4o-mini"}


def test_a_pause_is_a_paused_result_and_resume_answers_it(magent_home: Path) -> None:
    paused = magent.run(PUBLISH, "Announce that the office is closed on Friday")
    assert paused.status == "awaiting_human" and not paused.success and paused.output is None
    assert paused.pause.kind == "human_node" and paused.pause.node == "approve"
    assert paused.finished_at is None
    again = magent.resume(paused.task_id, reject=True, message="Say which Friday")
    assert again.status == "awaiting_human" and again.task_id == paused.task_id
    done = magent.resume(paused.task_id[:8], approve=True)
    assert done.success and done.pause is None
    assert magent.task(paused.task_id) == done
    branch = magent.resume(paused.task_id, from_checkpoint=1)
    assert branch.task_id != paused.task_id and branch.provenance.forked_from == paused.task_id


def test_a_guardrail_tripwire_pause_is_a_paused_result(tmp_path: Path, magent_home: Path) -> None:
    agent = write(tmp_path, "teller.yaml", agent_yaml("teller", extra=(
        "guardrails:\n  output:\n    - {type: regex, name: no_secret, patterns: ['SECRET'], action: pause}\n")))
    result = magent.run(agent, "tell", llm=QueueModel(["the SECRET is out"]))
    assert result.status == "awaiting_human" and result.pause.kind == "guardrail"
    rejected = magent.resume(result.task_id, reject=True, message="no secrets",
                             llm=QueueModel(["all is well"]))
    assert rejected.success and rejected.output == "all is well"


def test_failures_carry_their_type_and_node(tmp_path: Path, magent_home: Path) -> None:
    agent = write(tmp_path, "looper.yaml", agent_yaml("looper", extra="max_iterations: 2\n"))
    loop = QueueModel([{"tool_calls": [{"name": "kv.get", "arguments": {"key": "k"}}]}] * 2)
    failed = magent.run(agent, "go", llm=loop)
    assert failed.status == "failed" and not failed.success
    assert failed.error.type == "max_iterations" and failed.error.node == "looper"
    assert "reached max_iterations (2)" in failed.error.message
    assert failed.finished_at is not None

    def broken(request):
        raise magent.errors.LLMError("the model is down")

    down = magent.run(agent, "go", llm=FunctionModel(broken))
    assert (down.error.type, down.error.node, down.error.message) == ("model_error", "looper", "the model is down")

    blocked = write(tmp_path, "strict.yaml", agent_yaml("strict", extra=(
        "guardrails:\n  input:\n    - {type: regex, name: no_ids, patterns: ['ID-[0-9]+'], action: block}\n")))
    refused = magent.run(blocked, "look up ID-42", llm=QueueModel([]))
    assert refused.status == "failed" and refused.error.type == "guardrail"

    paused = magent.run(PUBLISH, "Announce it")
    cancelled = magent.cancel(paused.task_id)
    assert cancelled.status == "cancelled" and cancelled.error.type == "cancelled"


# bad input: typed errors with the message the CLI prints ---------------------------------------

def _cli_error(*args: str) -> str:
    result = invoke(*args)
    assert result.code == 2, result.out + result.err
    return result.err.strip().removeprefix("magent: error: ")


def test_bad_input_is_a_typed_error_with_the_cli_message(magent_home: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        magent.run(tmp_path / "missing.yaml", "go")
    assert str(err.value) == _cli_error("run", str(tmp_path / "missing.yaml"), "-t", "go")
    with pytest.raises(ConfigError):
        magent.load(EXAMPLES / "mcp" / "time.yaml")   # not a workflow or agent

    paused = magent.run(PUBLISH, "Announce it")
    with pytest.raises(UsageError) as err:
        magent.resume(paused.task_id, approve=True, reject=True)
    # an answer's mistakes in the words of the interface used: keyword arguments here, flags there
    assert str(err.value) == "give only one of approve=True, reject=True, modify=..."
    assert _cli_error("resume", paused.task_id, "--approve", "--reject") == "give only one of --approve, --reject, --modify"
    with pytest.raises(UsageError) as err:
        magent.resume(paused.task_id, message="hi")
    assert str(err.value) == "message= goes with approve=True, reject=True or modify=..."
    assert _cli_error("resume", paused.task_id, "-m", "hi") == "--message goes with --approve, --reject or --modify"
    with pytest.raises(UsageError) as err:
        magent.run(PUBLISH, "  ")
    assert str(err.value) == _cli_error("run", str(PUBLISH), "-t", "  ")

    unknown = "0123abcd"
    with pytest.raises(TaskNotFoundError) as err:
        magent.resume(unknown, approve=True)
    assert str(err.value) == _cli_error("resume", unknown, "--approve")
    with pytest.raises(TaskNotFoundError):
        magent.task(unknown)

    done = magent.resume(paused.task_id, approve=True)
    with pytest.raises(TaskStateError) as err:
        magent.resume(done.task_id)
    assert str(err.value) == _cli_error("resume", done.task_id)
    with pytest.raises(UsageError):
        magent.run(PUBLISH, "go", set={"a..b": 1})
    with pytest.raises(UsageError):
        magent.resume(paused.task_id, modify={"colour": "red"})
    assert isinstance(err.value, magent.MagentError)
    assert not list((magent_home / "tasks").glob(".new-*"))   # nothing half-written


def test_calling_run_inside_an_event_loop_says_to_await_arun(magent_home: Path) -> None:
    async def inside() -> None:
        magent.run(PUBLISH, "go")

    with pytest.raises(UsageError, match=r"use `await magent.arun\(...\)`"):
        asyncio.run(inside())
    assert magent.tasks() == []


# home= and concurrency -------------------------------------------------------------------------

def test_home_stays_with_its_call(tmp_path: Path, magent_home: Path) -> None:
    other = tmp_path / "other"
    result = magent.run(PUBLISH, "Announce it", home=other)
    assert os.environ["MAGENT_HOME"] == str(magent_home) and paths.home() == magent_home
    assert [r.id for r in magent.tasks(home=other)] == [result.task_id]
    assert magent.tasks() == []
    with pytest.raises(TaskNotFoundError):
        magent.task(result.task_id)
    done = magent.resume(result.task_id, approve=True, home=other)
    assert done.success and magent.trace_log(done.task_id, home=other).steps


def test_many_runs_at_once_in_one_loop_each_in_its_own_home(tmp_path: Path, magent_home: Path) -> None:
    note_taker = magent.load(EXAMPLES / "agents" / "note_taker.yaml")
    homes = [tmp_path / f"home{i}" for i in range(3)]
    seen: dict[str, list[str]] = {}

    def recorder(name: str):
        return lambda event: seen.setdefault(name, []).append(event.type)

    async def all_of_them():
        return await asyncio.gather(
            *(magent.arun(note_taker, f"Remember {i}", home=h, on_event=recorder(str(i)))
              for i, h in enumerate(homes)),
            *(magent.arun(WRITE_REVIEW, f"copy {i}", on_event=recorder(f"w{i}")) for i in range(3)))

    results = asyncio.run(all_of_them())
    assert [r.status.value for r in results] == ["completed"] * 6
    for i, h in enumerate(homes):
        assert [r.id for r in magent.tasks(home=h)] == [results[i].task_id]
        assert seen[str(i)][0] == "run_started" and seen[str(i)][-1] == "run_finished"
    assert {r.id for r in magent.tasks()} == {r.task_id for r in results[3:]}
    assert paths.home() == magent_home


def test_a_cancelled_arun_leaves_a_task_resume_continues(magent_home: Path) -> None:
    started = asyncio.Event()

    async def slow(request):
        started.set()
        await asyncio.sleep(600)  # cancelled long before

    async def go():
        run = asyncio.ensure_future(magent.arun(WRITE_REVIEW, "copy", llm=FunctionModel(slow)))
        await started.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(go())
    (row,) = magent.tasks()
    stopped = magent.task(row.id)
    assert stopped.status not in ("completed", "failed") and stopped.error.type == "interrupted"
    done = magent.resume(row.id)
    assert done.success and "20 cm" in done.output


def test_a_task_whose_run_was_killed_reads_as_interrupted(magent_home: Path) -> None:
    """As tasks list and tasks show say it (issue 10 item 4): nobody holds it, so it is not running."""
    from support.cli import run

    killed = run("run", str(WRITE_REVIEW), "-t", "copy", env={"MAGENT_FAILPOINT": "after_run_start"})
    assert killed.code == -9, (killed.out, killed.err)
    (row,) = magent.tasks()
    assert row.status == "interrupted"
    assert magent.task(row.id).status == "interrupted"
    assert magent.resume(row.id).success


def test_import_magent_stays_light() -> None:
    code = ("import sys, magent; magent.__version__; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'pydantic', 'litellm', 'mcp', 'rich', 'typer', 'yaml'}))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stdout + p.stderr


# One mypy run checks everything below (a run spends most of its time on the libraries the
# checked code imports, the same for every file): the public API and the API guide's example
# and test_api_commands' use of the newer API under --strict, the testing guide's pytest example
# as pytest tests are usually written (unannotated: --check-untyped-defs only).
MYPY_CONFIG = """\
[mypy]
strict = True
follow_imports = silent

[mypy-test_example]
disallow_untyped_defs = False
disallow_incomplete_defs = False
disallow_untyped_calls = False
disallow_untyped_decorators = False
disallow_any_generics = False
disallow_subclassing_any = False
warn_return_any = False
no_implicit_reexport = False
strict_equality = False
"""


@pytest.mark.slow
def test_the_public_api_and_the_readme_examples_type_check(tmp_path: Path) -> None:
    """py.typed is shipped, so what users call must check under mypy (imported modules' own
    internals are not judged here: follow_imports = silent)."""
    from test_api_commands import TYPED_USE

    (tmp_path / "api_example.py").write_text(guide_python("Python API"))
    (tmp_path / "use.py").write_text(TYPED_USE)
    (tmp_path / "test_example.py").write_text(guide_python("Testing your agents"))
    (tmp_path / "mypy.ini").write_text(MYPY_CONFIG)
    src = ROOT / "src" / "magent"
    p = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--no-incremental",
                        "--cache-dir", str(tmp_path / "cache"), str(src / "api"), str(src / "__init__.py"),
                        str(src / "testing.py"), str(src / "paths.py"), "api_example.py", "use.py",
                        "test_example.py"],
                       capture_output=True, text=True, timeout=280, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr


def test_an_on_event_handler_that_raises_stops_the_run_and_resume_continues_it(magent_home: Path) -> None:
    class HandlerBug(Exception):
        pass

    def handler(event) -> None:
        if event.type == "llm_call":
            raise HandlerBug("my handler broke")

    with pytest.raises(HandlerBug):
        magent.run(WRITE_REVIEW, "copy", on_event=handler)
    (row,) = magent.tasks()
    assert not magent.task(row.id).success
    done = magent.resume(row.id)
    assert done.success and "20 cm" in done.output

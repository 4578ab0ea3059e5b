"""The published schemas (``docs/schemas/``) match the models, and every file the README's tour
writes validates against them, holding the seeds' required fields: files read without magent."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import pytest

from magent.models import published
from support.cli import invoke
from test_examples import ROOT, run_tour

SCHEMAS = ROOT / "docs" / "schemas"
TASK_FILES = re.compile(r"task\.json|checkpoint_\d{3,}\.json|entries\.jsonl|events\.jsonl|trace\.json"
                        r"|kv\.jsonl|tool_pins\.jsonl|requests\.jsonl|artifacts|signals")
"""Every name a task directory may hold (a new kind of file needs a schema first)."""
JSONL_SCHEMA = {"entries.jsonl": "entry", "events.jsonl": "event", "kv.jsonl": "kv",
                "tool_pins.jsonl": "tool-pin", "requests.jsonl": "request", "rows.jsonl": "batch-row"}
SEED_FIELDS = {
    "task": ("id", "description", "status", "assigned_agent"),
    "checkpoint": ("task_id", "sequence", "position", "state", "awaiting_human"),
    "trace": ("task_id", "steps", "sub_agent_sessions"),
    "step": ("step_name", "message", "timestamp", "status", "agent", "tool_calls", "duration_ms"),
}
"""Seed 002's required fields: present in every record, whatever their value."""


def test_the_published_schemas_are_generated_from_the_models() -> None:
    assert published.stale() == [], f"the schemas are out of date: run `{published.COMMAND}`"
    names = {p.name for p in SCHEMAS.glob("*.json")}
    assert names == set(published.files()), f"docs/schemas holds other files: run `{published.COMMAND}`"
    for path in SCHEMAS.glob("*.json"):
        doc = json.loads(path.read_text())
        jsonschema.Draft202012Validator.check_schema(doc)
        assert doc["x-magent-schema-version"] == published.SCHEMA_VERSION
        assert doc["$id"].endswith(f":{published.SCHEMA_VERSION}:{path.name}") and doc["title"]


def test_the_schemas_state_what_is_always_there_and_the_defaults() -> None:
    checkpoint = json.loads((SCHEMAS / "checkpoint.schema.json").read_text())
    assert set(SEED_FIELDS["checkpoint"]) <= set(checkpoint["required"])
    assert checkpoint["properties"]["visits"]["default"] == {}
    assert checkpoint["properties"]["schema_version"]["const"] == published.SCHEMA_VERSION
    trace = json.loads((SCHEMAS / "trace.schema.json").read_text())
    assert set(SEED_FIELDS["step"]) <= set(trace["$defs"]["StepRecord"]["required"])
    assert trace["$defs"]["ToolCallRecord"]["properties"]["outcome"]["default"] == "SUCCESS"
    assert "ReAct turn number" in trace["$defs"]["StepRecord"]["properties"]["iteration"]["description"]


def test_every_event_type_magent_emits_is_published() -> None:
    """Each ``emit("kind", ...)`` in the source names a type the event schema describes."""
    emitted = set()
    for path in (ROOT / "src" / "magent").rglob("*.py"):
        emitted |= set(re.findall(r"""\bemit\(\s*["']([a-z_]+)["']""", path.read_text()))
    emitted |= set(re.findall(r'record\("([a-z_]+)"', (ROOT / "src/magent/tools/memory.py").read_text()))
    assert len(emitted) > 25
    assert emitted - set(published.EVENT_TYPES) == set(), "add them to models/published.py's EVENT_TYPES"
    schema = json.loads((SCHEMAS / "event.schema.json").read_text())
    assert [t["const"] for t in schema["properties"]["type"]["oneOf"]] == list(published.EVENT_TYPES)


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            yield number, json.loads(line)


def _missing(doc: Any, fields: tuple[str, ...]) -> list[str]:
    return [f for f in fields if not isinstance(doc, dict) or f not in doc]


class Checker:
    """Validates files against the published schemas, gathering every problem."""

    def __init__(self, home: Path):
        self.home = home
        self.validators = {p.name.removesuffix(".schema.json"): jsonschema.Draft202012Validator(
            json.loads(p.read_text()), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
            for p in SCHEMAS.glob("*.schema.json")}
        self.problems: list[str] = []
        self.seen: dict[str, int] = {}

    def check(self, kind: str, doc: Any, where: Path, line: int | None = None) -> None:
        self.seen[kind] = self.seen.get(kind, 0) + 1
        at = f"{where.relative_to(self.home.parent)}{f':{line}' if line else ''}"
        for error in self.validators[kind].iter_errors(doc):
            path = "/".join(str(p) for p in error.absolute_path)
            self.problems.append(f"{at}: {kind} schema: {path or '(top)'}: {error.message[:160]}")
        for missing in _missing(doc, SEED_FIELDS.get(kind, ())):
            self.problems.append(f"{at}: {kind} lacks seed 002's {missing!r}")
        if kind == "trace":
            for n, step in enumerate(doc.get("steps") or [], 1):
                for missing in _missing(step, SEED_FIELDS["step"]):
                    self.problems.append(f"{at}: step {n} lacks seed 002's {missing!r}")

    def summary(self) -> str:
        """Each distinct problem once (files, line and step numbers aside), how often, and a first place."""
        groups: dict[str, tuple[int, str]] = {}
        for problem in self.problems:
            where, what = problem.split(": ", 1)
            key = re.sub(r"(?<=/)\d+|(?<=step )\d+", "N", re.sub(r"agent:[\w-]+", "agent:NAME", what))
            count, first = groups.get(key, (0, where))
            groups[key] = (count + 1, first)
        return "\n".join(f"{count:5} x {key}   (first: {first})" for key, (count, first) in
                         sorted(groups.items(), key=lambda kv: -kv[1][0]))

    def check_jsonl(self, path: Path) -> None:
        for number, doc in _jsonl(path):
            self.check(JSONL_SCHEMA[path.name], doc, path, number)

    def check_task(self, task_dir: Path) -> None:
        for path in sorted(task_dir.iterdir()):
            assert TASK_FILES.fullmatch(path.name), f"{path}: a file no schema describes"
            if path.name == "task.json":
                doc = json.loads(path.read_text())
                self.check("task", doc, path)
                assert doc.get("id") == task_dir.name, path
            elif path.name == "trace.json":
                self.check("trace", json.loads(path.read_text()), path)
            elif path.name.startswith("checkpoint_"):
                doc = json.loads(path.read_text())
                self.check("checkpoint", doc, path)
                if not _missing(doc, ("task_id", "sequence")):  # it says where it belongs itself
                    assert (doc["task_id"], doc["sequence"]) == (task_dir.name, int(path.stem[11:])), path
            elif path.suffix == ".jsonl":
                self.check_jsonl(path)
            elif path.name == "signals":
                for signal in sorted(path.glob("*.json")):
                    self.check("signal", json.loads(signal.read_text()), signal)


def test_every_file_of_the_readme_tour_validates(magent_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    monkeypatch.chdir(ROOT)

    def magent(*args: str) -> tuple[int, str, str]:
        result = invoke(*args)
        return result.code, result.out, result.err

    run_tour(magent, ROOT)
    export = tmp_path / "memories.jsonl"
    assert invoke("memory", "export", "-o", str(export)).code == 0

    checker = Checker(magent_home)
    tasks = sorted((magent_home / "tasks").iterdir())
    assert len(tasks) >= 15
    for task_dir in tasks:
        checker.check_task(task_dir)
    for batch_dir in sorted((magent_home / "batches").iterdir()):
        checker.check("batch", json.loads((batch_dir / "batch.json").read_text()), batch_dir / "batch.json")
        checker.check_jsonl(batch_dir / "rows.jsonl")
    for number, doc in _jsonl(export):
        checker.check("memory", doc, export, number)

    kinds = {name.removesuffix(".schema.json") for name in published.files()}
    assert set(checker.seen) == kinds, f"the tour wrote no {kinds - set(checker.seen)}"
    count = len(checker.problems)
    assert count == 0, f"{count} problems:\n{checker.summary()}"

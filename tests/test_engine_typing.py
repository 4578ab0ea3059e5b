"""The engine is typed: mypy checks ``src/magent/engine`` (with pyproject's ``[tool.mypy]``)
without an error, and every ``ctx`` a function there takes says which context it is."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "src" / "magent" / "engine"
CONTEXTS = {"RunContext", "NodeContext"}


def untyped_contexts() -> list[str]:
    """``file:line name`` of each function in the engine whose ``ctx`` is not annotated with one
    of the two contexts (``Any`` or nothing says nothing to a reader or to mypy)."""
    found = []
    for path in sorted(ENGINE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if arg.arg != "ctx":
                    continue
                named = ast.unparse(arg.annotation).strip("\"'") if arg.annotation is not None else ""
                if named not in CONTEXTS:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}({arg.arg}: {named or '?'})")
    return found


def test_every_ctx_in_the_engine_names_its_context() -> None:
    assert untyped_contexts() == []


@pytest.mark.slow
def test_mypy_passes_on_the_engine(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                        "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(ENGINE)],
                       capture_output=True, text=True, timeout=280, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr

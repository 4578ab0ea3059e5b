"""Running the real CLI in tests: in-process through Typer, or as a subprocess."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass

from typer.testing import CliRunner

from magent.cli.app import app

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@dataclass
class Result:
    code: int
    out: str
    err: str


def invoke(*args: str, input: str | None = None, env: dict[str, str] | None = None,
           cwd: str | os.PathLike[str] | None = None) -> Result:
    """Run ``magent ARGS`` in-process; stdout and stderr kept apart.

    ``env`` is added to the environment and ``cwd`` is the working folder for the command only
    (both restored after it; MCP servers the command starts inherit them). Use ``run`` instead
    when the test needs a real process: signals, a kill, real stdio, a failpoint that ends it.
    """
    runner = CliRunner()
    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        r = runner.invoke(app, list(args), input=input, env=env, catch_exceptions=False)
    return Result(r.exit_code, r.stdout, r.stderr)


def run(*args: str, env: dict[str, str] | None = None, input: str | None = None,
        timeout: float = 60, cwd: str | None = None) -> Result:
    """Run ``python -m magent ARGS`` as a subprocess (exit codes, signals, real stdio)."""
    full_env = {**os.environ, **(env or {})}
    p = subprocess.run([sys.executable, "-m", "magent", *args], capture_output=True, text=True,
                       env=full_env, input=input, timeout=timeout, cwd=cwd)
    return Result(p.returncode, p.stdout, p.stderr)


def normalise(text: str) -> str:
    """Replace volatile parts (ids) so output can be compared."""
    return UUID.sub("<id>", text)

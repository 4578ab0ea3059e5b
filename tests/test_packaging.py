"""The built packages as people get them: ``python -m build`` of this checkout, then the
wheel installed with pip into a fresh virtualenv and the README's first commands run from it.

The build runs without isolation (setuptools and build come with the test extra), and the
fresh virtualenv borrows this one's dependencies through a path file instead of
downloading them, so the test needs no network and stays quick.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from magent import __version__

ROOT = Path(__file__).resolve().parent.parent
NOT_SOURCE = (".venv", "venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """This checkout as it is now (uncommitted changes too), built into an sdist and a wheel."""
    base = tmp_path_factory.mktemp("packaging")
    src = base / "magent"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    p = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(base / "dist"), str(src)],
                       capture_output=True, text=True, env=env, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    (sdist,) = (base / "dist").glob("*.tar.gz")
    (wheel,) = (base / "dist").glob("*.whl")
    return {"log": p.stdout + p.stderr, "src": src, "sdist": sdist, "wheel": wheel, "base": base}


def test_the_build_is_clean_and_the_sdist_holds_the_tests_and_examples(built: dict) -> None:
    warnings = [line for line in built["log"].splitlines()
                if re.match(r"\s*(warning|WARNING)\b", line) or "Warning:" in line]
    assert warnings == []
    with tarfile.open(built["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for folder in ("tests", "examples", "benchmarks", "docs"):
        files = {p.relative_to(built["src"]).as_posix() for p in (built["src"] / folder).rglob("*")
                 if p.is_file() and "__pycache__" not in p.parts and "node_modules" not in p.parts}
        assert files and files <= names, sorted(files - names)
    assert {"LICENSE", "README.md", "setup.py", ".ci/run", "tests/conftest.py", "requirements/test.txt",
            "scripts/lock", "scripts/check-latest", "mkdocs.yml", "scripts/cli-reference"} <= names


def test_the_wheel_says_what_it_is_and_carries_the_examples(built: dict) -> None:
    with zipfile.ZipFile(built["wheel"]) as whl:
        names = set(whl.namelist())
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(whl.read(meta_name).decode())
    # magent is installed by a name of its own ("magent" on the registry is another project)
    assert (meta["Name"], meta["Version"]) == ("magent-runner", __version__)
    assert built["wheel"].name.startswith(f"magent_runner-{__version__}-")
    assert meta["License-Expression"] == "MIT" and meta["License-File"] == "LICENSE"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "Typing :: Typed" in meta.get_all("Classifier")
    assert "examples" in meta.get_all("Provides-Extra")
    assert 'mcp-server-time; extra == "examples"' in meta.get_all("Requires-Dist")
    assert {"magent/examples/workflows/write_review.yaml", "magent/examples/agents/scripts/writer.yaml",
            "magent/examples/mcp/time.yaml", "magent/py.typed"} <= names
    assert not any(n.startswith("tests/") for n in names)


@pytest.fixture(scope="module")
def wheel_venv(built: dict, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A fresh virtualenv with the wheel installed, and a working folder outside this checkout."""
    base = tmp_path_factory.mktemp("wheel")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                          "--no-index", "-q", str(built["wheel"])], capture_output=True, text=True, timeout=240)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    # The dependencies come from this virtualenv (a plain path: its own .pth files,
    # among them the editable install of this checkout, are not read).
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # PATH as after `pip install "magent-runner[examples]"`: magent, and mcp-server-time the tour starts
    # (its script lives with the borrowed dependencies).
    path = os.pathsep.join([str(venv / "bin"), str(Path(sys.executable).parent), os.environ["PATH"]])
    return {"venv": venv, "python": python, "purelib": purelib, "path": path}


def _runner(wheel_venv: dict, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},  # nothing of this checkout
           "PATH": wheel_venv["path"], "MAGENT_HOME": str(tmp_path / "home")}

    def magent(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(wheel_venv["venv"] / "bin" / "magent"), *args], capture_output=True,
                              text=True, cwd=work, env=env, timeout=120)

    return work, env, magent


def test_the_tour_runs_from_the_wheel_in_a_fresh_virtualenv(wheel_venv: dict, tmp_path: Path) -> None:
    work, env, magent = _runner(wheel_venv, tmp_path)
    where = subprocess.run([str(wheel_venv["python"]), "-c", "import magent; print(magent.__file__)"],
                           capture_output=True, text=True, cwd=work, env=env, check=True).stdout
    assert where.startswith(wheel_venv["purelib"])        # the wheel's magent, not this checkout's
    assert magent("--version").stdout == f"magent {__version__} (magent-runner)\n"
    copied = magent("examples", "copy")
    shipped = len([p for p in (ROOT / "examples").rglob("*") if p.is_file()])   # every example, no more
    assert copied.returncode == 0 and copied.stdout.startswith(f"copied {shipped} files to examples"), copied.stderr
    assert magent("init").returncode == 0
    valid = magent("validate", *sorted(str(p.relative_to(work)) for p in (work / "examples").glob("*/*.yaml")))
    assert valid.returncode == 0, valid.stderr
    ran = magent("run", "examples/workflows/write_review.yaml", "-t", "Write one line of copy for Tidy")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    task_id = ran.stdout.split()[1]
    traced = magent("trace", task_id)
    assert traced.returncode == 0 and "verdict" in traced.stdout and "completed" in traced.stdout


# Runs magent commands one after another in one interpreter of the wheel's virtualenv (its
# command function, as typer's test runner calls it): a JSON list of arguments per line in,
# a JSON {code, out, err} per line out.
IN_ONE_PROCESS = """
import json, sys, traceback
from typer.testing import CliRunner
from magent.cli.app import app
replies = sys.stdout
for line in sys.stdin:
    r = CliRunner().invoke(app, json.loads(line), prog_name="magent")
    err = r.stderr
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        err += "".join(traceback.format_exception(*r.exc_info))
    replies.write(json.dumps({"code": r.exit_code, "out": r.stdout, "err": err}) + "\\n")
    replies.flush()
"""


def test_the_readme_first_hour_runs_from_the_wheel(wheel_venv: dict, tmp_path: Path) -> None:
    """The README's whole tour, command by command, from the installed wheel in a folder with
    the copied examples; then what the README says to do next: a new agent and workflow
    written by magent new, validated and run, settings shown, help for every command.

    The tour's fifty-odd commands run in one interpreter of the wheel's virtualenv (the
    installed program itself, ``magent``, runs the rest, here and in the test above)."""
    from test_examples import run_tour

    work, env, magent = _runner(wheel_venv, tmp_path)
    assert magent("examples", "copy").returncode == 0

    stray = tmp_path / "stderr.txt"   # what bypasses the commands' own capture (a file: no pipe fills up)
    with stray.open("w") as errors:
        tour = subprocess.Popen([str(wheel_venv["python"]), "-c", IN_ONE_PROCESS], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=errors, text=True, cwd=work, env=env)
    assert tour.stdin is not None and tour.stdout is not None

    def run(*args: str) -> tuple[int, str, str]:
        tour.stdin.write(json.dumps(args) + "\n")
        tour.stdin.flush()
        reply = tour.stdout.readline()
        assert reply, f"magent {' '.join(args)} ended the interpreter: {stray.read_text()}"
        result = json.loads(reply)
        return result["code"], result["out"], result["err"]

    try:
        where = run("--version")
        assert where[0] == 0 and where[1].startswith("magent "), where
        run_tour(run, work, background=lambda args: subprocess.Popen(
            [str(wheel_venv["venv"] / "bin" / "magent"), *args], cwd=work, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    finally:
        tour.stdin.close()
        tour.wait(timeout=120)
        tour.stdout.close()

    for kind, name in (("agent", "helper"), ("workflow", "review_loop")):
        made = magent("new", kind, name)
        assert made.returncode == 0 and made.stdout.startswith(f"wrote {name}.yaml"), made.stderr
        checked = magent("validate", f"{name}.yaml")
        assert checked.returncode == 0 and checked.stdout.startswith("ok"), checked.stderr
    shown = magent("config", "show")
    assert shown.returncode == 0 and re.search(rf"^home +{re.escape(env['MAGENT_HOME'])} +MAGENT_HOME$",
                                                shown.stdout, re.M), shown.stdout
    assert magent("config", "path").stdout.strip() == env["MAGENT_HOME"]
    listed = magent("tasks", "list", "--json")
    assert listed.returncode == 0 and len(json.loads(listed.stdout)) >= 5
    for group in ([], ["tasks"], ["trace"], ["new"], ["config"], ["examples"], ["resume"]):
        helped = magent(*group, "--help")
        assert helped.returncode == 0 and "Usage: magent" in helped.stdout, (group, helped.stderr)

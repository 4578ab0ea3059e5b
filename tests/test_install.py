"""What a fresh machine installs: the lock the README's test command uses, and its prerequisites."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "test.txt"

try:
    import tomllib
except ImportError:  # Python 3.10: pytest brings tomli
    import tomli as tomllib  # type: ignore[no-redef]


def _locked() -> dict[str, list[tuple[Version, str, bool]]]:
    """Each package of the lock: its (version, marker, hashed) entries."""
    entries: dict[str, list[tuple[Version, str, bool]]] = {}
    blocks = re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text())
    for block in blocks:
        m = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)\s*(?:;\s*([^\\\n]+?))?\s*\\?\n", block)
        if m:
            name = re.sub(r"[-_.]+", "-", m[1]).lower()
            entries.setdefault(name, []).append((Version(m[2]), m[3] or "", "--hash=sha256:" in block))
    return entries


def _wanted() -> list[Requirement]:
    """magent's dependencies and those of the test extra, the extras it names followed."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    name, extras = project["name"], project["optional-dependencies"]
    wanted, todo, seen = [Requirement(r) for r in project["dependencies"]], ["test"], set()
    while todo:
        extra = todo.pop()
        seen.add(extra)
        for req in map(Requirement, extras[extra]):
            if req.name == name:
                todo += [e for e in req.extras if e not in seen]
            else:
                wanted.append(req)
    return wanted


def test_the_lock_pins_every_dependency_inside_its_range_with_hashes() -> None:
    """A range changed in pyproject.toml and not locked again (scripts/lock) fails here."""
    locked = _locked()
    assert locked and all(hashed for pins in locked.values() for _, _, hashed in pins)
    for req in _wanted():
        if req.marker is not None and not req.marker.evaluate():
            continue
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        here = [v for v, marker, _ in locked.get(name, []) if not marker or Marker(marker).evaluate()]
        assert len(here) == 1, f"{req.name}: {len(here)} pins for this Python in {LOCK.name}"
        assert req.specifier.contains(here[0], prereleases=True), f"{req} but the lock has {here[0]}"


def test_without_chromium_the_suite_stops_at_once_with_one_line() -> None:
    env = {**os.environ, "MAGENT_TEST_CHROMIUM": str(ROOT / "no-such-chromium")}
    p = subprocess.run([sys.executable, "-m", "pytest", "tests/test_trace_browser.py", "-n0"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 4, p.stdout + p.stderr
    assert p.stderr.strip().splitlines() == [
        f"ERROR: the browser tests need Chromium at {ROOT / 'no-such-chromium'}: apt-get install chromium "
        "(as root; .ci/run does it), or set MAGENT_TEST_CHROMIUM to a Chromium binary; or leave them "
        "out: --deselect tests/test_trace_browser.py"]
    assert "passed" not in p.stdout and "failed" not in p.stdout

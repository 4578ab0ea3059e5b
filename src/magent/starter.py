"""Starting points: the examples the README's tour uses, wherever magent was installed from.

An installed wheel carries them as ``magent/examples`` (setup.py puts them there);
a source checkout, editable or not, has them in ``examples/`` beside ``src/``.
``magent examples copy`` puts them in a folder of the user's, so the tour's paths
(``examples/workflows/write_review.yaml``...) work the same either way.
"""

from __future__ import annotations

import filecmp
import shutil
from dataclasses import dataclass
from pathlib import Path

from magent.errors import UsageError

_HERE = Path(__file__).resolve().parent
_CANDIDATES = (_HERE / "examples", _HERE.parent.parent / "examples")


@dataclass
class Example:
    path: str
    """Relative to the examples folder, e.g. ``workflows/write_review.yaml``."""
    about: str
    """The first sentence of the file's opening comment."""


def examples_root() -> Path:
    """The folder that holds the bundled examples."""
    for candidate in _CANDIDATES:
        if (candidate / "workflows").is_dir():
            return candidate
    raise UsageError("this installation of magent has no examples (looked in "
                     + ", ".join(str(c) for c in _CANDIDATES) + ")")


def list_examples() -> list[Example]:
    """Agents, workflows and MCP files (not the scripted models' reply files), by path."""
    root = examples_root()
    found = []
    for path in sorted(root.rglob("*.yaml")):
        rel = path.relative_to(root)
        if "scripts" in rel.parts:
            continue
        found.append(Example(rel.as_posix(), _opening_comment(path)))
    return found


def _opening_comment(path: Path) -> str:
    words: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        words.extend(line.lstrip("#").split())
    text = " ".join(words)
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]


@dataclass
class CopyReport:
    dest: Path
    copied: list[Path]
    unchanged: list[Path]


def copy_examples(dest: Path, *, force: bool = False) -> CopyReport:
    """Copy the examples into ``dest`` (created if missing).

    A file already there with other content is never overwritten unless ``force``:
    then nothing is copied and a ``UsageError`` names the files.
    """
    root = examples_root()
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"{dest} exists and is not a folder")
    if dest.resolve() == root.resolve():
        return CopyReport(dest, [], sorted(p.relative_to(root) for p in root.rglob("*.yaml")))
    plan = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    differ = [rel for rel in plan if (dest / rel).exists() and not filecmp.cmp(root / rel, dest / rel, shallow=False)]
    if differ and not force:
        shown = ", ".join(str(dest / rel) for rel in differ[:3]) + (f" and {len(differ) - 3} more" if len(differ) > 3 else "")
        raise UsageError(f"{shown} already exist{'s' if len(differ) == 1 else ''} with other content; "
                         "nothing copied (--force overwrites them)")
    report = CopyReport(dest, [], [])
    for rel in plan:
        target = dest / rel
        if target.exists() and rel not in differ:
            report.unchanged.append(rel)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, target)
        report.copied.append(rel)
    return report

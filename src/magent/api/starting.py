"""Getting started: ``magent.init`` makes a home, ``magent.examples`` and ``copy_examples`` give
the bundled examples, ``new_agent`` and ``new_workflow`` write a file to start from (what
``magent init``, ``magent examples list/copy`` and ``magent new`` do)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from magent import paths

if TYPE_CHECKING:
    from magent.api.reading import PathLike
    from magent.starter import CopyReport, Example


@dataclass(frozen=True)
class Home:
    """The home ``magent.init`` made ready."""

    root: Path
    """The home folder (``$MAGENT_HOME``, default ``~/.multi-agent``, or ``home=``)."""
    created: list[Path]
    """The files it wrote this time (empty when all were there: your edits are kept)."""


def init(*, home: PathLike | None = None) -> Home:
    """Create the home folder and its default config files (config/mcp_servers.yaml,
    retention_policy.yaml, defaults.yaml). Safe to call again: existing files are left alone."""
    from magent.store.home import init_home

    with paths.using_home(home):
        created = init_home()
        return Home(root=paths.home(), created=created)


def examples() -> list["Example"]:
    """The bundled example agents, workflows and MCP files: each ``path`` (relative to the
    examples folder, e.g. ``workflows/write_review.yaml``) and ``about`` (one line: its role or description).
    An installation without them is a ``UsageError``."""
    from magent.starter import list_examples

    return list_examples()


def examples_folder() -> Path:
    """The folder the bundled examples are read from."""
    from magent.starter import examples_root

    return examples_root()


def copy_examples(dest: PathLike = "examples", *, force: bool = False) -> "CopyReport":
    """Copy the examples into ``dest`` (created if missing), so the README's paths work there.

    Files already there and the same are kept (``unchanged``); a file there with other content
    stops the copy with a ``UsageError`` before anything is written, unless ``force``.
    """
    from magent.starter import copy_examples as copy

    return copy(Path(os.fspath(dest)), force=force)


def new_agent(name: str, *, folder: PathLike = ".", model: str | None = None, force: bool = False,
              home: PathLike | None = None) -> Path:
    """Write ``folder/NAME.yaml``, an agent with every field explained; return its path.

    It validates as written::

        path = magent.new_agent("support_bot", folder="agents", model="ollama/llama3.2")
        magent.validate(path)

    Without ``model`` the file names the home's default model (``magent config show``), else
    ``openai/gpt-4o-mini``. A bad name, or a file already there (unless ``force``), is a
    ``UsageError`` and nothing is written.
    """
    return _new("agent", name, folder, model, force, home)


def new_workflow(name: str, *, folder: PathLike = ".", model: str | None = None, force: bool = False,
                 home: PathLike | None = None) -> Path:
    """Write ``folder/NAME.yaml``, a draft-and-review workflow with its fields explained; return
    its path (``magent.new_workflow("answer_review")``). Same rules as ``new_agent``."""
    return _new("workflow", name, folder, model, force, home)


def _new(kind: str, name: str, folder: PathLike, model: str | None, force: bool,
         home: PathLike | None) -> Path:
    from magent.starter import new_file

    with paths.using_home(home):
        return new_file(kind, name, Path(os.fspath(folder)), model=model, force=force)

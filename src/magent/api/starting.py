"""Getting started: ``init``, ``examples``, ``copy_examples``, ``new_agent``, ``new_workflow``."""

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
    """Create the home and its default config files; existing files are left alone."""
    from magent.store.home import init_home

    with paths.using_home(home):
        created = init_home()
        return Home(root=paths.home(), created=created)


def examples() -> list["Example"]:
    """The bundled examples (``path``, ``about``); ``UsageError`` when the installation has none."""
    from magent.starter import list_examples

    return list_examples()


def examples_folder() -> Path:
    """The folder the bundled examples are read from."""
    from magent.starter import examples_root

    return examples_root()


def copy_examples(dest: PathLike = "examples", *, force: bool = False) -> "CopyReport":
    """Copy the examples into ``dest``; other content there is a ``UsageError`` unless ``force``."""
    from magent.starter import copy_examples as copy

    return copy(Path(os.fspath(dest)), force=force)


def new_agent(name: str, *, folder: PathLike = ".", model: str | None = None, force: bool = False,
              home: PathLike | None = None) -> Path:
    """Write ``folder/NAME.yaml``, an agent with every field explained, that validates as written;
    return its path. A bad name or an existing file (unless ``force``) is a ``UsageError``."""
    return _new("agent", name, folder, model, force, home)


def new_workflow(name: str, *, folder: PathLike = ".", model: str | None = None, force: bool = False,
                 home: PathLike | None = None) -> Path:
    """Write ``folder/NAME.yaml``, a draft-and-review workflow, as ``new_agent`` does; return its path."""
    return _new("workflow", name, folder, model, force, home)


def _new(kind: str, name: str, folder: PathLike, model: str | None, force: bool,
         home: PathLike | None) -> Path:
    from magent.starter import new_file

    with paths.using_home(home):
        return new_file(kind, name, Path(os.fspath(folder)), model=model, force=force)

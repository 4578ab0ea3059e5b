"""A loaded workflow or agent (``magent.load``), kept apart from the task readers of ``api.reading``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Mapping, Union

from magent import paths

if TYPE_CHECKING:
    from magent.engine.graph import Graph
    from magent.models import Agent, Workflow

PathLike = Union[str, "os.PathLike[str]"]
"""A file path, or (for targets) the name of a workflow or agent installed in the home."""


@dataclass(frozen=True, eq=False)
class Definition:
    """A workflow or agent, loaded and checked (``magent.load``): pass it to ``magent.run``."""

    kind: Literal["workflow", "agent"]
    """``workflow``, or ``agent`` for an agent file (run as a one-node workflow)."""
    name: str
    """The workflow's name (an agent's name for an agent file)."""
    target: str
    """What it was loaded from, as given: a path or an installed name (kept in task.json)."""
    path: Path | None
    """The file it was read from."""
    workflow: "Workflow"
    """The workflow model (for an agent file, the one-node workflow that runs it)."""
    agents: Mapping[str, "Agent"]
    """Every agent it can run, by name (sub-agents included)."""
    graph: "Graph" = field(repr=False, compare=False)
    """The checked, runnable graph (internal: what ``magent.run`` executes)."""


def load(target: PathLike, *, home: PathLike | None = None) -> Definition:
    """Load and check a workflow or agent file (or one installed by name): each mistake ``magent
    validate`` reports is a ``ConfigError``; nothing is written and no model is called."""
    from magent.engine.graph import load_target

    given = os.fspath(target)
    with paths.using_home(home):
        graph = load_target(given)
    return Definition(kind="agent" if graph.kind == "agent" else "workflow", name=graph.name,
                      target=given, path=graph.source.path if graph.source is not None else None,
                      workflow=graph.workflow, agents={n: a.agent for n, a in graph.agents.items()},
                      graph=graph)

"""What ``magent mcp serve`` serves: one tool per workflow or agent, fixed at start. A client names
a tool, never a path, so it cannot make the server load a file of its choosing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from magent import paths
from magent.errors import UsageError

if TYPE_CHECKING:
    from magent.api.definition import Definition

VERBS = ("tasks_list", "task_status", "resume", "chat", "steer", "trace")
"""The tools every server has besides the served workflows and agents."""
SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Served:
    """One workflow or agent, as a tool."""

    name: str
    """The tool's name: the workflow's (or agent's) own name."""
    definition: "Definition"
    """The loaded, checked definition a call runs."""
    required: tuple[str, ...]
    """``metadata`` keys its templates need and nothing in it sets (``--set`` values)."""
    optional: tuple[str, ...]
    """``metadata`` keys its templates read with a default."""

    @property
    def description(self) -> str:
        workflow = self.definition.workflow
        if self.definition.kind == "agent":
            agent = self.definition.agents.get(self.name)
            about = agent.role if agent is not None else ""
            return f"Ask the magent agent {self.name!r}: {about}".rstrip(": .") + "." + TAIL
        about = workflow.description or f"Run the magent workflow {self.name!r}"
        return about.rstrip(".") + "." + TAIL

    def input_schema(self) -> dict[str, Any]:
        props: dict[str, Any] = {"task": {"type": "string", "description": "What to do: the task's text."}}
        for key in self.required:
            props[key] = {"type": "string", "description": f"Value for the workflow's templates "
                                                           f"(metadata.{key}, required)."}
        for key in self.optional:
            props[key] = {"type": "string", "description": f"Value for the workflow's templates "
                                                           f"(metadata.{key}, optional)."}
        props["wait_seconds"] = WAIT_PROPERTY
        return {"type": "object", "properties": props, "required": ["task", *self.required],
                "additionalProperties": False}

    def metadata_of(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The ``metadata`` values a call gives; an unknown argument or a missing value is a ``UsageError``."""
        known = {"task", "wait_seconds", *self.required, *self.optional}
        unknown = sorted(set(arguments) - known)
        if unknown:
            raise UsageError(f"{self.name}: unknown argument {unknown[0]!r} (arguments: {', '.join(sorted(known))})")
        wrong = [key for key in ("task", *self.required, *self.optional)
                 if arguments.get(key) is not None and not isinstance(arguments[key], str)]
        if wrong:
            raise UsageError(f"{self.name}: argument {wrong[0]!r} is text, not {arguments[wrong[0]]!r}")
        missing = [key for key in ("task", *self.required) if not (arguments.get(key) or "").strip()]
        if missing:
            raise UsageError(f"{self.name}: argument {missing[0]!r} is required")
        return {key: arguments[key] for key in (*self.required, *self.optional) if key in arguments}


TAIL = (" Runs as a durable magent task: returns the answer if it finishes in time, else the task id"
        " (see task_status); a pause for a person returns the question and the resume call to make.")
WAIT_PROPERTY = {"type": "number", "minimum": 0,
                 "description": "Seconds to wait for the answer before returning the task id (default: "
                                "the server's --wait-seconds; 0 returns at once)."}


def served(targets: Iterable[str]) -> list[Served]:
    """The tools for ``targets`` (else everything installed); a shared name or a verb's name is a
    ``UsageError``, a file that does not load its ``ConfigError``."""
    from magent.api.definition import load

    given = list(targets)
    sources = given or installed()
    if not sources:
        raise UsageError(f"nothing to serve: give workflow or agent files, or install some in "
                         f"{paths.workflows_dir()} or {paths.agents_dir()}")
    found: dict[str, Served] = {}
    for source in sources:
        definition = load(source)
        name = definition.name
        if name in VERBS:
            raise UsageError(f"{source}: a workflow or agent named {name!r} would hide the {name} tool; "
                             "rename it to serve it")
        if name in found:
            raise UsageError(f"{source}: {name!r} is served already (from {found[name].definition.target})")
        templates = definition.graph.templates
        required = tuple(sorted(templates.required))
        optional = tuple(sorted(set(templates.reads) - set(templates.required)
                                - _set_by_workflow(definition)))
        found[name] = Served(name=name, definition=definition, required=required, optional=optional)
    return list(found.values())


def installed() -> list[str]:
    """Every workflow and agent file installed in the home (workflows first, by name)."""
    out: list[str] = []
    for folder in (paths.workflows_dir(), paths.agents_dir()):
        if folder.is_dir():
            out += [str(p) for p in sorted(folder.iterdir()) if p.suffix in SUFFIXES and p.is_file()
                    and not p.name.startswith(".")]
    return out


def _set_by_workflow(definition: "Definition") -> set[str]:
    """``metadata`` keys the run itself sets (node outputs and magent's own), not a caller's to give."""
    from magent.engine.templating import SET_BY_MAGENT

    return set(SET_BY_MAGENT) | set(definition.workflow.nodes)


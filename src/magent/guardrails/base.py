"""What a rail kind is: a config model and a class with ``check(text, run) -> Verdict``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from pydantic import ConfigDict, Field

from magent.models.guardrails import RailDef

if TYPE_CHECKING:
    from magent.models.agent import LLMConfig

Action = Literal["block", "mask", "revise", "pause", "warn"]
Stage = Literal["input", "output"]


class RailConfig(RailDef):
    """Fields every rail has. Unlike ``RailDef``, unknown fields are errors."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$")
    """Shown in events, messages and pauses (default: the rail's type)."""
    action: Action = "block"
    """When the rail is tripped: ``block`` (fail the node), ``mask`` (replace what was found and
    go on), ``revise`` (output rails: ask the model for a new answer), ``pause`` (ask a person),
    ``warn`` (record it and go on)."""
    message: str | None = None
    """What a block or a revision request says (default: what the rail found)."""
    max_revisions: int = Field(default=2, gt=0)
    """With ``revise``: new answers asked for before the node fails."""
    on_error: Literal["block", "pause", "warn"] = "block"
    """When the rail itself fails (a judge model that errs or answers neither yes nor no, a custom
    rail that raises): block, pause for a person, or warn and let the text through."""
    tool_arguments: bool | None = None
    """An input rail: also check the arguments of the agent's tool calls before they run, and so
    what it writes to long-term memory (``memory.remember``). Default: on for the rails that find
    sensitive data (``pii``, ``regex``), off for the others."""


@dataclass
class Verdict:
    """A rail's finding about one text. ``reason`` must not repeat what was found (it is stored)."""

    triggered: bool
    reason: str = ""
    masked: str | None = None
    """The text with what was found replaced (rails that can mask)."""
    findings: dict[str, int] = field(default_factory=dict)
    """How many of each kind of thing were found (``{"email": 2}``)."""


@dataclass
class RailInput:
    """Where a text comes from; custom rails receive it with the text."""

    stage: Stage
    """``input`` or ``output``."""
    source: Literal["task", "follow_up", "tool_result", "tool_arguments", "memory", "answer"]
    agent: str = ""
    """The agent that will see (input) or gave (output) the text; empty for the task text."""
    node: str = ""
    tool: str = ""
    """For a tool result: the tool's ``server.tool`` name."""
    task_id: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    """A custom rail's ``options`` from the config."""


class RailRun(Protocol):
    """What the engine lends a rail while it checks: where the text is from, and a model to ask."""

    info: RailInput

    async def ask(self, rail: "Rail", config: "LLMConfig", system: str, prompt: str) -> str:
        """One model call for ``rail`` (recorded like any other); raises ``LLMError`` when it fails."""
        ...


class RailConfigError(Exception):
    """A problem in a rail's config that pydantic cannot see (a bad regex...), at ``field``."""

    def __init__(self, message: str, *field: Any):
        super().__init__(message)
        self.message = message
        self.field = tuple(field)


class RailError(Exception):
    """The rail could not decide (its ``on_error`` applies)."""


class Rail:
    """A rail kind: ``kind``, ``Config`` and ``check``. ``can_mask`` rails return ``Verdict.masked``;
    ``sensitive`` rails find what must not be stored (a draft they flag is stored masked)."""

    kind: ClassVar[str]
    Config: ClassVar[type[RailConfig]]
    can_mask: ClassVar[bool] = False
    sensitive: ClassVar[bool] = False

    def __init__(self, config: RailConfig, *, key: str, base_dir: Path):
        self.config = config
        self.key = key
        """Where it is declared (``workflow.input[0]``, ``writer.output[1]``): unique in a run."""
        self.base_dir = base_dir
        """The directory of the file that declares it (relative paths resolve there)."""

    @property
    def name(self) -> str:
        return self.config.name or self.kind

    @property
    def action(self) -> str:
        return self.config.action

    @property
    def checks_arguments(self) -> bool:
        """Checks tool calls' arguments (an input rail): as configured, else if it is sensitive."""
        wanted = self.config.tool_arguments
        return self.sensitive if wanted is None else wanted

    def models(self) -> list["LLMConfig"]:
        """The model configs this rail calls (checked before a run like agents' models)."""
        return []

    async def check(self, text: str, run: RailRun) -> Verdict:
        raise NotImplementedError

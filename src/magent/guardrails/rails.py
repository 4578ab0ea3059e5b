"""The rail kinds by name, and turning a file's ``guardrails:`` into checked rails: every problem
is found at load time, so ``magent validate`` reports it with file:line and field."""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from magent.config.validate import validate

if TYPE_CHECKING:
    from magent.config.yamlfile import SourceFile
    from magent.guardrails.base import Rail
    from magent.models.guardrails import Guardrails


@functools.cache
def rail_kinds() -> dict[str, type[Rail]]:
    """Rail kind → class; a new kind is a module and a line here (imported only when a rail is declared)."""
    from magent.guardrails.custom import CustomRail
    from magent.guardrails.judge import JudgeRail, TopicRail
    from magent.guardrails.patterns import PIIRail, RegexRail
    from magent.guardrails.shape import JsonSchemaRail, MaxLengthRail

    return {cls.kind: cls for cls in (
        RegexRail, PIIRail, MaxLengthRail, JsonSchemaRail, TopicRail, JudgeRail, CustomRail)}


@dataclass(eq=False)
class RailLists:
    input: list[Rail] = field(default_factory=list)
    output: list[Rail] = field(default_factory=list)


@dataclass(eq=False)
class GraphRails:
    """The rails of a run: the workflow's, then each agent's own."""

    workflow: RailLists = field(default_factory=RailLists)
    agents: dict[str, RailLists] = field(default_factory=dict)

    def input_for(self, agent: str | None) -> list[Rail]:
        own = self.agents.get(agent or "")
        return self.workflow.input + (own.input if own else [])

    def output_for(self, agent: str) -> list[Rail]:
        own = self.agents.get(agent)
        return self.workflow.output + (own.output if own else [])

    def __iter__(self) -> Iterator[Rail]:
        for lists in (self.workflow, *self.agents.values()):
            yield from lists.input
            yield from lists.output

    def __bool__(self) -> bool:
        return any(True for _ in self)


def compile_rails(source: SourceFile, owner: str, guardrails: Guardrails | None, *,
                  prefix: tuple[Any, ...] = (), base_dir: Path | None = None) -> RailLists:
    """Check and build the rails at ``prefix + ("guardrails",)``; ``owner`` starts each rail's key."""
    out = RailLists()
    if guardrails is None:
        return out
    from magent.guardrails.base import RailConfigError  # (with the first rail: most runs declare none)

    base_dir = base_dir or source.path.parent
    kinds = rail_kinds()
    data = source.data
    for part in prefix:
        data = data[part]
    for stage in ("input", "output"):
        for i, raw in enumerate(getattr(guardrails, stage)):
            at = (*prefix, "guardrails", stage, i)
            cls = kinds.get(raw.type)
            if cls is None:
                close = difflib.get_close_matches(raw.type, kinds, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise source.error(f"unknown rail type {raw.type!r}{hint}; types: {', '.join(kinds)}",
                                   at + ("type",))
            config = validate(source, cls.Config, data=data["guardrails"][stage][i], prefix=at)
            if config.action == "revise" and stage == "input":
                raise source.error("revise asks the model for a new answer, so only output rails can "
                                   "use it; use block, mask, pause or warn", at + ("action",))
            if config.action == "mask" and not cls.can_mask:
                raise source.error(f"a {cls.kind} rail finds nothing to replace, so it cannot mask; "
                                   "use block, revise, pause or warn", at + ("action",))
            try:
                rail = cls(config, key=f"{owner}.{stage}[{i}]", base_dir=base_dir)
                for model in rail.models():
                    _check_model(model, base_dir)
            except RailConfigError as exc:
                raise source.error(exc.message, at + exc.field) from None
            getattr(out, stage).append(rail)
    return out


def _check_model(config: Any, base_dir: Path) -> None:
    """A judge's scripted model needs its script, and only it may have one (like an agent's)."""
    from magent.guardrails.base import RailConfigError

    if config.model == "scripted" and not config.script:
        raise RailConfigError("model 'scripted' needs a 'script' file of replies", "llm_config", "script")
    if config.script and config.model != "scripted":
        raise RailConfigError("'script' is only used with model 'scripted'", "llm_config", "script")
    if config.script:
        from magent.llm.scripted import load_script, resolve_script

        load_script(resolve_script(config.script, base_dir, "judge"))

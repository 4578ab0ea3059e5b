"""Models per turn: which of an agent's ``llm_config.models`` answers its next model turn.

An agent's ``routing`` rules (``models.agent.RouteRule``) are tried in order before each turn;
the first that matches chooses, else the primary (``models[0]``).

The choice is recorded before the call (a ``model_routed`` event, naming the rule), and
the call's ``llm_call`` events carry it too (``route``). Everything a rule reads — the
session's messages and State, the counts a budget compares — is what the last checkpoint
holds plus what was recorded after it, so a run resumed after ``kill -9`` chooses the same
model for the turn it makes again.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from magent.config.yamlfile import SourceFile
from magent.engine import budget, conditions
from magent.models import Agent, Message
from magent.models.agent import FallbackModel, LLMConfig, RouteRule
from magent.models.budget import Spent

if TYPE_CHECKING:
    from magent.engine.context import NodeContext
    from magent.config.files import LoadedAgent


@dataclass(frozen=True)
class Route:
    """The model of one turn, and why."""

    config: LLMConfig
    """The agent's model config with the chosen model's model string, endpoint and key."""
    rule: str | None
    """How it was chosen (``routing[1] turn tool_result``); None when the agent does not route."""


def choose(ctx: NodeContext, agent: Agent, node: str, iteration: int) -> Route:
    """The model of ``agent``'s turn ``iteration`` at ``node``; recorded as chosen when the
    agent routes (a ``model_routed`` event)."""
    config = ctx.models.config(agent.name)
    if not config.models and not config.routing:
        return Route(config, None)
    names = model_names(config)
    index, rule = 0, "primary (no rule matched)"
    for i, test in enumerate(config.routing):
        why = _matches(ctx, agent, test, iteration)
        if why is not None:
            index, rule = _index(test.model, names), f"routing[{i}] {why}"
            break
    chosen = config_for(config, index)
    ctx.bus.emit("model_routed", node, agent=agent.name, iteration=iteration, model=chosen.model,
                 index=index, rule=rule)
    return Route(chosen, rule)


def _matches(ctx: NodeContext, agent: Agent, rule: RouteRule, iteration: int) -> str | None:
    """What made ``rule`` match this turn (words for the trace), or None when it does not."""
    if rule.turn is not None:
        return f"turn {rule.turn}" if rule.turn in turn_kinds(ctx.state.messages, iteration,
                                                              agent.max_iterations) else None
    if rule.when is not None:
        human = ctx.state.metadata.get("human") or None
        names = conditions.names_of(ctx.state, ctx.run.state.visits, human, ctx.last_output)
        return f"when {rule.when}" if conditions.evaluate(rule.when, names) else None
    return _budget_used(ctx, agent, rule.budget or 0)


def turn_kinds(messages: list[Message], iteration: int, max_iterations: int) -> set[str]:
    """The kinds of the turn about to be made: ``first`` (the loop's first turn),
    ``tool_result`` (the model reads tool results), ``final`` (the last turn allowed, or the
    model is asked to give its answer again: sent back by the output schema check, a rail or
    a person, or after an empty reply)."""
    kinds = set()
    if iteration == 0:
        kinds.add("first")
    if messages and messages[-1].role == "tool":
        kinds.add("tool_result")
    if iteration >= max_iterations - 1 or _answer_asked_again(messages):
        kinds.add("final")
    return kinds


SENT_BACK_BY = ("magent", "guardrail", "human")
"""Who sends an answer back to be given again: the output schema check, an output rail, a person."""


def _answer_asked_again(messages: list[Message]) -> bool:
    """The last message sends the answer before it back (or asks again after an empty reply);
    a person's follow-up question after an answer does not."""
    if len(messages) < 2 or messages[-1].role != "user":
        return False
    answer = messages[-2]
    if answer.role != "assistant" or answer.tool_calls:
        return False
    return messages[-1].name in SENT_BACK_BY or not (answer.content or "").strip()


def _budget_used(ctx: NodeContext, agent: Agent, percent: float) -> str | None:
    """``budget max_model_calls 2 of 3 (67% ≥ 60%)`` for the most used limit that applies to
    ``agent`` when it is at least ``percent`` used, else None."""
    run = ctx.run
    most: tuple[float, str] | None = None
    for scope, limits in budget.limits(run, agent.name):
        spent = run.meter.spent.get(scope, Spent())
        for limit, value in limits.limits().items():
            share = 100 * spent.of(limit) / value
            if share >= percent and (most is None or share > most[0]):
                words = f"{budget.figure(limit, spent.of(limit))} of {budget.figure(limit, value)}"
                most = (share, f"budget {limit} {words} ({share:.0f}% ≥ {percent:g}%)")
    return most[1] if most is not None else None


def _index(model: int | str, names: list[str]) -> int:
    return model if isinstance(model, int) else names.index(model)  # (checked when loaded)


def config_for(config: LLMConfig, index: int) -> LLMConfig:
    """``config`` for its model ``index``: a model string shares the primary's endpoint and
    key when it has the same provider (as a fallback does), a mapping uses its own."""
    if index == 0 or not config.models:
        return config
    entry = config.models[index]
    if isinstance(entry, FallbackModel):
        return config.model_copy(update={"model": entry.model, "endpoint": entry.endpoint,
                                         "api_key": entry.api_key})
    if _same_provider(entry, config.model, config.endpoint):
        return config.model_copy(update={"model": entry})
    return config.model_copy(update={"model": entry, "endpoint": None, "api_key": None})


@lru_cache(maxsize=256)
def _same_provider(model: str, primary: str, endpoint: str | None) -> bool:
    from magent.llm.litellm_client import provider_of

    return provider_of(model, endpoint) == provider_of(primary, endpoint)


def configs(config: LLMConfig) -> list[LLMConfig]:
    """``config`` for each of its models (what a run checks before it starts)."""
    return [config_for(config, i) for i in range(max(1, len(config.models)))]


# checks when a graph loads ----------------------------------------------------------------------

def check_agents(agents: dict[str, "LoadedAgent"], workflow_source: SourceFile | None = None) -> None:
    """Each agent's routing can work: raise ``ConfigError`` at the first rule that cannot."""
    for name, loaded in agents.items():
        config = loaded.agent.llm_config
        if loaded.source is None or not (config.models or config.routing):
            continue
        inline = workflow_source is not None and loaded.source is workflow_source
        check_routing(loaded.source, config, (("agents", name) if inline else ()) + ("llm_config",))


def model_names(config: LLMConfig) -> list[str]:
    """The model string of each of ``config``'s models, the primary first."""
    return [m if isinstance(m, str) else m.model for m in config.models] or [config.model]


def check_routing(source: SourceFile, config: LLMConfig, at: tuple[Any, ...]) -> None:
    """Raise ``ConfigError`` at the first rule that cannot work."""
    names = model_names(config)
    if config.models and names[0] != config.model:
        raise source.error(f"model {config.model!r} and the first of models ({names[0]!r}) differ: "
                           "the primary is the first of models (leave model out)", at + ("models", 0))
    if "scripted" in names and len(names) > 1:
        raise source.error("the scripted model plays one script: it cannot be routed with other models",
                           at + ("models",))
    for i, rule in enumerate(config.routing):
        where = at + ("routing", i)
        if rule.when is not None:
            try:
                conditions.check(rule.when)
            except conditions.ConditionError as exc:
                raise source.error(str(exc), where + ("when",)) from None
        index_of(source, rule.model, names, where + ("model",))


def index_of(source: SourceFile, model: int | str, names: list[str], where: tuple[Any, ...]) -> int:
    """The index into ``names`` that a rule's ``model`` names."""
    listed = ", ".join(f"{i}: {n}" for i, n in enumerate(names))
    if isinstance(model, int):
        if 0 <= model < len(names):
            return model
        raise source.error(f"no model {model} in models (they are {listed})", where)
    if model in names:
        return names.index(model)
    close = difflib.get_close_matches(model, names, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise source.error(f"model {model!r} is not one of models ({hint}they are {listed})", where)

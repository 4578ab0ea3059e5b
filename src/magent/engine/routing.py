"""Models per turn: which of an agent's ``llm_config.models`` answers its next model turn.

An agent's ``routing`` rules are tried in order before each turn; the first that matches
chooses, else the primary (``models[0]``). A rule tests the kind of turn (``first``,
``tool_result``, ``final``), a condition over State (the edges' evaluator), or how far a
usage budget is used (``budget: 80`` goes on with a cheaper model from 80 %, before the
limit pauses the task).

The choice is recorded before the call (a ``model_routed`` event, naming the rule), and
the call's ``llm_call`` events carry it too (``route``). Everything a rule reads — the
session's messages and State, the counts a budget compares — is what the last checkpoint
holds plus what was recorded after it, so a run resumed after ``kill -9`` chooses the same
model for the turn it makes again.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from magent.config.routes import model_names
from magent.engine import budget, conditions
from magent.models import Agent, Message
from magent.models.agent import FallbackModel, LLMConfig, RouteRule
from magent.models.budget import Spent


@dataclass(frozen=True)
class Route:
    """The model of one turn, and why."""

    config: LLMConfig
    """The agent's model config with the chosen model's model string, endpoint and key."""
    rule: str | None
    """How it was chosen (``routing[1] turn tool_result``); None when the agent does not route."""


def choose(ctx, agent: Agent, node: str, iteration: int) -> Route:
    """The model of ``agent``'s turn ``iteration`` at ``node``; recorded as chosen when the
    agent routes (a ``model_routed`` event)."""
    config = ctx.llm_config(agent.name)
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


def _matches(ctx, agent: Agent, rule: RouteRule, iteration: int) -> str | None:
    """What made ``rule`` match this turn (words for the trace), or None when it does not."""
    if rule.turn is not None:
        return f"turn {rule.turn}" if rule.turn in turn_kinds(ctx.state.messages, iteration,
                                                              agent.max_iterations) else None
    if rule.when is not None:
        human = ctx.state.metadata.get("human") or None
        names = conditions.names_of(ctx.state, ctx.visits, human, ctx.last_output)
        return f"when {rule.when}" if conditions.evaluate(rule.when, names) else None
    return _budget_used(ctx, agent, rule.budget or 0)


def turn_kinds(messages: list[Message], iteration: int, max_iterations: int) -> set[str]:
    """The kinds of the turn about to be made: ``first`` (the loop's first turn),
    ``tool_result`` (the model reads tool results), ``final`` (the last turn allowed, or the
    model is asked to give its answer again: an answer sent back, an empty reply)."""
    kinds = set()
    if iteration == 0:
        kinds.add("first")
    if messages and messages[-1].role == "tool":
        kinds.add("tool_result")
    answered_before = (len(messages) >= 2 and messages[-1].role == "user"
                       and messages[-2].role == "assistant" and not messages[-2].tool_calls)
    if iteration >= max_iterations - 1 or answered_before:
        kinds.add("final")
    return kinds


def _budget_used(ctx, agent: Agent, percent: float) -> str | None:
    """``budget max_model_calls 2 of 3 (67% ≥ 60%)`` for the most used limit that applies to
    ``agent`` when it is at least ``percent`` used, else None."""
    run = ctx.run if hasattr(ctx, "run") else ctx
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

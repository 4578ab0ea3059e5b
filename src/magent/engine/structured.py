"""Structured output: an agent's ``output_schema``, loaded and checked with the graph, and every
final answer checked against it here (what a user sees: docs/guides/agents-and-workflows.md).
The parsed value is ``metadata.outputs[node]`` in State and the ``AgentResult.output`` of a run
it answers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from magent.config.schemas import SchemaProblem, parse_answer, read_schema, validator_for
from magent.engine.context import NodeContext
from magent.engine.control import NodeFailed
from magent.models import Agent, Message

if TYPE_CHECKING:
    from magent.config.files import LoadedAgent
    from magent.config.yamlfile import SourceFile


@dataclass
class OutputSchema:
    schema: dict[str, Any]
    validator: Any

    def parse(self, text: str) -> tuple[Any, str | None]:
        """``(value, None)`` for an answer that fits, ``(None, what is wrong)`` otherwise."""
        return parse_answer(text, self.validator)


def compile_schemas(agents: dict[str, "LoadedAgent"], workflow_source: "SourceFile | None" = None
                    ) -> dict[str, OutputSchema]:
    """Each agent's checked ``output_schema``; a schema file that cannot be read or a schema
    that is not valid JSON Schema is a ``ConfigError`` at the field (file:line)."""
    out: dict[str, OutputSchema] = {}
    for name, loaded in agents.items():
        given = loaded.agent.output_schema
        if given is None or loaded.source is None:
            continue
        inline = workflow_source is not None and loaded.source is workflow_source
        at = (("agents", name) if inline else ()) + ("output_schema",)
        try:
            schema = read_schema(loaded.base_dir / given) if isinstance(given, str) else given
            out[name] = OutputSchema(schema=schema, validator=validator_for(schema))
        except SchemaProblem as exc:
            raise loaded.source.error(str(exc), at) from None
    return out


def schema_of(ctx: NodeContext, agent: Agent) -> OutputSchema | None:
    return ctx.deps.graph.output_schemas.get(agent.name)


def accept(ctx: NodeContext, agent: Agent, node: str, answer: str) -> bool:
    """After a final answer's entry: True when it fits (or the agent declares no schema); False
    when it went back to the model (the turn is done). Raises ``NodeFailed`` once the retries are used up."""
    schema = schema_of(ctx, agent)
    if schema is None:
        return True
    _, problem = schema.parse(answer)
    if problem is None:
        return True
    p = ctx.loop
    done = p.output_retries
    ctx.bus.emit("output_invalid", node, agent=agent.name, problem=ctx.deps.redactor.text(problem),
                 retry=done + 1 if done < agent.output_retries else None, retries=agent.output_retries)
    if done >= agent.output_retries:
        raise NodeFailed(f"agent '{agent.name}': the answer does not fit its output_schema "
                         f"after {done} retr{'y' if done == 1 else 'ies'}: {problem}", kind="output_schema")
    p.output_retries = done + 1
    ctx.add_message(Message(role="user", name="magent", content=(
        f"Your answer was not accepted: {problem}. Reply with only a JSON value (no other text) "
        f"that fits this JSON Schema:\n{json.dumps(schema.schema, ensure_ascii=False)}")), node=node)
    return False


def value_of(ctx: NodeContext, agent_name: str, answer: str | None) -> Any:
    """The parsed value of ``agent_name``'s final ``answer`` when it declares a schema (None
    otherwise, or when a person accepted an answer that does not fit)."""
    schema = ctx.deps.graph.output_schemas.get(agent_name)
    if schema is None or answer is None:
        return None
    value, _ = schema.parse(answer)
    return value

"""What every guardrail check of a run shares: the ``RecordedRun`` a rail is given, how its decisions
and model calls are recorded (``Records``), and how a rail is named (used by ``engine.guard``
and ``engine.argrails``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from magent.llm.base import Attempt, LLMClient, LLMRequest, LLMResponse
from magent.models import Message

if TYPE_CHECKING:  # the rails' own modules load with the first rail: most runs declare none
    from magent.engine.context import NodeContext
    from magent.guardrails.base import Rail, RailInput
    from magent.guardrails.screen import Check


class RecordedRun:
    """The ``RailRun`` (``guardrails.base``) a rail gets: where the text is from, and model calls
    that are recorded (each failed attempt too, as ``on_attempt`` is told of it)."""

    def __init__(self, info: RailInput, client: Callable[[Rail, Any], LLMClient],
                 on_response: Callable[[Rail, LLMRequest, LLMResponse], None],
                 on_attempt: Callable[[Rail, Attempt, LLMRequest], None]):
        self.info = info
        self._client = client
        self._on_response = on_response
        self._on_attempt = on_attempt

    async def ask(self, rail: Rail, config: Any, system: str, prompt: str) -> str:
        request = LLMRequest(model=config.model, messages=[Message(role="user", content=prompt)], system=system,
                             temperature=0.0, max_tokens=config.max_tokens, endpoint=config.endpoint,
                             api_key=config.api_key, timeout=config.timeout_seconds,
                             max_retries=config.max_retries, fallback_model=config.fallback_model, agent=rail.key)
        response = await self._client(rail, config).complete(
            request, None, on_attempt=lambda attempt: self._on_attempt(rail, attempt, request))
        self._on_response(rail, request, response)
        return response.content


def emit_check(ctx: NodeContext, node: str | None, info: RailInput, check: Check, **where: Any) -> None:
    """Record a rail's decision on ``info`` as a ``guardrail`` event (never the text itself)."""
    fields = {k: v for k, v in check.fields().items() if v is not None}
    ctx.bus.emit("guardrail", node, stage=info.stage, source=info.source, **where,
                 **ctx.deps.redactor.data(fields))


def rail_label(rail: Rail, stage: str) -> str:
    """How messages name a rail: ``input rail 'pii'``, ``output rail 'tone' (judge)``."""
    return f"{stage} rail '{rail.name}'" + ("" if rail.name == rail.kind else f" ({rail.kind})")


@dataclass(eq=False)
class Records:
    """Rails' decisions and model calls kept back, to be recorded after what they judged."""

    items: list[Any] = field(default_factory=list)
    """``Check``s, ``(rail, LLMRequest, LLMResponse)`` model calls and ``(rail, Attempt, LLMRequest)``
    failed attempts, in the order they happened."""
    keep_prompts: bool = False
    """Keep what the judges were sent (``magent trace --step N --request``): set once the rails
    are done when they left the text whole — nothing masked, nothing withheld — so a judge's
    prompt holds nothing that is not stored anyway."""

    def check(self, check: Check) -> None:
        self.items.append(check)

    def call(self, rail: Rail, request: LLMRequest, response: LLMResponse) -> None:
        self.items.append((rail, request, response))

    def attempt(self, rail: Rail, attempt: Attempt, request: LLMRequest | None = None) -> None:
        if attempt.error is not None:  # (one starting is news for the live view only)
            self.items.append((rail, attempt, request))

    def flush(self, ctx: NodeContext, node: str | None, info: RailInput, iteration: int = 0, **where: Any) -> None:
        if not self.items:
            return
        from magent.guardrails.screen import Check

        for item in self.items:
            if isinstance(item, Check):
                emit_check(ctx, node, info, item, **where)
                continue
            rail, *call = item  # (rail, attempt, request) or (rail, request, response)
            if isinstance(call[0], Attempt):
                ctx.models.attempts(ctx.session, agent=rail.key, node=node, iteration=iteration, rail=rail.name,
                                    request=call[1], keep_messages=self.keep_prompts)(call[0])
            else:
                request, response = call
                ctx.models.record(response, ctx.session, node=node, agent=rail.key, iteration=iteration,
                                  rail=rail.name, request=request, keep_messages=self.keep_prompts)
        self.items.clear()

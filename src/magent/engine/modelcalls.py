"""A run's model calls: the client for each session and agent, each attempt's events, and the
answer's record and usage. The run owns one ``ModelCalls`` (``ctx.models``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from magent.engine.sessions import Session
from magent.models import LLMConfig, Usage
from magent.models.task import CALL_DETAILS, usage_key

if TYPE_CHECKING:
    from magent.engine.checkpointing import Checkpoints
    from magent.engine.context import RunDeps, RunState
    from magent.llm.base import Attempt, AttemptSink, LLMClient, LLMRequest, LLMResponse


class ModelCalls:
    """The model calls of one run."""

    def __init__(self, deps: "RunDeps", state: "RunState", checkpoints: "Checkpoints"):
        self.deps = deps
        self.state = state
        self.checkpoints = checkpoints
        self._clients: dict[tuple[str, str], "LLMClient"] = {}
        self.token_counts: dict[str, dict[str, int]] = {}
        """By model, by entry id: each message's tokens, counted once per run (``compaction.Counter``)."""

    def config(self, agent_name: str) -> LLMConfig:
        return self.deps.needs.models[agent_name]

    def client(self, agent_name: str, session: Session) -> "LLMClient":
        """``agent_name``'s client in ``session``."""
        return self.client_of(agent_name, self.config(agent_name), self.deps.graph.agents[agent_name].base_dir,
                              session)

    def client_of(self, key: str, config: LLMConfig, base_dir: Any, session: Session | None = None) -> "LLMClient":
        """The client for ``config``, made once per session and ``key`` (an agent's name, or a
        guardrail's key: those use the main session's); a scripted model's position is
        ``session.cursors[key]``."""
        session = session or self.state.main
        client = self._clients.get((session.id, key))
        if client is None:
            factory = self.deps.options.llm_factory
            if factory is None:
                from magent.llm.factory import make_client

                factory = make_client
            from magent.llm.limits import throttled

            # (behind the rate limits of a batch this run is part of, if any)
            client = throttled(factory(config, agent=key, base_dir=base_dir, cursors=session.cursors))
            self._clients[(session.id, key)] = client
        return client

    async def call(self, request: "LLMRequest", session: Session, *, node: str, iteration: int,
                   on_token: Callable[[str], None] | None = None) -> "LLMResponse":
        """Ask ``request.agent``'s model. Each attempt is announced live (``llm_started``) and
        each failed one is recorded as it fails (an ``llm_call`` with its ``error``), so a run
        that dies or gives up mid-retry leaves every attempt in its trace. The answer itself
        is recorded by ``record`` once the caller knows its entry."""
        sink = self.attempts(session, agent=request.agent, node=node, iteration=iteration, request=request)
        await self.checkpoints.before_model()
        client = self.client(request.agent, session)
        if on_token is None:
            return await client.complete(request, None, on_attempt=sink)
        from magent.redact_stream import complete_masked  # streamed text is masked as what is written

        return await complete_masked(client, request, on_token, sink, self.deps.redactor)

    def attempts(self, session: Session, *, agent: str, node: str | None, iteration: int,
                 rail: str | None = None, request: "LLMRequest | None" = None,
                 keep_messages: bool = False) -> "AttemptSink":
        """The events of a model call's attempts: a live-only ``llm_started`` as each starts, an
        ``llm_call`` with its ``error`` for each one that fails (``rail``: a guardrail's judge),
        naming what it sent as an answered call does (``request``: stored once, by hash)."""
        bus, redactor = self.deps.bus, self.deps.redactor
        sent: list[dict[str, Any]] = []

        def what_was_sent() -> dict[str, Any] | None:
            if request is None:
                return None
            if not sent:
                sent.append(self._sent(request, rail, keep_messages))
            return sent[0]

        def on_attempt(attempt: "Attempt") -> None:
            common = dict(agent=agent, model=attempt.model, iteration=iteration, attempt=attempt.number,
                          attempts=attempt.allowed, fallback=attempt.fallback or None, session=session.tag,
                          rail=rail, route=request.route if request is not None else None)
            if attempt.error is None:
                bus.emit("llm_started", node, timeout_s=attempt.timeout, **common)
            else:
                bus.emit("llm_call", node, provider=attempt.provider or None,
                         error=redactor.text(attempt.error), latency_ms=attempt.duration_ms,
                         retry_in=attempt.retry_in, cancelled=attempt.cancelled or None,
                         request=what_was_sent(), **common)

        return on_attempt

    def _sent(self, request: "LLMRequest", rail: str | None, keep_messages: bool) -> dict[str, Any]:
        """The ``request`` field of a call's ``llm_call`` events; its pieces are stored first.
        A guardrail judge's messages are kept only when ``keep_messages`` (see engine.guard)."""
        from magent.engine.sent import record

        return record(request, self.deps.task_dir.requests, self.deps.redactor,
                      keep_messages=rail is None or keep_messages)

    def record(self, response: "LLMResponse", session: Session, *, node: str | None, agent: str, iteration: int,
               entry_id: str | None = None, rail: str | None = None, request: "LLMRequest | None" = None,
               keep_messages: bool = False) -> None:
        """The answered call's ``llm_call`` event, and its usage added to the run's."""
        bus, redactor, run = self.deps.bus, self.deps.redactor, self.state
        sent = None
        if request is not None:  # its pieces are stored before the event names them
            sent = self._sent(request, rail, keep_messages)
            if not response.streamed:
                sent = {**sent, "stream": False}
        key = usage_key(response.model, response.provider)
        details = {name: getattr(response, name) or None for name in CALL_DETAILS}  # (0: left out)
        details["estimated"] = response.estimated or None  # (written only when true)
        call = Usage.of_call({"tokens_in": response.tokens_in, "tokens_out": response.tokens_out,
                              "cost": response.cost, **details})
        run.usage_by_model[key] = run.usage_by_model.get(key, Usage()).add(call)
        run.total_usage = run.total_usage.add(call)
        run.turn_index += 1
        bus.emit(
            "llm_call", node, agent=agent, model=response.model, provider=response.provider,
            tokens_in=response.tokens_in, tokens_out=response.tokens_out, **details, cost=response.cost,
            latency_ms=response.latency_ms, stop_reason=response.stop_reason, iteration=iteration,
            attempt=response.attempt if response.attempt != 1 else None, entry_id=entry_id,
            cursor=session.cursors.get(agent), session=session.tag, rail=rail, request=sent,
            route=request.route if request is not None else None,
            response_model=response.response_model,
            response={"content": redactor.text(response.content),
                      "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments,
                                      "raw_arguments": c.raw_arguments if c.arguments is None else None}
                                     for c in response.tool_calls]})

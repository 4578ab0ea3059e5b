"""Usage budgets: counting what a task spends and stopping it at a limit.

Limits come from an agent's ``budget:``, the workflow's and ``magent run --budget``
(docs/guides/running.md). A limit a person raised at a pause is kept in task.json's config
snapshot (``options.budget``, ``options.agent_budgets``).

What is spent is counted from the run's own events (an answered ``llm_call``, a
``tool_call``), in the ``Meter``, which every checkpoint stores (``spent``) and a resumed
run takes back, with the events written after its checkpoint: the counts are the task's,
across resumes, follow-ups and sub-agent sessions.

A limit is checked before each model call (tokens, cost, model calls) and before the tool
calls of a turn run (tool calls): a call in flight finishes, so usage may end a little
above a limit, never a call beyond it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from magent.engine.control import NodeFailed, PauseRun
from magent.errors import UsageError
from magent.models import Event, HumanRequest
from magent.models.budget import LIMITS, Budget, Spent

if TYPE_CHECKING:
    from magent.engine.context import NodeContext, RunContext
    from magent.models import Checkpoint

TASK = "task"
ALLOWED = ["approve", "reject"]


def agent_scope(agent: str) -> str:
    return f"agent:{agent}"


class Meter:
    """What the task has spent, per scope (``task``, ``agent:NAME``), counted from its events."""

    def __init__(self, run: "RunContext"):
        self.run = run
        self.spent: dict[str, Spent] = {}
        self._counts: dict[str | None, tuple[Spent, ...]] = {}
        """The counts an event of each agent adds to (the task's, then the agent's), by agent:
        two or three events a model turn are counted, each with the same lookups."""
        self._agents: dict[tuple[str | None, str | None], str | None] = {}
        """The agent of a tool call, by its event's session and node (``_agent_of``)."""
        self.limits_made: dict[str | None, tuple[Any, ...]] = {}
        """The budgets in force for each agent's calls, with what they were made of (``limits``)."""

    def observe(self, event: Event | dict[str, Any]) -> None:
        """Count ``event`` (an ``Event``, or the bus's dict of one)."""
        doc = event if isinstance(event, dict) else {"type": event.type, "node": event.node,
                                                     **(event.model_extra or {})}
        kind = doc["type"]
        if kind == "llm_call" and not doc.get("error"):
            cost = doc.get("cost") or 0.0
            tokens = int(doc.get("tokens_in") or 0) + int(doc.get("tokens_out") or 0)
            for s in self._of_agent(doc.get("agent")):
                s.tokens += tokens
                s.cost_usd += cost
                s.model_calls += 1
        elif kind == "tool_call":
            for s in self._of_agent(self._agent_of(doc)):
                s.tool_calls += 1

    def snapshot(self) -> dict[str, Spent]:
        return {scope: spent.model_copy() for scope, spent in self.spent.items()}

    def restore(self, cp: "Checkpoint") -> None:
        """Take the counts of ``cp`` (one written before budgets: its model usage, no tool calls)."""
        self._counts.clear()
        if cp.spent:
            self.spent = {scope: spent.model_copy() for scope, spent in cp.spent.items()}
            return
        usage = cp.total_usage
        self.spent = {TASK: Spent(tokens=usage.input + usage.output, cost_usd=usage.cost,
                                  model_calls=usage.calls)}

    def _of(self, scope: str) -> Spent:
        if scope not in self.spent:
            self.spent[scope] = Spent()
        return self.spent[scope]

    def _of_agent(self, agent: str | None) -> tuple[Spent, ...]:
        counts = self._counts.get(agent)
        if counts is None:
            counts = self._counts[agent] = tuple(self._of(scope) for scope in self._scopes(agent))
        return counts

    @staticmethod
    def _scopes(agent: str | None) -> list[str]:
        return [TASK, agent_scope(agent)] if agent else [TASK]

    def _agent_of(self, event: dict[str, Any]) -> str | None:
        key = (event.get("session"), event.get("node"))
        if key in self._agents:
            return self._agents[key]
        run = self.run
        session = run.state.sessions.get(key[0]) if key[0] else None
        if session is not None:
            agent = session.agent or None
        else:
            node = run.deps.graph.nodes.get(key[1] or "")
            agent = node.agent_name if node is not None else None
            if key[0]:
                return agent  # a session not known yet (a resumed run's events): not kept
        self._agents[key] = agent
        return agent


# limits in force ---------------------------------------------------------------------------

def limits(run: "RunContext", agent: str | None) -> list[tuple[str, Budget]]:
    """The budgets that apply to a call by ``agent``: the task's, then the agent's; made again only
    when a declared budget or a raised limit changed (they are checked before every call)."""
    options = run.deps.task.config_snapshot.get("options", {})
    declared, raised = run.deps.graph.workflow.budget, options.get("budget")
    has_own = bool(agent) and agent in run.deps.graph.agents
    own_declared = run.deps.graph.agents[agent].agent.budget if has_own else None  # type: ignore[index]
    own_raised = (options.get("agent_budgets") or {}).get(agent) if has_own else None
    made = run.meter.limits_made.get(agent)
    if (made is not None and made[0] is declared and made[1] is own_declared and made[2] == raised
            and made[3] == own_raised):
        out: list[tuple[str, Budget]] = made[4]
        return out
    out = []
    task_budget = _merged(declared, raised)
    if task_budget is not None:
        out.append((TASK, task_budget))
    if has_own:
        own = _merged(own_declared, own_raised)
        if own is not None:
            out.append((agent_scope(agent), own))  # type: ignore[arg-type]
    # (the raised limits as they are now: a copy, in case their dicts change in place)
    run.meter.limits_made[agent] = (declared, own_declared, _copied(raised), _copied(own_raised), out)
    return out


def _copied(raised: Any) -> Any:
    return dict(raised) if isinstance(raised, dict) else raised


def _merged(declared: Budget | None, raised: dict[str, Any] | None) -> Budget | None:
    if declared is None and not raised:
        return None
    base = declared.model_dump(exclude_none=True) if declared is not None else {}
    return Budget.model_validate({**base, **(raised or {})})


# checks --------------------------------------------------------------------------------------

def before_model_call(ctx: NodeContext, agent: str, node: str) -> None:
    """Stop before a model call when a token, cost or model-call limit has been reached."""
    _check(ctx, agent, node, tools=0)


def before_tool_calls(ctx: NodeContext, agent: str, node: str, count: int) -> None:
    """Stop before a turn's ``count`` tool calls run when they would go over a tool-call limit."""
    if count:
        _check(ctx, agent, node, tools=count)


def reached(limit: str, value: float, used: float) -> bool:
    """Whether ``used`` has reached ``limit``'s ``value`` (for tool calls ``used`` counts the
    calls about to be made, which may reach the limit but not go over it)."""
    return used > value if limit == "max_tool_calls" else used >= value


def _check(ctx: NodeContext, agent: str, node: str, *, tools: int) -> None:
    run = ctx.run
    human = run.state.metadata.get("human") or {}
    if human.get("kind") == "budget":
        answer = ctx.take_feedback(node)
        if answer is not None and answer.action == "reject":
            raise NodeFailed(f"a person stopped the run at the budget limit ({human.get('message') or 'rejected'})",
                             kind="budget")
    for scope, budget in limits(run, agent):
        spent = run.meter.spent.get(scope, Spent())
        for limit, value in budget.limits().items():
            if (limit == "max_tool_calls") != bool(tools):
                continue
            used = spent.of(limit) + tools
            if reached(limit, value, used):
                _stop(ctx, run, scope, budget, limit, value, used, agent, node)


def _stop(ctx: NodeContext, run: "RunContext", scope: str, budget: Budget, limit: str, value: float, used: float,
          agent: str, node: str) -> None:
    session = None if ctx.session.is_main else ctx.session.id
    said = describe(limit, value, used, scope, node)
    ctx.bus.emit("budget_reached", node, limit=limit, value=value, used=used, scope=scope, agent=agent,
                 action=budget.on_exceeded)
    if budget.on_exceeded == "fail":
        raise NodeFailed(said, kind="budget")
    raise PauseRun(HumanRequest(
        kind="budget", node=node, session=session, allowed_actions=list(ALLOWED),
        question=f"{said}. Raise the limit and go on (approve with --budget {limit}=N), or stop (reject)?",
        details={"limit": limit, "value": value, "used": used, "scope": scope, "agent": agent}))


def describe(limit: str, value: float, used: float, scope: str, node: str | None) -> str:
    """``budget reached: max_tokens 50,000 for the task (used 50,210), at node writer``."""
    whose = "the task" if scope == TASK else f"agent {scope.split(':', 1)[1]}"
    where = f", at node {node}" if node else ""
    return f"budget reached: {limit} {figure(limit, value)} for {whose} (used {figure(limit, used)}){where}"


def figure(limit: str, value: float) -> str:
    return f"${value:,.4f}" if limit == "max_cost_usd" else f"{int(value):,}"


# a person raising a limit ----------------------------------------------------------------------

def parse(text: str, where: str = "--budget") -> dict[str, Any]:
    """``max_tokens=50000,max_cost_usd=1`` (and ``on_exceeded=fail``) as budget fields, checked."""
    fields: dict[str, Any] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, eq, raw = part.partition("=")
        key, raw = key.strip(), raw.strip()
        if not eq or not raw:
            raise UsageError(f"{where}: {part!r} is not NAME=VALUE (e.g. max_tokens=50000,max_cost_usd=1)")
        if key in fields:  # which one was meant cannot be told
            raise UsageError(f"{where}: {key} is given twice")
        if key == "on_exceeded":
            if raw not in ("pause", "fail"):
                raise UsageError(f"{where}: on_exceeded must be pause or fail, not {raw!r}")
            fields[key] = raw
            continue
        if key not in LIMITS:
            raise UsageError(f"{where}: unknown limit {key!r} (limits: {', '.join(LIMITS)}, on_exceeded)")
        try:
            number = float(raw) if key == "max_cost_usd" else int(raw)
        except ValueError:
            kind = "a number" if key == "max_cost_usd" else "a whole number"
            raise UsageError(f"{where}: {key} must be {kind}, not {raw!r}") from None
        if not number > 0 or number != number or number == float("inf"):
            raise UsageError(f"{where}: {key} must be above 0, not {raw!r}")
        fields[key] = number
    if not fields:
        raise UsageError(f"{where}: give at least one limit (e.g. max_tokens=50000)")
    return fields


def raise_limits(snapshot: dict[str, Any], scope: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The task's config snapshot with ``fields`` raised for ``scope`` (kept in task.json)."""
    options = dict(snapshot.get("options") or {})
    if scope == TASK:
        options["budget"] = {**(options.get("budget") or {}), **fields}
    else:
        agent = scope.split(":", 1)[1]
        agents = dict(options.get("agent_budgets") or {})
        agents[agent] = {**(agents.get(agent) or {}), **fields}
        options["agent_budgets"] = agents
    return {**snapshot, "options": options}


def scope_reached(cp: "Checkpoint", later: list[Event]) -> str:
    """The scope whose limit stopped the task: the pause's, or the last one reached after ``cp``
    (a task that failed at a limit); else the task's."""
    request = cp.human_request
    if cp.awaiting_human and request is not None and request.kind == "budget":
        return str(request.details.get("scope") or TASK)
    for event in reversed(later):
        if event.type == "budget_reached":
            return str(event.field("scope") or TASK)
    return TASK


def check_answer(cp: "Checkpoint", graph: Any, snapshot: dict[str, Any], action: str | None) -> None:
    """Approving a budget pause needs the limit raised above what was used: refuse it before
    anything is written when it is not (``UsageError`` naming the figure)."""
    request = cp.human_request
    if not (cp.awaiting_human and request is not None and request.kind == "budget" and action == "approve"):
        return
    details = request.details
    limit, used, scope = details.get("limit"), details.get("used"), details.get("scope") or TASK
    options = snapshot.get("options") or {}
    if scope == TASK:
        budget = _merged(graph.workflow.budget, options.get("budget"))
    else:
        agent = scope.split(":", 1)[1]
        loaded = graph.agents.get(agent)
        budget = _merged(loaded.agent.budget if loaded is not None else None,
                         (options.get("agent_budgets") or {}).get(agent))
    value = getattr(budget, str(limit), None) if budget is not None else None
    if value is not None and used is not None and reached(str(limit), value, used):
        floor = figure(str(limit), used)
        raise UsageError(f"the budget is still reached: {limit} {figure(str(limit), value)}, used {floor}; "
                         f"raise it with --budget {limit}=N (N above {floor}) to go on")

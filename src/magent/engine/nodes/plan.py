"""``type: plan`` — seed 000 hierarchical planning: decompose, run the DAG level by level, synthesise.

The planner (``agent``) writes a plan in a session of its own (checked by ``engine/planning.py``),
the subtasks run in topological levels, each a session of its worker, a failed one is retried,
then the plan revised, then a person asked; the planner writes the final answer from the
results. What each option does: docs/guides/agents-and-workflows.md. Everything is durable like
any session: the node's progress records the plan and which session holds each subtask, so a
resumed run never runs a finished subtask again.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from magent.engine import planning
from magent.engine.children import run_agent_session, stamp
from magent.engine.context import NodeContext
from magent.engine.control import NodeFailed, PauseRun, Suspended
from magent.engine.nodes.base import Node, NodeConfig, NodeResult
from magent.engine.react import raise_first, react
from magent.errors import LLMError
from magent.models import HumanRequest, Message
from magent.models.progress import AgentProgress, PlanProgress, PlanRecord, PlanRevision, SubtaskStatus
from magent.store.events import truncate

class PlanConfig(NodeConfig):
    agent: str
    """The planner: it writes the plan, revises it, and writes the final answer."""
    workers: list[str] = Field(min_length=1)
    """The agents subtasks may be given to."""
    prompt: str = "{task}"
    """What to plan: ``{task}`` is the task's text, ``{input}`` the last node's output."""
    max_subtasks: int = Field(default=12, gt=0, le=100)
    max_concurrency: int = Field(default=4, gt=0, le=256)
    """Subtasks of one level running at the same time."""
    max_retries: int = Field(default=1, ge=0, le=10)
    """Further tries of a failed subtask before the plan is revised."""
    max_revisions: int = Field(default=1, ge=0, le=5)
    """Revisions of the plan after a subtask failed for good, before a person is asked."""
    max_plan_attempts: int = Field(default=3, gt=0, le=10)
    """Answers the planner may give before a valid plan (an invalid one is sent back)."""
    output_key: str | None = None
    """Metadata key of the plan's record (default: the node's name)."""


class PlanNode(Node):
    kind = "plan"
    Config = PlanConfig
    Progress = PlanProgress
    config: PlanConfig

    @classmethod
    def agent_refs(cls, config: PlanConfig) -> list[tuple[str, str]]:
        return [("agent", config.agent), *(("workers", w) for w in config.workers)]

    async def run(self, ctx: NodeContext) -> NodeResult:
        p = ctx.session.progress_as(PlanProgress)
        if p.plan is None:
            p.plan = PlanRecord()
            ctx.bus.emit("plan_started", self.name, agent=self.config.agent, workers=self.config.workers)
            self._publish(ctx)
            ctx.checkpoints.node_started()
        rec = p.plan
        feedback = ctx.take_feedback(self.name)
        if feedback is not None:  # the answer to a pause after the revised plan failed too
            if feedback.action == "reject":
                raise NodeFailed(f"plan node '{self.name}': a person rejected going on after "
                                 f"{self._failure(rec)}")
            rec.guidance = feedback.message
            for st in rec.status.values():
                if st.status == "failed":
                    st.status, st.attempts = "pending", 0
            ctx.checkpoints.node_step("plan_retry")
        while True:
            if rec.plan is None:
                await self._make_plan(ctx, rec)
            if await self._run_levels(ctx, rec):
                break
            failure = self._failure(rec)
            if rec.revision >= self.config.max_revisions:
                raise PauseRun(HumanRequest(
                    kind="plan_failed", node=self.name, allowed_actions=["approve", "reject"],
                    output=failure, details={"revision": rec.revision},
                    question=(f"The plan of '{self.name}' failed after {rec.revision} revision(s): "
                              f"{failure}. Approve to try the failed subtasks again (a --message "
                              "reaches them), or reject to fail the node.")))
            rec.revisions.append(PlanRevision(plan=self._plan(rec), reason=failure))
            rec.revision += 1
            rec.failure, rec.plan = failure, None
            ctx.bus.emit("plan_revising", self.name, revision=rec.revision, reason=ctx.deps.redactor.text(failure))
            self._publish(ctx)
            ctx.checkpoints.node_step("plan_revising")
        answer = await self._synthesize(ctx, rec)
        self._publish(ctx, result=answer)
        ctx.bus.emit("plan_finished", self.name, revisions=rec.revision,
                     subtasks=len(self._plan(rec)["subtasks"]))
        return NodeResult(output=answer)

    # 1. the plan
    def _goal(self, ctx: NodeContext) -> str:
        return self.config.prompt.replace("{task}", ctx.run.deps.task.description).replace("{input}", ctx.last_output)

    async def _make_plan(self, ctx: NodeContext, rec: PlanRecord) -> None:
        config = self.config
        workers = {w: self.graph.agent(w).role for w in config.workers}
        if rec.revision == 0:
            task = planning.planning_prompt(self._goal(ctx), workers, config.max_subtasks)
        else:
            previous = rec.revisions[-1].plan
            results = self._results(ctx, rec, only=[s["id"] for s in previous["subtasks"]])
            task = planning.revision_prompt(self._goal(ctx), previous, rec.status, results, rec.failure or "")
        key = f"plan:{rec.revision}"
        child = ctx.run.child(ctx.session, key)
        if child is None:
            child = ctx.run.open_session(ctx.session, kind="plan", key=key, node=self.name,
                                         agent=config.agent, task=task, speaker="workflow")
            ctx.checkpoints.session_started()
        view = ctx.run.node(child)
        agent = self.graph.agent(config.agent)
        while True:
            try:
                answer = await react(view, agent, self.name)
            except (NodeFailed, LLMError) as exc:
                ctx.run.close_session(child, "failed", error=str(exc))
                raise NodeFailed(f"plan node '{self.name}': the planner {config.agent!r} failed: {exc}") from None
            except PauseRun as pause:
                stamp(pause, child)
                raise
            try:
                plan = planning.read_plan(answer, config.workers, max_subtasks=config.max_subtasks)
            except planning.PlanError as exc:
                progress = child.progress_as(AgentProgress)
                invalid = progress.invalid + 1
                view.bus.emit("plan_invalid", self.name, attempt=invalid, error=str(exc))
                if invalid >= config.max_plan_attempts:
                    ctx.run.close_session(child, "failed", error=str(exc))
                    raise NodeFailed(f"plan node '{self.name}': no valid plan from {config.agent!r} after "
                                     f"{invalid} answers; the last: {exc}") from None
                progress.invalid = invalid
                view.add_message(Message(role="user", name="workflow", content=(
                    f"That plan cannot be used: {exc}. Answer with the corrected plan as one JSON object.")),
                    node=self.name)
                ctx.checkpoints.node_step("plan_invalid")
                continue
            break
        ctx.run.close_session(child, "completed", output=answer)
        self._adopt(rec, plan)
        ctx.bus.emit("plan", self.name, revision=rec.revision, subtasks=plan["subtasks"],
                     levels=planning.levels(plan["subtasks"]))
        self._publish(ctx)
        ctx.checkpoints.node_step("plan")

    def _adopt(self, rec: PlanRecord, plan: dict[str, Any]) -> None:
        """Make ``plan`` current: a subtask the previous plan finished, kept unchanged, stays done."""
        old = {s["id"]: s for s in (rec.revisions[-1].plan["subtasks"] if rec.revisions else [])}
        status: dict[str, SubtaskStatus] = {}
        for s in plan["subtasks"]:
            before, st = old.get(s["id"]), rec.status.get(s["id"])
            same = before is not None and all(before.get(k) == s.get(k) for k in ("agent", "description", "depends_on"))
            if same and st is not None and st.status == "completed":
                status[s["id"]] = st
            else:
                # (runs go on counting: each session of a subtask has a key of its own)
                status[s["id"]] = SubtaskStatus(status="pending", agent=s["agent"],
                                                runs=st.runs if st is not None else 0)
        rec.plan, rec.status = plan, status

    # 2. the levels
    async def _run_levels(self, ctx: NodeContext, rec: PlanRecord) -> bool:
        """Run what is left of the plan; False when a subtask failed beyond its retries."""
        subtasks = {s["id"]: s for s in self._plan(rec)["subtasks"]}
        for index, level in enumerate(planning.levels(self._plan(rec)["subtasks"])):
            if any(rec.status[sid].status == "failed" for sid in level):
                return False  # (after a resume: the level had failed before the crash)
            todo = [sid for sid in level if rec.status[sid].status != "completed"]
            if not todo:
                continue
            ctx.bus.emit("plan_level", self.name, level=index, subtasks=todo)
            group = ctx.session.stop.child()
            slots = asyncio.Semaphore(self.config.max_concurrency)
            jobs = [self._subtask(ctx, rec, subtasks[sid], group, slots) for sid in todo]
            raise_first(await asyncio.gather(*jobs, return_exceptions=True))
            if any(rec.status[sid].status == "failed" for sid in level):
                return False
        return True

    async def _subtask(self, ctx: NodeContext, rec: PlanRecord, subtask: dict[str, Any], group, slots) -> None:
        sid, st = subtask["id"], rec.status[subtask["id"]]
        while st.status != "completed":
            async with slots:
                child = ctx.run.child(ctx.session, st.key or "") if st.status == "running" else None
                if child is None:  # (running but not open: it was opened after the last checkpoint)
                    key = f"subtask:{sid}#{st.runs}"
                    if group.is_set:
                        raise Suspended(key)
                    deps = self._results(ctx, rec, only=subtask["depends_on"])
                    st.runs, st.status, st.key = st.runs + 1, "running", key
                    child = ctx.run.open_session(
                        ctx.session, kind="subtask", key=key, node=self.name, agent=subtask["agent"],
                        task=planning.subtask_prompt(subtask, deps, rec.guidance), stop=group,
                        speaker="workflow")
                    st.session = child.id
                    self._publish(ctx)
                    ctx.checkpoints.session_started()
                child.stop = group
                outcome = await run_agent_session(ctx.run, child, self.name, react)
            if outcome.ok:
                st.status, st.entry, st.error = "completed", outcome.entry_id, None
            else:
                st.attempts += 1
                st.error = ctx.deps.redactor.text(truncate(outcome.text, 1000))
                st.status = "failed" if st.attempts > self.config.max_retries else "retrying"
            ctx.bus.emit("subtask_finished", self.name, subtask=sid, agent=subtask["agent"], status=st.status,
                         attempt=st.attempts + (1 if outcome.ok else 0), subtask_session=child.id,
                         error=st.error if not outcome.ok else None)
            self._publish(ctx)
            ctx.checkpoints.node_step("subtask_end")
            if st.status == "failed":
                return

    # 4. the answer
    async def _synthesize(self, ctx: NodeContext, rec: PlanRecord) -> str:
        key = f"synthesis:{rec.revision}"
        child = ctx.run.child(ctx.session, key)
        if child is None:
            plan = self._plan(rec)
            results = self._results(ctx, rec, only=[s["id"] for s in plan["subtasks"]])
            child = ctx.run.open_session(ctx.session, kind="plan", key=key, node=self.name,
                                         agent=self.config.agent, speaker="workflow",
                                         task=planning.synthesis_prompt(self._goal(ctx), plan, results))
            ctx.checkpoints.session_started()
        outcome = await run_agent_session(ctx.run, child, self.name, react)
        if not outcome.ok:
            raise NodeFailed(f"plan node '{self.name}': the synthesis by {self.config.agent!r} failed: {outcome.text}")
        return outcome.text

    # state
    def _results(self, ctx: NodeContext, rec: PlanRecord, only: list[str]) -> dict[str, str]:
        entries = {sid: st.entry for sid, st in rec.status.items() if st.entry}
        return {sid: ctx.run.entry_text(entries[sid]) for sid in only if sid in entries}

    def _failure(self, rec: PlanRecord) -> str:
        failed = [(sid, st) for sid, st in rec.status.items() if st.status == "failed"]
        return "; ".join(f"subtask {sid!r} ({st.agent}) failed {st.attempts} time(s): {st.error or ''}"
                         for sid, st in failed) or "a subtask failed"

    @staticmethod
    def _plan(rec: PlanRecord) -> dict[str, Any]:
        """The current plan (made by now)."""
        assert rec.plan is not None
        return rec.plan

    def _publish(self, ctx: NodeContext, result: str | None = None) -> None:
        """The plan's record in State: the plan, its revisions, each subtask's status (and, at
        the end, each result and the final answer)."""
        rec = ctx.session.progress_of(PlanProgress).plan
        assert rec is not None  # (made as the node started)
        plan = rec.plan or {}
        subtasks = {}
        for sid, st in rec.status.items():
            shown: dict[str, Any] = {"status": st.status, "agent": st.agent, "attempts": st.attempts}
            if st.error:
                shown["error"] = st.error
            if result is not None and st.entry:
                shown["result"] = ctx.run.entry_text(st.entry)
            subtasks[sid] = shown
        ctx.state.metadata[self.config.output_key or self.name] = {
            "revision": rec.revision, "plan": plan.get("subtasks", []),
            "success_criteria": plan.get("success_criteria") or None,
            "revisions": [{"plan": r.plan["subtasks"], "reason": r.reason} for r in rec.revisions],
            "subtasks": subtasks, **({"result": result} if result is not None else {})}

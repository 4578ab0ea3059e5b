"""Plans (seed 000 hierarchical planning), the pure part: reading, checking and ordering.

A plan is the JSON object a planner agent answers with::

    {"subtasks": [{"id": "facts", "description": "...", "agent": "researcher",
                   "depends_on": []}, ...],
     "success_criteria": "..."}

``read_plan`` checks it against ``PLAN_SCHEMA`` (jsonschema), then what a schema cannot
say: ids are unique, every dependency names a subtask, every agent is one of the node's
workers, and the dependencies have no cycle. What it raises (``PlanError``) is written
for the model: the plan node sends it back as an observation. ``levels`` orders a valid
plan into topological levels; the subtasks of one level run side by side.
"""

from __future__ import annotations

import json
from typing import Any

from magent.llm.base import json_in_reply

PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["subtasks"],
    "properties": {
        "subtasks": {
            "type": "array", "minItems": 1,
            "items": {
                "type": "object",
                "required": ["id", "description", "agent"],
                "properties": {
                    "id": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,64}$"},
                    "description": {"type": "string", "minLength": 1},
                    "agent": {"type": "string"},
                    "depends_on": {"type": "array", "items": {"type": "string"}},
                },
                "additionalProperties": False,
            },
        },
        "success_criteria": {"type": "string"},
    },
}


class PlanError(ValueError):
    """What is wrong with a plan, in words for the model that wrote it."""


def read_plan(text: str, workers: list[str], *, max_subtasks: int) -> dict[str, Any]:
    """The plan in a planner's answer, checked; its subtasks always have ``depends_on``."""
    import jsonschema

    from magent.config.schemas import schema_problem

    doc = json_in_reply(text)
    if doc is None:
        raise PlanError("the answer has no JSON object; reply with the plan as one JSON object "
                        '{"subtasks": [{"id", "description", "agent", "depends_on"}], "success_criteria"}')
    errors = sorted(jsonschema.Draft202012Validator(PLAN_SCHEMA).iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "the plan"
        raise PlanError(f"{where}: {schema_problem(first)}")
    subtasks = doc["subtasks"]
    if len(subtasks) > max_subtasks:
        raise PlanError(f"the plan has {len(subtasks)} subtasks; at most {max_subtasks} are allowed")
    ids = [s["id"] for s in subtasks]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise PlanError(f"subtask ids must be unique; repeated: {', '.join(repeated)}")
    for s in subtasks:
        s.setdefault("depends_on", [])
        if s["agent"] not in workers:
            raise PlanError(f"subtask {s['id']!r} names agent {s['agent']!r}, which is not one of the "
                            f"workers: {', '.join(workers)}")
        for dep in s["depends_on"]:
            if dep not in ids:
                raise PlanError(f"subtask {s['id']!r} depends on {dep!r}, which is not a subtask of "
                                f"the plan (ids: {', '.join(ids)})")
            if dep == s["id"]:
                raise PlanError(f"subtask {s['id']!r} depends on itself")
    cycle = find_cycle(subtasks)
    if cycle:
        raise PlanError(f"the dependencies form a cycle: {' → '.join(cycle)}; a subtask can only "
                        "depend on subtasks that can finish before it")
    return {"subtasks": subtasks, "success_criteria": doc.get("success_criteria", "")}


def find_cycle(subtasks: list[dict[str, Any]]) -> list[str] | None:
    """One dependency cycle (``[a, b, a]``: a depends on b, which depends on a), or None."""
    deps = {s["id"]: list(s.get("depends_on", [])) for s in subtasks}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in deps.get(node, []):
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in deps:
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def levels(subtasks: list[dict[str, Any]]) -> list[list[str]]:
    """Topological levels of a valid plan: each subtask is one level after its last dependency;
    within a level, the plan's order."""
    level: dict[str, int] = {}
    remaining = list(subtasks)
    while remaining:
        ready = [s for s in remaining if all(d in level for d in s["depends_on"])]
        for s in ready:
            level[s["id"]] = 1 + max((level[d] for d in s["depends_on"]), default=-1)
        remaining = [s for s in remaining if s["id"] not in level]
        if not ready:  # read_plan refuses cycles; never loop on one
            raise PlanError("the dependencies form a cycle")
    out: list[list[str]] = [[] for _ in range(max(level.values()) + 1)] if level else []
    for s in subtasks:
        out[level[s["id"]]].append(s["id"])
    return out


def describe(plan: dict[str, Any]) -> str:
    """A plan as compact JSON, for a prompt."""
    return json.dumps(plan, ensure_ascii=False, indent=1)


# prompts

def planning_prompt(goal: str, workers: dict[str, str], max_subtasks: int) -> str:
    crew = "\n".join(f"- {name}: {role}" for name, role in workers.items())
    return (f"Break this task into subtasks for the agents below, then answer with the plan as one "
            f"JSON object and nothing else.\n\nTask:\n{goal}\n\nAgents:\n{crew}\n\n"
            'Form: {"subtasks": [{"id": "short_id", "description": "what to do, with everything the '
            'agent needs (it sees nothing else)", "agent": "one of the agents", "depends_on": '
            '["ids whose results it needs"]}], "success_criteria": "how to tell the task is done"}\n'
            f"At most {max_subtasks} subtasks. Subtasks without dependencies between them run at the "
            "same time; a subtask receives the results of the subtasks it depends on.")


def revision_prompt(goal: str, plan: dict[str, Any], status: dict[str, Any],
                    results: dict[str, str], failure: str) -> str:
    done = "\n".join(f"- {sid}: {text[:500]}" for sid, text in results.items()) or "(none)"
    return (f"A subtask of your plan failed, even after retries:\n{failure}\n\nTask:\n{goal}\n\n"
            f"The plan was:\n{describe(plan)}\n\nFinished subtasks and their results:\n{done}\n\n"
            "Answer with a revised plan as one JSON object in the same form. A finished subtask kept "
            "with the same id, agent and description is not run again. Work around the failure: "
            "another agent, another approach, or smaller steps.")


def subtask_prompt(subtask: dict[str, Any], deps: dict[str, str], guidance: str | None = None) -> str:
    text = subtask["description"]
    if deps:
        text += "\n\nResults of the subtasks this one depends on:\n" + "\n\n".join(
            f"## {sid}\n{result}" for sid, result in deps.items())
    if guidance:
        text += f"\n\nA person's note: {guidance}"
    return text


def synthesis_prompt(goal: str, plan: dict[str, Any], results: dict[str, str]) -> str:
    parts = "\n\n".join(f"## {sid}\n{text}" for sid, text in results.items())
    criteria = plan.get("success_criteria")
    return (f"Every subtask of the plan is done. Write the final answer to the task from their "
            f"results.\n\nTask:\n{goal}\n\n"
            + (f"Success criteria: {criteria}\n\n" if criteria else "")
            + f"Results:\n{parts}")

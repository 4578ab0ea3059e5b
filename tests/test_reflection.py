"""The reflection node as a user meets it: the critic's reply format, feedback read as text,
the end of a review loop at its round limit, and the critic's default output budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from magent.engine.nodes.reflection import CRITIC_MAX_TOKENS, parse_verdict
from magent.models import TaskStatus
from magent.testing import FunctionModel
from support.cli import invoke
from support.engine import agent_yaml, run_with, task_dir, write

LOOP = """
    name: loop
    entry_point: w
    nodes:
      w: {type: agent, agent: writer}
      r: {type: reflection, critic: critic, criteria: names a number, max_rounds: 2}
    edges:
      - {from: w, to: r}
      - {from: r, to: w, condition: "routing_key == 'revise'"}
      - {from: r, to: END}
    """


@pytest.mark.parametrize("reply, verdict, feedback", [
    ('{"verdict": "revise", "feedback": "name a number"}', "revise", "name a number"),
    ('{"verdict": "revise", "feedback": {"length": "too long", "tone": ["dull", "flat"]}}', "revise",
     "length: too long; tone: dull, flat"),
    ('{"verdict": "revise", "feedback": ["too long", "no number"]}', "revise", "too long; no number"),
    ('```json\n{"verdict": "PASS", "feedback": "fine"}\n```', "pass", "fine"),
    ("Verdict: pass\nFeedback: short and concrete", "pass", "short and concrete"),
    ("revise: give a number", "revise", "give a number"),
])
def test_the_critic_reply_formats_the_readme_documents(reply: str, verdict: str, feedback: str) -> None:
    assert parse_verdict(reply) == (verdict, feedback, True)


def test_a_reply_without_a_verdict_counts_as_revise_and_says_so() -> None:
    assert parse_verdict("I like it a lot") == ("revise", "I like it a lot", False)


def _loop(tmp_path: Path, critic_replies: list[str]) -> Path:
    write(tmp_path, "writer.yaml", agent_yaml("writer", "[]"))
    write(tmp_path, "critic.yaml", agent_yaml("critic", "[]"))
    write(tmp_path, "writer.script.yaml", "responses:\n  - content: draft one\n  - content: draft two\n")
    write(tmp_path, "critic.script.yaml",
          "responses:\n" + "".join(f"  - content: '{reply}'\n" for reply in critic_replies))
    return write(tmp_path, "loop.yaml", LOOP)


def test_structured_feedback_and_the_round_limit_read_as_text_live_in_the_conversation_and_in_the_trace(
        tmp_path: Path) -> None:
    flow = _loop(tmp_path, ['{"verdict": "revise", "feedback": {"length": "too long", "tone": ["dull"]}}',
                            '{"verdict": "revise", "feedback": ["still long", "no number"]}'])
    result = invoke("run", str(flow), "-t", "copy")
    assert result.code == 0, result.out + result.err
    assert "verdict: revise (round 1/2) length: too long; tone: dull" in result.out
    assert "verdict: revise (round 2/2) still long; no number" in result.out
    assert "round limit reached: no pass in 2 rounds" in result.out
    assert "{'" not in result.out and "['" not in result.out
    task_id = result.out.split()[1]

    td = task_dir(task_id)
    state = td.full_state(td.checkpoints.read(td.checkpoints.numbers()[-1]))
    assert state.routing_key == "max_rounds"
    said = [m.content for m in state.messages if m.name == "critic"]
    assert said == ["Reviewer feedback (round 1, revise): length: too long; tone: dull"]

    trace = invoke("trace", task_id)
    assert "verdict revise (round 1/2): length: too long; tone: dull" in trace.out
    assert "round limit reached: no pass in 2 rounds" in trace.out
    assert "{'" not in trace.out


def test_a_pass_within_the_limit_says_nothing_of_a_limit(tmp_path: Path) -> None:
    flow = _loop(tmp_path, ['{"verdict": "revise", "feedback": "name a number"}',
                            '{"verdict": "pass", "feedback": "good"}'])
    result = invoke("run", str(flow), "-t", "copy")
    assert result.code == 0
    assert "verdict: pass (round 2/2) good" in result.out
    assert "round limit" not in result.out


@pytest.mark.parametrize("extra, expected", [("", CRITIC_MAX_TOKENS), ("  max_tokens: 300\n", 300)])
def test_a_critic_gets_a_default_output_budget_unless_its_agent_sets_one(tmp_path: Path, extra: str,
                                                                         expected: int) -> None:
    write(tmp_path, "writer.yaml", agent_yaml("writer", "[]"))
    critic = agent_yaml("critic", "[]").replace("llm_config: {model: scripted, script: critic.script.yaml}\n",
                            "llm_config:\n  model: scripted\n  script: critic.script.yaml\n" + extra)
    write(tmp_path, "critic.yaml", critic)
    flow = write(tmp_path, "loop.yaml", LOOP)
    budgets: dict[str, object] = {}

    def reply(request):
        budgets[request.agent] = request.max_tokens
        return '{"verdict": "pass", "feedback": "ok"}' if request.agent == "critic" else "a draft with 3"

    outcome = run_with(FunctionModel(reply), flow)
    assert outcome.status == TaskStatus.completed
    assert budgets == {"writer": None, "critic": expected}

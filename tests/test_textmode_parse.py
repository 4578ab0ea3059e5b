"""The text-format ReAct parser against what small models really write, run through an agent.

The replies are adapted from public transcripts of small models in the ReAct format (names
and texts changed to this suite's ``kv`` tools); each test says where its shape comes from.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from magent.models import TaskStatus
from magent.testing import QueueModel
from support.engine import agent_yaml, events, kv_store, run_with, write


def text_agent(tmp_path: Path) -> Path:
    return write(tmp_path, "a.yaml", agent_yaml("a", "[kv.*]", extra="tool_calling: text\nmax_iterations: 4\n"))


def tool_runs(task_id: str) -> list[tuple[str, str]]:
    return [(e.field("tool"), e.field("outcome")) for e in events(task_id) if e.type == "tool_result"]


# Labels in markdown bold: what qwen2.5 and llama3.1 instruct models write through Ollama once
# the conversation has any markdown in it (the shape of the replies in crewAIInc/crewAI#4186
# and langchain-ai/langchain#20704, with the labels emphasised).
BOLD = ('**Thought:** I should store the city first.\n\n'
        '**Action:** kv.set\n'
        '**Action Input:** {"key": "city", "value": "Lyon"}')

# The Action Input in a ```json fence, then prose (DB-GPT's parser fix, eosphoros-ai/DB-GPT#3074,
# reports fenced ReAct steps; small models add a sentence after the fence).
FENCED = ('Thought: I need to save the city.\n'
          'Action: kv.set\n'
          'Action Input:\n'
          '```json\n'
          '{"key": "city", "value": "Lyon"}\n'
          '```\n'
          'I will wait for the observation before answering.')

# The tool name in backticks, as the prompt's own examples had it (Qwen3-8B in
# datawhalechina/hello-agents#127: "the prompt wrote the action with backticks").
BACKTICKED = ('Thought: Store it.\n'
              'Action: `kv.set`\n'
              'Action Input: {"key": "city", "value": "Lyon"}')

# A made-up Observation (and a made-up answer after it) right after the Action Input:
# llama3 in langchain-ai/langchain#20704 ("Observation: According to various news sources...").
HALLUCINATED = ('Thought: I need to look up the city.\n'
                'Action: kv.get\n'
                'Action Input: {"key": "city"}\n'
                'Observation: The city is Paris.\n'
                'Thought: I now know the final answer\n'
                'Final Answer: Paris')


@pytest.mark.parametrize("reply", [BOLD, FENCED, BACKTICKED], ids=["bold", "fenced", "backticked"])
def test_a_tool_call_written_the_way_small_models_write_it_runs(tmp_path: Path, reply: str) -> None:
    model = QueueModel([reply, "Thought: stored.\nFinal Answer: Stored Lyon."], tools=False)
    outcome = run_with(model, text_agent(tmp_path))
    assert outcome.status == TaskStatus.completed and outcome.result == "Stored Lyon."
    assert tool_runs(outcome.task_id) == [("kv.set", "SUCCESS")]
    assert kv_store(outcome.task_id) == {"city": "Lyon"}


def test_an_observation_the_model_made_up_is_not_the_tools_result(tmp_path: Path) -> None:
    model = QueueModel([
        'Thought: store it\nAction: kv.set\nAction Input: {"key": "city", "value": "Lyon"}',
        HALLUCINATED,
        "Thought: the tool said Lyon.\nFinal Answer: Lyon",
    ], tools=False)
    outcome = run_with(model, text_agent(tmp_path))
    assert outcome.result == "Lyon"  # not the made-up "Paris"
    assert tool_runs(outcome.task_id) == [("kv.set", "SUCCESS"), ("kv.get", "SUCCESS")]
    seen = [m.content for m in model.requests[2].messages]
    assert "Observation: Lyon" in seen
    assert not any("Paris" in text for text in seen)  # the model's own turn goes back without it


def test_a_reply_that_only_thinks_is_not_the_answer(tmp_path: Path) -> None:
    # A bare thought with no Action and no Final Answer: meta-llama/llama-models#113 (llama3.1,
    # "Invalid Format: Missing 'Action:' after 'Thought:'") and run-llama/llama_index#12460.
    model = QueueModel(["Thought: I am not sure yet.",
                        "Thought: I know it.\nFinal Answer: Lyon"], tools=False)
    outcome = run_with(model, text_agent(tmp_path))
    assert outcome.status == TaskStatus.completed and outcome.result == "Lyon"
    told = model.requests[1].messages[-1]
    assert told.role == "user" and "no Action and no Final Answer" in told.content


def test_only_thinking_is_bounded_by_max_iterations(tmp_path: Path) -> None:
    model = QueueModel(["Thought: I am not sure yet."] * 4, tools=False)
    outcome = run_with(model, text_agent(tmp_path))
    assert outcome.status == TaskStatus.failed
    assert "max_iterations (4)" in (outcome.error or "")
    assert len(model.requests) == 4


def test_a_plain_reply_without_any_label_is_still_the_answer(tmp_path: Path) -> None:
    model = QueueModel(["Lyon is in France."], tools=False)
    outcome = run_with(model, text_agent(tmp_path))
    assert outcome.result == "Lyon is in France."

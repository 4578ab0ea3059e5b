"""Structured output (issue 12 item 5): an agent's ``output_schema``.

The final answer must be JSON that fits; one that does not goes back to the model,
at most ``output_retries`` times, then the node fails. The parsed value is in State
(``metadata.outputs[node]``, where edge conditions route on it) and is the
``AgentResult.output`` of a run it answers.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import magent
from magent.store.tasks import Store
from support.cli import invoke

ROOT = Path(__file__).resolve().parent.parent
ROUTER = str(ROOT / "examples/workflows/ticket_router.yaml")
CLASSIFIER = str(ROOT / "examples/agents/ticket_classifier.yaml")
SCHEMA = {"type": "object", "properties": {"priority": {"enum": ["high", "normal"]}},
          "required": ["priority"]}


def last_line(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def write_agent(folder: Path, replies: list[str], *, schema=SCHEMA, retries: int | None = None,
                name: str = "sorter") -> Path:
    (folder / f"{name}_script.yaml").write_text(json.dumps({"responses": [{"content": r} for r in replies]}))
    doc = {"name": name, "role": "Sorts tickets", "system_prompt": "Answer with JSON.",
           "output_schema": schema, "llm_config": {"model": "scripted", "script": f"{name}_script.yaml"}}
    if retries is not None:
        doc["output_retries"] = retries
    path = folder / f"{name}.yaml"
    path.write_text(json.dumps(doc, indent=1))
    return path


def test_a_field_of_the_structured_answer_routes_the_edge() -> None:
    r = invoke("run", ROUTER, "-t", "Checkout is broken for everyone", "--json")
    assert r.code == 0, r.out + r.err
    result = last_line(r.out)
    assert result["output"].startswith("PAGE payments on-call")  # the page node ran, not answer
    events = [json.loads(line) for line in r.out.strip().splitlines()[:-1]]
    assert [e["node"] for e in events if e.get("type") == "node_started"] == ["classify", "page"]
    [invalid] = [e for e in events if e.get("type") == "output_invalid"]
    assert "not JSON" in invalid["problem"] and invalid["retry"] == 1
    td = Store().task(result["task_id"])
    state = td.checkpoints.read(td.checkpoints.last_number()).state
    assert state.metadata["outputs"]["classify"] == {
        "priority": "high", "category": "billing", "summary": "Checkout fails for every customer"}
    trace = invoke("trace", result["task_id"])
    assert "answer does not fit output_schema: the text is not JSON" in trace.out
    assert "sent back to the model (retry 1/2)" in trace.out


def test_the_other_value_takes_the_other_edge(tmp_path: Path) -> None:
    write_agent(tmp_path, ['{"priority": "normal"}'])
    (tmp_path / "flow.yaml").write_text(Path(ROUTER).read_text().replace(
        "agent: ticket_classifier", "agent: sorter"))
    for name in ("on_call", "triager"):
        text = (ROOT / f"examples/agents/{name}.yaml").read_text()
        (tmp_path / f"{name}.yaml").write_text(text.replace("scripts/", str(ROOT / "examples/agents/scripts") + "/"))
    r = invoke("run", str(tmp_path / "flow.yaml"), "-t", "How do I change my avatar?", "--json")
    assert r.code == 0, r.out + r.err
    assert last_line(r.out)["output"].startswith("Thanks for the report")  # the triager answered


def test_agent_result_output_is_the_parsed_value() -> None:
    r = invoke("run", CLASSIFIER, "-t", "Checkout is broken", "--json")
    assert r.code == 0, r.out + r.err
    assert last_line(r.out)["output"] == {"priority": "high", "category": "billing",
                                          "summary": "Checkout fails for every customer"}
    result = magent.run(CLASSIFIER, "Checkout is broken")
    assert result.success and result.output["priority"] == "high"
    assert magent.task(result.task_id).output == result.output  # read back from the task's files


def test_a_fenced_json_answer_fits(tmp_path: Path) -> None:
    agent = write_agent(tmp_path, ['```json\n{"priority": "normal"}\n```'])
    result = magent.run(str(agent), "sort")
    assert result.output == {"priority": "normal"} and len(result.model_calls) == 1


def test_retries_run_out_and_the_node_fails_with_the_validation_error(tmp_path: Path) -> None:
    agent = write_agent(tmp_path, ['{"priority": "urgent"}', '{"priority": "URGENT"}', "still wrong"], retries=1)
    r = invoke("run", str(agent), "-t", "sort", "--json")
    assert r.code == 1, r.out + r.err
    result = last_line(r.out)
    assert result["status"] == "failed" and len(result["model_calls"]) == 2
    assert result["error"]["type"] == "output_schema"
    assert "does not fit its output_schema after 1 retry" in result["error"]["message"]
    assert "priority: 'URGENT' is not one of high, normal" in result["error"]["message"]
    td = Store().task(result["task_id"])
    sent_back = [e for e in td.entries.load().values() if e.name == "magent"]
    assert len(sent_back) == 1 and "'urgent' is not one of" in sent_back[0].content
    assert '"required": ["priority"]' in sent_back[0].content  # the schema goes with it


def test_zero_retries_fails_at_the_first_bad_answer(tmp_path: Path) -> None:
    agent = write_agent(tmp_path, ["prose"], retries=0)
    result = magent.run(str(agent), "sort")
    assert result.status == "failed" and len(result.model_calls) == 1 and result.error.type == "output_schema"


@pytest.mark.parametrize("schema, words", [
    ({"type": "objekt"}, "not a valid JSON Schema"),
    ({"properties": {"a": {"minLength": -1}}}, "not a valid JSON Schema"),
    ("missing.json", "cannot read"),
])
def test_a_bad_schema_is_a_validate_error_at_its_line(tmp_path: Path, magent_home: Path, schema,
                                                      words: str) -> None:
    agent = write_agent(tmp_path, ["{}"], schema=schema)
    line = next(n for n, text in enumerate(agent.read_text().splitlines(), 1) if '"output_schema"' in text)
    for command in (("validate", str(agent)), ("run", str(agent), "-t", "x")):
        r = invoke(*command)
        assert r.code == 2, r.out + r.err
        assert f"{agent.name}:{line}:" in r.err and "output_schema" in r.err and words in r.err
    assert not list((magent_home / "tasks").glob("*"))  # nothing written


def test_a_schema_file_relative_to_the_agent_file(tmp_path: Path) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "s.json").write_text(json.dumps(SCHEMA))
    agent = write_agent(tmp_path, ['{"priority": "high"}'], schema="schemas/s.json")
    assert magent.run(str(agent), "sort").output == {"priority": "high"}


def test_models_that_support_it_are_asked_for_native_structured_output() -> None:
    from magent.llm.base import LLMRequest
    from magent.llm.litellm_client import LiteLLMClient
    from magent.models import Message
    from support.openai_stub import STUB_KEY, STUB_MODEL, OpenAIStub

    with OpenAIStub() as stub:
        for model in ("openai/gpt-4o-mini", STUB_MODEL):
            stub.text('{"priority": "high"}')
            request = LLMRequest(model=model, messages=[Message(role="user", content="sort")],
                                 endpoint=stub.url, api_key=STUB_KEY, max_retries=0, output_schema=SCHEMA)
            asyncio.run(LiteLLMClient().complete(request))
        known, unknown = stub.requests
    assert known["response_format"]["json_schema"]["schema"] == SCHEMA
    assert "response_format" not in unknown  # litellm does not know the model supports it

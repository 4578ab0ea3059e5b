"""``magent validate`` knows what conditions and templates read (issue 33 item 6): a node an
edge condition or a template names in ``metadata.outputs`` or ``visits``, a field an agent's
``output_schema`` lacks, a misspelt ``metadata`` key — errors at file:line with did-you-mean."""

from __future__ import annotations

import json

from support.cli import invoke

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["priority", "summary"],
          "properties": {"priority": {"type": "string"}, "summary": {"type": "string"},
                         "owner": {"type": "object", "additionalProperties": False,
                                   "properties": {"team": {"type": "string"}}}}}

WORKFLOW = """\
name: wf
entry_point: classify
agents:
  classifier:
    name: classifier
    role: r
    system_prompt: Classify.
    output_schema: schema.json
    llm_config: {{model: scripted, script: script.yaml}}
  writer:
    name: writer
    role: r
    system_prompt: "{prompt}"
    llm_config: {{model: scripted, script: script.yaml}}
nodes:
  classify: {{type: agent, agent: classifier}}
  page: {{type: agent, agent: writer}}
  save: {{type: tool, tool: kv.set, arguments: {{key: k, value: "{{{{ metadata.outputs.classify.summary }}}}"}},
          output_key: saved}}
edges:
  - {{from: classify, to: page, condition: "{condition}"}}
  - {{from: classify, to: save}}
  - {{from: page, to: END}}
  - {{from: save, to: END}}
"""


def _workflow(tmp_path, monkeypatch, *, condition: str, prompt: str = "Write.") -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "script.yaml").write_text("responses:\n  - content: done\n")
    (tmp_path / "wf.yaml").write_text(WORKFLOW.format(condition=condition, prompt=prompt))


def test_a_condition_on_fields_the_schema_has_passes(tmp_path, monkeypatch):
    _workflow(tmp_path, monkeypatch, condition="metadata.outputs.classify.priority == 'high' and "
              "metadata.outputs.classify.owner.team == 'ops' and visits.get('page', 0) < 2",
              prompt="Write about {{ metadata.outputs.classify.summary }} for {{ metadata.saved }}.")
    r = invoke("validate", "wf.yaml")
    assert r.code == 0, r.err


def test_routing_on_a_field_the_schema_lacks_is_an_error_at_its_line(tmp_path, monkeypatch):
    _workflow(tmp_path, monkeypatch, condition="metadata.outputs.classify.priorty == 'high' or "
              "metadata['outputs']['classify']['owner']['taem'] == 'ops'")
    r = invoke("validate", "wf.yaml")
    assert r.code == 2
    assert r.err.splitlines() == [
        "magent: error: invalid workflow: wf.yaml:21:32: edges[0].condition: metadata.outputs.classify.priorty: "
        "the output_schema of agent 'classifier' (node classify) has no field 'priorty' (did you mean "
        "'priority'? fields: owner, priority, summary)",
        "magent: error: invalid workflow: wf.yaml:21:32: edges[0].condition: metadata.outputs.classify.owner.taem: "
        "the output_schema of agent 'classifier' (node classify) has no field 'taem' (did you mean 'team'? "
        "fields: team)",
    ]


def test_a_condition_or_template_naming_an_unknown_node_is_an_error(tmp_path, monkeypatch):
    _workflow(tmp_path, monkeypatch, condition="visits.clasify < 2 and metadata.outputs.get('pgae') == none",
              prompt="Write about {{ metadata.outputs.clasify.summary }} and {{ metadata.saevd }}.")
    r = invoke("validate", "wf.yaml")
    assert r.code == 2
    errors = r.err.splitlines()
    assert len(errors) == 4, r.err
    assert errors[0].endswith("wf.yaml:13: agents.writer.system_prompt: metadata.outputs.clasify: no node "
                              "'clasify' (did you mean 'classify'?)")
    assert errors[1].endswith("agents.writer.system_prompt: metadata.saevd: nothing in the workflow sets it "
                              "(did you mean 'saved'?)")
    assert "wf.yaml:21:32: edges[0].condition: visits.clasify: no node 'clasify' (did you mean 'classify'?)" \
        in errors[2]
    assert "edges[0].condition: metadata.outputs.pgae: no node 'pgae' (did you mean 'page'?)" in errors[3]


def test_a_misspelt_name_in_a_template_or_condition_gets_a_did_you_mean(tmp_path, monkeypatch):
    _workflow(tmp_path, monkeypatch, condition="routing_ky == 'x'")
    r = invoke("validate", "wf.yaml")
    assert r.code == 2 and "condition names unknown field 'routing_ky' (did you mean 'routing_key'?" in r.err
    _workflow(tmp_path, monkeypatch, condition="routing_key == 'x'", prompt="About {{ tsak }}.")
    r = invoke("validate", "wf.yaml")
    assert r.code == 2 and "template uses unknown name 'tsak' (did you mean 'task'?" in r.err

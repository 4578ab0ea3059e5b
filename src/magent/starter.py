"""Starting points: the README's examples, from an installed wheel or a source checkout."""

from __future__ import annotations

import filecmp
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from magent.errors import UsageError

_HERE = Path(__file__).resolve().parent
_CANDIDATES = (_HERE / "examples", _HERE.parent.parent / "examples")


@dataclass
class Example:
    path: str
    """Relative to the examples folder, e.g. ``workflows/write_review.yaml``."""
    about: str
    """The first sentence of the file's opening comment."""


def examples_root() -> Path:
    """The folder that holds the bundled examples."""
    for candidate in _CANDIDATES:
        if (candidate / "workflows").is_dir():
            return candidate
    raise UsageError("this installation of magent has no examples (looked in "
                     + ", ".join(str(c) for c in _CANDIDATES) + ")")


def list_examples() -> list[Example]:
    """Agents, workflows and MCP files (not the scripted models' reply files), by path."""
    root = examples_root()
    found = []
    for path in sorted(root.rglob("*.yaml")):
        rel = path.relative_to(root)
        if "scripts" in rel.parts:
            continue
        found.append(Example(rel.as_posix(), _about(path)))
    return found


def _about(path: Path) -> str:
    """One line: an agent's ``role``, a workflow's ``description``, else its opening comment's first line."""
    import yaml

    text = path.read_text(encoding="utf-8")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        doc = None
    if isinstance(doc, dict):
        for field in ("description", "role"):
            if isinstance(doc.get(field), str) and doc[field].strip():
                return " ".join(doc[field].split())
    first = text.splitlines()[0] if text else ""
    return first.lstrip("#").strip() if first.startswith("#") else ""


@dataclass
class CopyReport:
    dest: Path
    copied: list[Path]
    unchanged: list[Path]


def copy_examples(dest: Path, *, force: bool = False) -> CopyReport:
    """Copy the examples into ``dest`` (created if missing); a file there with other content is
    never overwritten unless ``force``: nothing is copied and a ``UsageError`` names the files."""
    root = examples_root()
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"{dest} exists and is not a folder")
    if dest.resolve() == root.resolve():
        return CopyReport(dest, [], sorted(p.relative_to(root) for p in root.rglob("*.yaml")))
    plan = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    differ = [rel for rel in plan if (dest / rel).exists() and not filecmp.cmp(root / rel, dest / rel, shallow=False)]
    if differ and not force:
        shown = ", ".join(str(dest / rel) for rel in differ[:3]) + (f" and {len(differ) - 3} more" if len(differ) > 3 else "")
        raise UsageError(f"{shown} already exist{'s' if len(differ) == 1 else ''} with other content; "
                         "nothing copied (--force overwrites them)")
    report = CopyReport(dest, [], [])
    for rel in plan:
        target = dest / rel
        if target.exists() and rel not in differ:
            report.unchanged.append(rel)
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / rel, target)
        except OSError as exc:
            done = f"{len(report.copied)} of {len(plan)} files were copied" if report.copied else "nothing was copied"
            raise UsageError(f"cannot write {exc.filename or target}: {exc.strerror or exc}; {done}") from None
        report.copied.append(rel)
    return report


# -- new files: `magent new agent|workflow NAME` --------------------------------------

AGENT_TEMPLATE = """\
# An agent: a model with a prompt and tools, answering in a ReAct loop.
#   magent run {file} -t "..."     runs it on its own
#   magent validate {file}         checks your edits
# In a workflow it is a node: {{type: agent, agent: {name}}}. Every field is
# explained; delete what you do not need.
{name_line}# lowercase letters, digits and _; workflows use this name
role: Answers questions briefly   # one line: what it is for
system_prompt: |
  You are a careful assistant. Answer briefly, and say so when you are not sure.
  Use your tools when they help; never make up what a tool would return.
tools: [kv.*]                     # server.tool or server.* (kv is built in; see magent tools list)
# deny_tools: [kv.delete]         # taken out of what tools allows
# mcp_servers: mcp.yaml           # an MCP servers file of this agent's own, next to this file
max_iterations: 10                # model turns before the node gives up
temperature: 0.7
# tool_calling: text              # for models without function calling (Thought/Action/Final Answer)
# on_truncation: fail             # a reply cut at max_tokens fails (default: ask it to continue)
# on_refusal: pause               # a refusal pauses for a person (default: the node fails)
llm_config:
{model_lines}
  # endpoint: http://127.0.0.1:8080/v1   # an OpenAI-compatible server (llama.cpp, Ollama, vLLM)
  # api_key: ${{MY_API_KEY}}              # ${{VAR}}: read when the run starts, never written to disk
  # fallback_model: anthropic/claude-3-5-haiku-20241022   # tried when the model keeps failing
  # max_tokens: 1024
"""

WORKFLOW_TEMPLATE = """\
# A workflow: a graph of nodes that magent runs from entry_point along the edges.
# This one drafts an answer, and a critic sends it back until it passes.
#   magent run {file} -t "..."     run it
#   magent graph {file}            draw it
#   magent validate {file}         check your edits
name: {name}
description: Draft an answer and revise it until a critic passes it
entry_point: draft
agents:                           # agents defined here; others are found next to this file,
  writer:                         # in ./agents/, or installed in ~/.multi-agent/agents/
    name: writer
    role: Drafts the answer
    system_prompt: |
      Answer the task in a few sentences. When a reviewer gives feedback, revise your
      last answer to address every point, and reply with the new answer only.
    llm_config:
{model_lines_inline}
  critic:
    name: critic
    role: Reviews drafts against the criteria
    system_prompt: |
      You are a strict reviewer. Reply with a JSON object only:
      {{"verdict": "pass" or "revise", "feedback": "what to change, or why it passes"}}
    temperature: 0
    llm_config:
{model_lines_inline}
nodes:
  draft:
    type: agent                   # a ReAct loop: the model thinks, may call tools, answers
    agent: writer
  review:
    type: reflection              # the critic judges the last output; its verdict sets routing_key
    critic: critic
    criteria: Correct, complete, and at most five sentences.
    max_rounds: 3                 # after 3 reviews without a pass, routing_key is max_rounds
  # approve:
  #   type: human                 # pauses for a person: magent resume ID --approve | --reject
  #   prompt: Is this good to send?
  # save:
  #   type: tool                  # calls one tool with arguments from State
  #   tool: kv.set
  #   arguments: {{key: answer, value: $output}}
edges:                            # tried in order: the first whose condition holds is taken
  - {{from: draft, to: review}}
  - {{from: review, to: draft, condition: "routing_key == 'revise'"}}
  - {{from: review, to: END}}
# checkpoints: [review]           # nodes after which a person must approve before going on
max_iterations: 20                # node runs before the run stops (bounds any loop)
"""

WORD = r"^[a-z][a-z0-9_]*$"


def _model_lines(model: str | None, default: str | None, indent: str) -> str:
    if model:
        return f"{indent}model: {model}"
    if default:
        return (f"{indent}# model: openai/gpt-4o-mini   # unset: the default model "
                f"(now {default}; magent config show)")
    return (f"{indent}model: openai/gpt-4o-mini      # any litellm model string; this one reads "
            "OPENAI_API_KEY")


def new_file(kind: str, name: str, folder: Path, *, model: str | None = None, force: bool = False) -> Path:
    """Write a commented, valid starting ``agent`` or ``workflow`` file ``folder/NAME.yaml``."""
    import re

    from magent.config.defaults import default_model

    if not re.fullmatch(WORD, name):
        raise UsageError(f"{name!r} is not a usable name: lowercase letters, digits and _, "
                         "starting with a letter (e.g. support_bot)")
    path = folder / f"{name}.yaml"
    if os.path.lexists(path) and not force:
        raise UsageError(f"{path} already exists (--force replaces it)")
    default = None if model else default_model().model
    shown = str(path)
    if kind == "agent":
        text = AGENT_TEMPLATE.format(name=name, file=shown, name_line=f"name: {name}".ljust(34),
                                     model_lines=_model_lines(model, default, "  "))
    else:
        text = WORKFLOW_TEMPLATE.format(name=name, file=shown,
                                        model_lines_inline=_model_lines(model, default, "      "))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path

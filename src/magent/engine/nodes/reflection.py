"""``type: reflection`` — a critic agent judges the last output against the node's criteria.

The critic replies with a JSON object ``{"verdict": "pass" | "revise", "feedback": ...}``
(``verdict: revise`` / ``feedback: ...`` lines, or a reply starting with the verdict
word, are read too). The verdict sets ``routing_key``; on ``revise`` the feedback joins
the conversation so the agent sees it on its next round. After ``max_rounds`` reviews
without a pass, ``routing_key`` is ``max_rounds`` (route it where you like; it does not
match ``revise``) and the event says the loop ended at its limit.
"""

from __future__ import annotations

import re

from pydantic import Field

from magent.engine.context import NodeContext
from magent.engine.control import NodeFailed
from magent.engine.nodes.base import Node, NodeConfig, NodeResult
from magent.llm.base import LLMRequest, json_in_reply
from magent.models import Message

_VERDICT = re.compile(r"verdict\s*[:=]\s*\**\s*(pass|revise)", re.I)
_FEEDBACK = re.compile(r"feedback\s*[:=]\s*(.*)", re.I | re.S)

CRITIC_MAX_TOKENS = 1024
"""Output tokens a critic may use when its agent sets no ``max_tokens``: a verdict and a
paragraph of feedback fit well within it, and a critic that rambles is cut off rather than
billed for pages."""


class ReflectionConfig(NodeConfig):
    critic: str
    """The agent that judges."""
    criteria: str = Field(min_length=1)
    """What the output must satisfy."""
    max_rounds: int = Field(default=3, gt=0)
    """Reviews before giving up on a pass."""


class ReflectionNode(Node):
    kind = "reflection"
    Config = ReflectionConfig
    config: ReflectionConfig

    @classmethod
    def agent_refs(cls, config: ReflectionConfig) -> list[tuple[str, str]]:
        return [("critic", config.critic)]

    async def run(self, ctx: NodeContext) -> NodeResult:
        critic = self.graph.agent(self.config.critic)
        output = ctx.last_output
        if not output:
            raise NodeFailed(f"reflection node '{self.name}' has no output to judge: put it after an "
                             "agent node")
        round_no = ctx.run.state.visits.get(self.name, 1)
        prompt = (f"Judge the output below against these criteria.\n\nCriteria:\n{self.config.criteria}\n\n"
                  f"Output:\n{output}\n\nReply with a JSON object "
                  '{"verdict": "pass" or "revise", "feedback": "what to change, or why it passes"}.')
        config = ctx.models.config(critic.name)
        request = LLMRequest(model=config.model, messages=[Message(role="user", content=prompt)],
                             system=critic.system_prompt, temperature=critic.temperature,
                             max_tokens=config.max_tokens or CRITIC_MAX_TOKENS, endpoint=config.endpoint,
                             api_key=config.api_key, timeout=config.timeout_seconds,
                             max_retries=config.max_retries, fallback_model=config.fallback_model,
                             agent=critic.name)
        response = await ctx.models.call(request, ctx.session, node=self.name, iteration=round_no - 1)
        ctx.models.record(response, ctx.session, node=self.name, agent=critic.name, iteration=round_no - 1,
                            request=request)
        verdict, feedback, understood = parse_verdict(response.content)
        if verdict == "pass":
            key = "pass"
        elif round_no >= self.config.max_rounds:
            key = "max_rounds"
        else:
            key = "revise"
        ctx.state.routing_key = key
        ctx.state.metadata["reflection"] = {"node": self.name, "verdict": verdict, "feedback": feedback,
                                            "round": round_no}
        ctx.bus.emit("reflection", self.name, critic=critic.name, verdict=verdict, feedback=feedback,
                     round=round_no, max_rounds=self.config.max_rounds, routing_key=key,
                     understood=understood)
        if key == "revise":
            ctx.add_message(Message(role="user", name=critic.name,
                                    content=f"Reviewer feedback (round {round_no}, revise): {feedback}"),
                            node=self.name)
        return NodeResult(output=output)


def parse_verdict(text: str) -> tuple[str, str, bool]:
    """``(verdict, feedback, understood)``; a reply that cannot be read counts as ``revise``."""
    stripped = text.strip()
    doc = json_in_reply(stripped)
    if doc is not None:
        verdict = str(doc.get("verdict", "")).strip().lower()
        if verdict in ("pass", "revise"):
            return verdict, feedback_text(doc.get("feedback")), True
    m = _VERDICT.search(stripped)
    if m:
        fb = _FEEDBACK.search(stripped)
        return m.group(1).lower(), (fb.group(1).strip() if fb else ""), True
    first = stripped.split(None, 1)
    if first and first[0].strip(".:,!").lower() in ("pass", "revise"):
        return first[0].strip(".:,!").lower(), (first[1].strip() if len(first) > 1 else ""), True
    return "revise", stripped or "(the critic's reply was empty)", False


def feedback_text(value: object, _nested: bool = False) -> str:
    """Feedback as a person would write it: a critic that answers with a list or an object
    (``{"length": "too long", "tone": ["dull", "flat"]}``) gets ``length: too long; tone:
    dull, flat``, never a Python repr."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            said = feedback_text(item, True)
            parts.append(f"{key}: {said}" if said else str(key))
        return (", " if _nested else "; ").join(parts)
    if isinstance(value, (list, tuple)):
        texts = (feedback_text(item, True) for item in value)
        return (", " if _nested else "; ").join(text for text in texts if text)
    return str(value)

"""Node kinds. Adding one: a module with a ``Node`` subclass, and one line below."""

from magent.engine.nodes.agent import AgentNode
from magent.engine.nodes.base import Node, NodeConfig, NodeResult
from magent.engine.nodes.condition import ConditionNode
from magent.engine.nodes.human import HumanNode
from magent.engine.nodes.map import MapNode
from magent.engine.nodes.plan import PlanNode
from magent.engine.nodes.reflection import ReflectionNode
from magent.engine.nodes.tool import ToolNode

NODE_KINDS: dict[str, type[Node]] = {
    "agent": AgentNode,
    "reflection": ReflectionNode,
    "tool": ToolNode,
    "condition": ConditionNode,
    "human": HumanNode,
    "map": MapNode,
    "plan": PlanNode,
}

__all__ = ["NODE_KINDS", "Node", "NodeConfig", "NodeResult"]

"""Edge conditions: small expressions over State, evaluated without ``eval``.

``simpleeval`` parses the expression with ``ast`` and walks it with a whitelist
(comparisons, boolean logic, arithmetic, attribute/index access on data) — no
calls into arbitrary Python, no imports, no dunder access. Names available:
``routing_key``, ``metadata``, ``next_action``, ``current_agent``, ``iteration``
(node executions so far), ``visits`` (per node), ``human`` (the last decision:
``action``, ``message``, ``node``), ``output`` (the last node's output).
"""

from __future__ import annotations

import ast
from typing import Any

NAMES = ("routing_key", "metadata", "next_action", "current_agent", "iteration", "visits",
         "human", "output", "true", "false", "none", "True", "False", "None")


class _Data(dict):
    """A mapping whose missing keys read as None, so ``metadata.score`` on a fresh run is None."""

    def __missing__(self, key: Any) -> None:
        return None


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return _Data({k: _wrap(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class ConditionError(ValueError):
    pass


def check(expression: str) -> set[str]:
    """Parse ``expression``; return the names it uses. Raises ``ConditionError`` if it does not
    parse or uses an unknown name or a construct that is not allowed."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ConditionError(f"condition does not parse: {exc.msg} in {expression!r}") from None
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.DictComp, ast.SetComp,
                             ast.GeneratorExp, ast.NamedExpr)):
            raise ConditionError(f"condition uses a construct that is not allowed: {expression!r}")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise ConditionError(f"condition may not access {node.attr!r}")
        if isinstance(node, ast.Call):
            fn = node.func
            if not (isinstance(fn, ast.Attribute) and fn.attr == "get") and not (
                    isinstance(fn, ast.Name) and fn.id in ("len", "str", "int", "float", "bool")):
                raise ConditionError(f"condition may only call len/str/int/float/bool and .get: "
                                     f"{expression!r}")
        if isinstance(node, ast.Name):
            used.add(node.id)
    unknown = sorted(n for n in used if n not in NAMES and n not in ("len", "str", "int", "float", "bool"))
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], NAMES[:8], n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConditionError(f"condition names unknown field {unknown[0]!r} "
                             f"({hint}available: {', '.join(NAMES[:8])})")
    return used


def names_of(state: Any, visits: dict[str, int], human: dict[str, Any] | None, output: Any) -> dict[str, Any]:
    """The names a condition reads, from a session's ``state``, the run's node ``visits``, the
    last decision of a person (``human``) and the last node's ``output``."""
    return {"routing_key": state.routing_key, "metadata": state.metadata, "next_action": state.next_action,
            "current_agent": state.current_agent, "iteration": sum(visits.values()), "visits": visits,
            "human": human, "output": output}


def evaluate(expression: str, names: dict[str, Any]) -> bool:
    """Evaluate a checked expression. A runtime type problem (``None >= 0.8``) reads as False."""
    from simpleeval import EvalWithCompoundTypes

    env = {k: _wrap(v) for k, v in names.items()}
    env.update({"true": True, "false": False, "none": None, "True": True, "False": False, "None": None})
    evaluator = EvalWithCompoundTypes(names=env, functions={"len": len, "str": str, "int": int,
                                                 "float": float, "bool": bool})
    try:
        return bool(evaluator.eval(expression.strip()))
    except (TypeError, KeyError, IndexError, ValueError, AttributeError, ZeroDivisionError):
        return False
    except Exception as exc:  # simpleeval's own errors (AttributeDoesNotExist...) are data problems
        if type(exc).__module__ == "simpleeval":
            return False
        raise

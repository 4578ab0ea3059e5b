"""The JSON Schema of ``magent trace ID --json`` (a ``TraceLog``), shipped in the package.

The schema file beside this module, ``tracelog.schema.json``, is generated from the
pydantic ``TraceLog`` model so tools that read traces can validate them and see
what each field means. A test keeps the file and the model in step; after changing
a trace model, write it again with::

    python -m magent.trace.schema

Field docstrings (the string under a field, as the models write them) become the
fields' ``description`` in the schema, and every field is ``required``: ``--json``
prints them all, defaults included.
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

SCHEMA_FILE = Path(__file__).with_name("tracelog.schema.json")
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _field_docs(cls: type) -> dict[str, str]:
    """``{field: docstring}`` for the fields of ``cls`` (and its bases) that have one."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or not klass.__module__.startswith("magent."):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, after in zip(body, body[1:]):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[stmt.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _models(root: type) -> dict[str, type]:
    """Every pydantic model reachable from ``root``'s fields, by class name."""
    from pydantic import BaseModel

    found: dict[str, type] = {}
    todo = [root]
    while todo:
        cls = todo.pop()
        if cls.__name__ in found:
            continue
        found[cls.__name__] = cls
        for field in cls.model_fields.values():
            stack = [field.annotation]
            while stack:
                tp = stack.pop()
                if isinstance(tp, type) and issubclass(tp, BaseModel):
                    todo.append(tp)
                stack.extend(getattr(tp, "__args__", ()) or ())
    return found


def tracelog_schema() -> dict[str, Any]:
    """The JSON Schema of the TraceLog as ``magent trace ID --json`` prints it."""
    from magent.models import TraceLog

    schema = TraceLog.model_json_schema(mode="serialization")
    models = _models(TraceLog)
    for name, cls in models.items():
        target = schema if cls is TraceLog else schema.get("$defs", {}).get(name)
        if target is None:
            continue
        for field, doc in _field_docs(cls).items():
            prop = target.get("properties", {}).get(field)
            if prop is not None and "description" not in prop:
                prop["description"] = doc
        # ``--json`` prints every field, defaults included: all of them are always there.
        target["required"] = list(target.get("properties", {}))
    return {"$schema": DIALECT, "$comment": "Generated from magent's TraceLog model by "
            "`python -m magent.trace.schema`; do not edit by hand.",
            **schema, "title": "TraceLog (magent trace ID --json)"}


def render() -> str:
    return json.dumps(tracelog_schema(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the schema file (``--check``: exit 1 if it is out of date instead)."""
    args = sys.argv[1:] if argv is None else argv
    text = render()
    current = SCHEMA_FILE.read_text() if SCHEMA_FILE.exists() else ""
    if "--check" in args:
        if current != text:
            print(f"{SCHEMA_FILE} is out of date: run python -m magent.trace.schema", file=sys.stderr)
            return 1
        return 0
    if current != text:
        SCHEMA_FILE.write_text(text)
        print(f"wrote {SCHEMA_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Checking a tool call's arguments against the tool's input schema (jsonschema), with a quick
check for the usual shapes; validators are made once per distinct schema in a process."""

from __future__ import annotations

import functools
import json
from typing import Any, Callable

from magent.config.schemas import first_problem
from magent.models import Tool


def checks_for(schema: dict[str, Any]) -> tuple[Any, Any]:
    """``(make_validator(schema), quick_check(schema))``, made once per distinct schema in this
    process (checking a schema against its metaschema costs far more than a call's arguments)."""
    try:
        key = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):  # not JSON (a server's odd schema): not worth keeping
        return make_validator(schema), quick_check(schema)
    return _checks_by_text(key)


@functools.lru_cache(maxsize=512)
def _checks_by_text(text: str) -> tuple[Any, Any]:
    schema = json.loads(text)
    return make_validator(schema), quick_check(schema)


def make_validator(schema: dict[str, Any]) -> Any:
    """A jsonschema validator for a tool's input schema, or None when the schema itself is broken."""
    import jsonschema

    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        return cls(schema)
    except jsonschema.exceptions.SchemaError:
        return None  # a server's broken schema should not block the call


_QUICK_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "object": (dict,), "array": (list,), "null": (type(None),)}
"""A JSON Schema type and the Python types whose values are surely of it (``type(v)``, so a bool
is no integer; an integral float, which is, is left to the validator)."""


def quick_check(schema: Any) -> Callable[[dict[str, Any]], bool] | None:
    """For an input schema of the usual shape (an object, properties that name only a type,
    required names, additionalProperties true or false; annotations), a check that returns True
    only when the validator would find nothing wrong (it costs about a microsecond, jsonschema
    about 13 for one integer argument); False means: ask the validator. None for any other shape."""
    if not isinstance(schema, dict) or schema.get("type") != "object" or not set(schema) <= {
            "type", "properties", "required", "additionalProperties", "description", "title"}:
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list) or extra not in (True, False) \
            or not all(isinstance(name, str) for name in required):
        return None
    types: dict[str, tuple[type, ...] | None] = {}
    for name, sub in properties.items():
        if not isinstance(sub, dict) or not set(sub) <= {"type", "description", "title"}:
            return None
        kind = sub.get("type")
        if kind is None:
            types[name] = None  # anything goes
        elif isinstance(kind, str) and kind in _QUICK_TYPES:
            types[name] = _QUICK_TYPES[kind]
        else:
            return None

    def check(arguments: dict[str, Any]) -> bool:
        for name in required:
            if name not in arguments:
                return False
        for name, value in arguments.items():
            if name in types:
                allowed = types[name]
                if allowed is not None and type(value) not in allowed:
                    return False
            elif extra is False:
                return False
        return True

    return check


def check_arguments(tool: Tool, arguments: dict[str, Any]) -> str | None:
    """First problem of ``arguments`` against the tool's input schema, or None."""
    return first_problem(checks_for(tool.input_schema)[0], arguments)

"""JSON Schemas people write in config files (``output_schema``, the ``json_schema`` rail),
checked when the file loads, and answers that must fit one (JSON, maybe in a ```json fence)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any


class SchemaProblem(ValueError):
    """A schema that cannot be read or is not a valid JSON Schema (the message says which)."""


def read_schema(path: Path) -> Any:
    """The schema in a JSON (``.json``) or YAML file."""
    try:
        raw = path.read_text()
    except OSError as exc:
        raise SchemaProblem(f"cannot read {path}: {exc.strerror}") from None
    import yaml

    try:
        return json.loads(raw) if path.suffix == ".json" else yaml.safe_load(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise SchemaProblem(f"{path} does not parse: {' '.join(str(exc).split())}") from None


def validator_for(schema: Any) -> Any:
    """A jsonschema validator for ``schema`` (its ``$schema`` draft, else the latest), schema checked."""
    import jsonschema

    if not isinstance(schema, (dict, bool)):
        raise SchemaProblem(f"not a valid JSON Schema: expected a mapping, got {type(schema).__name__}")
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        where = ".".join(str(p) for p in exc.absolute_path)
        raise SchemaProblem(f"not a valid JSON Schema: {exc.message}" + (f" (at {where})" if where else "")) from None
    return cls(schema)


def unfence(text: str) -> str:
    """``text`` without a Markdown code fence around it (```json ... ```)."""
    m = re.fullmatch(r"\s*```(?:json)?\s*\n(.*?)\n\s*```\s*", text, re.S)
    return m.group(1) if m else text


def parse_answer(text: str, validator: Any) -> tuple[Any, str | None]:
    """``(value, None)`` when ``text`` is JSON that fits; ``(None, what is wrong)`` otherwise."""
    try:
        value = json.loads(unfence(text))
    except ValueError as exc:
        msg = getattr(exc, "msg", str(exc))
        where = f" at line {exc.lineno} column {exc.colno}" if hasattr(exc, "lineno") else ""
        return None, f"the text is not JSON ({msg}{where})"
    problem = first_problem(validator, value)
    if problem:
        return None, f"the JSON does not fit the schema: {problem}"
    return value, None


_TYPES = {"string": "text", "integer": "a whole number", "number": "a number", "boolean": "true or false",
          "array": "a list", "object": "a mapping", "null": "null"}
_BOUNDS = {"minimum": "{} or more", "maximum": "{} or less", "exclusiveMinimum": "more than {}",
           "exclusiveMaximum": "less than {}", "minLength": "at least {} character{}",
           "maxLength": "at most {} character{}", "minItems": "at least {} item{}", "maxItems": "at most {} item{}"}


def schema_problem(error: Any) -> str:
    """A jsonschema ``ValidationError`` in magent's words, else the validator's sentence."""
    kind, value, instance = error.validator, error.validator_value, error.instance
    if kind == "required" and isinstance(instance, dict):
        missing = [name for name in value if name not in instance]
        return f"{missing[0]!r} is required" if missing else error.message
    if kind == "type":
        wanted = [value] if isinstance(value, str) else list(value)
        return f"expected {' or '.join(_TYPES.get(t, t) for t in wanted)}, got {instance!r}"
    if kind == "enum":
        return f"{instance!r} is not one of {', '.join(map(str, value))}"
    if kind == "additionalProperties" and isinstance(instance, dict):
        known = (error.schema or {}).get("properties") or {}
        extra = [name for name in instance if name not in known]
        return f"unknown field {extra[0]!r}" if extra else error.message
    if kind in _BOUNDS:
        return f"expected {_BOUNDS[kind].format(value, '' if value == 1 else 's')}, got {instance!r}"
    return str(error.message)


def first_problem(validator: Any, arguments: dict[str, Any]) -> str | None:
    """What is most wrong with ``arguments`` for ``validator`` (a jsonschema validator), in
    magent's words and naming where; None when they fit (or there is no validator)."""
    if validator is None:
        return None
    import jsonschema

    error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path)
    return f"{where}: {schema_problem(error)}" if where else schema_problem(error)

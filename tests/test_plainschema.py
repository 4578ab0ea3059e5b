"""Tool arguments judged without jsonschema: never "fits" where jsonschema says it does not."""

from __future__ import annotations

import itertools

import jsonschema
import pytest

from magent.tools.plainschema import plainly_fits

KEY = {"key": {"type": "string", "description": "The key."}}
SCHEMAS = [
    {"type": "object", "properties": KEY, "required": ["key"]},
    {"type": "object", "properties": {**KEY, "value": {"description": "Any JSON value."}}, "required": ["key", "value"]},
    {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": ["number", "null"]}},
     "additionalProperties": False},
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}},
    {"type": "object", "properties": {"mode": {"enum": ["fast", "safe", 1]}}},
    {"type": "object", "properties": {"url": {"type": "string", "format": "uri"}}},
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}},          # not plain
    {"type": "object", "patternProperties": {"^x": {"type": "integer"}}},                # not plain
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string"}}},
    {"type": "object", "properties": {"s": {"type": "strin"}}},                          # broken
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
     "properties": {"n": {"type": "integer"}}},
    {},
]
VALUES = [{}, {"key": "a"}, {"key": 1}, {"key": "a", "value": [1, {"b": None}]}, {"n": 3}, {"n": 3.0},
          {"n": True}, {"n": 2}, {"x": None}, {"x": 1.5}, {"x": "1"}, {"extra": "s"}, {"extra": 1},
          {"tags": ["a", "b"]}, {"tags": ["a", 2]}, {"tags": "a"}, {"mode": "fast"}, {"mode": 1},
          {"mode": True}, {"mode": 1.0}, {"url": "not a uri"}, {"xa": 1}, {"xa": "s"}, {"a": "s"},
          {"a": 2}, {"s": "t"}, [], "text", None]


def _jsonschema_fits(schema, value) -> bool:
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError:
        return True  # magent does not check arguments against a broken schema
    return cls(schema).is_valid(value)


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_plainly_fits_only_what_jsonschema_accepts(schema):
    for value in VALUES:
        if plainly_fits(schema, value):
            assert _jsonschema_fits(schema, value), (schema, value)


def test_the_built_in_tools_common_arguments_need_no_jsonschema():
    fits = [plainly_fits(s, v) for s, v in itertools.product(SCHEMAS[:2], [{"key": "a", "value": "x" * 10_000}])]
    assert fits == [True, True]
    assert not plainly_fits(SCHEMAS[0], {"key": 1})          # jsonschema says what is wrong
    assert not plainly_fits(SCHEMAS[7], {"n": 5})            # a keyword it does not know: asked

"""Tool arguments that plainly fit their schema, judged without jsonschema.

Most tools' input schemas (the built-in ones, most MCP servers') are an object with typed
properties, some required. Arguments that fit such a schema are told so here; anything else —
arguments that may not fit, a keyword not listed below, a schema that may be broken — is
left to jsonschema, which is then imported (a fifth of a second, once) and says what is wrong.
So ``plainly_fits`` never rejects: ``False`` only means "ask jsonschema".
"""

from __future__ import annotations

from typing import Any

_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$schema", "$id", "$comment",
                          "deprecated", "readOnly", "writeOnly", "format"})
"""Keywords that never make a value invalid (``format`` is not asserted by the validators
magent builds: they are made without a format checker)."""


def plainly_fits(schema: Any, value: Any) -> bool:
    """True when ``value`` surely fits ``schema``; False when jsonschema must judge."""
    if schema is True:
        return True
    if not isinstance(schema, dict):
        return False
    for key, want in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key == "type":
            if not _is_type(value, want):
                return False
        elif key == "properties":
            if not isinstance(want, dict):
                return False
            if isinstance(value, dict) and not all(
                    plainly_fits(sub, value[name]) for name, sub in want.items() if name in value):
                return False
        elif key == "required":
            if not isinstance(want, list) or (isinstance(value, dict) and any(n not in value for n in want)):
                return False
        elif key == "additionalProperties":
            if isinstance(value, dict) and want is not True:
                known = schema.get("properties", {})
                extra = [name for name in value if name not in known]
                if extra and not (isinstance(want, dict) and all(plainly_fits(want, value[n]) for n in extra)):
                    return False
        elif key == "items":
            if isinstance(value, list) and not (isinstance(want, (dict, bool))
                                                and all(plainly_fits(want, item) for item in value)):
                return False
        elif key == "enum":
            if not isinstance(want, list) or not any(_same(value, option) for option in want):
                return False
        else:
            return False
    return True


_SIMPLE = {"object": dict, "array": list, "string": str}


def _is_type(value: Any, want: Any) -> bool:
    if isinstance(want, list):
        return any(_is_type(value, w) for w in want)
    if want in _SIMPLE:
        return isinstance(value, _SIMPLE[want])
    if want == "boolean":
        return isinstance(value, bool)
    if want == "null":
        return value is None
    if want == "integer":  # 1.0 counts as an integer in some drafts only: left to jsonschema
        return isinstance(value, int) and not isinstance(value, bool)
    if want == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return False


def _same(value: Any, option: Any) -> bool:
    """Equal as JSON values of one type (True is not 1 in JSON); anything subtler is jsonschema's."""
    return type(value) is type(option) and value == option and not isinstance(value, (dict, list))

"""Turning parsed YAML into models, with errors as one line: ``file:line:col: field.path: what``."""

from __future__ import annotations

import difflib
import json
import types
import typing
from enum import Enum
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from magent.config.yamlfile import FieldPath, SourceFile, dotted
from magent.errors import ConfigError
from magent.models.base import EXPECTED, PATTERN_WORDS, literal_choices

M = TypeVar("M", bound=BaseModel)


def validate(source: SourceFile, model: type[M], data: Any = None, prefix: FieldPath = ()) -> M:
    """Validate ``data`` (default: the whole file) as ``model``; errors point into the file.

    Strict mode on the JSON form keeps YAML's types: ``max_iterations: "10"`` is a wrong type,
    while JSON's own conversions (an integer for a float, a string for an enum) still apply."""
    if data is None:
        data = source.data
    if not isinstance(data, dict):
        raise source.error(f"expected a mapping of fields, got {_kind_of(data)}", prefix)
    try:
        return model.model_validate_json(json.dumps(data, default=str), strict=True)
    except ValidationError as exc:
        raise to_config_error(exc, source, model, data, prefix) from None


def to_config_error(exc: ValidationError, source: SourceFile, model: type[BaseModel],
                    data: Any, prefix: FieldPath = ()) -> ConfigError:
    # An unknown field is reported first: a misspelt key also makes the real one
    # "missing", and the did-you-mean on the misspelling is what fixes both (so that
    # "missing" is not reported at all).
    errs, unions = _fold_union_members(exc.errors(), data)
    found = [_one_error(err, source, model, data, prefix)
             for err in sorted(errs, key=lambda e: e["type"] != "extra_forbidden")]
    found += [(source.error(message, prefix + path), None) for path, message in unions]
    suggested = {".".join(filter(None, [(e.field or "").rpartition(".")[0], hint]))
                 for e, hint in found if hint}
    errors = [e for e, _ in found
              if not (e.reason.startswith("missing required field") and e.field in suggested)]
    # The message names the one a fix starts with; the list is in the file's order.
    combined = ConfigError.of_all(errors)
    combined.errors.sort(key=lambda e: (e.line or 0, e.column or 0))
    return combined


def _fold_union_members(errors: list[Any], data: Any) -> tuple[list[Any], list[tuple[FieldPath, str]]]:
    """A value that fits no member of a union (``str | FallbackModel``) is reported by pydantic
    once per member, at a loc ending in the member's name; one mistake should be one line. A
    member whose type did not fit at all is left out when another member went deeper into the
    value (its errors say what is wrong); the rest at one place become ``expected A or B, got V``.
    Returns the errors to explain one by one, and the folded ones as (path, message)."""
    kept: list[Any] = []
    misfits: dict[FieldPath, list[Any]] = {}
    for err in errors:
        loc = tuple(err["loc"])
        if err["type"] in EXPECTED and loc and _is_member_name(data, loc):
            misfits.setdefault(_data_path(data, loc[:-1], keep_last=False), []).append(err)
        else:
            kept.append(err)
    paths = [_data_path(data, tuple(err["loc"])) for err in kept]
    folded: list[tuple[FieldPath, str]] = []
    for at, errs in misfits.items():
        if any(len(p) > len(at) and p[:len(at)] == at for p in paths):
            continue  # another member took the value's shape: its errors are the ones to fix
        words = list(dict.fromkeys(EXPECTED[e["type"]] for e in errs))
        folded.append((at, f"expected {' or '.join(words)}, got {_shown(errs[0].get('input'))}"))
    return kept, folded


def _is_member_name(data: Any, loc: tuple[Any, ...]) -> bool:
    """The last part of ``loc`` names a union member pydantic tried, not a key of the data."""
    within = _data_path(data, loc[:-1], keep_last=False)
    return isinstance(loc[-1], str) and _data_path(data, loc, keep_last=False) == within


def _one_error(err: Any, source: SourceFile, model: type[BaseModel], data: Any,
               prefix: FieldPath) -> tuple[ConfigError, str | None]:
    """One pydantic error as a ``ConfigError``, and the field name its did-you-mean suggests."""
    loc = tuple(err["loc"])
    is_key = bool(loc) and loc[-1] == "[key]"  # pydantic's marker for a bad dict key
    if is_key:
        loc = loc[:-1]
    path = _data_path(data, loc)
    message = _explain(err, model, loc, data, path)
    if is_key:
        message = f"invalid key: {message}"
    hint = message.split("(did you mean '", 1)[1].split("'", 1)[0] if "(did you mean '" in message else None
    return source.error(message, prefix + path), hint


def _data_path(data: Any, loc: tuple[Any, ...], *, keep_last: bool = True) -> FieldPath:
    """Map a pydantic ``loc`` onto the data, dropping union tags that are not real keys (and,
    without ``keep_last``, a last part that is not in the data either)."""
    out: list[Any] = []
    current = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(current, dict) and part in current:
            out.append(part)
            current = current[part]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            out.append(part)
            current = current[part]
        elif last and keep_last:
            out.append(part)
        # else: a discriminator tag or function name pydantic put in the loc; skip it
    return tuple(out)


def _explain(err: dict[str, Any], model: type[BaseModel], loc: tuple[Any, ...], data: Any,
             path: FieldPath) -> str:
    kind = err["type"]
    name = path[-1] if path else ""
    if kind == "extra_forbidden":
        allowed = _fields_at(model, loc[:-1])
        others = _other_names_at(model, loc[:-1])
        hint = ""
        close = difflib.get_close_matches(str(name), [*allowed, *others], n=1, cutoff=0.6)
        if close:
            hint = f" (did you mean {others.get(close[0], close[0])!r}?)"
        elif allowed:
            hint = f" (allowed: {', '.join(sorted(allowed))})"
        return f"unknown field {name!r}{hint}"
    if kind == "missing":
        return f"missing required field {name!r}"
    if kind in ("union_tag_invalid",):
        ctx = err.get("ctx", {})
        return (f"unknown {ctx.get('discriminator', 'tag').strip(chr(39))} "
                f"{ctx.get('tag')!r} (expected one of {ctx.get('expected_tags')})")
    if kind == "union_tag_not_found":
        ctx = err.get("ctx", {})
        return f"missing required field {ctx.get('discriminator', '').strip(chr(39))!r}"
    msg = err["msg"]
    if msg.startswith("Value error, "):  # a validator of magent's: its own words
        return msg[len("Value error, "):]
    if kind == "assertion_error":
        return msg
    got = _shown(err.get("input"))
    if kind in ("literal_error", "enum") and (choices := _choices_at(model, loc)):
        return f"{got} is not one of {', '.join(map(str, choices))}"
    if kind in ("literal_error", "enum") and (expected := (err.get("ctx") or {}).get("expected")):
        return f"{got} is not one of {expected.replace(chr(39), '')}"  # a mapping's key: no field to ask
    if (should := expected_words(err)) is not None:
        return f"expected {should}, got {got}"
    if kind == "string_pattern_mismatch" and (shape := PATTERN_WORDS.get(err["ctx"]["pattern"])):
        return f"expected {shape}, got {got}"
    # any other kind: the validator's own sentence
    return f"{msg[0].lower()}{msg[1:]}, got {got}"


def expected_words(err: dict[str, Any]) -> str | None:
    """What the value should have been, in magent's words, for one of pydantic's type or bound
    errors (``a whole number``, ``1.0 or less``); None for another kind of error."""
    kind = err["type"]
    if kind in EXPECTED:
        return EXPECTED[kind]
    bounds = err.get("ctx") or {}
    if bounds.get("min_length") == 1 and kind in _NOT_EMPTY:
        return _NOT_EMPTY[kind]
    for key, words in _BOUNDS.items():
        if key in bounds and kind in words:
            return words[kind].format(bounds[key])
    return None


def _shown(value: Any) -> str:
    """A wrong value as an error names it: its kind for a mapping or list, else short repr."""
    if isinstance(value, dict):
        return "a mapping" if value else "an empty mapping"
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    return repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."


_BOUNDS = {
    "gt": {"greater_than": "more than {}"}, "ge": {"greater_than_equal": "{} or more"},
    "lt": {"less_than": "less than {}"}, "le": {"less_than_equal": "{} or less"},
    "min_length": {"string_too_short": "at least {} characters", "too_short": "at least {} items"},
    "max_length": {"string_too_long": "at most {} characters", "too_long": "at most {} items"},
}
"""Pydantic's bound errors in magent's words, by the bound their context names."""
_NOT_EMPTY = {"string_too_short": "text that is not empty", "too_short": "at least one item"}


def _choices_at(model: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """The values the ``Literal`` field at ``loc`` allows (none when it is not one)."""
    for m in _models_at(model, loc[:-1]):
        for fname, f in m.model_fields.items():
            if loc[-1] in (fname, f.alias):
                return literal_choices(f.annotation)
    return ()


def _fields_at(model: Any, loc: tuple[Any, ...]) -> list[str]:
    """Field names (aliases where set) of the model reached by walking ``loc`` from ``model``."""
    names: list[str] = []
    for m in _models_at(model, loc):
        for fname, f in m.model_fields.items():
            names.append(f.alias or fname)
    return sorted(set(names))


def _other_names_at(model: Any, loc: tuple[Any, ...]) -> dict[str, str]:
    """Other names the model at ``loc`` accepts for its fields (``ACCEPTED_NAMES``: name → field)."""
    out: dict[str, str] = {}
    for m in _models_at(model, loc):
        out.update(getattr(m, "ACCEPTED_NAMES", {}))
    return out


def _models_at(model: Any, loc: tuple[Any, ...]) -> list[type[BaseModel]]:
    candidates = [model]
    for part in loc:
        nxt: list[Any] = []
        for ann in candidates:
            nxt.extend(_step(ann, part))
        candidates = nxt or candidates
    return [m for ann in candidates for m in _models_in(ann)]


def _models_in(ann: Any) -> list[type[BaseModel]]:
    ann = _unwrap(ann)
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return [ann]
    if typing.get_origin(ann) in (typing.Union, types.UnionType):  # Optional[X] and X | None
        out: list[type[BaseModel]] = []
        for arg in typing.get_args(ann):
            out.extend(_models_in(arg))
        return out
    return []


def _unwrap(ann: Any) -> Any:
    while typing.get_origin(ann) is typing.Annotated:
        ann = typing.get_args(ann)[0]
    return ann


def _step(ann: Any, part: Any) -> list[Any]:
    ann = _unwrap(ann)
    origin = typing.get_origin(ann)
    if origin is typing.Union or (origin is not None and str(origin) == "<class 'types.UnionType'>"):
        members = [a for a in typing.get_args(ann) if a is not type(None)]
        tagged = [m for m in members if _has_tag(m, part)]
        if tagged:
            return tagged  # the part was a discriminator tag: consume it
        out: list[Any] = []
        for m in members:
            out.extend(_step(m, part))
        return out
    if origin in (list, tuple, set, frozenset):
        return [typing.get_args(ann)[0]] if isinstance(part, int) else []
    if origin is dict:
        return [typing.get_args(ann)[1]]
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        for fname, f in ann.model_fields.items():
            if part in (fname, f.alias):
                return [f.annotation]
    return []


def _has_tag(model: Any, tag: Any) -> bool:
    model = _unwrap(model)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return False
    for f in model.model_fields.values():
        if typing.get_origin(f.annotation) is typing.Literal and tag in typing.get_args(f.annotation):
            return True
    return False


def _kind_of(value: Any) -> str:
    if value is None:
        return "an empty document"
    if isinstance(value, Enum):
        return repr(value.value)
    return _shown(value)


__all__ = ["validate", "to_config_error", "dotted"]

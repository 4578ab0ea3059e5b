"""Shared pieces of every model: strictness, schema version, id types."""

from datetime import datetime
from enum import Enum
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict

from magent.ids import is_uuid4, now

from magent.schema import SCHEMA_VERSION  # noqa: E402  (re-exported: the models' home for it)


def _check_uuid4(value: str) -> str:
    if not is_uuid4(value):
        raise ValueError(f"{value!r} is not a UUID v4")
    return value


UUID4Str = Annotated[str, AfterValidator(_check_uuid4)]
"""A lowercase UUID v4 string (task, checkpoint, entry and session ids)."""


class Model(BaseModel):
    """Base of all magent models: unknown fields are errors, field docstrings are documentation."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=False,
                              validate_assignment=False, populate_by_name=True, defer_build=True)


class Document(Model):
    """A model that is written to disk as its own file and so carries a schema version."""

    schema_version: int = SCHEMA_VERSION
    """Format version of this document; readers refuse versions newer than they know."""


WRITTEN_ALWAYS: dict[str, tuple[str, ...]] = {
    "Task": ("schema_version", "status", "created_at", "updated_at"),
    "Checkpoint": ("schema_version", "created_at", "awaiting_human", "reason", "state", "sha256"),
    "TraceLog": ("schema_version", "steps", "sub_agent_sessions", "created_at", "updated_at"),
    "StepRecord": ("message", "timestamp", "status", "agent", "tool_calls", "duration_ms"),
    "Entry": ("created_at",),
}
"""Fields with a default that every record of the model holds all the same on disk (seed 002
requires them of a Task, a Checkpoint, a TraceLog and each StepRecord; a document's
``schema_version`` and times); the published schemas require them. Fields without a default are
always written anyway; other fields at their defaults are left out."""


def utc_now() -> datetime:
    """The default of every time field (``Field(default_factory=utc_now)``)."""
    return now()


EXPECTED = {"string_type": "text", "int_type": "a whole number", "int_parsing": "a whole number",
            "float_type": "a number", "float_parsing": "a number", "bool_type": "true or false",
            "bool_parsing": "true or false", "list_type": "a list", "dict_type": "a mapping",
            "model_type": "a mapping", "datetime_type": "a date and time", "datetime_parsing": "a date and time",
            "datetime_from_date_parsing": "a date and time"}
"""What a value of each of pydantic's type errors should have been, in magent's words."""


PATTERN_WORDS: dict[str, str] = {}
"""What a text a field's ``pattern`` checks should look like, in magent's words (by pattern)."""


def shaped(pattern: str, words: str) -> str:
    """``pattern``, with ``words`` saying what it asks for: an error names those, not the regex."""
    PATTERN_WORDS[pattern] = words
    return pattern


def literal_choices(annotation: Any) -> tuple[Any, ...]:
    """The values a ``Literal`` or ``Enum`` annotation allows (inside ``Annotated`` or ``Optional`` too)."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) is Literal:
        return get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return tuple(member.value for member in annotation)
    return tuple(c for arg in get_args(annotation) if arg is not type(None) for c in literal_choices(arg))


def problem(error: Any, model: type[BaseModel]) -> str:
    """One of a ``ValidationError``'s ``errors()`` for a field of ``model``, in magent's words
    (without where it is)."""
    kind, value = error["type"], error.get("input")
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a field here"
    if kind == "value_error":  # a validator of magent's: its own words
        return str(error["ctx"]["error"])
    field = model.model_fields.get(str(error["loc"][-1])) if error["loc"] else None
    if kind == "literal_error" and field is not None and (choices := literal_choices(field.annotation)):
        return f"{value!r} is not one of {', '.join(map(str, choices))}"
    if kind in EXPECTED:
        return f"expected {EXPECTED[kind]}, got {value!r}"
    return f"{value!r} is not valid here"

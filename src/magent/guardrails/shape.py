"""Rails on the form of a text: ``max_length`` and ``json_schema``."""

from __future__ import annotations

import itertools
import re
from typing import Any, Literal

from pydantic import Field, model_validator

from magent.config.schemas import SchemaProblem, parse_answer, read_schema, validator_for
from magent.guardrails.base import Rail, RailConfig, RailConfigError, RailRun, Verdict


class MaxLengthConfig(RailConfig):
    type: Literal["max_length"]
    max_chars: int | None = Field(default=None, gt=0)
    """At most this many characters."""
    max_words: int | None = Field(default=None, gt=0)
    """At most this many words (runs of non-space characters)."""

    @model_validator(mode="after")
    def _some_limit(self) -> "MaxLengthConfig":
        if self.max_chars is None and self.max_words is None:
            raise ValueError("give max_chars, max_words or both")
        return self


class MaxLengthRail(Rail):
    """Too long a text trips it; ``mask`` cuts it to the limit, with a note of what was cut."""

    kind = "max_length"
    Config = MaxLengthConfig
    can_mask = True

    async def check(self, text: str, run: RailRun) -> Verdict:
        config: MaxLengthConfig = self.config  # type: ignore[assignment]
        cut = len(text)
        why = []
        if config.max_chars is not None and len(text) > config.max_chars:
            cut = min(cut, config.max_chars)
            why.append(f"{len(text)} characters, more than {config.max_chars}")
        if config.max_words is not None:
            count = len(text.split())  # (counting is cheap; finding where to cut only when needed)
            if count > config.max_words:
                last = next(itertools.islice(re.finditer(r"\S+", text), config.max_words - 1, None))
                cut = min(cut, last.end())
                why.append(f"{count} words, more than {config.max_words}")
        if not why:
            return Verdict(False)
        masked = text[:cut].rstrip() + f"\n[... cut to the limit: {len(text) - cut} more characters]"
        return Verdict(True, "; ".join(why), masked=masked)


class JsonSchemaConfig(RailConfig):
    type: Literal["json_schema"]
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")
    """The JSON Schema the text must fit (written inline as ``schema:``)."""
    schema_file: str | None = None
    """Or a JSON/YAML file holding it, relative to this file."""

    @model_validator(mode="after")
    def _one_schema(self) -> "JsonSchemaConfig":
        if (self.json_schema is None) == (self.schema_file is None):
            raise ValueError("give either schema (inline) or schema_file")
        return self


class JsonSchemaRail(Rail):
    """The text must be JSON (a ```json fence around it is allowed) that fits the schema."""

    kind = "json_schema"
    Config = JsonSchemaConfig

    def __init__(self, config: JsonSchemaConfig, **kw):  # type: ignore[no-untyped-def]
        super().__init__(config, **kw)
        where = "schema_file" if config.schema_file else "schema"
        try:
            schema = config.json_schema
            if config.schema_file is not None:
                schema = read_schema(self.base_dir / config.schema_file)
            self.validator = validator_for(schema)
        except SchemaProblem as exc:
            raise RailConfigError(str(exc), where) from None

    async def check(self, text: str, run: RailRun) -> Verdict:
        _, problem = parse_answer(text, self.validator)
        return Verdict(True, problem) if problem else Verdict(False)

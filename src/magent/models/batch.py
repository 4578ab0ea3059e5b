"""A batch's files under ``batches/{batch_id}/``: ``batch.json`` and the lines of ``rows.jsonl``.

Written as plain dicts by ``batching/runner.py`` and ``store/batches.py``; these models say what
they hold, for the published schemas (``models/published.py``)."""

from typing import Any, Literal

from pydantic import Field

from magent.models.base import Model, UUID4Str


class BatchInputs(Model):
    """The inputs file a batch runs over (a resume refuses it if its hash changed)."""

    path: str
    """Absolute path of the inputs (``inputs.jsonl`` beside ``batch.json`` when given as a list)."""
    sha256: str
    format: Literal["jsonl", "csv"]
    rows: int
    """Rows in the file, bad ones included."""


class BatchOptions(Model):
    """The options the batch was started (or last resumed) with."""

    concurrency: int
    max_rpm: int | None = None
    max_tpm: int | None = None
    max_failures: int | None = None
    skip_bad_rows: bool = False
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    cpus_per_row: float | None = None
    """The share of a CPU each row reserved on Ray (``--cpus-per-row``); None for the local executor."""
    set: dict[str, Any] = Field(default_factory=dict)
    """``--set`` values given to every row."""
    tags: list[str] = Field(default_factory=list)
    model: str | None = None


class SkippedRow(Model):
    """A row left out by ``--skip-bad-rows``."""

    row: int
    line: int
    error: str


class BatchRecord(Model):
    """``batch.json``: what the batch is. Row statuses are not here: each row is an ordinary task."""

    id: UUID4Str
    created_at: str
    target: str
    """The workflow or agent as given."""
    target_path: str
    """What a resume loads again: the file's absolute path, or the installed name."""
    inputs: BatchInputs
    options: BatchOptions
    skipped: list[SkippedRow] = Field(default_factory=list)


class BatchRow(Model):
    """One line of ``rows.jsonl``: the task that runs row ``row`` (the first line for a row wins)."""

    row: int
    task_id: UUID4Str

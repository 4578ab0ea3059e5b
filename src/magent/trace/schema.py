"""The JSON Schema of ``magent trace ID --json`` (a ``TraceLog``), shipped in the package.

The schema file beside this module, ``tracelog.schema.json``, is generated from the pydantic
``TraceLog`` model, with the schemas of the files under the home, by ``models/published.py``
(``python -m magent.models.published``); a test keeps it and the model in step. Every field
is ``required`` in it: ``--json`` prints them all, defaults included (trace.json itself leaves
out fields at their default: ``docs/schemas/trace.schema.json``).
"""

from __future__ import annotations

from pathlib import Path

SCHEMA_FILE = Path(__file__).with_name("tracelog.schema.json")

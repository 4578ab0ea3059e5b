"""The real ``jq`` binary for the tests of docs/reading-files.md (``.ci/run`` installs it)."""

from __future__ import annotations

import shutil

import pytest

INSTALL = "apt-get install jq"


def jq() -> str:
    """The path of ``jq``; fails the test with one line saying how to get it when there is none."""
    found = shutil.which("jq")
    if found is None:
        pytest.fail(f"the jq one-liners' test needs jq on PATH: {INSTALL} (as root; .ci/run does it)",
                    pytrace=False)
    return found

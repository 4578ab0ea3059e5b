"""A real headless Chromium for tests: Debian's ``chromium`` driven by Playwright.

Playwright never downloads a browser here (``playwright install`` is not used): it
drives the system's ``/usr/bin/chromium``, which ``.ci/run`` installs with apt. The
flags keep Chromium off the network (no background updates, sync or QUIC) and each
launch gets a fresh profile directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Iterator

import pytest

CHROMIUM = os.environ.get("MAGENT_TEST_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator:
    """A browser context (a fresh profile); fails the test with what to install when it cannot start."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser tests need Playwright: .venv/bin/pip install -e '.[test]'")
    if not (os.path.isfile(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.fail(f"the browser tests need Chromium at {CHROMIUM}: apt-get install chromium "
                    "(.ci/run does it), or set MAGENT_TEST_CHROMIUM")
    with tempfile.TemporaryDirectory(prefix="magent-chromium-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": width, "height": height})
        try:
            yield context
        finally:
            context.close()


def expect(locator):
    """Playwright's waiting assertions (``to_contain_text``...) on ``locator``."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)

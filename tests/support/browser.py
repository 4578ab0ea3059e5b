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


INSTALL = "apt-get install chromium"


def missing() -> str | None:
    """Why the browser tests cannot run here, in one line with the fix; None when they can."""
    if os.path.isfile(CHROMIUM) or shutil.which(CHROMIUM):
        return None
    return (f"the browser tests need Chromium at {CHROMIUM}: {INSTALL} (as root; .ci/run does it), "
            "or set MAGENT_TEST_CHROMIUM to a Chromium binary")


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator:
    """A browser context (a fresh profile); fails the test with what to install when it cannot start."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser tests need Playwright: the README's test command installs it")
    if missing():
        pytest.fail(missing())
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

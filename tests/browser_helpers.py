"""Debian's headless `chromium` driven by Playwright, for tests that look at pages as a person would.

Without chromium (or Playwright) the tests skip on a workstation and FAIL in CI (CI=true): a browser
test that silently skips in CI tests nothing.
"""

from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def unavailable(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must run the browser tests (.ci/run installs Debian's chromium)")
    pytest.skip(reason)


def launched_chromium():
    """A generator fixture body: yields a launched headless chromium, closes it afterwards."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed (it is in the dev extra)")
    executable = shutil.which("chromium")
    if executable is None:
        unavailable("chromium is not on PATH (apt-get install -y chromium)")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()

"""Headless Chromium for the viewer's slow-tier tests: where it is missing a test is skipped with the reason, except
under ``CI=true``, where its absence fails the test (CI installs the Debian ``chromium`` package)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest


def chromium() -> str:
    """The Chromium binary, or skip (fail under ``CI=true``) saying how to install it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail("chromium is not installed (CI installs the Debian 'chromium' package)")
    pytest.skip("chromium is not installed (apt-get install -y chromium)")


def render(page: Path, tmp: Path, *, timed: bool = False, screenshot: bool = False
           ) -> tuple[str, list[str]] | tuple[str, list[str], float]:
    """The DOM after the page's scripts ran and the console messages Chromium logged (and, ``timed``, the
    browser's wall seconds from start to the dumped DOM). ``screenshot``: take a screenshot instead of dumping the
    DOM (the DOM returned is empty): Chromium 156's ``--dump-dom`` aborts (SIGILL) on a lone surrogate in the DOM's
    text, which a page may well hold."""
    profile = tmp / f"profile-{page.stem}"
    output = [f"--screenshot={tmp / (page.stem + '.png')}"] if screenshot else ["--dump-dom"]
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
               *output, page.resolve().as_uri()]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    wall = time.perf_counter() - start
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    dom = "" if screenshot else done.stdout
    return (dom, console, wall) if timed else (dom, console)

"""``envsim serve`` finds the server launcher of its own environment even when that is not on PATH."""

from __future__ import annotations

import sys
from pathlib import Path

from envsim.training.serve import find_executable


def test_a_launcher_next_to_this_python_is_found_without_path(monkeypatch):
    monkeypatch.setenv("PATH", "")
    interpreter = Path(sys.executable)
    assert find_executable(interpreter.name) == str(interpreter.parent / interpreter.name)
    assert find_executable("no-such-launcher-anywhere") is None


def test_path_wins_over_the_interpreters_folder(monkeypatch, tmp_path):
    launcher = tmp_path / Path(sys.executable).name
    launcher.write_text("#!/bin/sh\n")
    launcher.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_executable(launcher.name) == str(launcher)

"""A child process's own peak memory in tests, from ``benchmarks/child_usage.py`` (loaded from its path: the
benchmarks folder is not a package). ``os.wait4``'s ``ru_maxrss`` keeps the parent's resident size across fork and
exec, so a pytest process that had loaded torch (``-n 0`` after the training tests) made every child 1 GB."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "child_usage.py"
_spec = importlib.util.spec_from_file_location("child_usage", _PATH)
_module = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("child_usage", _module)  # its dataclass looks its module up by name
_spec.loader.exec_module(_module)

measured_command = _module.measured_command
own_peak_kb = _module.own_peak_kb

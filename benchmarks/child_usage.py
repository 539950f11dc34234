"""Resource usage of one child command, measured so that the parent's own size never leaks into it.

``os.wait4`` gives a child's CPU time, but its ``ru_maxrss`` starts from the parent's resident size at fork
(Linux keeps the high-water mark across ``execve``): a benchmark parent holding 200 MB of tables would report
every child at 200 MB or more. The child's peak is therefore its own ``VmHWM`` (``/proc/self/status``, reset by
``execve``), which a wrapper prints to stderr as the process exits.

    usage = run_python(["-c", "from envsim.cli import main; main()", "eval", ...])
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

MARK = "child-usage-vmhwm-kb:"
_WRAPPER = (
    "import atexit, runpy, sys\n"
    "def _hwm():\n"
    "    try:\n"
    "        for line in open('/proc/self/status'):\n"
    "            if line.startswith('VmHWM:'):\n"
    f"                sys.stderr.write('\\n{MARK}' + line.split()[1] + '\\n'); sys.stderr.flush()\n"
    "    except OSError:\n"
    "        pass\n"
    "atexit.register(_hwm)\n"
    "target = sys.argv[1]\n"
    "if target == '-c':\n"
    "    code = sys.argv[2]; sys.argv = ['-c'] + sys.argv[3:]; exec(compile(code, '<string>', 'exec'), {'__name__': '__main__'})\n"
    "else:\n"
    "    sys.argv = sys.argv[1:]; runpy.run_path(target, run_name='__main__')\n"
)


@dataclass
class Usage:
    """One child run: wall and CPU seconds (user + system), peak resident memory (MB, its own), seconds to
    its first stderr line starting with ``first_prefix`` (``None`` if none), and the tail of its stderr."""

    wall: float
    cpu: float
    peak_mb: float
    first_line: float | None
    tail: str
    exit_code: int


def measured_command(args: list[str]) -> list[str]:
    """The command line of ``python ARGS`` (a script path or ``-c CODE``, then its arguments) behind the wrapper
    that writes the child's own peak (``VmHWM``) as the last line of its stderr (``own_peak_kb`` reads it)."""
    return [sys.executable, "-c", _WRAPPER, *args]


def own_peak_kb(stderr: str) -> tuple[str, int | None]:
    """``stderr`` of a ``measured_command`` without the wrapper's line, and the peak it reports in KiB (None when
    the child died before writing it, e.g. killed)."""
    kept, peak = [], None
    for line in stderr.splitlines(keepends=True):
        if line.startswith(MARK):
            peak = int(line[len(MARK):])
            if kept and kept[-1].endswith("\n"):   # the line break the wrapper wrote before its mark
                kept[-1] = kept[-1][:-1]
        else:
            kept.append(line)
    return "".join(kept), peak


def child_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with ``env`` on top, and Python's bytecode cache on, as on a user's machine: a
    sandbox that sets ``PYTHONDONTWRITEBYTECODE`` makes every child compile EnvSim's modules from source again
    (~0.5 s of CPU per ``envsim eval`` on a 2-core machine)."""
    merged = {**os.environ, **(env or {})}
    merged.pop("PYTHONDONTWRITEBYTECODE", None)
    return merged


def run_python(args: list[str], env: dict[str, str] | None = None, first_prefix: str = "eval ") -> Usage:
    """Run ``python ARGS`` (a script path or ``-c CODE`` then its arguments) and measure it (``child_environment``:
    with Python's bytecode cache on)."""
    start = time.perf_counter()
    proc = subprocess.Popen(measured_command(args), env=child_environment(env),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first: list[float] = []
    tail: list[str] = []
    peak: list[float] = []

    def read_stderr() -> None:
        for line in proc.stderr:  # type: ignore[union-attr]
            if line.startswith(MARK):
                peak.append(int(line[len(MARK):]) / 1024)
                continue
            if not first and line.startswith(first_prefix):
                first.append(time.perf_counter() - start)
            tail.append(line)
            del tail[:-40]

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    reader.join(10)
    return Usage(wall, usage.ru_utime + usage.ru_stime, peak[-1] if peak else float("nan"),
                 first[0] if first else None, "".join(tail), os.waitstatus_to_exitcode(status))

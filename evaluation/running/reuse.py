"""What a re-run of ``envsim eval`` takes over from its run directory, said first and kept with the run.

Re-running a command whose run directory already holds scored samples skips them (resumption). That is right
after a crash and wrong after retraining a model served under the same name, so the reuse is never silent:
before any request ``envsim eval`` prints how many results it reuses and when they were written, and
``RUN/reuse.json`` keeps the latest invocation's figures, which ``summary.json`` (``reused``,
``reused_results_last_written``), ``report.md`` and the console summary repeat (also when ``envsim report``
rebuilds them). An interrupted run says how many results it keeps and how to resume (exit code 130).
"""

from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REUSE_FILE = "reuse.json"
EXIT_INTERRUPTED = 130  # the shell's code for a process ended by SIGINT (128 + 2)
_MAX_READ = 64 * 1024


@dataclass(frozen=True)
class Reuse:
    """One invocation's reuse: ``reused`` of the run's ``total`` samples were already scored in ``run_dir``;
    ``last_written`` is when ``results.jsonl`` was last written (UTC), None when nothing was reused."""

    reused: int
    total: int
    run_dir: str
    last_written: str | None


def utc_text(seconds: float) -> str:
    """``2026-11-27 12:03:05 UTC``."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def count_reuse(run_dir: Path, total: int, already_scored: int) -> Reuse:
    """The reuse of a run of ``total`` samples whose results file already scores ``already_scored`` of them."""
    reused = min(already_scored, total)
    written = None
    if reused:
        try:
            written = utc_text((run_dir / "results.jsonl").stat().st_mtime)
        except OSError:
            written = None
    return Reuse(reused, total, str(run_dir), written)


def announcement(reuse: Reuse) -> str | None:
    """The line printed before the run (None when nothing is reused)."""
    if not reuse.reused:
        return None
    when = f", results last written {reuse.last_written}" if reuse.last_written else ""
    every = "all " if reuse.reused >= reuse.total else ""
    return (f"reusing {every}{reuse.reused} of {reuse.total} results already scored in {reuse.run_dir}{when}: "
            f"they are not sent again; --overwrite scores every sample again")


def record_reuse(run_dir: Path, reuse: Reuse) -> None:
    """Write ``RUN/reuse.json`` for this invocation (replacing the previous one's; never through a link)."""
    from envsim.evaluation.reporting.report import write_text_atomic

    write_text_atomic(run_dir / REUSE_FILE, json.dumps({**asdict(reuse), "at": utc_text(time.time())}) + "\n")


def read_reuse(run_dir: Path) -> dict[str, Any] | None:
    """The latest invocation's reuse from ``RUN/reuse.json`` (None when absent, a link, too big or unreadable)."""
    path = run_dir / REUSE_FILE
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        raw = os.read(fd, _MAX_READ + 1) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        data = json.loads(raw) if 0 < len(raw) <= _MAX_READ else None
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(data, dict) or not isinstance(data.get("reused"), int) or isinstance(data["reused"], bool):
        return None
    return data


def summary_fields(run_dir: Path) -> dict[str, Any]:
    """``reused`` and ``reused_results_last_written`` for ``summary.json`` (empty when nothing was reused)."""
    reuse = read_reuse(run_dir)
    if not reuse or reuse["reused"] <= 0:
        return {}
    return {"reused": reuse["reused"], "reused_results_last_written": reuse.get("last_written")}


def reuse_phrase(summary: dict[str, Any]) -> str | None:
    """``400 reused from an earlier run of this directory, results last written ...`` (None when none was)."""
    if not summary.get("reused"):
        return None
    when = summary.get("reused_results_last_written")
    return (f"{summary['reused']} reused from an earlier run of this directory"
            f"{f', results last written {when}' if when else ''}")


def reuse_note(summary: dict[str, Any]) -> str:
    """The console's `` (400 reused from ...; --overwrite scores them again)`` after the scored count, or ``""``."""
    phrase = reuse_phrase(summary)
    return f" ({phrase}; --overwrite scores them again)" if phrase else ""


class EvalInterrupted(Exception):
    """The run was interrupted (Ctrl-C): ``kept`` results are in ``run_dir`` and the same command resumes."""

    def __init__(self, run_dir: Path, kept: int, total: int | None) -> None:
        of = f" of {total}" if total is not None else ""
        super().__init__(f"interrupted: {kept}{of} results are kept in {run_dir}; run the same command again to "
                         f"resume (the kept results are not sent again), or add --overwrite to start over")
        self.run_dir, self.kept, self.total = run_dir, kept, total

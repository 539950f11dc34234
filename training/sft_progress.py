"""Progress of a running SFT job, read from LLaMA-Factory's ``trainer_log.jsonl``: one line per logged step
with samples per second and the time left, so a CPU run of an hour says how far it is and when it ends.

LLaMA-Factory's log callback appends ``{"current_steps", "total_steps", "loss", "lr", "elapsed_time",
"remaining_time", ...}`` to ``OUTPUT_DIR/trainer_log.jsonl`` at every logging step (times as
``str(timedelta)``, e.g. ``"0:12:05"`` or ``"1 day, 2:00:00"``)."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any, Callable

LOG_NAME = "trainer_log.jsonl"
_DURATION = re.compile(r"^(?:(\d+) days?, )?(\d+):(\d{2}):(\d{2})(?:\.\d+)?$")


def duration_seconds(text: Any) -> float | None:
    """Seconds of a ``str(timedelta)`` text, or None when it is not one."""
    match = _DURATION.match(str(text).strip()) if text is not None else None
    if match is None:
        return None
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


def clock(seconds: float) -> str:
    """``1 h 05 min``, ``12 min 03 s`` or ``45 s``."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def progress_line(entry: dict[str, Any], samples_per_step: int) -> str | None:
    """One progress line for a ``trainer_log.jsonl`` entry (None for an entry without step counts)."""
    step, total = entry.get("current_steps"), entry.get("total_steps")
    if not isinstance(step, int) or not isinstance(total, int) or step <= 0:
        return None
    parts = [f"sft step {step}/{total}"]
    if isinstance(entry.get("loss"), (int, float)):
        parts.append(f"loss {entry['loss']:.4f}")
    elapsed = duration_seconds(entry.get("elapsed_time"))
    if elapsed:
        parts.append(f"{step * samples_per_step / elapsed:.3f} samples/s")
        parts.append(f"elapsed {clock(elapsed)}")
        parts.append(f"ETA {clock(elapsed / step * (total - step))}")
    return " · ".join(parts)


class ProgressFollower:
    """Follow ``trainer_log.jsonl`` in a background thread and emit a progress line per new entry."""

    def __init__(self, log_path: Path, samples_per_step: int, emit: Callable[[str], None],
                 interval: float = 2.0) -> None:
        self.log_path, self.samples_per_step, self.emit, self.interval = log_path, samples_per_step, emit, interval
        self._stop = threading.Event()
        self._offset = 0
        self._thread = threading.Thread(target=self._run, name="sft-progress", daemon=True)

    def __enter__(self) -> "ProgressFollower":
        self._offset = self.log_path.stat().st_size if self.log_path.is_file() else 0  # an earlier run's lines
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.poll()  # the last lines written before the trainer exited

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def poll(self) -> None:
        """Emit the lines for entries appended since the last poll (a half-written last line waits)."""
        try:
            if not self.log_path.is_file() or self.log_path.stat().st_size < self._offset:
                self._offset = 0  # the trainer removed the old log (overwrite_output_dir)
                if not self.log_path.is_file():
                    return
            with self.log_path.open("rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read(1 << 20)
        except OSError:
            return
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for raw in complete.splitlines():
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            line = progress_line(entry, self.samples_per_step) if isinstance(entry, dict) else None
            if line:
                self.emit(line)

"""Progress output that suits both a terminal and a batch log.

* A terminal gets a tqdm bar (tqdm's own ``TQDM_*`` environment variables apply).
* Anything else (a redirected log, a Slurm job, a pipe) gets a few plain summary lines instead of
  carriage-return updates: one at every ``LINE_STEPS``-th of the work (10 %), and one when
  ``interval`` seconds passed with progress in between (``TQDM_MININTERVAL`` if set and larger than
  1 s, else 30 s), plus a last line when the work ends.
* ``--no-progress`` (every command that shows progress takes it) or ``TQDM_DISABLE=1`` turn progress
  output off; ``ENVSIM_PROGRESS=bar|lines|off`` forces a mode (``auto``, the default, detects).
"""

from __future__ import annotations

import math
import os
import sys
import time
from typing import Any, Callable, Iterable, Iterator, TextIO

import click

MODES = ("auto", "bar", "lines", "off")
LINE_STEPS = 10
DEFAULT_INTERVAL_S = 30.0
_META_KEY = "envsim.progress"


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")


def progress_mode(stream: TextIO | None = None, env: dict[str, str] | None = None) -> str:
    """``bar``, ``lines`` or ``off`` for output on ``stream`` (stderr by default)."""
    env = dict(os.environ) if env is None else env
    context = click.get_current_context(silent=True)
    if context is not None and context.find_root().meta.get(_META_KEY) == "off":
        return "off"
    if _truthy(env.get("TQDM_DISABLE")):
        return "off"
    forced = (env.get("ENVSIM_PROGRESS") or "auto").strip().lower()
    if forced in ("bar", "lines", "off"):
        return forced
    stream = sys.stderr if stream is None else stream
    try:
        return "bar" if stream.isatty() else "lines"
    except (AttributeError, ValueError):      # closed or unusual streams
        return "lines"


def _disable(context: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        context.find_root().meta[_META_KEY] = "off"
    return value


def progress_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--no-progress`` for a click command (no parameter reaches the function)."""
    return click.option("--no-progress", is_flag=True, expose_value=False, callback=_disable,
                        help="No progress output (in a non-terminal, progress is a few summary lines; "
                             "ENVSIM_PROGRESS=bar|lines|off forces a mode).")(command)


def _duration(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class LineProgress:
    """A tqdm-compatible progress object that writes occasional complete lines (no carriage returns)."""

    def __init__(self, iterable: Iterable[Any] | None = None, *, total: int | None = None, desc: str = "",
                 unit: str = "it", initial: int = 0, stream: TextIO | None = None, interval: float | None = None,
                 clock: Callable[[], float] = time.monotonic, **_: Any) -> None:
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.iterable = iterable
        self.total = total
        self.desc = desc
        self.unit = unit
        self.n = initial
        self.initial = initial
        self.stream = stream if stream is not None else sys.stderr
        if interval is None:
            try:
                interval = max(float(os.environ.get("TQDM_MININTERVAL", "")), 1.0)
            except ValueError:
                interval = DEFAULT_INTERVAL_S
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self.last_time = self.started
        self.last_n = initial
        self.postfix = ""
        self.closed = False
        self.lines = 0
        self._step = self._step_of(initial)

    def _step_of(self, n: int) -> int:
        if not self.total:
            return 0
        return math.floor(LINE_STEPS * min(n, self.total) / self.total)

    def _emit(self) -> None:
        elapsed = self.clock() - self.started
        done = self.n - self.initial
        rate = done / elapsed if elapsed > 0 and done else 0.0
        parts = [f"{self.desc}: " if self.desc else "", f"{self.n}"]
        if self.total:
            parts.append(f"/{self.total} {self.unit} ({100 * self.n / self.total:.0f}%)")
        else:
            parts.append(f" {self.unit}")
        parts.append(f", elapsed {_duration(elapsed)}")
        if rate:
            parts.append(f", {rate:.2f} {self.unit}/s")
            if self.total and self.n < self.total:
                parts.append(f", ETA {_duration((self.total - self.n) / rate)}")
        if self.postfix:
            parts.append(f", {self.postfix}")
        self.stream.write("".join(parts) + "\n")
        self.stream.flush()
        self.lines += 1
        self.last_time = self.clock()
        self.last_n = self.n

    def update(self, n: int = 1) -> None:
        """Advance by ``n``; writes a line at each 10 % step or after ``interval`` seconds of progress."""
        self.n += n
        step = self._step_of(self.n)
        finished = bool(self.total) and self.n >= self.total
        if finished:
            return                              # the closing line reports the end (with the final postfix)
        if step > self._step or (self.clock() - self.last_time >= self.interval and self.n != self.last_n):
            self._step = max(step, self._step)
            self._emit()

    def set_postfix(self, ordered_dict: dict[str, Any] | None = None, refresh: bool = True, **kwargs: Any) -> None:
        """Figures shown after the count (FM, CM, ...)."""
        values = {**(ordered_dict or {}), **kwargs}
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def announce(self) -> None:
        """Write a line now (the start of the work), before the first 10 % step."""
        self._emit()

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        """Change the label."""
        self.desc = desc or ""

    def refresh(self) -> None:
        """Nothing to redraw."""

    def write(self, text: str) -> None:
        """Print a message line."""
        self.stream.write(text.rstrip("\n") + "\n")

    def close(self) -> None:
        """Write the last line (once)."""
        if self.closed:
            return
        self.closed = True
        if self.n != self.last_n or self.lines == 0:
            self._emit()

    def __iter__(self) -> Iterator[Any]:
        for item in self.iterable or ():
            yield item
            self.update(1)
        self.close()

    def __enter__(self) -> "LineProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def progress(iterable: Iterable[Any] | None = None, *, total: int | None = None, desc: str = "", unit: str = "it",
             initial: int = 0, stream: TextIO | None = None, **kwargs: Any) -> Any:
    """A tqdm bar on a terminal, ``LineProgress`` elsewhere, a disabled tqdm with ``--no-progress``."""
    mode = progress_mode(stream)
    if mode == "lines":
        return LineProgress(iterable, total=total, desc=desc, unit=unit, initial=initial, stream=stream)
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, initial=initial, file=stream, disable=mode == "off",
                dynamic_ncols=True, **kwargs)


class DelayedProgress:
    """A progress display that appears only when the work outlasts ``delay_s`` (work that ends sooner prints
    nothing); it then starts at the amount done so far and announces itself at once. Call it with each increment
    (in raw units, e.g. bytes: the display counts whole ``scale``-sized units, e.g. MB); ``close()`` at the end."""

    def __init__(self, total: int, desc: str, unit: str = "MB", scale: int = 1_000_000, delay_s: float = 0.25,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.desc, self.unit, self.scale = total, desc, unit, scale
        self.delay_s, self.clock = delay_s, clock
        self.started = clock()
        self.done = 0
        self.shown = 0
        self.bar: Any = None

    def __call__(self, n: int) -> None:
        self.done += n
        if self.bar is None:
            if self.clock() - self.started < self.delay_s:
                return
            self.shown = self.done // self.scale
            self.bar = progress(total=-(-self.total // self.scale), initial=self.shown, desc=self.desc,
                                unit=self.unit)
            announce = getattr(self.bar, "announce", None)
            if announce is not None:
                announce()
            return
        units = self.done // self.scale
        if units > self.shown:
            self.bar.update(units - self.shown)
            self.shown = units

    def close(self) -> None:
        """End the display (if it appeared), counting what was done since its last update."""
        if self.bar is not None:
            units = -(-self.done // self.scale)
            if units > self.shown:
                self.bar.update(units - self.shown)
                self.shown = units
            self.bar.close()

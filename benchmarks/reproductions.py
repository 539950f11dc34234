"""The frame of the trust-round scripts (``trust_round_four.py``, ``trust_round_four_replay.py``): reproductions
registered with ``@checks.check(finding, name)``, each returning (held, what was seen), run in order with one
``held`` / ``FAILED`` / ``skipped`` line each; the exit code is 1 unless every one that ran held (a skipped one
counts against it: no line says held that was not run)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

Check = Callable[[], tuple[bool, str]]


class Skipped(Exception):
    """The check's requirements are missing here (the message says which)."""


class Reproductions:
    """An ordered registry of reproductions and the loop that runs them."""

    def __init__(self) -> None:
        self.checks: list[tuple[str, str, Check]] = []

    def check(self, finding: str, name: str) -> Callable[[Check], Check]:
        """Register a reproduction: it returns (held, what was seen)."""
        def register(function: Check) -> Check:
            self.checks.append((finding, name, function))
            return function
        return register

    def main(self, description: str, work: Path | None = None, argv: list[str] | None = None) -> int:
        """Run the checks (``--only``: those whose finding or name holds one of the words); 1 unless all held."""
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument("--only", nargs="*", default=None,
                            help="run the checks whose finding or name holds one of these words")
        args = parser.parse_args(argv)
        bad = 0
        for finding, name, function in self.checks:
            if args.only and not any(word in f"{finding} {name}" for word in args.only):
                continue
            started = time.monotonic()
            try:
                held, seen = function()
                status = "held" if held else "FAILED"
            except Skipped as exc:
                status, seen = "skipped", str(exc)
            except Exception as exc:  # noqa: BLE001 - a check that breaks is a failure, shown
                status, seen = "FAILED", f"{type(exc).__name__}: {str(exc)[:300]}"
            bad += status != "held"
            print(f"{status:8} {finding:>3}  {name}: {seen} ({time.monotonic() - started:.1f} s)", flush=True)
        where = f" (work folder {work})" if work is not None else ""
        print(f"{'all held' if not bad else f'{bad} not held'}{where}")
        return 1 if bad else 0

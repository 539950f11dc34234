"""Evaluation speed on the τ-bench tiers: ``envsim eval`` end to end (start-up, loading, scoring, reports), as a
user runs it. Scoring applies predicted patches copy-on-write and compares states by shared subtrees
(``evaluation/shared_states.py``); null/oracle build no whole-database prompt (``runner.skips_prompt``).

    ENVSIM_TAU_BENCH=../shared/third_party/tau-bench python benchmarks/tau_eval_speed.py

Targets (issue 23, "at the speed of the call"): null on tau >= 100 samples/s (was ~2/s: > 400 s for 843);
oracle >= 10 samples/s (one traced labelling per sample is the call itself); tau_chained under 2 minutes each.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = [("null", "tau", "mdp", 843, 100.0), ("oracle", "tau", "mdp", 843, 10.0), ("oracle", "tau", "mdp-view", 843, 10.0),
        ("null", "tau_chained", "mdp", 740, 740 / 120), ("oracle", "tau_chained", "mdp", 740, 740 / 120)]


def main() -> int:
    """Run each baseline once and print calls per second against its target; exit 1 when one is missed."""
    missed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for model, tier, mode, calls, target in RUNS:
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "from envsim.cli import main; main()", "eval", "--model", model,
                            "--benchmark", "v2", "--tier", tier, "--prompt-mode", mode, "--no-progress",
                            "--run-dir", str(Path(tmp) / f"{model}-{tier}-{mode}")], check=True,
                           stdout=subprocess.DEVNULL)
            seconds = time.perf_counter() - started
            rate = calls / seconds
            ok = rate >= target
            missed += not ok
            print(f"{model:6} {tier:11} {mode:8} {calls} calls in {seconds:6.1f} s: {rate:7.1f} calls/s "
                  f"(target >= {target:.1f}) {'ok' if ok else 'MISSED'}")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())

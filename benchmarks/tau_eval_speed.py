"""Evaluation speed on the τ-bench tiers: ``envsim eval`` end to end (start-up, loading, scoring, reports), as a
user runs it. Scoring applies predicted patches copy-on-write and compares states by shared subtrees
(``evaluation/scoring/shared_states.py``); null/oracle build no whole-database prompt (``runner.skips_prompt``).

    ENVSIM_TAU_BENCH=../shared/third_party/tau-bench python benchmarks/tau_eval_speed.py

Targets (issue 23, "at the speed of the call"): null on tau >= 100 samples/s (was ~2/s: > 400 s for 843);
oracle >= 10 samples/s (one traced labelling per sample is the call itself); tau_chained under 2 minutes each.
Then the cost of scoring one WRONG answer (the oracle patch with one value spoiled, on every 10th changing
call): the Δ diagnostics through ``changed_paths`` on unshared subtrees (what scoring does) against
``compute_delta`` on the whole state (what it did: ~1 s a sample). ``--wrong-only`` runs that part alone.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RUNS = [("null", "tau", "mdp", 843, 100.0), ("oracle", "tau", "mdp", 843, 10.0), ("oracle", "tau", "mdp-view", 843, 10.0),
        ("null", "tau_chained", "mdp", 740, 740 / 120), ("oracle", "tau_chained", "mdp", 740, 740 / 120)]


def _spoiled(patch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``patch`` with the first value it writes changed (a string gets an ``x``, a number ``+ 1``, else ``"x"``)."""
    wrong = copy.deepcopy(patch)
    for op in wrong:
        if "value" in op:
            value = op["value"]
            op["value"] = (value + "x" if isinstance(value, str) else value + 1
                           if isinstance(value, (int, float)) and not isinstance(value, bool) else "x")
            break
    return wrong


def wrong_answer_ms(step: int = 10) -> tuple[int, float, float]:
    """Answers scored, and ms per wrong answer on the tau tier: ``score_prediction`` now, and with the
    whole-state ``compute_delta`` it used for the predicted paths before."""
    from envsim.benchmark.state_store import resolve, state_folder
    from envsim.delta import compute_delta
    from envsim.evaluation.scoring.parsing import ParsedAnswer
    from envsim.evaluation.scoring.scoring import apply_prediction, score_prediction

    tau = Path(__file__).resolve().parents[1] / "benchmark" / "v2" / "tau.jsonl"
    rows = [json.loads(line) for line in tau.open(encoding="utf-8")]
    records = [resolve(r, state_folder(tau)) for r in rows if r["patch"]][::step]
    answers = [ParsedAnswer(observation=r["observation"], patch=_spoiled(r["patch"])) for r in records]
    compute_delta({"a": 1}, {"a": 2})  # deepdiff's import, paid once per run, not per sample
    started = time.perf_counter()
    scores = [score_prediction(r, a) for r, a in zip(records, answers)]
    now = time.perf_counter() - started
    assert not any(s.cm for s in scores)
    started = time.perf_counter()
    for record, answer in zip(records, answers):
        compute_delta(record["state"], apply_prediction(record["state"], answer.patch or []))
    before = time.perf_counter() - started
    return len(records), 1000 * now / len(records), 1000 * before / len(records)


def main() -> int:
    """Run each baseline once and print calls per second against its target; exit 1 when one is missed.
    Then print the ms per wrong answer (``--wrong-only``: that alone)."""
    missed = 0
    if "--wrong-only" in sys.argv:
        RUNS.clear()
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
    count, now, before = wrong_answer_ms()
    print(f"wrong answers on tau: {now:.1f} ms each scored ({count} answers); whole-state compute_delta "
          f"for the same paths: {before:.1f} ms each")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())

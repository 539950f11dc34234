"""Labelling speed on τ-bench's databases: traced labelling (Δ on the touched records, determinism check by
a second run and a whole-state digest) against the whole-state path (``executor.execute``: deepdiff over the
whole database), over the ground-truth calls of τ-bench's test tasks replayed in order.

    ENVSIM_TAU_BENCH=../shared/third_party/tau-bench python benchmarks/tau_labelling_speed.py [--baseline-calls 5]

Every traced label is checked: its patch applied to the full state gives the full next state (jsonpatch).
Target (issue 23): >= 50 calls/s on retail with the determinism check.
"""

from __future__ import annotations

import argparse
import time

import jsonpatch

from envsim.construction.traced_labelling import StateDigest, label_traced
from envsim.delta import canonical_json
from envsim.envs.adapters.tau import DOMAINS, task_actions, tau_env
from envsim.envs.sandbox import execute


def time_traced(domain: str) -> tuple[int, float, list[tuple[dict, dict]]]:
    """Label every test-task call (chained per task); returns calls, seconds and (state, transition) pairs to check."""
    env_class = tau_env(domain)
    initial = env_class.sample_state(0)
    initial_digest = StateDigest.of(initial)
    checks = []
    calls = 0
    start = time.perf_counter()
    for actions in task_actions(domain, "test"):
        state, digest = initial, initial_digest
        for action in actions:
            transition, digest = label_traced(env_class, state, action, digest=digest, check_determinism=True)
            checks.append((state, transition))
            state = transition.next_state
            calls += 1
    return calls, time.perf_counter() - start, checks


def main() -> None:
    """Print calls/s of traced and whole-state labelling per domain, after checking every traced patch."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline-calls", type=int, default=5, help="calls timed on the whole-state path")
    args = parser.parse_args()
    for domain in DOMAINS:
        calls, seconds, checks = time_traced(domain)
        exact = sum(canonical_json(jsonpatch.apply_patch(state, t.patch)) == canonical_json(t.next_state)
                    for state, t in checks)
        env_class = tau_env(domain)
        sample = checks[: args.baseline_calls]
        start = time.perf_counter()
        for state, transition in sample:
            execute(env_class, state, transition.action, check_determinism=True)
        baseline = len(sample) / (time.perf_counter() - start) if sample else float("nan")
        print(f"{domain}: traced labelling {calls / seconds:.1f} calls/s over {calls} test-task calls "
              f"({seconds:.2f} s, determinism check on); patches exact {exact}/{calls}; "
              f"whole-state execute {baseline:.2f} calls/s ({len(sample)} calls)")


if __name__ == "__main__":
    main()

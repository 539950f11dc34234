"""Records of user environments: code that is true and views verified on every record (issue 31, items 1-2).

For each environment (default: the production-style shop fixture at full size, and τ-bench retail through the
generic path, a user-style wrapper and ``wrap_target``) it builds a pool with ``construct``'s own
``build_pool`` and prints:

* records whose ``code`` holds ``def <tool>(`` (the function that ran);
* views verified at construction (``view.verified``), widened ones per widening and per tool;
* a re-check: the stored (verified) view, run alone, reproduces the record's observation and next state;
* ``mdp-view`` prompt tokens (prompt version 3, Qwen BPE, chat framing included): p50 / p95 / max.

    ENVSIM_TAU_BENCH=../shared/third_party/tau-bench PYTHONPATH=. python benchmarks/view_verification.py \\
        [--env tests.fixtures.shopdb.wrapper:ShopEnv] [--episodes 3] [--steps 20] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from collections import Counter
from typing import Any

DEFAULT_ENVS = ("tests.fixtures.shopdb.wrapper:ShopEnv", "tests.fixtures.tau_generic:TauRetail")


def pct(values: list[int], q: float) -> int:
    """The ``q`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered) + 0.5)) - 1))] if ordered else 0


def figures(env_id: str, episodes: int, steps: int, counter: Any) -> dict[str, Any]:
    """Build a pool of ``env_id`` and measure its records' code, view verification and view prompt tokens."""
    from envsim.construction.pipeline import build_pool
    from envsim.envs.registry import get_env
    from envsim.envs.sandbox import trust_target
    from envsim.envs.views.verify import reproduction_problem, runnable, stored_view
    from envsim.evaluation.prompting.prompts import build_messages
    from envsim.tokens import chat_tokens

    trust_target(env_id)
    cls = get_env(env_id)
    started = time.perf_counter()
    records = build_pool([env_id], seed=0, episodes=episodes, steps=steps, split="test")
    built = time.perf_counter() - started
    tokens, widened, rechecked = [], Counter(), 0
    for record in records:
        view = record.get("view") or {}
        if view.get("widening"):
            widened[(record["tool"], view["widening"])] += 1
        rechecked += reproduction_problem(cls, record, *runnable(stored_view(record), record["state"])) is None
        tokens.append(chat_tokens(build_messages(record, "mdp-view", version="3"), counter))
    return {
        "env": env_id, "records": len(records), "seconds_to_build": round(built, 1),
        "code_holds_def_tool": sum(f"def {r['tool']}(" in r["code"] for r in records),
        "views_checked": sum("view" in r for r in records),
        "views_verified": sum(bool((r.get("view") or {}).get("verified")) for r in records),
        "views_widened": sum(widened.values()),
        "widened_per_tool": {f"{t} -> {w}": n for (t, w), n in sorted(widened.items())},
        "stored_view_rechecked": rechecked,
        "view_prompt_tokens": {"p50": pct(tokens, 0.5), "p95": pct(tokens, 0.95), "max": max(tokens, default=0)},
        "by_outcome": dict(Counter(r["outcome"] for r in records)),
    }


def main() -> None:
    """Print the figures (``--json`` for machine-readable output)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", action="append", help="module:Class (repeatable; default: the shop and τ retail)")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())  # the fixtures live in the checkout (tests/fixtures)
    from envsim.tokens import get_tokenizer

    counter = get_tokenizer()
    envs = args.env or [e for e in DEFAULT_ENVS
                        if "tau_generic" not in e or os.environ.get("ENVSIM_TAU_BENCH")
                        or importlib.util.find_spec("tau_bench")]
    rows = [figures(env_id, args.episodes, args.steps, counter) for env_id in envs]
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return
    print("| environment | records | code holds def <tool> | views verified | widened | stored view re-checked "
          "| view prompt tokens p50 / p95 / max |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        t = r["view_prompt_tokens"]
        print(f"| {r['env']} | {r['records']} | {r['code_holds_def_tool']} | {r['views_verified']} of "
              f"{r['views_checked']} | {r['views_widened']} | {r['stored_view_rechecked']} | "
              f"{t['p50']:,} / {t['p95']:,} / {t['max']:,} |")
    for r in rows:
        if r["widened_per_tool"]:
            print(f"\n{r['env']} widened: " + ", ".join(f"{k} {n}" for k, n in r["widened_per_tool"].items()))
        print(f"{r['env']}: outcomes {r['by_outcome']}, built in {r['seconds_to_build']} s")


if __name__ == "__main__":
    main()

"""Would shipped records be solvable from their prompts if their code were rendered by ``shown_tool_code``?

Re-renders each record's ``code`` with ``envsim.envs.shown.code.shown_tool_code`` (the shipped files are not
changed), builds the prompt a model would get and runs the executor baseline on it (reads only the prompt), then
scores with the real scorer. Prints FM / CM and each miss with its executor status (issue 43; the figures behind
a later v1.1 / v2.1):

    python benchmarks/shown_code_executor.py --benchmark v1 --mode mdp
    python benchmarks/shown_code_executor.py --benchmark v2 --tier core --mode mdp
    ENVSIM_TAU_BENCH=../shared/third_party/tau-bench python benchmarks/shown_code_executor.py --benchmark v2 \
        --tier tau --mode mdp-view
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from collections import Counter


def rerendered(record: dict, cache: dict) -> dict:
    """``record`` with its code as ``shown_tool_code`` renders it for the record's environment and tool."""
    from envsim.envs.registry import get_env
    from envsim.envs.shown import shown_tool_code

    key = (record["env"], record["action"]["name"])
    if key not in cache:
        cache[key] = shown_tool_code(get_env(record["env"]), record["action"]["name"])
    shown = copy.copy(record)  # a stored record keeps resolving its state from the blobs
    shown["code"] = cache[key]
    return shown


def main() -> None:
    """Run the executor on re-rendered prompts of one track and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--benchmark", default="v1")
    parser.add_argument("--tier", default=None, help="v2 tier (core, extreme, long_state, bfcl, tau)")
    parser.add_argument("--mode", default="mdp", choices=("mdp", "mdp-view"))
    parser.add_argument("--limit", type=int, default=0, help="first N records only")
    args = parser.parse_args()

    from envsim.benchmark import load
    from envsim.evaluation.baselines.executor_baseline import execute_prompt
    from envsim.evaluation.scoring.parsing import parse_answer
    from envsim.evaluation.prompting.prompts import build_messages, default_prompt_version
    from envsim.evaluation.scoring.scoring import score_prediction

    split = {"core": "test", None: "test"}.get(args.tier, args.tier)  # v2's core tier is its test file
    records = load(args.benchmark, split)
    records = records[: args.limit] if args.limit else records
    version = default_prompt_version(args.benchmark, args.mode)
    cache: dict = {}
    started = time.perf_counter()
    fm = cm = 0
    misses: list[tuple[str, str, str, str]] = []
    for record in records:
        shown = rerendered(record, cache)
        execution = execute_prompt(build_messages(shown, args.mode, version=version))
        if execution.status == "ran":
            score = score_prediction(record, parse_answer(json.dumps(execution.answer())))
            fm, cm = fm + score.fm, cm + score.cm
            if not (score.fm and score.cm):
                misses.append((record["id"], record["env"], record["action"]["name"], "wrong answer"))
        else:
            misses.append((record["id"], record["env"], record["action"]["name"],
                           f"{execution.status}: {execution.detail[:160]}"))
    n = len(records)
    print(f"{args.benchmark} {split} ({args.mode}, prompt version {version}): n={n} FM={100 * fm / n:.1f}% "
          f"CM={100 * cm / n:.1f}% misses={len(misses)} ({time.perf_counter() - started:.0f} s, "
          f"{len(cache)} tool codes rendered)")
    print("by status:", dict(Counter(m[3].split(":")[0] for m in misses)))
    for miss in misses[:40]:
        print(" ", *miss)


if __name__ == "__main__":
    main()

"""Views of code nobody here adapted (issue 53, item 3): per fixture, a test split built with ``construct`` and
answered by the executor baseline from its ``mdp-view`` prompts, with the figures the issue asks for.

For each ``module:Class`` it runs ``envsim construct --split test --pool N --episodes E --steps S`` and
``envsim eval --model executor --prompt-mode mdp-view`` and prints: records and outcomes, records that change the
state, views verified / widened, traced SQL views, the mdp-view prompt tokens (Qwen, prompt version 4) p50 / p95 /
max, executor FM / CM, and the seconds each step took.

    PYTHONPATH=. python benchmarks/own_env_views.py [--env module:Class ...] [--pool 40] [--episodes 4] \\
        [--steps 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

DEFAULT_ENVS = ("tests.fixtures.telecom.wrapper:TelecomEnv", "tests.fixtures.flights.wrapper:AirlineEnv",
                "tests.fixtures.flights.big:BigAirlineEnv", "tests.fixtures.sqlshop.wrapper:SqlShopEnv",
                "tests.fixtures.clinic.wrapper:ClinicEnv", "tests.fixtures.flights.holds:HoldingAirlineEnv")


def pct(values: list[int], q: float) -> int:
    """The ``q``-th percentile (nearest rank below, as ``envsim.tokens``' figures round)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round((len(ordered) - 1) * q / 100)))] if ordered else 0


def figures(target: str, pool: int, episodes: int, steps: int, folder: Path) -> dict[str, Any]:
    """Construct and evaluate one fixture; the figures."""
    from click.testing import CliRunner

    from envsim.benchmark import load
    from envsim.cli import main
    from envsim.envs.sandbox import trust_target
    from envsim.evaluation.prompting.prompts import build_messages
    from envsim.tokens import chat_tokens, get_tokenizer

    module = target.split(":")[0]
    out = folder / f"{module.replace('.', '_')}.jsonl"
    started = time.perf_counter()
    built = CliRunner().invoke(main, ["construct", "--split", "test", "--env", target, "--pool", str(pool),
                                      "--episodes", str(episodes), "--steps", str(steps), "--no-progress",
                                      "--out", str(out)])
    if built.exit_code:
        return {"env": target, "error": built.output[-400:]}
    constructed = time.perf_counter() - started
    trust_target(target)
    records = load(str(out))
    counter = get_tokenizer()
    tokens = [chat_tokens(build_messages(r, "mdp-view", version="4"), counter) for r in records]
    started = time.perf_counter()
    run_dir = folder / f"{module.replace('.', '_')}_run"
    evaluated = CliRunner().invoke(main, ["eval", "--model", "executor", "--benchmark", str(out), "--prompt-mode",
                                          "mdp-view", "--env-module", module, "--run-dir", str(run_dir),
                                          "--no-progress"])
    summary = json.loads((run_dir / "summary.json").read_text()) if not evaluated.exit_code else {}
    stats = json.loads(out.with_suffix(".stats.json").read_text())
    widened = Counter(r["view"]["widening"] for r in records if r["view"].get("widening"))
    return {
        "env": target, "records": len(records), "state_chars": len(json.dumps(records[0]["state"])),
        "outcomes": dict(Counter(r["outcome"] for r in records)),
        "change_share": round(sum(bool(r["patch"]) for r in records) / len(records), 2),
        "verified": sum(bool(r["view"].get("verified")) for r in records), "widened": dict(widened),
        "sql_traced": sum("rows" in r["view"] for r in records),
        "tokens_p50_p95_max": [pct(tokens, 50), pct(tokens, 95), max(tokens)],
        "executor_fm_cm": [summary.get("overall", {}).get("fm"), summary.get("overall", {}).get("cm")],
        "left_out_nondeterministic": stats.get("nondeterministic_tools", {}),
        "seconds_construct_eval": [round(constructed, 1), round(time.perf_counter() - started, 1)],
    }


def main() -> None:
    """Print the figures of each fixture."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", action="append", default=None)
    parser.add_argument("--pool", type=int, default=40)
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for target in args.env or DEFAULT_ENVS:
            found = figures(target, args.pool, args.episodes, args.steps, Path(tmp))
            print(json.dumps(found) if args.json else "\n".join(f"{k}: {v}" for k, v in found.items()) + "\n",
                  flush=True)


if __name__ == "__main__":
    main()

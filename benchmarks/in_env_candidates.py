"""Which training-split environments suit the in-environment recipe: how often a state change writes only
values the prompt already shows.

For every training-split environment (v1), one rollout (seed 13, 4 episodes of 30 steps) is labelled; for each
state-changing record (simple, medium, difficult) it checks whether every value its true patch writes appears
verbatim in the prompt (state view, call and tool code, prompt version 3). A record that passes can be simulated
by reading and copying; the others need arithmetic, dates or counters (a small model's weak spot). Prints one
row per environment with at least 15 change records, best first:

    python benchmarks/in_env_candidates.py

``training/recipes/in-env.json`` takes the six highest with at least 9 medium-or-harder change records
(docs/real-model.md, "the in-environment held-out set").
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from typing import Any, Iterator


def leaves(value: Any) -> Iterator[Any]:
    """Scalar leaves of a JSON value."""
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item)
    else:
        yield value


def copyable(record: dict[str, Any], prompt: str) -> bool:
    """Whether every value the record's patch writes appears verbatim in ``prompt``."""
    return all(json.dumps(leaf).strip('"') in prompt
               for op in record["patch"] if "value" in op for leaf in leaves(op["value"]))


def main() -> None:
    from envsim.construction.pipeline import build_pool
    from envsim.construction.splits import training_envs
    from envsim.envs.registry import list_envs
    from envsim.evaluation.prompting.prompts import build_messages

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    envs = training_envs([e.id for e in list_envs() if e.builtin], "v1")
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for record in build_pool(envs, 13, 4, 30, "train", workers=args.workers):
        if record["stratum"] not in ("simple", "medium", "difficult"):
            continue
        prompt = "".join(m["content"] for m in build_messages(record, "mdp-view", version="3"))
        row = rows[record["env"]]
        row[0] += copyable(record, prompt)
        row[1] += 1
        row[2] += record["stratum"] != "simple"
    print("| environment | change records | medium+ | all written values in the prompt |")
    print("|---|---:|---:|---:|")
    for env, (ok, n, harder) in sorted(rows.items(), key=lambda kv: -kv[1][0] / kv[1][1]):
        if n >= 15:
            print(f"| {env} | {n} | {harder} | {ok / n:.0%} |")


if __name__ == "__main__":
    main()

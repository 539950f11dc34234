"""Your own environment at production size (issue 31): the figures of the fixture shop and of τ-bench retail
driven through the generic path (a user-style wrapper and ``wrap_target``, not the τ adapter).

    ENVSIM_TAU_BENCH=../shared/third_party/tau-bench PYTHONPATH=. python benchmarks/own_environment.py \\
        [--episodes 3] [--steps 20] [--envs shop,tau]

For each environment, seeded explorer episodes (``construction.state_explorer``) are labelled into records
(``construction.labelling.to_record``, which verifies each view of a user environment) and then measured:

* explorer: share of calls that change the state, and the strata reached;
* views: share verified (the call run on the view alone reproduces the record), widenings per tool;
* view prompt tokens (``mdp-view``, prompt version 3) p50 / p95 / max, counted with Qwen's tokenizer;
* storage: the records written as ``construct`` writes them (states stored once, ``construction.stored_states``)
  and MB per 1,000 records: the records file scaled linearly from the records measured, plus the blob folder
  as measured (one base state per initial state, so it does not grow with the record count). ``--records N``
  rolls out until N records exist, for a direct measurement.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

TARGETS = {"shop": "tests.fixtures.shopdb.wrapper:ShopEnv", "tau": "tests.fixtures.tau_generic:TauRetail"}
STRATA = ("failure", "no_change", "simple", "medium", "difficult", "extreme")


def rollout_records(target: str, episodes: int, steps: int, records_wanted: int | None) -> tuple[list[dict], float]:
    """Labelled records of seeded explorer episodes of ``target`` (deduplicated) and the seconds they took."""
    from envsim.construction.labelling import deduplicate, to_record
    from envsim.construction.rollout import seeded_rollouts
    from envsim.envs.registry import get_env
    from envsim.envs.trust import trust_target

    trust_target(target)
    cls = get_env(target)
    start = time.perf_counter()
    if records_wanted:
        episodes = max(episodes, -(-records_wanted // steps))
    records = list(deduplicate(to_record(t, cls, "test") for t in seeded_rollouts(cls, 0, episodes, steps)))
    return records, time.perf_counter() - start


def percentile(values: list[int], share: float) -> float:
    """The ``share`` quantile (linear interpolation), as ``envsim.tokens.token_stats`` reports it."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    position = (len(ordered) - 1) * share
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def view_figures(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Verified views, widenings per tool and counted view-prompt tokens."""
    from envsim.evaluation.prompts import build_messages
    from envsim.tokens import chat_tokens, get_tokenizer

    counter = get_tokenizer(None)
    tokens = [chat_tokens(build_messages(r, "mdp-view", version="3"), counter) for r in records]
    checked = [r for r in records if isinstance(r.get("view"), dict)]
    widened: dict[str, Counter] = {}
    for record in checked:
        if record["view"].get("widening"):
            widened.setdefault(record["tool"], Counter())[record["view"]["widening"]] += 1
    return {"checked": len(checked), "verified": sum(bool(r["view"].get("verified")) for r in checked),
            "widened": widened, "p50": percentile(tokens, 0.5), "p95": percentile(tokens, 0.95),
            "max": max(tokens, default=0), "over_6000": sum(t > 6000 for t in tokens)}


def storage_figures(records: list[dict[str, Any]]) -> dict[str, float]:
    """Bytes of the records as ``construct`` writes them (states stored once) and MB per 1,000 records."""
    from envsim.benchmark.state_store import state_folder
    from envsim.construction.pipeline import write_jsonl
    from envsim.construction.stored_states import store_large_states

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "pool.jsonl"
        folder = state_folder(out)
        write_jsonl(store_large_states(records, folder), out)
        file_bytes = out.stat().st_size
        blob_bytes = sum(p.stat().st_size for p in folder.iterdir()) if folder.exists() else 0
        blobs = len(list(folder.iterdir())) if folder.exists() else 0
    inline_bytes = sum(len(json_line(r)) for r in records[:20]) / max(1, min(20, len(records))) * len(records)
    per_1000 = (file_bytes / max(1, len(records)) * 1000 + blob_bytes) / 1e6
    return {"file_mb": file_bytes / 1e6, "blob_mb": blob_bytes / 1e6, "blobs": blobs, "per_1000_mb": per_1000,
            "inline_mb": inline_bytes / 1e6}


def json_line(record: dict[str, Any]) -> str:
    """A record as one canonical JSON line (what an inline file holds)."""
    import json

    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def report(name: str, target: str, records: list[dict[str, Any]], seconds: float) -> None:
    """Print the figures of one environment."""
    from envsim.construction.stored_states import state_chars

    strata = Counter(r["stratum"] for r in records)
    changed = sum(r["delta_size"] > 0 for r in records)
    views = view_figures(records)
    storage = storage_figures(records)
    reached = [s for s in STRATA[:5] if strata[s]]
    print(f"\n## {name}: {target}")
    print(f"state: {state_chars(records[0]['state']):,} JSON characters; {len(records)} records "
          f"in {seconds:.0f} s ({seconds / max(1, len(records)):.2f} s per call, view verification included)")
    print(f"explorer: {changed}/{len(records)} calls change the state ({changed / max(1, len(records)):.0%}); "
          f"strata {dict((s, strata[s]) for s in STRATA)}; reached up to difficult: "
          f"{'all' if len(reached) == 5 else 'missing ' + ', '.join(s for s in STRATA[:5] if not strata[s])}")
    errors = sum(isinstance(r["observation"], str) and r["observation"].startswith("Error") for r in records
                 if r["outcome"] == "no_change")
    if errors:  # a class that reports errors as strings: its failures are labelled no-change (DESIGN's outcome rule)
        print(f"note: {errors} no-change calls returned an error string ('Error: ...'); raise an exception in the "
              "wrapper (or register the prefix in envsim.records.STRING_ERROR_PREFIXES) to label them failures")
    if views["checked"]:
        print(f"views verified: {views['verified']}/{views['checked']} "
              f"({views['verified'] / views['checked']:.1%}); widened per tool: "
              + (", ".join(f"{tool} {dict(c)}" for tool, c in sorted(views["widened"].items())) or "none"))
    else:
        print("views verified: not checked (records carry no 'view': construction without view verification)")
    print(f"view prompt tokens (Qwen, mdp-view v3): p50 {views['p50']:,.0f}, p95 {views['p95']:,.0f}, "
          f"max {views['max']:,}; over 6,000: {views['over_6000']}")
    print(f"storage: records file {storage['file_mb']:.2f} MB + {storage['blobs']} blobs {storage['blob_mb']:.2f} MB "
          f"for {len(records)} records (inline they would take {storage['inline_mb']:.0f} MB); "
          f"≈ {storage['per_1000_mb']:.1f} MB per 1,000 records (records file scaled linearly, blobs as measured)")


def main() -> None:
    """Measure and print the figures of each environment asked for."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--records", type=int, default=None, help="roll out until this many calls (e.g. 1000)")
    parser.add_argument("--envs", default="shop,tau", help="comma-separated: shop, tau")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # each environment's figures as soon as they are measured
    for name in args.envs.split(","):
        target = TARGETS[name.strip()]
        try:
            records, seconds = rollout_records(target, args.episodes, args.steps, args.records)
        except ImportError as exc:  # τ-bench not found: say so, measure the others
            print(f"\n## {name}: {target}\nskipped: {exc}")
            continue
        report(name, target, records, seconds)


if __name__ == "__main__":
    main()

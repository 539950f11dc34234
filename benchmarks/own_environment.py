"""Your own environment at production size (issue 31): the figures of the fixture shop and of τ-bench retail
driven through the generic path (a user-style wrapper and ``wrap_target``, not the τ adapter).

    ENVSIM_TAU_BENCH=../shared/third_party/tau-bench PYTHONPATH=. python benchmarks/own_environment.py \\
        [--episodes 3] [--steps 20] [--records 1000] [--envs shop,tau]

For each environment, seeded explorer episodes (``construction.state_explorer``) are labelled into records
(``construction.labelling.to_record``, which verifies each view of a user environment) and measured as they
come (one episode in memory at a time, so ``--records 1000`` fits on a small machine):

* explorer: share of calls that change the state, and the strata reached;
* views: share verified (the call run on the view alone reproduces the record), widenings per tool;
* view prompt tokens (``mdp-view``, prompt version 3) p50 / p95 / max, overall and per tool, counted with
  Qwen's tokenizer;
* storage: the records written as ``construct`` writes them (states stored once, ``construction.stored_states``;
  one episode at a time, each against the bases of the environment's initial states) and the same records
  inline. ``--records N`` rolls out until N records exist: at N ≥ 1,000 the MB per 1,000 records is measured;
  below, it is the records file scaled linearly plus the blob folder as measured (labelled as such).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TARGETS = {"shop": "tests.fixtures.shopdb.wrapper:ShopEnv", "tau": "tests.fixtures.tau_generic:TauRetail"}
STRATA = ("failure", "no_change", "simple", "medium", "difficult", "extreme")


@dataclass
class Figures:
    """What is kept of each record once measured (its states are written out and dropped)."""
    state_chars: int = 0
    strata: Counter = field(default_factory=Counter)
    changed: int = 0
    error_strings: int = 0          # no-change calls whose observation is an "Error: ..." string
    code_defines_tool: int = 0      # records whose code holds ``def <tool>(`` (the function that ran)
    checked: int = 0
    verified: int = 0
    widened: dict = field(default_factory=dict)   # tool -> Counter of widenings
    tokens: list = field(default_factory=list)
    by_tool: dict = field(default_factory=dict)   # tool -> view prompt token counts
    inline_bytes: int = 0
    seconds: float = 0.0
    started: float = field(default_factory=time.perf_counter)

    @property
    def count(self) -> int:
        """Records measured."""
        return len(self.tokens)


def json_line(record: dict[str, Any]) -> str:
    """A record as one canonical JSON line (what an inline file holds)."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def percentile(values: list[int], share: float) -> float:
    """The ``share`` quantile (linear interpolation), as ``envsim.tokens.token_stats`` reports it."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    position = (len(ordered) - 1) * share
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def measure_record(figures: Figures, record: dict[str, Any], counter: Any) -> None:
    """Add one record's explorer, view and size figures."""
    from envsim.evaluation.prompting.prompts import build_messages
    from envsim.tokens import chat_tokens

    figures.strata[record["stratum"]] += 1
    figures.changed += record["delta_size"] > 0
    figures.code_defines_tool += f"def {record['tool']}(" in (record.get("code") or "")
    observation = record["observation"]
    figures.error_strings += (record["outcome"] == "no_change" and isinstance(observation, str)
                              and observation.startswith("Error"))
    view = record.get("view")
    if isinstance(view, dict):
        figures.checked += 1
        figures.verified += bool(view.get("verified"))
        if view.get("widening"):
            figures.widened.setdefault(record["tool"], Counter())[view["widening"]] += 1
    tokens = chat_tokens(build_messages(record, "mdp-view", version="3"), counter)
    figures.tokens.append(tokens)
    figures.by_tool.setdefault(record["tool"], []).append(tokens)
    figures.inline_bytes += len(json_line(record)) + 1


def storage_mb(out: Path) -> tuple[float, float, int]:
    """MB of the records file ``out`` and of its blob folder, and how many blobs it holds."""
    from envsim.benchmark.state_store import state_folder

    folder = state_folder(out)
    blobs = list(folder.iterdir()) if folder.exists() else []
    return out.stat().st_size / 1e6, sum(p.stat().st_size for p in blobs) / 1e6, len(blobs)


def progress_line(figures: Figures, out: Path) -> str:
    """The figures so far, measured on the records written so far (a run stopped early still reports them)."""
    file_mb, blob_mb, _ = storage_mb(out)
    n = max(1, figures.count)
    return (f"  {figures.count} records ({time.perf_counter() - figures.started:.0f} s): {figures.changed / n:.0%} change the "
            f"state; view prompt tokens p95 {percentile(figures.tokens, 0.95):,.0f}, max {max(figures.tokens):,}; "
            f"stored {file_mb + blob_mb:.2f} MB = {(file_mb + blob_mb) / n * 1000:.1f} MB per 1,000 records "
            f"(measured at this count)")


def measure(target: str, episodes: int, steps: int, records_wanted: int | None, out: Path,
            progress_every: int = 0) -> Figures:
    """Roll out seeded explorer episodes of ``target``, label and measure each record, and write the records as
    ``construct`` does (states stored once) to ``out``, one episode at a time; every ``progress_every`` records
    (0: never) print the figures so far."""
    from envsim.benchmark.state_store import state_folder
    from envsim.construction.labelling import to_record
    from envsim.construction.rollout import seeded_rollouts
    from envsim.construction.stored_states import state_chars, store_large_states
    from envsim.envs.registry import get_env
    from envsim.envs.sandbox import trust_target
    from envsim.tokens import get_tokenizer

    trust_target(target)
    cls = get_env(target)
    counter = get_tokenizer(None)
    if records_wanted:  # two episodes to spare: duplicate calls are dropped
        episodes = max(episodes, -(-records_wanted // steps) + 2)
    figures, seen, episode = Figures(), set(), []
    printed = 0
    with out.open("w", encoding="utf-8") as handle:
        def flush() -> None:
            nonlocal printed
            for row in store_large_states(episode, state_folder(out)):
                handle.write(json_line(row) + "\n")
            episode.clear()
            handle.flush()
            if progress_every and figures.count >= printed + progress_every:
                printed = figures.count - figures.count % progress_every
                print(progress_line(figures, out))

        try:
            for index, transition in enumerate(seeded_rollouts(cls, 0, episodes, steps)):
                record = to_record(transition, cls, "test")
                if record["id"] in seen:  # deduplicated, as construct does
                    continue
                seen.add(record["id"])
                if not figures.state_chars:
                    figures.state_chars = state_chars(record["state"])
                measure_record(figures, record, counter)
                episode.append(record)
                if (index + 1) % steps == 0:
                    flush()
                if records_wanted and figures.count >= records_wanted:
                    break
        except KeyboardInterrupt:  # stopped early (Ctrl-C): report the records measured so far, saying so
            print(f"  interrupted: reporting the {figures.count} records measured")
        flush()
    figures.seconds = time.perf_counter() - figures.started
    return figures


def report(name: str, target: str, figures: Figures, out: Path) -> None:
    """Print the figures of one environment."""
    n = max(1, figures.count)
    strata = figures.strata
    reached = [s for s in STRATA[:5] if strata[s]]
    print(f"\n## {name}: {target}")
    print(f"state: {figures.state_chars:,} JSON characters; {figures.count} records in {figures.seconds:.0f} s "
          f"({figures.seconds / n:.2f} s per call, view verification included)")
    print(f"explorer: {figures.changed}/{figures.count} calls change the state ({figures.changed / n:.0%}); "
          f"strata {dict((s, strata[s]) for s in STRATA)}; reached up to difficult: "
          f"{'all' if len(reached) == 5 else 'missing ' + ', '.join(s for s in STRATA[:5] if not strata[s])}")
    print(f"code: {figures.code_defines_tool}/{figures.count} records hold 'def <tool>(' for the tool they ran")
    if figures.error_strings:  # a class that reports errors as strings: its failures are labelled no-change
        print(f"note: {figures.error_strings} no-change calls returned an error string ('Error: ...'); raise an "
              "exception in the wrapper (or register the prefix in envsim.records.STRING_ERROR_PREFIXES) to label "
              "them failures")
    if figures.checked:
        print(f"views verified: {figures.verified}/{figures.checked} ({figures.verified / figures.checked:.1%}); "
              "widened per tool: " + (", ".join(f"{tool} {dict(c)}" for tool, c in sorted(figures.widened.items()))
                                      or "none"))
    else:
        print("views verified: not checked (records carry no 'view': construction without view verification)")
    tokens = figures.tokens
    print(f"view prompt tokens (Qwen, mdp-view v3): p50 {percentile(tokens, 0.5):,.0f}, "
          f"p95 {percentile(tokens, 0.95):,.0f}, max {max(tokens, default=0):,}; "
          f"over 6,000: {sum(t > 6000 for t in tokens)}")
    print("view prompt tokens per tool (calls: p50 / max): " + ", ".join(
        f"{tool} {len(c)}: {percentile(c, 0.5):,.0f} / {max(c):,}"
        for tool, c in sorted(figures.by_tool.items(), key=lambda kv: -max(kv[1]))))
    file_mb, blob_mb, blobs = storage_mb(out)
    print(f"storage: records file {file_mb:.2f} MB + {blobs} blobs {blob_mb:.2f} MB for {figures.count} "
          f"records (inline: {figures.inline_bytes / 1e6:,.0f} MB)")
    if figures.count >= 1000:
        print(f"MB per 1,000 records, measured: {(file_mb + blob_mb) / figures.count * 1000:.1f} MB")
    else:
        print(f"MB per 1,000 records, extrapolated (records file scaled linearly, blobs as measured): "
              f"≈ {file_mb / n * 1000 + blob_mb:.1f} MB")


def main() -> None:
    """Measure and print the figures of each environment asked for."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--records", type=int, default=None, help="roll out until this many calls (e.g. 1000)")
    parser.add_argument("--envs", default="shop,tau", help="comma-separated: shop, tau")
    parser.add_argument("--progress", type=int, default=0, help="print the figures so far every N records")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # each environment's figures as soon as they are measured
    for name in args.envs.split(","):
        target = TARGETS[name.strip()]
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "pool.jsonl"
            try:
                print(f"\nmeasuring {name} ({target}) ...")
                figures = measure(target, args.episodes, args.steps, args.records, out, args.progress)
            except ImportError as exc:  # τ-bench not found: say so, measure the others
                print(f"\n## {name}: {target}\nskipped: {exc}")
                continue
            report(name, target, figures, out)


if __name__ == "__main__":
    main()

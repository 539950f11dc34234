"""Per-track executor figures and the accepted-miss lists of the data cards, from executor run directories.

Run the executor over every shipped track first (docs/executor.md), then:

    python benchmarks/executor_card.py --v1 runs/executor-v1 --v2 runs/executor-v2 --tau runs/executor-v2-view \
        --write
    python benchmarks/executor_card.py --names v1.1,v2.1 --v1 runs/executor-v1.1 --v2 runs/executor-v2.1 \
        --tau runs/executor-v2.1-view --write

prints the per-track table (n, FM, CM, misses by cause) and, with ``--write``, rewrites
``benchmark/v1/executor_misses.json`` and ``benchmark/v2/executor_misses.json``: every miss with its cause, the
executor's detail and why it is acceptable (``WHY``: one rule per known defect). A miss no rule explains stops
the script: it is a new prompt-sufficiency defect to fix, or to explain here first.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from envsim.benchmark import BENCHMARK_DIR
from envsim.evaluation.baselines.executor_misses import CAUSES, MISSES_FILE, by_cause

#: (reason id, cause, detail pattern, env pattern, why the miss is acceptable). The first rule that matches
#: explains a miss; the lists name the reason by its id.
WHY: list[tuple[str, str, str, str, str]] = [
    ("omitted-import-dt", "name_not_defined", r"^'_dt' ", r".",
     "The shown code calls date helpers of envsim.envs.sampling (add_days, days_between, ...), shown in full, "
     "whose module imports `datetime as _dt`; the prompt does not show that import line. `_dt.date` and "
     "`_dt.timedelta` unmistakably name the standard datetime module, so the answer follows for a reader; only "
     "a literal executor stops. Fix in a new benchmark version: envs/source.tool_code lists the imports of the "
     "names it shows."),
    ("omitted-import-deepcopy", "name_not_defined", r"^'deepcopy' ", r"^tau/",
     "τ-bench's tool source is shown unmodified; its module's `from copy import deepcopy` is not part of the "
     "class. `deepcopy` is the standard library's copy.deepcopy: the answer follows for a reader."),
    ("view-leaves-out-a-bound-collection", "state_rendered_differently", r"view leaves out", r"^tau/",
     "The view of this failing call leaves out a collection the tool binds before its first check "
     "(`products = data[\"products\"]`) but never uses on the failing path; the view's notes say the collection exists (\"not "
     "shown\") and the view rules say parts not shown exist unchanged, so the answer follows for a reader. Fix "
     "in a new prompt version: envs/views keeps every path the code reads before its first branch."),
    ("bfcl-object-state", "state_rendered_differently", r"tool's object keeps", r"^bfcl/",
     "BFCL's class keeps this state as objects (a directory tree with a current-directory pointer, int-keyed "
     "dicts, private brake and slope forces); the prompt shows the adapter's JSON form of it, which is BFCL's "
     "own scenario format (envs/adapters/bfcl.py). The mapping is the track's documented rendering; a model "
     "reads the JSON, a literal executor cannot run object code on it."),
    ("bfcl-private-attribute", "state_rendered_differently", r"shown state does not have", r"^bfcl/",
     "BFCL's class reads a private attribute that its scenario loader builds from the shown JSON (the adapter's "
     "documented rendering, envs/adapters/bfcl.py); a model reads the JSON, a literal executor cannot."),
    ("bfcl-omitted-import", "name_not_defined", r".", r"^bfcl/",
     "BFCL's tool uses a name its module imports (decimal's InvalidOperation) that BFCL's method source, shown "
     "unmodified, does not include; the name is the standard library's, evident to a reader."),
]


def why(miss: dict[str, Any]) -> str:
    """The id of the ``WHY`` rule that explains ``miss``; ``SystemExit`` naming it when no rule does."""
    for rule, cause, detail, env, _text in WHY:
        if miss["cause"] == cause and re.search(detail, miss["detail"]) and re.search(env, miss["env"]):
            return rule
    raise SystemExit(f"unexplained executor miss {miss['id']} ({miss['env']}.{miss['tool']}): {miss['cause']}: "
                     f"{miss['detail']} - fix the prompt or the record, or add a rule to WHY")


def track_figures(run_dir: Path) -> dict[str, Any]:
    """n, FM and CM of one run directory (one-step: over samples; chained: over steps, episodes given too)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    config = json.loads((run_dir / "config.json").read_text())
    base = {"split": config["split"], "prompt_mode": config["prompt_mode"], "prompt_version": config["prompt_version"]}
    if "step_fm" in summary:
        return {**base, "unit": "step", "n": summary["steps"], "episodes": summary["scored"],
                "fm": summary["step_fm"]["rate"], "cm": summary["step_cm"]["rate"],
                "episode_cm": summary["episode_cm"]["rate"], "infra_failures": summary["infra_failures"]}
    overall = summary["overall"]
    return {**base, "unit": "sample", "n": overall["n"], "fm": overall["fm"], "cm": overall["cm"],
            "infra_failures": summary["infra_failures"]}


def track_entry(run_dir: Path) -> dict[str, Any]:
    """Figures and explained misses of one track."""
    misses = json.loads((run_dir / MISSES_FILE).read_text())["misses"]
    listed = [{k: m[k] for k in ("id", "env", "tool", "stratum", "fm", "cm", "cause", "detail")} | {"why": why(m)}
              for m in misses]
    return {**track_figures(run_dir), "by_cause": by_cause(listed), "misses": listed}


def table(tracks: dict[str, dict[str, Any]]) -> str:
    """The per-track Markdown table."""
    lines = ["| track | mode | n | FM % | CM % | misses | by cause |", "|---|---|---:|---:|---:|---:|---|"]
    for name, t in tracks.items():
        n = f"{t['n']} steps ({t['episodes']} ep.)" if t["unit"] == "step" else str(t["n"])
        causes = ", ".join(f"{c} {k}" for c, k in t["by_cause"].items()) or "–"
        lines.append(f"| {name} | {t['prompt_mode']} v{t['prompt_version']} | {n} | {100 * t['fm']:.1f} | "
                     f"{100 * t['cm']:.1f} | {len(t['misses'])} | {causes} |")
    return "\n".join(lines)


def card_section(version: str, tracks: dict[str, dict[str, Any]]) -> str:
    """The data card's executor section: figures per track, then every miss grouped by track and reason."""
    lines = ["## Executor baseline: is every sample solvable from its prompt?", "",
             "`envsim eval --model executor` reads only the rendered prompt, runs the shown code on the shown state "
             "in the sandbox and answers what it produced (docs/executor.md). Each miss is a prompt-sufficiency "
             f"defect until shown otherwise; the accepted ones are listed in `{version}/{MISSES_FILE}` (cause, the "
             "executor's detail, and why it is acceptable) and the slow-tier test "
             "`tests/benchmark/test_executor_guard.py` fails on any miss not listed there.", "", table(tracks), ""]
    for rule, _cause, _detail, _env, text in WHY:
        groups = {name: [m["id"] for m in t["misses"] if m["why"] == rule] for name, t in tracks.items()}
        groups = {name: ids for name, ids in groups.items() if ids}
        if not groups:
            continue
        total = sum(len(ids) for ids in groups.values())
        cause = next(m["cause"] for t in tracks.values() for m in t["misses"] if m["why"] == rule)
        lines += [f"**{rule}** ({cause}, {total} misses). {text}", "", "<details><summary>sample ids</summary>", ""]
        lines += [f"- {name}: {', '.join(f'`{i}`' for i in ids)}" for name, ids in groups.items()]
        lines += ["", "</details>", ""]
    return "\n".join(lines)


def dump(payload: dict[str, Any]) -> str:
    """The list as JSON, one miss per line (readable in a diff)."""
    text = json.dumps(payload, indent=1, ensure_ascii=False)
    return re.sub(r"\{\n\s+\"id\"(.*?)\n\s+\}", lambda m: json.dumps(json.loads(m.group(0)), ensure_ascii=False),
                  text, flags=re.S) + "\n"


def main() -> None:
    """Print the table; with ``--write``, write the accepted-miss lists next to the data cards."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--v1", type=Path, required=True, help="executor run directory of v1 test")
    parser.add_argument("--v2", type=Path, required=True, help="tiers directory of the executor on v2 (mdp)")
    parser.add_argument("--tau", type=Path, required=True, help="tiers directory of the executor on v2 tau (mdp-view)")
    parser.add_argument("--write", action="store_true", help="write benchmark/<v>/executor_misses.json")
    parser.add_argument("--card", action="store_true", help="print the data cards' executor sections instead")
    parser.add_argument("--names", default="v1,v2",
                        help="the two benchmark versions the runs are of: v1,v2 or the point releases v1.1,v2.1")
    args = parser.parse_args()
    first, second = args.names.split(",")
    cards = {first: {"test": track_entry(args.v1)},
             second: {**{t: track_entry(args.v2 / t) for t in ("core", "extreme", "long_state", "chained", "bfcl")},
                      "tau": track_entry(args.tau / "tau")}}
    for version, tracks in cards.items():
        print(card_section(version, tracks) if args.card else f"## {version}\n\n{table(tracks)}\n")
        if args.write:
            payload = {"about": "Accepted misses of the executor baseline (envsim eval --model executor): every "
                                "sample it gets wrong, with its cause and why it is acceptable. The slow-tier test "
                                "tests/benchmark/test_executor_guard.py fails on any miss not listed here. "
                                "See docs/executor.md.",
                       "causes": list(CAUSES), "benchmark": version,
                       "reasons": {rule: text for rule, *_, text in WHY
                                   if any(m["why"] == rule for t in tracks.values() for m in t["misses"])},
                       "tracks": tracks}
            (BENCHMARK_DIR / version / MISSES_FILE).write_text(dump(payload))


if __name__ == "__main__":
    main()

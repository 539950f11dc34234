"""Several run directories side by side, kind by kind: one-step runs (``report.compare_runs``: table and
CM-vs-|Δ| plot), chained tiers (step FM/CM, episode CM and CM@k), tiers directories (each tier they share,
compared as its kind, into ``OUT/<tier>``). Runs of different kinds, rollout tracks and simulate outputs
are refused: their figures do not answer the same question.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envsim.evaluation.reporting.report import (COMPARED_SETTINGS, COMPARISON_FILE, Comparison, comparability_warnings,
                                      compare_runs, run_label, write_markdown)
from envsim.evaluation.running.run_kinds import RunReport, UnknownRunKind
from envsim.safe_files import read_json

COMPARABLE = ("single", "chained", "tiers")


def _pct(group: dict[str, Any]) -> str:
    return "–" if not group.get("n") else f"{100 * group['rate']:.1f}"


def compare_chained(reports: list[RunReport], out: Path) -> Comparison:
    """Chained tiers side by side: episodes, step FM / CM, episode CM and CM@k per run; ``comparison.md``."""
    summaries: dict[str, dict[str, Any]] = {}
    settings: dict[str, dict[str, Any]] = {}
    for report in reports:
        config = read_json(report.path / "config.json")
        label = run_label(report.path, report.summary, config)
        label = label if label not in summaries else f"{label} [{report.path}]"
        summaries[label] = report.summary
        settings[label] = {key: config.get(key) for key, _ in COMPARED_SETTINGS}
    warnings = comparability_warnings(summaries, settings)
    horizon = max((len(s["cm_at_k"]) for s in summaries.values()), default=0)
    lines = ["## Chained runs side by side", "",
             "| run | episodes (calls) | step FM % | step CM % | episode CM % | "
             + "".join(f"CM@{k} % | " for k in range(1, horizon + 1)).rstrip(),
             "|---|---:|---:|---:|---:|" + "---:|" * horizon]
    for label, s in summaries.items():
        unscored = f" +{s['infra_failures']} unscored" if s.get("infra_failures") else ""
        at_k = "".join(f"{_pct(s['cm_at_k'].get(str(k), {}))} | " for k in range(1, horizon + 1))
        lines.append(f"| {label} | {s['scored']} ({s['steps']}){unscored} | {_pct(s['step_fm'])} | "
                     f"{_pct(s['step_cm'])} | {_pct(s['episode_cm'])} | {at_k}".rstrip())
    if warnings:
        lines += ["", "> **Not directly comparable:**", *(f"> - {w}" for w in warnings)]
    text = "\n".join(lines) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    write_markdown(out / COMPARISON_FILE, text)
    return Comparison(text, warnings, [out / COMPARISON_FILE])


def _compare_same_kind(reports: list[RunReport], out: Path) -> Comparison:
    if reports[0].kind == "single":
        return compare_runs([r.path for r in reports], out)
    return compare_chained(reports, out)


def compare_reports(reports: list[RunReport], out: Path) -> list[tuple[str, Comparison]]:
    """Compare already rebuilt run reports (all of one kind); ``(heading, comparison)`` pairs, one per tier
    for tiers directories. Raises ``UnknownRunKind`` for runs that cannot be compared."""
    kinds = sorted({r.kind for r in reports})
    if len(kinds) > 1:
        raise UnknownRunKind("cannot compare runs of different kinds: " + "; ".join(
            f"{r.path} is {r.kind}" for r in reports) + ". Compare one-step runs, chained tiers or tiers "
            "directories with their own kind.")
    if kinds[0] not in COMPARABLE:
        raise UnknownRunKind(f"{kinds[0]} runs are not compared side by side (open each drift.md): "
                             + ", ".join(str(r.path) for r in reports))
    if kinds[0] != "tiers":
        return [("", _compare_same_kind(reports, out))]
    shared = [name for name in reports[0].parts if all(name in r.parts for r in reports)]
    if not shared:
        raise UnknownRunKind("these tiers directories share no tier: " + ", ".join(str(r.path) for r in reports))
    return [(f"tier {name}", _compare_same_kind([r.parts[name] for r in reports], out / name)) for name in shared]

"""Console text of an evaluation: the summary table, live rates and the lines about unscored samples.

Shared by the ``envsim eval`` command and the Python API (which prints through callbacks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from envsim.control_chars import escape_controls
from envsim.evaluation.scoring.failure_classes import console_lines as failure_console_lines
from envsim.evaluation.running.reuse import reuse_note

TOP_REASONS = 3
SMALL_N = 10  # groups with fewer samples get their bootstrap interval marked as unreliable
SMALL_N_NOTE = f"* n < {SMALL_N}: too few samples for the bootstrap interval to mean much"


def small_group_mark(n: int) -> str:
    """``"*"`` after the n of a group too small (0 < n < ``SMALL_N``) for its bootstrap interval to mean much,
    else ``""``; the console table and report.md both mark groups with it and add ``SMALL_N_NOTE``."""
    return "*" if 0 < n < SMALL_N else ""


def live_rates(counts: dict[str, int]) -> dict[str, str]:
    """FM / CM of the samples scored so far, for the progress display ("–" until one is scored)."""
    if not counts["n"]:
        return {"FM": "–", "CM": "–"}
    return {rate.upper(): f"{100 * counts[rate] / counts['n']:.1f}%" for rate in ("fm", "cm")}


def top_reasons(reasons: Mapping[str, int] | list[str] | None, limit: int = TOP_REASONS) -> list[str]:
    """The most common failure reasons as ``"N× reason"`` lines (a plain list is shown as given), each reason's
    control characters escaped (the text may be an endpoint's)."""
    if not reasons:
        return []
    if isinstance(reasons, Mapping):
        ranked = sorted(reasons.items(), key=lambda kv: -kv[1])[:limit]
        return [f"{count}× {escape_controls(reason)}" for reason, count in ranked]
    return [escape_controls(reason) for reason in list(reasons)[:limit]]


def infra_lines(unscored: int, total: int, reasons: Mapping[str, int] | list[str] | None, unit: str = "samples"
                ) -> list[str]:
    """Console lines for the infrastructure failures of a run (none when there are none)."""
    if not unscored:
        return []
    head = (f"no {unit[:-1]} was scored: all {total} failed before an answer could be scored" if unscored >= total
            else f"{unscored} of {total} {unit} were not scored (infrastructure failures, not counted as wrong)")
    return [head] + [f"  {line}" for line in top_reasons(reasons)] + [
        "  a re-run of the same command retries them; the answers already scored are kept"]


def bad_record_lines(summary: Mapping[str, Any]) -> list[str]:
    """Console lines for the bad records of a run (``summary["bad_records"]``; none when there are none)."""
    bad = summary.get("bad_records") or 0
    if not bad:
        return []
    return ([f"{bad} of {summary.get('samples')} samples are bad records: EnvSim cannot build their prompt (not "
             "scored, not counted, not retried by a re-run; fix the benchmark file)"]
            + [f"  {line}" for line in top_reasons(summary.get("bad_record_reasons"))])


def answer_settings(summary: dict[str, Any]) -> str:
    """``mdp-view v3, answers json-schema``: the prompt and the answer format a run's figures hold for."""
    version = f" v{summary['prompt_version']}" if summary.get("prompt_version") else ""
    return f"{summary['prompt_mode']}{version}, answers {summary.get('response_format') or 'free'}"


def parse_valid_note(summary: dict[str, Any]) -> str:
    """``, parse-valid 17 (85.0%)``: the scored answers that parsed (from the overall parse-failure rate, kept to
    4 decimals: the count is exact up to 10,000 scored samples); empty when nothing was scored."""
    overall = summary.get("overall") or {}
    n, rate = overall.get("n") or 0, overall.get("parse_failure_rate")
    if not n or not isinstance(rate, (int, float)):
        return ""
    valid = round(n * (1 - rate))
    return f", parse-valid {valid} ({100 * valid / n:.1f}%)"


def format_summary(summary: dict[str, Any], run_dir: Path) -> str:
    """Console summary: overall and per-stratum rates with 95% intervals (``*`` after n: a small group)."""
    lines = [f"{summary['model']} on {summary['benchmark']}/{summary['split']} ({answer_settings(summary)}): "
             f"{summary['scored']} scored{reuse_note(summary)}{parse_valid_note(summary)}, "
             f"{summary['infra_failures']} infrastructure failures"]
    if not summary["scored"]:
        return "\n".join(lines + ["no figures: no sample was scored", f"run directory: {run_dir}"])
    tolerant = "fm_json" in summary["overall"].get("ci", {})
    lines.append(f"{'group':12} {'n':>4}  {'FM %':>18}  {'CM %':>18}  {'CM-lenient %':>18}  {'CM-original %':>18}"
                 + (f"  {'FM-json %':>9}  {'CM-num %':>8}" if tolerant else ""))
    groups = {"overall": summary["overall"], **summary["by_stratum"]}
    small = False
    for name, s in groups.items():
        if not s["n"]:
            continue
        cells = []
        for rate in ("fm", "cm", "cm_lenient", "cm_original"):
            if rate not in s["ci"]:
                continue
            lo, hi = s["ci"][rate]
            cells.append(f"{100 * s[rate]:5.1f} [{100 * lo:5.1f},{100 * hi:5.1f}]")
        tolerant_cells = (f"  {100 * s['fm_json']:9.1f}  {100 * s['cm_numeric']:8.1f}" if "fm_json" in s["ci"]
                          else "")
        mark = small_group_mark(s["n"])
        small = small or bool(mark)
        lines.append(f"{name:12} {s['n']:>4}{mark or ' '} " + "  ".join(f"{c:>18}" for c in cells) + tolerant_cells)
    if small:
        lines.append(SMALL_N_NOTE)
    if tolerant:
        lines.append("FM-json / CM-numeric: tolerant scores beside the exact ones (JSON strings as JSON; numbers "
                     "within 1e-9 relative)")
    lines += failure_console_lines(summary)
    lines.append(f"run directory: {run_dir}")
    return "\n".join(lines)

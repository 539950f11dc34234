"""The kinds of directory ``envsim report`` meets, how to tell them apart, and how to rebuild each one's
reports from its own results (never from another kind's rules).

| kind | what marks it | rebuilt from | files rewritten |
|---|---|---|---|
| ``single`` | ``config.json`` with track ``single`` | ``results.jsonl`` | summary.json, report.md, cm_by_delta.png |
| ``chained`` | ``config.json`` with track ``chained`` | ``results.jsonl`` (episodes) | summary.json, report.md |
| ``rollout`` | ``config.json`` with track ``rollout`` | ``episodes.jsonl`` | drift.json, drift.md, drift.png |
| ``simulate`` | ``drift.json`` or ``steps.jsonl``, no ``config.json`` | nothing (read only) | none |
| ``tiers`` | ``tiers.json`` or tier folders, no ``config.json`` | each tier as its kind | tiers.json, tiers.md |

Anything else is refused with ``UnknownRunKind``. Every rewrite goes to a temporary file first and is
renamed over the old one, and a file is rewritten only when its rebuild succeeded.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envsim.evaluation.reporting.report import REPORT_FILE, SUMMARY_FILE, save_figure_atomic, write_markdown, \
    write_text_atomic
from envsim.safe_files import read_json, read_text

KINDS = ("single", "chained", "rollout", "simulate", "tiers")


class UnknownRunKind(ValueError):
    """A directory ``envsim report`` cannot read (message: what it expected)."""


@dataclass
class RunReport:
    """One directory's report: its ``kind``, the Markdown to show, the files rewritten, warnings, and the
    summary (``summary.json`` contents for ``single`` / ``chained``; the tiers' for ``tiers``)."""

    path: Path
    kind: str
    text: str
    written: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    parts: dict[str, "RunReport"] = field(default_factory=dict)   # the tiers of a tiers directory


def _config(path: Path) -> dict[str, Any]:
    try:
        config = read_json(path / "config.json")  # bounded, never through a link (envsim.safe_files)
    except (OSError, ValueError) as exc:
        raise UnknownRunKind(f"{path}/config.json cannot be read: {exc}") from None
    if not isinstance(config, dict):
        raise UnknownRunKind(f"{path}/config.json is not a JSON object")
    return config


def tier_dirs(path: Path) -> list[Path]:
    """The tier folders of a tiers directory (sub-folders holding a ``config.json``), in name order; a folder that
    is a symbolic link (it may lead out of the directory) is not a tier."""
    return sorted(p for p in path.iterdir() if not p.is_symlink() and p.is_dir() and (p / "config.json").is_file())


def run_kind(path: Path) -> str:
    """The kind of ``path`` (see the module table); raises ``UnknownRunKind`` for anything else."""
    if os.path.lexists(path / "config.json"):  # a link or FIFO there is refused by _config, never read
        track = _config(path).get("track") or "single"
        if track not in ("single", "chained", "rollout"):
            raise UnknownRunKind(f"{path}: config.json names track {track!r}, which envsim report does not know")
        return str(track)
    if (path / "tiers.json").is_file() or tier_dirs(path):
        return "tiers"
    if (path / "drift.json").is_file() or (path / "steps.jsonl").is_file():
        return "simulate"
    raise UnknownRunKind(
        f"{path} is not a run directory envsim report knows: expected config.json (an eval run: one-step, "
        "chained tier or rollout track), tiers.json (the tiers directory of 'eval --benchmark v2') or "
        "drift.json (an 'envsim simulate' output)")


def _read_jsonl(path: Path) -> list[Any]:
    """Every readable JSON line of a run file (bounded, never through a link: ``runner.iter_result_lines``)."""
    from envsim.evaluation.running.runner import iter_result_lines

    return list(iter_result_lines(path))


def _single(path: Path) -> RunReport:
    from envsim.evaluation.reporting.report import report_files, write_reports

    summary = write_reports(path)
    return RunReport(path, "single", read_text(path / REPORT_FILE), report_files(path),
                     list(summary.get("warnings", [])), summary)


def _chained(path: Path) -> RunReport:
    """Rebuild the chained tier's summary from its episode rows, in benchmark order (the run's order, so
    the bootstrap intervals come out the same)."""
    from envsim.evaluation.scoring.chained import chained_markdown, chained_summary
    from envsim.evaluation.running.run_rows import chained_row_problem
    from envsim.evaluation.running.selection import run_sample_ids

    config = _config(path)
    latest: dict[str, Any] = {}
    invalid = 0
    for row in _read_jsonl(path / "results.jsonl"):
        if chained_row_problem(row) is None:
            latest[row["id"]] = row
        else:
            invalid += 1
    ids, warning = run_sample_ids(path, config)
    warnings = [warning] if warning else []
    if ids is not None:
        unknown = [i for i in latest if i not in set(ids)]
        if unknown:
            warnings.append(f"{len(unknown)} episode rows have ids that are not episodes of this run's benchmark: "
                            "ignored, not counted")
        rows = [latest[i] for i in ids if i in latest]
    else:
        rows = [latest[i] for i in sorted(latest)]
    if invalid:
        warnings.insert(0, f"{invalid} episode rows have wrong types and are not counted")
    summary = chained_summary(rows, model=config.get("model"), prompt_mode=config.get("prompt_mode"),
                              prompt_version=config.get("prompt_version"))
    if invalid:
        summary["invalid_rows"] = invalid
    text = chained_markdown(summary)
    if invalid:
        text = text.replace("\n\n", f"\n\n**{invalid} episode rows have wrong types and are not counted.**\n\n", 1)
    write_text_atomic(path / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    text = write_markdown(path / REPORT_FILE, text)
    return RunReport(path, "chained", text, [path / SUMMARY_FILE, path / REPORT_FILE], warnings, summary)


def _rollout(path: Path) -> RunReport:
    """Rebuild the rollout track's drift files from ``episodes.jsonl`` (the latest row per episode)."""
    from envsim.simulation.drift import drift_figure, drift_markdown, drift_report

    config = _config(path)
    latest: dict[tuple[Any, Any], dict[str, Any]] = {}
    for row in _read_jsonl(path / "episodes.jsonl"):
        if isinstance(row, dict) and isinstance(row.get("steps"), list):
            latest[(row.get("env"), row.get("seed"))] = row
    if not latest:
        text = _shown_text(path / "drift.md", f"# Rollout track\n\nNo episode in {path / 'episodes.jsonl'}.\n")
        return RunReport(path, "rollout", text)
    episodes = list(latest.values())
    horizon = int(config.get("horizon") or max(len(e["steps"]) for e in episodes))
    report = drift_report(episodes, horizon)
    title = f"rollout track: {config.get('model')}, {len(episodes)} episodes"
    text = drift_markdown(report, title)
    write_text_atomic(path / "drift.json", json.dumps(report, indent=2) + "\n")
    text = write_markdown(path / "drift.md", text)
    save_figure_atomic(drift_figure(report, title), path / "drift.png", dpi=110)
    return RunReport(path, "rollout", text, [path / "drift.json", path / "drift.md", path / "drift.png"],
                     summary=report)


def _simulate(path: Path) -> RunReport:
    """An ``envsim simulate`` output: its episodes are not kept, so nothing is rebuilt; drift.md is shown."""
    text = _shown_text(path / "drift.md", f"# Simulation\n\n{path} has no drift report (run with --shadow to get "
                                          "one).\n")
    return RunReport(path, "simulate", text,
                     warnings=[f"{path} is an 'envsim simulate' output: shown as written, nothing rebuilt"])


def _shown_text(path: Path, missing: str) -> str:
    """A report file shown as written (bounded, never through a link), ``missing`` when there is none, or why it
    is not shown."""
    from envsim.control_chars import escape_lines

    try:
        return escape_lines(read_text(path))  # written by another command, maybe by another hand: controls escaped
    except FileNotFoundError:
        return missing
    except OSError as exc:
        return f"({exc})\n"


def _tiers_functions() -> Any:
    try:
        from envsim.evaluation.running import tiers as module
    except ImportError:  # before the tier runner moved into the library
        from envsim.cli import eval_tiers as module  # type: ignore[no-redef]
    return module


def _tiers(path: Path) -> RunReport:
    """Rebuild every tier as its own kind, then the side-by-side tiers table."""
    module = _tiers_functions()
    tiers = {d.name: report_run(d) for d in tier_dirs(path)}
    if not tiers:
        raise UnknownRunKind(f"{path} has a tiers.json but no tier folder with a config.json")
    config = _config(next(iter(tiers.values())).path)
    benchmark, model = str(config.get("benchmark")), str(config.get("model"))
    order = list(module.benchmark_tiers(benchmark))
    names = sorted(tiers, key=lambda n: (order.index(n) if n in order else len(order), n))
    table = module.tiers_table({n: tiers[n].summary for n in names})
    text = module.tiers_markdown(table, model, benchmark)
    write_text_atomic(path / "tiers.json", json.dumps(table, indent=2) + "\n")
    text = write_markdown(path / "tiers.md", text)
    written = [f for n in names for f in tiers[n].written] + [path / "tiers.json", path / "tiers.md"]
    warnings = [f"tier {n}: {w}" for n in names for w in tiers[n].warnings]
    return RunReport(path, "tiers", text, written, warnings, {n: tiers[n].summary for n in names},
                     {n: tiers[n] for n in names})


def report_run(path: Path) -> RunReport:
    """Recognise ``path`` and rebuild what its kind can rebuild (see the module table)."""
    kind = run_kind(path)
    return {"single": _single, "chained": _chained, "rollout": _rollout, "simulate": _simulate,
            "tiers": _tiers}[kind](path)

"""``envsim report``: rebuild a run's reports, or put several runs side by side."""

from __future__ import annotations

from pathlib import Path

import click

from envsim.cli.env_module_option import env_module_option
from envsim.control_chars import escape_lines


def _echo_written(paths: list[Path]) -> None:
    """Say on stderr where the files went (stdout stays the report itself)."""
    for path in paths:
        _echo(f"wrote {path}", err=True)


def _echo(text: str, **kwargs: object) -> None:
    """``click.echo`` of text that may hold a run's own words (model name, reasons), control characters escaped."""
    click.echo(escape_lines(text), **kwargs)  # type: ignore[arg-type]


@click.command("report")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to write comparison.md and cm_by_delta.png (several runs; default runs/comparison).")
@env_module_option
def report_cmd(runs: tuple[Path, ...], out: Path | None) -> None:
    """Summarise one run or compare several RUNS: eval run directories (one-step, chained tier, rollout
    track), the tiers directory of 'eval --benchmark v2', or an 'envsim simulate' output (shown, not rebuilt).

    Each run's own reports are rebuilt from its results by the rules of its kind (never another's);
    the report goes to stdout; the files written, rows not counted and the reasons runs are not
    directly comparable go to stderr. A run over your own environment needs the --env-module you gave eval for its
    rows to be checked against its benchmark. Exit 1 for a directory it does not know or runs of different kinds."""
    from envsim.evaluation.reporting.report_compare import compare_reports
    from envsim.evaluation.running.run_kinds import UnknownRunKind, report_run
    from envsim.evaluation.running.selection import SelectionUnknown
    from envsim.safe_files import RunFileRefused

    try:
        reports = [report_run(run) for run in runs]
        comparisons = compare_reports(reports, out or Path("runs") / "comparison") if len(runs) > 1 else []
    except (UnknownRunKind, RunFileRefused, SelectionUnknown) as exc:  # RunFileRefused: a link, FIFO or huge
        # file in a run dir; SelectionUnknown: the run's samples cannot be told exactly (nothing is rewritten)
        raise click.ClickException(escape_lines(exc)) from None
    for report in reports:
        for warning in report.warnings:
            _echo(f"warning: {report.path}: {warning}", err=True)
    if not comparisons:
        _echo(reports[0].text)
    for heading, comparison in comparisons:
        _echo(f"# {heading}\n" if heading else "", nl=False)
        _echo(comparison.text)
        for warning in comparison.warnings:
            _echo(f"warning: {(heading + ': ') if heading else ''}{warning}", err=True)
    _echo_written([path for report in reports for path in report.written]
                  + [path for _, comparison in comparisons for path in comparison.written])

"""``envsim report``: rebuild a run's reports, or put several runs side by side."""

from __future__ import annotations

from pathlib import Path

import click


def _echo_written(paths: list[Path]) -> None:
    """Say on stderr where the files went (stdout stays the report itself)."""
    for path in paths:
        click.echo(f"wrote {path}", err=True)


@click.command("report")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to write comparison.md and cm_by_delta.png (several runs; default runs/comparison).")
def report_cmd(runs: tuple[Path, ...], out: Path | None) -> None:
    """Summarise one run (rewrites summary.json/report.md/plot) or compare several RUNS.

    The report goes to stdout; the files written and, for several runs, the reasons they are not
    directly comparable (other benchmark, split, prompt, --limit or number of scored samples) go to
    stderr."""
    from envsim.evaluation.report import REPORT_FILE, compare_runs, report_files, write_reports

    for run in runs:
        if not (run / "config.json").exists():
            raise click.ClickException(f"{run} is not a run directory (no config.json)")
    if len(runs) == 1:
        write_reports(runs[0])
        click.echo((runs[0] / REPORT_FILE).read_text())
        _echo_written(report_files(runs[0]))
        return
    for run in runs:
        write_reports(run)
    comparison = compare_runs(list(runs), out or Path("runs") / "comparison")
    click.echo(comparison.text)
    for warning in comparison.warnings:
        click.echo(f"warning: {warning}", err=True)
    _echo_written([path for run in runs for path in report_files(run)] + comparison.written)

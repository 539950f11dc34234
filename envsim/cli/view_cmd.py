"""``envsim view``: one self-contained HTML page of one or more runs (summary, plots, failure classes, samples)."""

from __future__ import annotations

from pathlib import Path

import click

from envsim.cli.env_module_option import env_module_option


@click.command("view")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The HTML file to write (one file: inline style, script and images; works offline).")
@click.option("--open", "open_page", is_flag=True, help="Open the page in the default browser when written.")
@env_module_option
def view_cmd(runs: tuple[Path, ...], out: Path, open_page: bool) -> None:
    """Write one HTML page showing RUNS side by side: eval run directories (one-step, chained tier, rollout
    track), the tiers directory of 'eval --benchmark v2', or an 'envsim simulate' output.

    The page holds each run's figures (exact FM / CM with FM-json / CM-numeric beside them), its CM-by-|Δ| plot,
    its failure-class tables and a sample browser (filter by stratum, class, environment, tool, pass/fail; the
    same sample of several runs side by side). Nothing in the run directories is written. A run over your own
    environment needs the --env-module you gave eval, so its benchmark can be read (expected answers, calls and
    prompts); without it the page says so and marks nothing. Exit 1 for a directory it does not know."""
    from envsim.evaluation.running.run_kinds import UnknownRunKind
    from envsim.evaluation.reporting.view_data import view_data
    from envsim.evaluation.reporting.view_page import render_page
    from envsim.jsonsafe import write_text_atomic
    from envsim.evaluation.running.selection import SelectionUnknown
    from envsim.safe_files import RunFileRefused

    try:
        data = view_data(runs)
    except (UnknownRunKind, RunFileRefused, SelectionUnknown) as exc:  # RunFileRefused: a link, FIFO or huge
        # file in a run dir; SelectionUnknown: the run's samples cannot be told exactly (nothing is rewritten)
        raise click.ClickException(str(exc)) from None
    for run in data["runs"]:
        for note in run["notes"]:
            click.echo(f"warning: {run['label']}: {note}", err=True)
    write_text_atomic(out, [render_page(data).rstrip("\n")])
    samples = sum(len(run["samples"]) for run in data["runs"])
    click.echo(f"wrote {out} ({len(data['runs'])} runs, {samples} samples, {out.stat().st_size:,} bytes)", err=True)
    if open_page:
        import webbrowser

        webbrowser.open(out.resolve().as_uri())

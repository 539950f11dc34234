"""``envsim export``: convert a benchmark split between EnvSim's JSONL and the original EnvSimBench layout."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("export")
@click.option("--benchmark", default="v1", show_default=True,
              help="Shipped benchmark name, or a file in either format (detected from its content).")
@click.option("--split", default="test", show_default=True, help="Split of a shipped benchmark.")
@click.option("--format", "fmt", type=click.Choice(["envsimbench", "envsim"]), default="envsimbench", show_default=True,
              help="envsimbench: the original's JSON list (read by its Evaluation/10.eval_model.py); "
                   "envsim: our canonical JSONL records.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Output file.")
def export_cmd(benchmark: str, split: str, fmt: str, out: Path) -> None:
    """Write BENCHMARK/SPLIT to OUT in FORMAT (an export re-imports to identical records)."""
    from envsim.benchmark import load
    from envsim.construction.interop import write_envsimbench
    from envsim.construction.pipeline import write_jsonl
    from envsim.construction.stored_states import copy_blobs

    try:
        records = load(benchmark, split)
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    if fmt == "envsimbench":  # whole states: the original's layout has no stored-once states
        count = write_envsimbench(records, out)
    else:  # states stored once stay so, with their blobs copied beside OUT
        count = write_jsonl(records, out)
        copy_blobs(records, out)
    click.echo(f"{count} records -> {out} ({fmt})")

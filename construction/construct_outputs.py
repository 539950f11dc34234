"""Writing a construction's output: the records (or episodes) and their ``.stats.json`` / ``.stats.md``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from envsim.construction.construct_options import ConstructSummary


def stratum_line(stats: dict[str, Any]) -> str:
    """``by stratum: failure 20, no_change 80, ...``."""
    return "by stratum: " + ", ".join(f"{k} {v}" for k, v in stats["by_stratum"].items())


def write_with_stats(records: Sequence[dict[str, Any]], out: Path, stats: dict[str, Any], stats_md: str, *,
                     kind: str, pool: int | None, lines: Sequence[str], fmt: str = "envsim") -> ConstructSummary:
    """Write ``records`` to ``out`` (JSONL, or the original EnvSimBench JSON list with ``fmt="envsimbench"``),
    ``stats`` to OUT.stats.json and ``stats_md`` to OUT.stats.md; return the summary.

    In JSONL, the states of large-state environments are stored once under ``<stem>_states/`` beside ``out``
    (``construction.stored_states``); the original's layout always holds whole states."""
    from envsim.benchmark.state_store import state_folder
    from envsim.construction.interop import write_envsimbench
    from envsim.construction.pipeline import write_jsonl
    from envsim.construction.stored_states import store_large_states, stores_states

    extra: tuple[Path, ...] = ()
    if fmt == "envsimbench":  # the original's layout: one JSON list that its Evaluation/10.eval_model.py reads
        write_envsimbench(list(records), out)
    else:
        from envsim.construction.errors import ConstructStopped
        from envsim.safe_files import RunFileRefused

        folder = state_folder(out)
        try:
            rows = store_large_states(records, folder)
        except RunFileRefused as exc:  # a link planted at OUT_states: refused, nothing written through it
            raise ConstructStopped(str(exc)) from None
        write_jsonl(rows, out)
        if stores_states(rows):
            extra = (folder,)
    stats_json, stats_md_path = out.with_suffix(".stats.json"), out.with_suffix(".stats.md")
    from envsim.safe_files import write_json, write_text

    write_json(stats_json, stats)  # renamed into place, never written through a link planted at the name
    write_text(stats_md_path, stats_md)
    if stats.get("views"):  # records whose views construction verified: counts and widenings on the console
        from envsim.construction.stats import view_line

        lines = [*lines, view_line(stats["views"])]
    return ConstructSummary(kind=kind, out=out, written=len(records), pool=pool, stats=stats, stats_json=stats_json,
                            stats_md=stats_md_path, lines=tuple(lines), extra_paths=extra)

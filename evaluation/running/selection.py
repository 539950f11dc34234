"""The samples a run selected, kept in its directory (``RUN/selection.json``) so that every view rebuilt later
(``envsim report``, ``envsim view``, ``report A B``, a resumed ``eval``) counts exactly those samples.

``envsim eval`` selects in one order: the split's samples in file order, those of ``--ids`` kept (when given), then
``--limit`` of them evenly spaced. It writes the ids it selected with the settings that chose them (benchmark,
split, benchmark file sha256, ids sha256, limit). A reader takes the ids from that file when its settings agree
with ``config.json``; a run written before the file existed is re-derived the same way, but only when that is sure
to give the same samples: an ``--ids`` list is one of the shipped subsets with the recorded hash, and a cut
(``--ids``, ``--limit``) is made only of a benchmark file with the sha256 the run recorded (a whole split read
from a changed file is checked against the file as it is now, with a warning). Otherwise ``SelectionUnknown`` says why and how to get the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

SELECTION_FILE = "selection.json"
#: The config keys that decide a run's samples; recorded beside the ids and checked against config.json.
SELECTION_KEYS = ("benchmark", "split", "benchmark_sha256", "ids_sha256", "limit")
ORDER = "benchmark file order; --ids kept first, then --limit evenly spaced"


class SelectionUnknown(ValueError):
    """A run's samples cannot be told exactly (message: why, and what to do); nothing is rebuilt."""


def write_selection(run_dir: Path, config: Mapping[str, Any], sample_ids: Sequence[str]) -> None:
    """Record ``sample_ids`` (the run's samples, in the order scored) and the settings that chose them."""
    from envsim.safe_files import write_json

    payload = {key: config.get(key) for key in SELECTION_KEYS}
    write_json(run_dir / SELECTION_FILE, {**payload, "order": ORDER, "ids": [str(i) for i in sample_ids]})


def _recorded(run_dir: Path, config: Mapping[str, Any]) -> list[str]:
    """The ids of ``RUN/selection.json``; ``SelectionUnknown`` when it is unreadable or disagrees with config."""
    from envsim.safe_files import read_json

    path = run_dir / SELECTION_FILE
    try:
        data = read_json(path)  # bounded, never through a link
    except (OSError, ValueError) as exc:
        raise SelectionUnknown(f"{path} cannot be read ({exc}): the run's samples are not known") from None
    ids = data.get("ids") if isinstance(data, dict) else None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise SelectionUnknown(f"{path} holds no list of sample ids: the run's samples are not known")
    for key in SELECTION_KEYS:
        if data.get(key) != config.get(key):
            raise SelectionUnknown(f"{path} was written for {key} {data.get(key)!r} but config.json says "
                                   f"{config.get(key)!r}: the run's samples are not known; nothing rebuilt")
    return ids


def _shipped_subset(digest: str) -> list[str] | None:
    """The ids of the shipped subset whose hash is ``digest`` (``subsets.ids_sha256``), else ``None``."""
    from envsim.evaluation.running.subsets import SUBSETS_DIR, SubsetError, ids_sha256, read_ids

    for path in sorted(SUBSETS_DIR.glob("*.txt")) if SUBSETS_DIR.is_dir() else []:
        try:
            ids = read_ids(path)
        except SubsetError:
            continue
        if ids_sha256(ids) == digest:
            return ids
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _derived(run_dir: Path, config: Mapping[str, Any]) -> tuple[list[str] | None, str | None]:
    """A run without ``selection.json``: its samples chosen again as eval chose them, or ``SelectionUnknown``."""
    from envsim.benchmark import benchmark_path, load
    from envsim.benchmark.stream import file_sha256
    from envsim.evaluation.running.run_rows import evenly_spaced

    benchmark, split = config.get("benchmark"), config.get("split") or "test"
    if not isinstance(benchmark, str):
        return None, "config.json names no benchmark: rows were not checked against it"
    wanted = None
    if config.get("ids_sha256"):
        wanted = _shipped_subset(str(config["ids_sha256"]))
        if wanted is None:
            raise SelectionUnknown(
                f"{run_dir} was run with an --ids list (sha256 {config['ids_sha256']}) that is not a shipped subset, "
                f"and holds no {SELECTION_FILE}: its samples cannot be told here, so nothing is rebuilt. Run the "
                "same 'envsim eval' command again (it resumes, scores nothing twice, and records them)")
    try:
        if config.get("track") == "chained":
            from envsim.construction.chained import load_episodes

            items = load_episodes(benchmark, split)
        else:
            items = load(benchmark, split)
        digest = file_sha256(benchmark_path(benchmark, split))
    except Exception as exc:  # noqa: BLE001 - any unreadable benchmark only turns the check off, with a warning
        return None, f"benchmark {benchmark!r} split {split!r} cannot be read ({exc}): rows were not checked against it"
    recorded, warning = config.get("benchmark_sha256"), None
    if recorded and recorded != digest:
        changed = (f"the benchmark file {benchmark!r} split {split!r} is not the one the run read (sha256 "
                   f"{str(recorded)[:16]}…, now {digest[:16]}…)")
        if wanted is not None or _is_int(config.get("limit")):  # an --ids / --limit cut of another file differs
            raise SelectionUnknown(f"{run_dir}: {changed} and the run holds no {SELECTION_FILE}: its samples "
                                   "(an --ids or --limit cut of that file) cannot be told here, so nothing is rebuilt")
        warning = f"{changed}: rows were checked against the file as it is now"
    ids = [str(r.get("id")) for r in items]
    if wanted is not None:
        keep = set(wanted)
        ids = [i for i in ids if i in keep]
    limit = config.get("limit")
    return evenly_spaced(ids, limit if _is_int(limit) else None), warning


def run_sample_ids(run_dir: Path, config: Mapping[str, Any]) -> tuple[list[str] | None, str | None]:
    """The ids of the samples the run in ``run_dir`` selected, in the order eval scored them, from
    ``RUN/selection.json`` (else chosen again as eval chose them); ``(None, warning)`` when the benchmark of a run
    without that file cannot be read here (rows are then not checked); ``SelectionUnknown`` when the samples
    cannot be told exactly."""
    if os.path.lexists(run_dir / SELECTION_FILE):
        return _recorded(run_dir, config), None
    return _derived(run_dir, config)

"""Fixed sample subsets of a benchmark split, shipped as id lists (``envsim eval --ids``): reproducible figures
on fewer samples than a split holds, e.g. the v1 test samples whose prompts fit a small model's context.

An id list is a text file with one sample id per line; blank lines and ``#`` comments are ignored. Shipped
lists live in ``benchmark/subsets/NAME.txt`` and can be named without the path."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Sequence

SUBSETS_DIR = Path(__file__).resolve().parents[2] / "benchmark" / "subsets"


class SubsetError(ValueError):
    """An id list cannot be read, or names ids the split does not hold."""


def subset_path(name_or_path: str | Path) -> Path:
    """The id list file: an existing path, else the shipped list ``benchmark/subsets/NAME.txt``."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    shipped = SUBSETS_DIR / f"{name_or_path}.txt"
    if shipped.is_file():
        return shipped
    known = sorted(p.stem for p in SUBSETS_DIR.glob("*.txt")) if SUBSETS_DIR.is_dir() else []
    raise SubsetError(f"{name_or_path}: no such file and no shipped subset of that name "
                      f"(shipped: {', '.join(known) or 'none'})")


def read_ids(name_or_path: str | Path) -> list[str]:
    """Ids of an id list, in file order; ``SubsetError`` when it is unreadable, empty or repeats an id."""
    path = subset_path(name_or_path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SubsetError(f"{path}: cannot read the id list: {exc}") from None
    ids = [line.split("#", 1)[0].strip() for line in lines]
    ids = [i for i in ids if i]
    if not ids:
        raise SubsetError(f"{path}: the id list holds no ids")
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise SubsetError(f"{path}: ids listed more than once: {', '.join(repeated[:5])}")
    return ids


def ids_sha256(ids: Sequence[str]) -> str:
    """A short hash of an id set (order and comments do not matter): what a run's config records."""
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:16]


def select_positions(split_ids: Sequence[str], ids: Sequence[str], source: str = "id list") -> list[int]:
    """Positions (in the split's order) of the split's ids that are in ``ids``; ``SubsetError`` naming ids the
    split lacks. What a streamed run keeps (``benchmark.stream.open_stream(select=...)``)."""
    wanted = set(ids)
    chosen = [i for i, sample_id in enumerate(split_ids) if sample_id in wanted]
    missing = wanted - {split_ids[i] for i in chosen}
    if missing:
        raise SubsetError(f"{source}: {len(missing)} id(s) are not in this split, e.g. {', '.join(sorted(missing)[:3])}")
    return chosen


def select_records(records: Sequence[dict[str, Any]], ids: Sequence[str], source: str = "id list") -> list[dict[str, Any]]:
    """The records whose ids are in ``ids``, in the split's order; ``SubsetError`` naming ids the split lacks."""
    return [records[i] for i in select_positions([str(r["id"]) for r in records], ids, source)]


def stratified_fitting_ids(records: Sequence[dict[str, Any]], fits: Callable[[dict[str, Any]], bool],
                           total: int) -> list[str]:
    """Ids of ``total`` records that ``fits`` accepts, spread over strata in proportion to each stratum's share
    of the whole split (largest remainders; at least one per stratum that has a fitting record) and evenly
    spaced over each stratum's fitting records in file order. Deterministic: no randomness, same input, same ids.
    Raises ``SubsetError`` when fewer than ``total`` records fit."""
    by_stratum: dict[str, list[dict[str, Any]]] = defaultdict(list)
    fitting: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_stratum[record["stratum"]].append(record)
        if fits(record):
            fitting[record["stratum"]].append(record)
    available = sum(len(v) for v in fitting.values())
    if available < total:
        raise SubsetError(f"only {available} records fit; {total} asked for")
    quota = _proportional_quota({s: len(by_stratum[s]) for s in fitting}, total,
                                {s: len(v) for s, v in fitting.items()})
    chosen = {id(r) for s, n in quota.items() for r in _evenly(fitting[s], n)}
    return [str(r["id"]) for r in records if id(r) in chosen]


def _proportional_quota(sizes: dict[str, int], total: int, caps: dict[str, int]) -> dict[str, int]:
    """Per-stratum counts summing to ``total``: proportional to ``sizes`` (one at a time to the stratum furthest below its share; ties by name),
    at least one each, never above ``caps``; what a capped stratum cannot take goes to the others."""
    quota = {s: min(1, caps[s]) for s in sizes}
    ideal = {s: sizes[s] * total / max(sum(sizes.values()), 1) for s in sizes}
    while sum(quota.values()) < total:
        open_strata = [s for s in sorted(sizes) if quota[s] < caps[s]]
        quota[max(open_strata, key=lambda s: (ideal[s] - quota[s], -sorted(sizes).index(s)))] += 1
    return quota


def _evenly(items: list[Any], n: int) -> list[Any]:
    """``n`` items evenly spaced over ``items``."""
    return [items[i * len(items) // n] for i in range(n)] if n < len(items) else list(items)

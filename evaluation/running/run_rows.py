"""Rows of a run's ``results.jsonl`` as the report may count them: each row is checked for the types the
summary reads (a row that fails is an *invalid row*, counted apart with its reason, never scored), and a row
whose id is not one of the run's samples (those it selected: ``evaluation.running.selection``) is *ignored* with a
warning, never counted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

BOOL_FIELDS = ("parsed", "fm", "cm", "cm_lenient", "cm_original", "fm_json", "cm_numeric")
NUMBER_FIELDS = ("delta_precision", "delta_recall", "delta_f1")
INT_FIELDS = ("delta_size", "arg_count")
TEXT_FIELDS = ("stratum", "domain", "tool")
STATUSES = ("scored", "infra_failure", "bad_record")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def row_problem(row: Any) -> str | None:
    """Why a result row cannot be counted (wrong type of a field the summary reads), or ``None``."""
    if not isinstance(row, dict):
        return f"row is a {type(row).__name__}, not an object"
    if not isinstance(row.get("id"), str):
        return "id is not a string"
    if row.get("status") not in STATUSES:
        return f"status is {str(row.get('status'))[:40]!r}, not one of {', '.join(STATUSES)}"
    if row["status"] != "scored":
        return None if row.get("reason") is None or isinstance(row.get("reason"), str) else "reason is not a string"
    for name in BOOL_FIELDS:
        if name in row and not isinstance(row[name], bool):
            return f"{name} is a {type(row[name]).__name__}, not a boolean"
    for name in NUMBER_FIELDS:
        if name in row and not _is_number(row[name]):
            return f"{name} is a {type(row[name]).__name__}, not a number"
    for name in INT_FIELDS:
        if name in row and row[name] is not None and not _is_int(row[name]):
            return f"{name} is a {type(row[name]).__name__}, not an integer"
    for name in TEXT_FIELDS:
        if name in row and row[name] is not None and not isinstance(row[name], str):
            return f"{name} is a {type(row[name]).__name__}, not a string"
    return None


@dataclass
class CheckedRows:
    """The rows a report counts, and those it does not: ``invalid`` (reason -> rows) and ``unknown_ids``."""

    rows: list[dict[str, Any]]
    invalid: dict[str, int] = field(default_factory=dict)
    unknown_ids: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def invalid_count(self) -> int:
        """Rows left out for wrong types."""
        return sum(self.invalid.values())


def evenly_spaced(items: Sequence[Any], limit: int | None) -> list[Any]:
    """The ``--limit`` cut of ``eval``: ``limit`` items evenly spaced over ``items`` (all when no limit)."""
    if limit is not None and 0 <= limit < len(items):
        return [items[i * len(items) // limit] for i in range(limit)]
    return list(items)


def check_rows(rows: Iterable[Any], ids: Sequence[str] | None) -> CheckedRows:
    """Split ``rows`` into those to count, invalid ones (by reason) and ones whose id is not in ``ids``
    (``None``: no id check)."""
    known = set(ids) if ids is not None else None
    counted: list[dict[str, Any]] = []
    invalid: Counter[str] = Counter()
    unknown: list[str] = []
    for row in rows:
        problem = row_problem(row)
        if problem is not None:
            invalid[problem] += 1
        elif known is not None and row["id"] not in known:
            unknown.append(row["id"])
        else:
            counted.append(row)
    checked = CheckedRows(counted, dict(invalid.most_common()), unknown)
    if unknown:
        shown = ", ".join(repr(i[:40]) for i in unknown[:3]) + (", …" if len(unknown) > 3 else "")
        checked.warnings.append(f"{len(unknown)} result rows have ids that are not samples of this run's benchmark "
                                f"({shown}): ignored, not counted")
    if invalid:
        checked.warnings.append(f"{checked.invalid_count} result rows have wrong types and are not counted: "
                                + "; ".join(f"{reason} ({n})" for reason, n in checked.invalid.items()))
    return checked


def read_rows(path: Path, drop: Sequence[str] = ()) -> list[Any]:
    """The latest row per id of a ``results.jsonl`` plus every row without a string id (kept so that it is
    counted as invalid, not lost); unreadable lines (a torn last line) are skipped. Fields named in ``drop``
    (``answer``: up to 20,000 characters a row) are left out as each line is read, so the rows held grow
    with what the caller needs, not with the answers."""
    from envsim.evaluation.running.runner import iter_result_lines

    latest: dict[str, Any] = {}
    anonymous: list[Any] = []
    for row in iter_result_lines(path):
        if isinstance(row, dict) and drop:
            for name in drop:
                row.pop(name, None)
        if isinstance(row, dict) and isinstance(row.get("id"), str):
            latest[row["id"]] = row
        else:
            anonymous.append(row)
    return [*latest.values(), *anonymous]


def chained_row_problem(row: Any) -> str | None:
    """Why an episode row of the chained tier cannot be counted, or ``None``."""
    if not isinstance(row, dict) or not isinstance(row.get("id"), str):
        return "not an object with a string id"
    if row.get("status") not in STATUSES:
        return "status is not one of " + ", ".join(STATUSES)
    if row["status"] != "scored":
        return None
    if not _is_int(row.get("length")) or not _is_int(row.get("steps_before_divergence")):
        return "length or steps_before_divergence is not an integer"
    if row.get("first_divergence") is not None and not _is_int(row["first_divergence"]):
        return "first_divergence is not an integer"
    steps = row.get("steps")
    if not isinstance(steps, list) or not all(isinstance(s, dict) and isinstance(s.get("fm"), bool)
                                              and isinstance(s.get("cm"), bool) for s in steps):
        return "steps are not a list of objects with boolean fm and cm"
    return None

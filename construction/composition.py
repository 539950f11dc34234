"""Composition specs and seeded stratified sampling with a per-environment cap.

A spec is JSON: ``{"name", "per_env_cap", "cells": [{"n", "stratum"?, "delta_size"?, "delta_range"?,
"arg_count"?}]}``. Each cell selects records matching all its keys. The default spec is the
published EnvSimBench test table (400 samples).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

DEFAULT_SPEC: dict[str, Any] = {
    "name": "envsimbench-400",
    "per_env_cap": 8,
    "cells": [
        {"stratum": "failure", "n": 20},
        {"stratum": "no_change", "arg_count": 0, "n": 40},
        {"stratum": "no_change", "arg_count": 1, "n": 40},
        {"stratum": "simple", "delta_size": 1, "n": 25},
        {"stratum": "simple", "delta_size": 2, "n": 25},
        {"stratum": "medium", "delta_size": 3, "n": 50},
        {"stratum": "medium", "delta_size": 4, "n": 50},
        {"stratum": "medium", "delta_size": 5, "n": 50},
        {"stratum": "medium", "delta_size": 6, "n": 50},
        {"stratum": "difficult", "delta_range": [7, 12], "n": 50, "spread": "delta_size"},
    ],
}


class CompositionError(ValueError):
    """The pool cannot fill the spec under its constraints."""


@dataclass
class Cell:
    """One row of a composition spec."""

    n: int
    stratum: str | None = None
    delta_size: int | None = None
    delta_range: tuple[int, int] | None = None
    arg_count: int | None = None
    spread: str | None = None

    def matches(self, record: dict[str, Any]) -> bool:
        """Whether a record belongs to this cell."""
        if self.stratum is not None and record["stratum"] != self.stratum:
            return False
        if self.delta_size is not None and record["delta_size"] != self.delta_size:
            return False
        if self.delta_range is not None and not self.delta_range[0] <= record["delta_size"] <= self.delta_range[1]:
            return False
        return self.arg_count is None or record["arg_count"] == self.arg_count

    def label(self) -> str:
        """Readable cell name."""
        parts = [self.stratum or "any"]
        if self.delta_size is not None:
            parts.append(f"|Δ|={self.delta_size}")
        if self.delta_range is not None:
            parts.append(f"|Δ|∈{self.delta_range[0]}..{self.delta_range[1]}")
        if self.arg_count is not None:
            parts.append(f"args={self.arg_count}")
        return " ".join(parts)


@dataclass
class Spec:
    """A composition: cells and a per-environment cap."""

    name: str
    cells: list[Cell]
    per_env_cap: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Spec":
        """Build from a spec dict (see module docstring)."""
        cells = []
        for raw in data["cells"]:
            raw = dict(raw)
            if "delta_range" in raw:
                raw["delta_range"] = tuple(raw["delta_range"])
            cells.append(Cell(**raw))
        return cls(name=data.get("name", "custom"), cells=cells, per_env_cap=data.get("per_env_cap"))

    @property
    def total(self) -> int:
        """Samples the spec asks for."""
        return sum(c.n for c in self.cells)


def load_spec(source: str | Path | None) -> Spec:
    """The default spec (``None``/``"default"``) or a spec JSON file."""
    if source in (None, "default"):
        return Spec.from_json(DEFAULT_SPEC)
    return Spec.from_json(json.loads(Path(source).read_text()))


@dataclass(frozen=True)
class Shortfall:
    """A cell the pool could not fill: how many it asks for and how many it got."""

    cell: str
    needed: int
    got: int
    per_env_cap: int | None = None

    def line(self) -> str:
        """``cell 'failure' needs 20 samples, pool gives 7 under a cap of 8 per environment``."""
        return (f"cell '{self.cell}' needs {self.needed} samples, pool gives {self.got} "
                f"under a cap of {self.per_env_cap} per environment")

    def to_json(self) -> dict[str, Any]:
        """``{"cell", "needed", "got", "missing"}``."""
        return {"cell": self.cell, "needed": self.needed, "got": self.got, "missing": self.needed - self.got}


def stratified_sample(pool: Sequence[dict[str, Any]], spec: Spec, seed: int,
                      strict: bool = True) -> list[dict[str, Any]]:
    """Pick ``cell.n`` records per cell, seeded, at most ``per_env_cap`` per environment overall.

    Cells are filled from the scarcest first; inside a cell, environments are taken round-robin
    (fewest picks first) so that samples spread over as many environments as possible, and a
    ``spread`` cell also rotates over |Δ| values. Raises ``CompositionError`` when ``strict`` and
    a cell cannot be filled.
    """
    records, short = sample_with_shortfalls(pool, spec, seed)
    if short and strict:
        raise CompositionError(short[0].line())
    return records


def sample_with_shortfalls(pool: Sequence[dict[str, Any]], spec: Spec,
                           seed: int) -> tuple[list[dict[str, Any]], list[Shortfall]]:
    """``stratified_sample(..., strict=False)`` and the cells it could not fill (in spec order)."""
    rng = random.Random(seed)
    per_env: dict[str, int] = defaultdict(int)
    taken: set[str] = set()
    chosen: dict[int, list[dict[str, Any]]] = {}
    short: dict[int, Shortfall] = {}
    candidates = {i: [r for r in pool if cell.matches(r)] for i, cell in enumerate(spec.cells)}
    order = sorted(range(len(spec.cells)), key=lambda i: (len(candidates[i]) / max(spec.cells[i].n, 1), i))
    for i in order:
        cell = spec.cells[i]
        items = sorted(candidates[i], key=lambda r: r["id"])
        rng.shuffle(items)
        buckets: dict[Any, list[dict[str, Any]]] = defaultdict(list)
        for record in items:
            buckets[record[cell.spread] if cell.spread else None].append(record)
        picks: list[dict[str, Any]] = []
        keys = sorted(buckets, key=lambda k: (k is None, k))
        k_index = 0
        while len(picks) < cell.n and any(buckets.values()):
            key = keys[k_index % len(keys)]
            k_index += 1
            bucket = buckets[key]
            pick = _take(bucket, per_env, taken, spec.per_env_cap)
            if pick is None:
                bucket.clear()
                continue
            picks.append(pick)
        if len(picks) < cell.n:
            short[i] = Shortfall(cell.label(), cell.n, len(picks), spec.per_env_cap)
        chosen[i] = picks
    return [r for i in range(len(spec.cells)) for r in chosen[i]], [short[i] for i in sorted(short)]


def _take(bucket: list[dict[str, Any]], per_env: dict[str, int], taken: set[str],
          cap: int | None) -> dict[str, Any] | None:
    """Remove and return the bucket's record from the least-used environment that is under the cap."""
    best_index, best_count = -1, None
    for index, record in enumerate(bucket):
        if record["id"] in taken:
            continue
        count = per_env[record["env"]]
        if cap is not None and count >= cap:
            continue
        if best_count is None or count < best_count:
            best_index, best_count = index, count
            if count == 0:
                break
    if best_index < 0:
        return None
    record = bucket.pop(best_index)
    taken.add(record["id"])
    per_env[record["env"]] += 1
    return record

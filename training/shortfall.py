"""Why SFT data holds fewer samples than its recipe asks for: per-reason counts and one line saying so."""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def shortfall_report(asked: int, written: int, *, cells: Sequence[Any] = (), over_cutoff: int = 0,
                     cutoff: int | None = None, pool: Mapping[str, int] | None = None) -> dict[str, Any] | None:
    """``None`` when ``written >= asked``; else ``{"asked", "written", "missing", "reasons", "cells", "pool",
    "message"}``: ``reasons`` counts the missing samples by cause (``cells_unfilled``: the recipe's cells the pool
    could not fill, ``cells`` says which; ``over_cutoff``: sampled but longer than the cutoff, dropped), ``pool``
    what shaped the pool (labelled calls, calls held out by the split policy or ``--exclude``, duplicates)."""
    if written >= asked:
        return None
    unfilled = sum(c.needed - c.got for c in cells)
    reasons = {"cells_unfilled": unfilled, "over_cutoff": over_cutoff}
    parts = []
    if unfilled:
        detail = ", ".join(f"{c.cell}: {c.got} of {c.needed}" for c in cells)
        parts.append(f"{unfilled} because the pool fills the recipe's cells only so far ({detail})")
    if over_cutoff:
        parts.append(f"{over_cutoff} sampled but over the cutoff of {cutoff:,} tokens (raise --cutoff)"
                     if cutoff else f"{over_cutoff} over the cutoff")
    other = asked - written - unfilled - over_cutoff
    if other > 0:
        reasons["other"] = other
        parts.append(f"{other} for other reasons")
    message = f"wrote {written} of the {asked} samples the recipe asks for: {'; '.join(parts)}"
    if pool:
        rest = {k: v for k, v in pool.items() if k not in ("pool_records", "labelled_calls") and v}
        message += f"; a pool of {pool.get('pool_records', 0)} records"
        if "labelled_calls" in pool:
            message += f" from {pool['labelled_calls']} labelled calls"
        if rest:
            message += " (" + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in rest.items()) + ")"
    if unfilled:
        message += " (more rollout episodes/steps in the recipe give a larger pool)"
    return {"asked": asked, "written": written, "missing": asked - written, "reasons": reasons,
            "cells": [c.to_json() for c in cells], "pool": dict(pool or {}), "message": message}

"""An in-environment held-out set: calls of the training environments that no training sample contains.

The env-disjoint test sets ask whether a simulator generalises to environments it never saw. A user who trains a
simulator of their own service asks something else: does it predict *new calls* of the service it was trained on?
A recipe with a ``heldout`` block answers that. Its environments are rolled out a second time with another seed
(other episodes, so other states and calls), every record whose (environment, state, call) triple appears in the
training pool is dropped (the record id hashes exactly that triple), records whose prompt and answer exceed the SFT
cutoff are dropped (as the training samples are), and the block's cells are sampled from what is left. The result
is written as a benchmark file (``OUT/heldout.jsonl``) that ``envsim eval --benchmark`` scores like any other.

Recipe block (``training/recipes/in-env.json``)::

    "heldout": {"seed": 1013, "episodes": 6, "steps": 30, "per_env_cap": null,
                "cells": [{"stratum": "failure", "n": 5}, ...]}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from envsim.construction.composition import Spec, stratified_sample
from envsim.construction.pipeline import build_pool, write_jsonl

HELDOUT_FILE = "heldout.jsonl"


class HeldoutOverlapError(AssertionError):
    """A held-out record shares its (environment, state, call) with the training pool: never written."""


def shared_ids(heldout: Sequence[dict[str, Any]], training: Sequence[dict[str, Any]]) -> set[str]:
    """Record ids (hashes of environment, state and call) present in both lists."""
    return {r["id"] for r in heldout} & {r["id"] for r in training}


def fits_cutoff(record: dict[str, Any], prompt_mode: str, prompt_version: str, cutoff: int, counter: Any) -> bool:
    """Whether the record's full chat (prompt and reference answer, framing included) fits ``cutoff`` tokens."""
    from envsim.evaluation.prompting.prompts import build_messages, target_answer
    from envsim.tokens import chat_tokens

    messages = [*build_messages(record, prompt_mode, version=prompt_version),
                {"role": "assistant", "content": target_answer(record, prompt_version)}]
    return chat_tokens(messages, counter) <= cutoff


def build_heldout(block: dict[str, Any], envs: Sequence[str], training_pool: Sequence[dict[str, Any]], *,
                  prompt_mode: str, prompt_version: str, cutoff: int, counter: Any, workers: int = 1,
                  progress: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The held-out records of ``block`` (see the module docstring) and their statistics.

    Raises ``CompositionError`` when the rollouts cannot fill the cells, ``HeldoutOverlapError`` when a sampled
    record is in the training pool (the filter above makes that impossible; the check stays)."""
    pool = build_pool(envs, block.get("seed", 1013), block.get("episodes", 6), block.get("steps", 30), "train",
                      workers=workers, progress=progress)
    training_ids = {r["id"] for r in training_pool}
    fresh = [r for r in pool if r["id"] not in training_ids]
    fitting = [r for r in fresh if fits_cutoff(r, prompt_mode, prompt_version, cutoff, counter)]
    spec = Spec.from_json({"name": "heldout", "per_env_cap": block.get("per_env_cap"), "cells": block["cells"]})
    records = stratified_sample(fitting, spec, seed=block.get("seed", 1013))
    overlap = shared_ids(records, training_pool)
    if overlap:
        raise HeldoutOverlapError(f"{len(overlap)} held-out records are in the training pool: {sorted(overlap)[:3]}")
    stats = {"samples": len(records), "environments": len({r["env"] for r in records}),
             "pool": len(pool), "in_training_pool": len(pool) - len(fresh),
             "over_cutoff": len(fresh) - len(fitting), "shared_with_training": 0,
             "seed": block.get("seed", 1013),
             "by_stratum": {s: sum(r["stratum"] == s for r in records)
                            for s in ("failure", "no_change", "simple", "medium", "difficult", "extreme")},
             "change_samples": sum(bool(r["patch"]) for r in records)}
    return records, stats


def write_heldout(records: Sequence[dict[str, Any]], out_dir: Path) -> Path:
    """Write the held-out records as a benchmark JSONL file (``OUT/heldout.jsonl``); returns its path."""
    path = out_dir / HELDOUT_FILE
    write_jsonl(records, path)
    return path

"""SFT data from the user's own environment (``envsim train data --env module:Class``).

The pool is the train stream of ``construction.own_env`` (explorer episodes disjoint from the test
split's; calls on the shared initial states split by identity; ``exclude`` drops the ids of given test
files exactly), sampled with the recipe's cells (one environment: the recipe's per-environment cap does not
apply, and a cell the environment cannot fill is filled as far as it goes, counted in ``stats.json``).
States of ``VIEW_MIN_CHARS`` or more are prompted with state views (``mdp-view``, prompt version 3);
large ones (``construction.stored_states.stored_sizes``) are also stored once under
``<name>.records_states/`` beside the records file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from envsim.safe_files import write_json

STRATA = ("failure", "no_change", "simple", "medium", "difficult", "extreme")
#: States at least this long (JSON characters, about 5,000 tokens) are prompted with views: a whole-state
#: prompt would leave little of the SFT cutoff (8,192 tokens) for code, call and answer.
VIEW_MIN_CHARS = 16_384


def build_own_env_data(env_ids: Sequence[str], recipe: dict[str, Any], out_dir: Path, *,
                       exclude: Sequence[Path] = (), prompt_version: str | None = None, cutoff: int = 8192,
                       over_cutoff: str = "drop", tokenizer: Any = None, workers: int = 1) -> dict[str, Any]:
    """Write SFT files for ``env_ids`` (``module:Class`` targets) into ``out_dir``; returns the statistics.

    Raises ``ValueError`` for an id that is not a ``module:Class`` target, an unusable prompt version, or
    an empty sample."""
    from envsim.construction.api import excluded_ids
    from envsim.construction.composition import Spec, sample_with_shortfalls
    from envsim.construction.own_env import is_own_target, own_env_records
    from envsim.construction.stored_states import has_large_state, stored_sizes
    from envsim.envs.sandbox import trust_target
    from envsim.evaluation.prompting.prompts import LATEST_PROMPT_VERSION, VIEW_PROMPT_VERSION, check_version
    from envsim.training.data import write_sft_dataset
    from envsim.training.patch_form import check_append_form, check_key_order, check_op_order, check_replace_tests
    from envsim.training.shortfall import shortfall_report

    append_form = check_append_form(recipe.get("append_form", "index"))  # before the rollout
    key_order = check_key_order(recipe.get("patch_key_order", "op-first"))
    replace_tests = check_replace_tests(recipe.get("replace_tests", "none"))
    op_order = check_op_order(recipe.get("patch_op_order", "stored"))
    rollout = recipe.get("rollout", {})
    seed, episodes, steps = rollout.get("seed", 11), rollout.get("episodes", 8), rollout.get("steps", 40)
    pool: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for env_id in env_ids:
        if not is_own_target(env_id):
            raise ValueError(f"--env {env_id}: train data --env takes your own class as module:Class "
                             "(BFCL, τ-bench and plugin environments are held out from training)")
        trust_target(env_id)
        pool += own_env_records(env_id, seed, episodes, steps, "train", workers=workers, counts=counts)
    held_out = excluded_ids(list(exclude))
    before = len(pool)
    pool = [r for r in pool if r["id"] not in held_out]
    counts["in_exclude_files"] = before - len(pool)
    spec = Spec.from_json({"name": recipe.get("name", "own-env"), "per_env_cap": None, "cells": recipe["cells"]})
    records, short = sample_with_shortfalls(pool, spec, seed=seed)
    if not records:
        raise ValueError(f"no training samples: the pool of {len(pool)} records fills none of the recipe's cells")
    if has_large_state(records, VIEW_MIN_CHARS):
        version = check_version(prompt_version or VIEW_PROMPT_VERSION)
        if int(version) < int(VIEW_PROMPT_VERSION):
            raise ValueError(f"states of {', '.join(env_ids)} are large: samples are prompted with state views "
                             f"(mdp-view), which need prompt version {VIEW_PROMPT_VERSION} or later, not {version}")
        mode = "mdp-view"
    else:
        version = check_version(prompt_version or recipe.get("prompt_version", LATEST_PROMPT_VERSION))
        mode = recipe.get("prompt_mode", "mdp")
    name, tokens = write_sft_dataset(records, out_dir, recipe.get("name", "own_env_sft"), mode, version=version,
                                     cutoff=cutoff, over_cutoff=over_cutoff, tokenizer=tokenizer,
                                     append_form=append_form, key_order=key_order, replace_tests=replace_tests,
                                     op_order=op_order)
    dropped = set(tokens["dropped_ids"])
    kept = [r for r in records if r["id"] not in dropped]
    if not kept:
        raise ValueError(f"all {len(records)} samples exceed the SFT cutoff of {cutoff:,} tokens "
                         f"(prompt mode {mode}); raise --cutoff")
    large = bool(stored_sizes(kept))
    asked = sum(int(c["n"]) for c in recipe["cells"])
    stats = {"name": name, "envs": list(env_ids), "samples": len(kept), "asked": asked,
             "environments": len({r["env"] for r in kept}), "pool": len(pool), "excluded_test_ids": len(held_out),
             "split_policy": "explorer episodes disjoint from the test split (construction.own_env)",
             "prompt_mode": mode, "prompt_version": version, "states_stored_once": large, "rationales": False,
             "append_form": append_form, "patch_key_order": key_order, "replace_tests": replace_tests,
             "patch_op_order": op_order,
             "cutoff": cutoff, "dropped_over_cutoff": len(dropped),
             "by_stratum": {s: sum(r["stratum"] == s for r in kept) for s in STRATA}, "tokens": tokens}
    report = shortfall_report(asked, len(kept), cells=short, over_cutoff=len(dropped), cutoff=cutoff,
                              pool={"pool_records": len(pool), **counts})
    if report:
        stats["shortfall"] = report
    write_json(out_dir / "stats.json", stats)
    return stats

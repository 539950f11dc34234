"""SFT data from training-split environments: chat samples whose assistant turn is the exact target.

A recipe (JSON, see ``training/recipes/default.json``) gives the composition (cells as in
``construction.composition``), the prompt mode and the rollout parameters. The output directory
holds ``<name>.jsonl`` (one ``{"messages": [...]}`` per line, plus ``id``/``env``/``stratum``),
``<name>.records.jsonl`` (the benchmark-format records behind them: provenance, and prompts with
ground truth for ``envsim train rl``) and ``dataset_info.json`` registering it for LLaMA-Factory (sharegpt format with OpenAI-style roles);
``datasets.load_dataset("json", data_files=...)`` reads the same file.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from envsim.construction.composition import Spec, stratified_sample
from envsim.construction.pipeline import build_pool, write_jsonl
from envsim.construction.splits import assert_no_test_envs, training_envs
from envsim.envs.registry import get_env, list_envs
from envsim.envs.source import class_source
from envsim.evaluation.prompts import PROMPT_VERSION, build_messages, target_answer


SHIPPED_RECIPES: tuple[str, ...] = ("default", "smoke")


def load_recipe(source: str | Path | None) -> dict[str, Any]:
    """A recipe dict: a shipped recipe by name (``None`` = ``"default"``, ``"smoke"``), or a JSON file path."""
    name = "default" if source is None else str(source)
    if name in SHIPPED_RECIPES:
        return json.loads(resources.files("envsim.training").joinpath(f"recipes/{name}.json").read_text())
    return json.loads(Path(source).read_text())


def sft_sample(record: dict[str, Any], prompt_mode: str, rationale: Callable[[dict[str, Any]], str] | None = None,
               class_sources: dict[str, str] | None = None) -> dict[str, Any]:
    """One chat sample: the evaluation prompt and the exact answer (optionally after a rationale)."""
    messages = build_messages(record, prompt_mode, class_source=(class_sources or {}).get(record["env"]))
    answer = target_answer(record)
    if rationale is not None:
        answer = rationale(record).rstrip() + "\n\n" + answer
    return {"id": record["id"], "env": record["env"], "stratum": record["stratum"], "prompt_version": PROMPT_VERSION,
            "messages": [*messages, {"role": "assistant", "content": answer}]}


def dataset_info(name: str, file_name: str) -> dict[str, Any]:
    """LLaMA-Factory ``dataset_info.json`` entry for a messages-format file."""
    return {name: {"file_name": file_name, "formatting": "sharegpt", "columns": {"messages": "messages"},
                   "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                            "assistant_tag": "assistant", "system_tag": "system"}}}


def write_sft_files(records: list[dict[str, Any]], out_dir: Path, name: str, prompt_mode: str = "mdp",
                    rationale: Callable[[dict[str, Any]], str] | None = None,
                    class_sources: dict[str, str] | None = None) -> str:
    """Write ``<name>.jsonl`` (chat samples), ``<name>.records.jsonl`` and ``dataset_info.json``; returns the name."""
    name = name.replace("-", "_")
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl((sft_sample(r, prompt_mode, rationale, class_sources) for r in records), out_dir / f"{name}.jsonl")
    write_jsonl(records, out_dir / f"{name}.records.jsonl")
    (out_dir / "dataset_info.json").write_text(json.dumps(dataset_info(name, f"{name}.jsonl"), indent=2) + "\n")
    return name


def build_sft_data(recipe: dict[str, Any], out_dir: Path, *, version: str = "v1", workers: int = 1,
                   rationales: bool = False, progress: Any = None, env_ids: list[str] | None = None) -> dict[str, Any]:
    """Roll out training environments, sample the recipe's composition, write the SFT files; returns stats."""
    all_envs = [e.id for e in list_envs() if e.builtin]
    envs = env_ids if env_ids is not None else training_envs(all_envs, version)
    assert_no_test_envs(envs, version)
    rollout = recipe.get("rollout", {})
    pool = build_pool(envs, rollout.get("seed", 11), rollout.get("episodes", 8), rollout.get("steps", 40), "train",
                      workers=workers, progress=progress)
    spec = Spec.from_json({"name": recipe.get("name", "recipe"), "per_env_cap": recipe.get("per_env_cap"),
                           "cells": recipe["cells"]})
    records = stratified_sample(pool, spec, seed=rollout.get("seed", 11))
    assert_no_test_envs((r["env"] for r in records), version)
    mode = recipe.get("prompt_mode", "mdp")
    sources = {e: class_source(get_env(e)) for e in {r["env"] for r in records}} if mode == "full-class" else {}
    trace = None
    if rationales:
        from envsim.training.rationale import execution_rationale

        trace = execution_rationale
    name = write_sft_files(records, out_dir, recipe.get("name", "envsim_sft"), mode, trace, sources)
    stats = {"name": name, "samples": len(records), "environments": len({r["env"] for r in records}),
             "pool": len(pool), "prompt_mode": mode, "rationales": rationales,
             "by_stratum": {s: sum(r["stratum"] == s for r in records)
                            for s in ("failure", "no_change", "simple", "medium", "difficult", "extreme")}}
    (out_dir / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    return stats

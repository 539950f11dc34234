"""SFT data from training-split environments: chat samples whose assistant turn is the exact target.

A recipe (JSON, see ``training/recipes/default.json``) gives the composition (cells as in
``construction.composition``), the prompt mode and the rollout parameters. The output directory
holds ``<name>.jsonl`` (one ``{"messages": [...]}`` per line, plus ``id``/``env``/``stratum``),
``<name>.records.jsonl`` (the benchmark-format records behind them: provenance, and prompts with
ground truth for ``envsim train rl``) and ``dataset_info.json`` registering it for LLaMA-Factory (sharegpt format with OpenAI-style roles);
``datasets.load_dataset("json", data_files=...)`` reads the same file.

Samples use prompt version 2 by default (compact JSON, see ``evaluation/prompting/prompts.py``). Every
sample's full chat is counted in tokens (the base model's tokenizer when a local directory is
given, else Qwen's BPE); samples over the SFT cutoff are dropped and counted in ``stats.json``, or
refused, so nothing is silently truncated in training.
"""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Sequence

from envsim.construction.composition import Spec, stratified_sample
from envsim.construction.pipeline import build_pool, write_jsonl
from envsim.construction.splits import assert_no_test_envs, training_envs
from envsim.envs.registry import get_env, list_envs
from envsim.envs.shown import class_source
from envsim.evaluation.prompting.prompts import (LATEST_PROMPT_VERSION, PROMPT_VERSION, build_messages, check_version,
                                       target_answer)
from envsim.safe_files import write_json
from envsim.training.patch_form import (check_append_form, check_key_order, check_op_order, check_replace_tests,
                                        target_patch)
from envsim.training.sft import SFTSettings

#: The SFT recipe's ``cutoff_len``: longer samples would be truncated by LLaMA-Factory.
SFT_CUTOFF = SFTSettings.cutoff_len
OVER_CUTOFF_ACTIONS = ("drop", "refuse")


class OverCutoffError(ValueError):
    """Samples whose full chat exceeds the SFT cutoff, with ``over_cutoff='refuse'``."""


SHIPPED_RECIPES: tuple[str, ...] = ("default", "smoke", "small-view", "in-env", "in-env-reads")


def load_recipe(source: str | Path | None) -> dict[str, Any]:
    """A recipe dict: a shipped recipe by name (``None`` = ``"default"``, ``"smoke"``), or a JSON file path."""
    name = "default" if source is None else str(source)
    if name in SHIPPED_RECIPES:
        return json.loads(resources.files("envsim.training").joinpath(f"recipes/{name}.json").read_text())
    return json.loads(Path(source).read_text())


def sft_sample(record: dict[str, Any], prompt_mode: str, rationale: Callable[[dict[str, Any]], str] | None = None,
               class_sources: dict[str, str] | None = None, version: str = LATEST_PROMPT_VERSION,
               append_form: str = "index", key_order: str = "op-first",
               replace_tests: str = "none", examples: Sequence[Any] = (), *,
               op_order: str = "stored") -> dict[str, Any]:
    """One chat sample: the evaluation prompt and the exact answer (optionally after a rationale); the answer's
    patch writes appends in ``append_form`` (``training.patch_form``: ``index`` as stored, ``dash`` as ``/-``),
    tests the old value of each replaced scalar the prompt shows when ``replace_tests`` is ``shown``, and writes
    each operation's keys in ``key_order`` (``op-first`` as stored, ``path-first``), its operations in ``op_order``
    (``stored``: sorted by path, ``writes``: the call's write order). ``examples``: logged calls
    (``evaluation.prompting.logged_calls.LoggedCall``) the prompt lists; their ids go into the sample."""
    from envsim.evaluation.prompting.logged_calls import examples_of

    messages = build_messages(record, prompt_mode, class_source=(class_sources or {}).get(record["env"]),
                              version=version, examples=examples_of(examples))
    shown = prompt_shown_state(record, prompt_mode) if replace_tests != "none" else None
    answer = target_answer({**record, "patch": target_patch(record, append_form, key_order, replace_tests, shown,
                                                                     op_order)},
                           version)
    if rationale is not None:
        answer = rationale(record).rstrip() + "\n\n" + answer
    sample = {"id": record["id"], "env": record["env"], "stratum": record["stratum"], "prompt_version": version,
              "messages": [*messages, {"role": "assistant", "content": answer}]}
    if examples:
        sample["examples"] = [c.id for c in examples]
    return sample


def prompt_shown_state(record: dict[str, Any], prompt_mode: str) -> Any:
    """What the prompt of ``prompt_mode`` shows of the record's state: the view's partial state (``mdp-view``),
    nothing (``pomdp``) or the whole state."""
    if prompt_mode == "pomdp":
        return {}
    if prompt_mode == "mdp-view":
        from envsim.evaluation.prompting.prompts import record_view

        schema = next((t for t in record.get("tools", []) if t.get("function", {}).get("name")
                       == record["action"]["name"]), None)
        return record_view(record, schema).state
    return record["state"]


def fit_to_cutoff(samples: list[dict[str, Any]], cutoff: int = SFT_CUTOFF, over_cutoff: str = "drop",
                  tokenizer: Any = None) -> tuple[list[int], dict[str, Any]]:
    """Indices of the samples whose full chat fits ``cutoff`` tokens, and their token statistics.

    Tokens are counted with ``tokenizer`` (a model directory or a loaded counter; None: Qwen's BPE),
    chat framing included. ``over_cutoff='drop'`` leaves longer samples out (counted in the
    statistics); ``'refuse'`` raises ``OverCutoffError`` naming them.
    """
    from envsim.construction.stats import token_stats_by_stratum
    from envsim.tokens import chat_tokens, count_tokens, get_tokenizer, token_stats, tokenizer_name

    if over_cutoff not in OVER_CUTOFF_ACTIONS:
        raise ValueError(f"over_cutoff must be one of {', '.join(OVER_CUTOFF_ACTIONS)}, not {over_cutoff!r}")
    counter = tokenizer if hasattr(tokenizer, "chat") else get_tokenizer(tokenizer)
    full = [chat_tokens(s["messages"], counter) for s in samples]
    over = [i for i, n in enumerate(full) if n > cutoff]
    if over and over_cutoff == "refuse":
        names = ", ".join(f"{samples[i]['id']} ({full[i]:,} tokens)" for i in over[:5])
        raise OverCutoffError(f"{len(over)} of {len(samples)} samples exceed the SFT cutoff of {cutoff:,} tokens "
                              f"({tokenizer_name(counter)}): {names}{' …' if len(over) > 5 else ''}; "
                              "use --over-cutoff drop or a larger --cutoff")
    kept = [i for i in range(len(samples)) if full[i] <= cutoff]
    rows = [{"stratum": samples[i]["stratum"], "prompt": chat_tokens(samples[i]["messages"][:-1], counter),
             "answer": count_tokens(samples[i]["messages"][-1]["content"], counter)} for i in kept]
    tokens = token_stats_by_stratum(rows, lambda r: r["prompt"], lambda r: r["answer"],
                                    tokenizer=tokenizer_name(counter), prompt_mode="",
                                    prompt_version=samples[0]["prompt_version"] if samples else "")
    tokens.pop("prompt_mode")  # samples do not know it; write_sft_dataset sets it
    tokens.update(cutoff=cutoff, over_cutoff=over_cutoff, dropped_over_cutoff=len(over),
                  dropped_ids=[samples[i]["id"] for i in over], full_chat=token_stats([full[i] for i in kept]),
                  full_chat_before_cutoff=token_stats(full, cutoff))
    return kept, tokens


def dataset_info(name: str, file_name: str) -> dict[str, Any]:
    """LLaMA-Factory ``dataset_info.json`` entry for a messages-format file."""
    return {name: {"file_name": file_name, "formatting": "sharegpt", "columns": {"messages": "messages"},
                   "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                            "assistant_tag": "assistant", "system_tag": "system"}}}


def write_sft_files(records: list[dict[str, Any]], out_dir: Path, name: str, prompt_mode: str = "mdp",
                    rationale: Callable[[dict[str, Any]], str] | None = None,
                    class_sources: dict[str, str] | None = None, *, version: str = PROMPT_VERSION) -> str:
    """``write_sft_dataset`` with the default cutoff, returning only the dataset name.

    Prompt version 1 by default: callers that evaluate with the default prompts (the learning
    check) train on the same prompts. ``envsim train data`` goes through ``build_sft_data`` (version 2).
    """
    return write_sft_dataset(records, out_dir, name, prompt_mode, rationale, class_sources, version=version)[0]


def write_sft_dataset(records: list[dict[str, Any]], out_dir: Path, name: str, prompt_mode: str = "mdp",
                      rationale: Callable[[dict[str, Any]], str] | None = None,
                      class_sources: dict[str, str] | None = None, *, version: str = LATEST_PROMPT_VERSION,
                      cutoff: int = SFT_CUTOFF, over_cutoff: str = "drop",
                      tokenizer: Any = None, append_form: str = "index",
                      key_order: str = "op-first", replace_tests: str = "none", op_order: str = "stored",
                      logged_examples: int = 0) -> tuple[str, dict[str, Any]]:
    """Write ``<name>.jsonl`` (chat samples), ``<name>.records.jsonl`` and ``dataset_info.json``.
    ``append_form`` / ``key_order`` / ``replace_tests`` / ``op_order``: how the targets write appends, order an
    operation's keys, test values and order the operations (``sft_sample``). ``logged_examples``: each prompt
    lists up to that many other samples of the same tool as logged calls (``with_logged_examples``).

    Samples over ``cutoff`` tokens are dropped from both files or refused (``fit_to_cutoff``);
    refusing writes nothing. Records of large-state environments keep their states once under
    ``<name>.records_states/`` (``construction.stored_states``). Returns the dataset name and the token statistics.
    """
    from envsim.benchmark.state_store import state_folder
    from envsim.construction.stored_states import store_large_states

    name = name.replace("-", "_")
    version = check_version(version)
    samples = [sft_sample(r, prompt_mode, rationale, class_sources, version, append_form, key_order, replace_tests,
                          op_order=op_order) for r in records]
    kept, tokens = fit_to_cutoff(samples, cutoff, over_cutoff, tokenizer)
    if logged_examples:  # the samples that fit without logged calls are the log; each lists what still fits
        records, samples = [records[i] for i in kept], [samples[i] for i in kept]
        samples = with_logged_examples(records, samples, logged_examples, cutoff, tokenizer,
                                       lambda r, ex: sft_sample(r, prompt_mode, rationale, class_sources, version,
                                                                append_form, key_order, replace_tests, ex,
                                                                op_order=op_order))
        first = tokens
        kept, tokens = fit_to_cutoff(samples, cutoff, over_cutoff, tokenizer)
        tokens.update(dropped_over_cutoff=first["dropped_over_cutoff"], dropped_ids=first["dropped_ids"],
                      full_chat_before_cutoff=first["full_chat_before_cutoff"])  # none is dropped in the second pass
        shown = Counter(len(s.get("examples", [])) for s in samples)
        tokens["logged_examples"] = {"k": logged_examples, "shown": dict(sorted(shown.items()))}
    tokens["prompt_mode"] = prompt_mode
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl((samples[i] for i in kept), out_dir / f"{name}.jsonl")
    records_path = out_dir / f"{name}.records.jsonl"  # large states stored once beside it (stored_states)
    write_jsonl(store_large_states([records[i] for i in kept], state_folder(records_path)), records_path)
    write_json(out_dir / "dataset_info.json", dataset_info(name, f"{name}.jsonl"))
    return name, tokens


def with_logged_examples(records: list[dict[str, Any]], samples: list[dict[str, Any]], k: int, cutoff: int,
                         tokenizer: Any, make: Callable[[dict[str, Any], Sequence[Any]], dict[str, Any]]
                         ) -> list[dict[str, Any]]:
    """``samples`` remade by ``make(record, examples)`` with up to ``k`` logged calls of the same tool from the
    samples themselves (``evaluation.prompting.logged_calls``; never a sample's own question). A sample that would
    pass ``cutoff`` tokens with them shows fewer, down to none, so every sample stays in the pool it is part of."""
    from envsim.evaluation.prompting.logged_calls import pool_from_samples
    from envsim.tokens import chat_tokens, get_tokenizer

    counter = tokenizer if hasattr(tokenizer, "chat") else get_tokenizer(tokenizer)
    pool = pool_from_samples(samples, records)
    remade = []
    for record, sample in zip(records, samples):
        examples = pool.pick(record, k)
        while True:
            candidate = make(record, examples)
            if not examples or chat_tokens(candidate["messages"], counter) <= cutoff:
                break
            examples = examples[:-1]
        remade.append(candidate)
    return remade


def check_logged_examples(value: Any) -> int:
    """A recipe's ``logged_examples`` (how many logged calls of the same tool each prompt lists): 0 to 8."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 8:
        raise ValueError(f"logged_examples must be a whole number from 0 to 8, not {value!r}")
    return value


def recipe_records(recipe: dict[str, Any], *, version: str = "v1", workers: int = 1, progress: Any = None,
                   env_ids: list[str] | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rollout pool of the training environments and the recipe's sample of it (no held-out env)."""
    all_envs = [e.id for e in list_envs() if e.builtin]
    envs = env_ids if env_ids is not None else recipe_envs(recipe, training_envs(all_envs, version))
    assert_no_test_envs(envs, version)
    rollout = recipe.get("rollout", {})
    pool = build_pool(envs, rollout.get("seed", 11), rollout.get("episodes", 8), rollout.get("steps", 40), "train",
                      workers=workers, progress=progress)
    spec = Spec.from_json({"name": recipe.get("name", "recipe"), "per_env_cap": recipe.get("per_env_cap"),
                           "cells": recipe["cells"]})
    records = stratified_sample(pool, spec, seed=rollout.get("seed", 11))
    assert_no_test_envs((r["env"] for r in records), version)
    return pool, records


def recipe_envs(recipe: dict[str, Any], training: list[str]) -> list[str]:
    """The recipe's ``envs`` (each must be a training-split environment), else every training environment."""
    chosen = recipe.get("envs")
    if not chosen:
        return training
    unknown = [e for e in chosen if e not in training]
    if unknown:
        raise ValueError(f"recipe envs not in the training split: {', '.join(unknown)}")
    return list(chosen)


def build_sft_data(recipe: dict[str, Any], out_dir: Path, *, version: str = "v1", workers: int = 1,
                   rationales: bool = False, progress: Any = None, env_ids: list[str] | None = None,
                   prompt_version: str | None = None, cutoff: int = SFT_CUTOFF, over_cutoff: str = "drop",
                   tokenizer: Any = None) -> dict[str, Any]:
    """Roll out training environments, sample the recipe's composition, write the SFT files; returns stats.

    ``prompt_version``: None takes the recipe's ``prompt_version`` or else the latest (2).
    ``cutoff`` / ``over_cutoff`` / ``tokenizer``: see ``fit_to_cutoff``.
    """
    append_form = check_append_form(recipe.get("append_form", "index"))  # before the rollout, not after it
    key_order = check_key_order(recipe.get("patch_key_order", "op-first"))
    replace_tests = check_replace_tests(recipe.get("replace_tests", "none"))
    op_order = check_op_order(recipe.get("patch_op_order", "stored"))
    logged_examples = check_logged_examples(recipe.get("logged_examples", 0))
    pool, records = recipe_records(recipe, version=version, workers=workers, progress=progress, env_ids=env_ids)
    mode = recipe.get("prompt_mode", "mdp")
    sources = {e: class_source(get_env(e)) for e in {r["env"] for r in records}} if mode == "full-class" else {}
    trace = None
    if rationales:
        from envsim.training.rationale import execution_rationale

        trace = execution_rationale
    prompt_version = check_version(prompt_version or recipe.get("prompt_version", LATEST_PROMPT_VERSION))
    name, tokens = write_sft_dataset(records, out_dir, recipe.get("name", "envsim_sft"), mode, trace, sources,
                                   version=prompt_version, cutoff=cutoff, over_cutoff=over_cutoff, tokenizer=tokenizer,
                                   append_form=append_form, key_order=key_order, replace_tests=replace_tests,
                                   op_order=op_order,
                                   logged_examples=logged_examples)
    dropped = set(tokens["dropped_ids"])
    records = [r for r in records if r["id"] not in dropped]
    stats = {"name": name, "samples": len(records), "environments": len({r["env"] for r in records}),
             "pool": len(pool), "prompt_mode": mode, "prompt_version": prompt_version, "rationales": rationales,
             "append_form": append_form, "patch_key_order": key_order, "replace_tests": replace_tests,
             "patch_op_order": op_order, "logged_examples": logged_examples,
             "dash_appends": sum(target_patch(r, append_form) != list(r.get("patch") or []) for r in records),
             "cutoff": cutoff, "dropped_over_cutoff": len(dropped),
             "by_stratum": {s: sum(r["stratum"] == s for r in records)
                            for s in ("failure", "no_change", "simple", "medium", "difficult", "extreme")},
             "tokens": tokens}
    from envsim.training.shortfall import shortfall_report

    report = shortfall_report(sum(int(c["n"]) for c in recipe["cells"]), len(records), over_cutoff=len(dropped),
                              cutoff=cutoff)
    if report:
        stats["shortfall"] = report
    if recipe.get("heldout"):
        stats["heldout"] = write_recipe_heldout(recipe, pool, out_dir, mode=mode, prompt_version=prompt_version,
                                                cutoff=cutoff, tokenizer=tokenizer, workers=workers)
    write_json(out_dir / "stats.json", stats)
    return stats


def write_recipe_heldout(recipe: dict[str, Any], pool: list[dict[str, Any]], out_dir: Path, *, mode: str,
                         prompt_version: str, cutoff: int, tokenizer: Any, workers: int = 1) -> dict[str, Any]:
    """The recipe's in-environment held-out set (``training.heldout``) written to ``OUT/heldout.jsonl``; its stats."""
    from envsim.tokens import get_tokenizer
    from envsim.training.heldout import build_heldout, write_heldout

    counter = tokenizer if hasattr(tokenizer, "chat") else get_tokenizer(tokenizer)
    envs = sorted({r["env"] for r in pool})
    records, stats = build_heldout(recipe["heldout"], envs, pool, prompt_mode=mode, prompt_version=prompt_version,
                                   cutoff=cutoff, counter=counter, workers=workers)
    stats["file"] = str(write_heldout(records, out_dir))
    stats.update(prompt_mode=mode, prompt_version=prompt_version)
    return stats

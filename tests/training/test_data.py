"""SFT data: recipe composition, exact targets (with and without rationales), LLaMA-Factory registration,
and no held-out environment in any training file."""

from __future__ import annotations

import json

import datasets
import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.construction.splits import read_test_envs
from envsim.evaluation.scoring.parsing import parse_answer
from envsim.evaluation.scoring.scoring import score_prediction
from envsim.training.data import build_sft_data, load_recipe

TINY = {"name": "tiny", "prompt_mode": "mdp", "rollout": {"seed": 3, "episodes": 1, "steps": 20},
        "cells": [{"stratum": "failure", "n": 5}, {"stratum": "no_change", "n": 5}, {"stratum": "simple", "n": 5},
                  {"delta_range": [3, 12], "n": 5}]}


def test_default_recipe_mirrors_the_published_mixture():
    recipe = load_recipe("default")
    assert sum(c["n"] for c in recipe["cells"]) == 6230 and recipe["prompt_mode"] == "mdp"


def test_shipped_recipes_load_by_name_and_files_by_path(tmp_path):
    assert load_recipe(None) == load_recipe("default")
    smoke = load_recipe("smoke")
    assert smoke["name"] == "smoke" and sum(c["n"] for c in smoke["cells"]) == 64
    (tmp_path / "mine.json").write_text(json.dumps(TINY))
    assert load_recipe(str(tmp_path / "mine.json")) == TINY
    with pytest.raises(OSError):
        load_recipe(str(tmp_path / "missing.json"))


def _records_by_id(rows):
    from envsim.construction.pipeline import build_pool

    envs = sorted({r["env"] for r in rows})
    return {r["id"]: r for r in build_pool(envs, 3, 1, 20, "train")}


@pytest.mark.parametrize("rationales", [False, True])
def test_targets_are_exact_answers(tmp_path, rationales):
    from envsim.construction.splits import training_envs
    from envsim.envs.registry import list_envs

    train_envs = training_envs([e.id for e in list_envs() if e.builtin])[:4]
    stats = build_sft_data(TINY, tmp_path, rationales=rationales, env_ids=train_envs)
    assert stats["samples"] == 20
    rows = [json.loads(l) for l in (tmp_path / "tiny.jsonl").read_text().splitlines()]
    source = _records_by_id(rows)
    for row in rows:
        roles = [m["role"] for m in row["messages"]]
        assert roles == ["system", "user", "assistant"]
        answer = row["messages"][-1]["content"]
        assert answer.startswith("Execution of ") == rationales
        score = score_prediction(source[row["id"]], parse_answer(answer))
        assert score.fm and score.cm
    info = json.loads((tmp_path / "dataset_info.json").read_text())
    assert info["tiny"]["file_name"] == "tiny.jsonl" and info["tiny"]["formatting"] == "sharegpt"
    loaded = datasets.load_dataset("json", data_files=str(tmp_path / "tiny.jsonl"), split="train")
    assert len(loaded) == 20 and loaded[0]["messages"][2]["role"] == "assistant"


def test_held_out_envs_are_refused(tmp_path):
    from envsim.construction.splits import LeakError

    with pytest.raises(LeakError):
        build_sft_data(TINY, tmp_path, env_ids=[read_test_envs("v1")[0]])


@pytest.mark.slow
def test_no_test_split_sample_in_any_training_file(tmp_path):
    """Every file 'envsim train data' writes is free of held-out environments and of test samples."""
    import re

    from envsim.benchmark import load
    from envsim.delta import canonical_json

    recipe = tmp_path / "tiny.json"
    recipe.write_text(json.dumps(TINY))
    out = tmp_path / "sft"
    result = CliRunner().invoke(main, ["train", "data", "--recipe", str(recipe), "--out", str(out), "--workers", "2"])
    assert result.exit_code == 0, result.output
    files = sorted(p for p in out.iterdir() if p.is_file())
    assert {p.name for p in files} == {"tiny.jsonl", "tiny.records.jsonl", "dataset_info.json", "stats.json"}
    held_out = read_test_envs("v1")
    mention = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, held_out)) + r")(?![\w-])")
    for path in files:
        found = mention.search(path.read_text(encoding="utf-8"))
        assert found is None, f"{path.name} mentions held-out environment {found.group(0)}"
    rows = [json.loads(line) for line in (out / "tiny.jsonl").read_text().splitlines()]
    records = [json.loads(line) for line in (out / "tiny.records.jsonl").read_text().splitlines()]
    assert len(rows) == len(records) == 20 and [r["id"] for r in rows] == [r["id"] for r in records]
    test_samples = {(r["env"], canonical_json(r["state"]), canonical_json(r["action"])) for r in load("v1", "test")}
    assert not {(r["env"], canonical_json(r["state"]), canonical_json(r["action"])) for r in records} & test_samples
    test_prompts = {json.dumps(r["state"], ensure_ascii=False, sort_keys=True, separators=sep)
                    for r in load("v1", "test") for sep in ((", ", ": "), (",", ":"))}   # prompt versions 1 and 2
    assert not any(state in row["messages"][1]["content"] for row in rows for state in test_prompts
                   if len(state) > 200)


def test_sft_dry_run_writes_recipe_defaults(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "dataset_info.json").write_text(json.dumps({"tiny": {"file_name": "tiny.jsonl"}}))
    runner = CliRunner()
    one = runner.invoke(main, ["train", "sft", "--model", "/models/base", "--data", str(data),
                               "--out", str(tmp_path / "run1"), "--dry-run"])
    assert one.exit_code == 0, one.output
    config = dict(line.split(": ", 1) for line in (tmp_path / "run1" / "sft.yaml").read_text().splitlines())
    assert config["learning_rate"] == "2.0e-05" and config["num_train_epochs"] == "3.0"
    assert config["lr_scheduler_type"] == '"cosine"' and config["warmup_ratio"] == "0.05"
    assert config["cutoff_len"] == "8192" and config["bf16"] == "true" and config["finetuning_type"] == '"full"'
    assert config["gradient_accumulation_steps"] == "32" and "deepspeed" not in config
    import yaml

    parsed = yaml.safe_load((tmp_path / "run1" / "sft.yaml").read_text())   # what LLaMA-Factory reads
    assert parsed["learning_rate"] == 2e-5 and isinstance(parsed["learning_rate"], float)
    assert one.output.rstrip().endswith(f"llamafactory-cli train {tmp_path / 'run1' / 'sft.yaml'}")
    eight = runner.invoke(main, ["train", "sft", "--model", "/models/base", "--data", str(data),
                                 "--out", str(tmp_path / "run8"), "--gpus", "8", "--dry-run"])
    assert eight.exit_code == 0, eight.output
    config8 = (tmp_path / "run8" / "sft.yaml").read_text()
    assert "gradient_accumulation_steps: 4\n" in config8 and "ds_z3.json" in config8
    zero = json.loads((tmp_path / "run8" / "ds_z3.json").read_text())
    assert zero["zero_optimization"]["stage"] == 3
    assert "FORCE_TORCHRUN=1 NPROC_PER_NODE=8 llamafactory-cli train" in eight.output



def test_sft_finetuning_types_reach_the_llamafactory_config(tmp_path):
    import yaml

    data = tmp_path / "data"
    data.mkdir()
    (data / "dataset_info.json").write_text(json.dumps({"tiny": {"file_name": "tiny.jsonl"}}))
    runner = CliRunner()

    def config(name: str, *flags: str) -> dict:
        result = runner.invoke(main, ["train", "sft", "--model", "/m", "--data", str(data), "--out",
                                      str(tmp_path / name), "--dry-run", *flags])
        assert result.exit_code == 0, result.output
        return yaml.safe_load((tmp_path / name / "sft.yaml").read_text())

    full = config("full")
    assert full["finetuning_type"] == "full" and full["disable_gradient_checkpointing"] is False
    assert not {"lora_rank", "lora_target", "freeze_trainable_layers"} & set(full)
    lora = config("lora", "--finetuning", "lora", "--lora-rank", "8")
    assert (lora["finetuning_type"], lora["lora_rank"], lora["lora_target"]) == ("lora", 8, "all")
    freeze = config("freeze", "--finetuning", "freeze", "--freeze-layers", "3", "--no-gradient-checkpointing")
    assert (freeze["finetuning_type"], freeze["freeze_trainable_layers"]) == ("freeze", 3)
    assert freeze["disable_gradient_checkpointing"] is True and "lora_rank" not in freeze
    refused = runner.invoke(main, ["train", "sft", "--model", "/m", "--data", str(data), "--out",
                                   str(tmp_path / "bad"), "--dry-run", "--finetuning", "qlora"])
    assert refused.exit_code != 0 and not (tmp_path / "bad" / "sft.yaml").exists()

def _train_envs(n: int = 4) -> list[str]:
    from envsim.construction.splits import training_envs
    from envsim.envs.registry import list_envs

    return training_envs([e.id for e in list_envs() if e.builtin])[:n]


def test_samples_use_prompt_version_2_by_default_and_version_1_on_request(tmp_path):
    from envsim.evaluation.prompting.prompts import build_messages, target_answer

    envs = _train_envs()
    build_sft_data(TINY, tmp_path / "v2", env_ids=envs)
    build_sft_data(TINY, tmp_path / "v1", env_ids=envs, prompt_version="1")
    for version in ("1", "2"):
        rows = [json.loads(l) for l in (tmp_path / f"v{version}" / "tiny.jsonl").read_text().splitlines()]
        records = [json.loads(l) for l in (tmp_path / f"v{version}" / "tiny.records.jsonl").read_text().splitlines()]
        stats = json.loads((tmp_path / f"v{version}" / "stats.json").read_text())
        assert stats["prompt_version"] == version and stats["tokens"]["prompt_version"] == version
        for row, record in zip(rows, records, strict=True):
            assert row["prompt_version"] == version
            assert row["messages"][:2] == build_messages(record, "mdp", version=version)
            answer = row["messages"][2]["content"]
            assert json.loads(answer) == json.loads(target_answer(record, version))
            assert answer.startswith('{"observation": ') == (version == "1")    # compact JSON in version 2


def _recipe_file(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    return path


def test_samples_over_the_cutoff_are_dropped_and_counted_never_truncated(tmp_path, monkeypatch):
    import envsim.training.data as data
    from envsim.tokens import chat_tokens

    envs = _train_envs()
    monkeypatch.setattr(data, "training_envs", lambda *args, **kwargs: envs)   # the CLI rolls out 4 envs only
    full = build_sft_data(TINY, tmp_path / "all", env_ids=envs)
    assert "shortfall" not in full and full["dropped_over_cutoff"] == 0 and full["cutoff"] == 8192 and full["samples"] == 20
    sizes = sorted(chat_tokens(json.loads(l)["messages"])
                   for l in (tmp_path / "all" / "tiny.jsonl").read_text().splitlines())
    assert full["tokens"]["full_chat"]["max"] == sizes[-1] and full["tokens"]["tokenizer"] == "qwen-bpe"
    cutoff = sizes[len(sizes) // 2]
    over = sum(s > cutoff for s in sizes)
    assert 0 < over < 20
    out = tmp_path / "cut"
    result = CliRunner().invoke(main, ["train", "data", "--recipe", str(_recipe_file(tmp_path)), "--out", str(out),
                                       "--cutoff", str(cutoff)])
    assert result.exit_code == 0, result.output
    stats = json.loads((out / "stats.json").read_text())
    assert stats["dropped_over_cutoff"] == over and stats["samples"] == 20 - over
    assert stats["shortfall"]["reasons"] == {"cells_unfilled": 0, "over_cutoff": over}     # why fewer than asked
    assert f"warning: wrote {20 - over} of the 20 samples the recipe asks for: {over} sampled but over the " \
        f"cutoff of {cutoff:,} tokens" in result.stderr
    assert sum(stats["by_stratum"].values()) == 20 - over and stats["tokens"]["full_chat_before_cutoff"]["n"] == 20
    rows = [json.loads(l) for l in (out / "tiny.jsonl").read_text().splitlines()]
    records = [json.loads(l) for l in (out / "tiny.records.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [r["id"] for r in records] and len(rows) == 20 - over
    assert all(chat_tokens(r["messages"]) <= cutoff for r in rows)
    assert not {r["id"] for r in rows} & set(stats["tokens"]["dropped_ids"])


def test_refuse_over_cutoff_writes_nothing(tmp_path):
    from envsim.training.data import OverCutoffError

    with pytest.raises(OverCutoffError, match="exceed the SFT cutoff of 500 tokens"):
        build_sft_data(TINY, tmp_path / "out", env_ids=_train_envs(), cutoff=500, over_cutoff="refuse")
    assert not (tmp_path / "out").exists()

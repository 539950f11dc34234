"""The CPU SFT loop (``training.sft_cpu``) on a tiny local model: the cached-activation path computes exactly the
loss of a whole forward pass, only the last layers change, the answers are learnt (loss falls, greedy decoding
reproduces them), checkpoints land where asked with their prompt settings; ``envsim train sft --device cpu`` and
``envsim train fit-check`` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="needs the [train] extra")
pytest.importorskip("transformers", reason="needs the [train] extra")
pytestmark = pytest.mark.train

from click.testing import CliRunner  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

from envsim.cli import main  # noqa: E402
from envsim.training.rl import _tokenizer  # noqa: E402
from envsim.training.sft_cpu import (CPUSFTSettings, FrozenActivations, answer_loss, cache_with_progress,  # noqa: E402
                                     dataset_file, read_samples, schedule, shared_prefix, tokenize_sample, train_sft_cpu)
from envsim.training.tiny_model import build_tiny_model, texts_from_sft  # noqa: E402

LAYERS = 3
RECIPE = {"name": "tiny-sft", "prompt_mode": "mdp-view", "prompt_version": "3",
          "envs": ["spa_appointments-v1"], "rollout": {"seed": 13, "episodes": 2, "steps": 20},
          "cells": [{"stratum": "failure", "n": 3}, {"stratum": "no_change", "n": 3}, {"stratum": "simple", "n": 2}]}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict:
    """SFT data of one environment (views, prompt version 3) and a 3-layer tiny model built on its texts."""
    root = tmp_path_factory.mktemp("sft-cpu")
    recipe = root / "recipe.json"
    recipe.write_text(json.dumps(RECIPE))
    result = CliRunner().invoke(main, ["train", "data", "--recipe", str(recipe), "--out", str(root / "data"),
                                       "--cutoff", "8192"])
    assert result.exit_code == 0, result.output
    # untied output layer: it trains with the last layers (a tied one stays at its random initialisation)
    build_tiny_model(root / "model", texts_from_sft(dataset_file(root / "data")), hidden_size=64, layers=LAYERS,
                     tie_embeddings=False)
    return {"root": root, "data": root / "data", "model": root / "model"}


def test_cached_activations_give_the_whole_forward_loss(tiny):
    tokenizer = _tokenizer(str(tiny["model"]))
    model = AutoModelForCausalLM.from_pretrained(str(tiny["model"]), dtype=torch.float32, attn_implementation="sdpa")
    samples = [tokenize_sample(tokenizer, s) for s in read_samples(dataset_file(tiny["data"]))][:3]
    sequences = [s.prompt_ids + s.answer_ids[:-1] for s in samples]
    prefix = shared_prefix(sequences)
    assert 0 < prefix < min(len(q) for q in sequences)           # the system prompt is shared
    frozen = FrozenActivations(model, 2, sequences[0][:prefix])
    for sample, ids in zip(samples, sequences):
        assert sample.answer_ids[-1] == tokenizer.convert_tokens_to_ids("<|im_end|>")
        loss, wrong = answer_loss(model, frozen(ids), sample, 2)
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[0]
        start = len(sample.prompt_ids) - 1
        expected = torch.nn.functional.cross_entropy(logits[start:start + len(sample.answer_ids)],
                                                     torch.tensor(sample.answer_ids), reduction="sum")
        assert float(loss) == pytest.approx(float(expected), rel=1e-4)
        argmax = logits[start:start + len(sample.answer_ids)].argmax(-1)
        assert wrong == int((argmax != torch.tensor(sample.answer_ids)).sum())


def test_no_prompt_grad_keeps_the_loss_and_cuts_only_the_prompts_keys_and_values(tiny):
    """``prompt_grad="none"``: the same loss and argmax; with one trainable layer the answer reaches the prompt only
    through that layer's keys and values, so exactly the gradients of what computes them change (the key and value
    projections, the key norm, the layer's input norm)."""
    tokenizer = _tokenizer(str(tiny["model"]))
    model = AutoModelForCausalLM.from_pretrained(str(tiny["model"]), dtype=torch.float32, attn_implementation="sdpa")
    sample = [tokenize_sample(tokenizer, s) for s in read_samples(dataset_file(tiny["data"]))][0]
    ids = sample.prompt_ids + sample.answer_ids[:-1]
    cached = FrozenActivations(model, 1)(ids)
    grads = {}
    for mode in ("full", "none"):
        model.zero_grad(set_to_none=True)
        loss, wrong = answer_loss(model, cached, sample, 1, prompt_grad=mode)
        loss.backward()
        grads[mode] = (float(loss), wrong, {name: p.grad.clone() for name, p in model.named_parameters()
                                           if f"layers.{LAYERS - 1}." in name and p.grad is not None})
    assert grads["none"][0] == pytest.approx(grads["full"][0], rel=1e-5) and grads["none"][1] == grads["full"][1]
    full, none = grads["full"][2], grads["none"][2]
    assert set(full) == set(none) and len(full) >= 9
    for name in full:
        same = torch.allclose(full[name], none[name], rtol=1e-4, atol=1e-6)
        key_or_value = any(part in name for part in ("k_proj", "k_norm", "v_proj", "input_layernorm"))
        assert same != key_or_value, name
    assert [layer.self_attn.layer_idx for layer in model.model.layers] == list(range(LAYERS))


def test_schedule_covers_every_sample_each_epoch():
    settings = CPUSFTSettings(model="m", data_dir=Path("d"), output_dir=Path("o"), epochs=2.5, seed=3)
    order = schedule(4, settings)
    assert len(order) == 10 and sorted(order[:4]) == sorted(order[4:8]) == [0, 1, 2, 3]


def test_training_learns_the_answers_and_only_the_last_layers_change(tiny, tmp_path):
    settings = CPUSFTSettings(model=str(tiny["model"]), data_dir=tiny["data"], output_dir=tmp_path / "run",
                              learning_rate=1e-2, epochs=60, batch=1, trainable_layers=2, max_samples=4,
                              save_at=(8, 60), warmup_ratio=0.0, threads=1)
    summary = train_sft_cpu(settings, echo=lambda line: None)
    log = [json.loads(line) for line in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()]
    assert log[-1]["loss"] < 0.05 * log[0]["loss"]
    assert summary["samples_seen"] == 240 and len(log) == 240
    assert sum(row["greedy_exact"] for row in log[-4:]) >= 3      # teacher-forced argmax = every answer token
    for point in (8, 60):
        meta = json.loads((tmp_path / "run" / f"checkpoint-{point}" / "envsim_training.json").read_text())
        assert meta["prompt_mode"] == "mdp-view" and meta["prompt_version"] == "3" and meta["samples_seen"] == point
    before = AutoModelForCausalLM.from_pretrained(str(tiny["model"]))
    after = AutoModelForCausalLM.from_pretrained(str(tmp_path / "run" / "checkpoints"))
    frozen_same = [torch.equal(a, b) for (name, a), b in zip(before.named_parameters(), after.parameters())
                   if ".layers.0." in name or "embed_tokens" in name]
    trained_same = [torch.equal(a, b) for (name, a), b in zip(before.named_parameters(), after.parameters())
                    if f".layers.{LAYERS - 1}." in name]
    assert frozen_same and all(frozen_same) and not all(trained_same)


def test_cli_device_cpu_trains_and_refuses_what_it_cannot_do(tiny, tmp_path):
    base = ["train", "sft", "--model", str(tiny["model"]), "--data", str(tiny["data"]), "--device", "cpu"]
    refused = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "a")])
    assert refused.exit_code != 0 and "--finetuning freeze" in refused.output
    bad = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "b"), "--finetuning", "freeze", "--save-at", "x"])
    assert bad.exit_code != 0 and "--save-at" in bad.output
    result = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "c"), "--finetuning", "freeze",
                                       "--freeze-layers", "1", "--epochs", "1", "--batch", "4", "--lr", "1e-3",
                                       "--save-at", "4", "--threads", "1"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "c" / "checkpoints" / "model.safetensors").exists()
    assert (tmp_path / "c" / "checkpoint-4" / "model.safetensors").exists()
    assert json.loads((tmp_path / "c" / "summary.json").read_text())["samples_seen"] == 8
    cheap = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "d"), "--finetuning", "freeze",
                                      "--freeze-layers", "2", "--epochs", "1", "--batch", "4", "--threads", "1",
                                      "--prompt-grad", "none"])
    assert cheap.exit_code == 0, cheap.output
    assert json.loads((tmp_path / "d" / "summary.json").read_text())["prompt_grad"] == "none"


@pytest.mark.slow
def test_fit_check_on_a_tiny_random_model(tiny, tmp_path):
    """The fit check end to end: a tiny random model fits 4 samples and the scorer says so (exit 0); with one
    epoch at a tiny learning rate it cannot, and the command exits 1 with the figures written."""
    base = ["train", "fit-check", "--model", str(tiny["model"]), "--data", str(tiny["data"]), "--samples", "4",
            "--freeze-layers", "3", "--threads", "1"]
    fitted = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "fit"), "--epochs", "60", "--lr", "1e-2",
                                       "--batch", "1", "--min-cm", "0.75"])
    assert fitted.exit_code == 0, fitted.output
    figures = json.loads((tmp_path / "fit" / "fit_check.json").read_text())
    assert figures["cm"] >= 0.75 and figures["parse_valid"] >= 0.75 and figures["passed"]
    unfit = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "unfit"), "--epochs", "1", "--lr", "1e-6",
                                      "--prompt-grad", "none"])
    assert unfit.exit_code == 1
    assert json.loads((tmp_path / "unfit" / "sft" / "summary.json").read_text())["prompt_grad"] == "none"
    figures = json.loads((tmp_path / "unfit" / "fit_check.json").read_text())
    assert not figures["passed"] and figures["cm"] < 0.9 and len(figures["misses"]) >= 1


def test_caching_says_how_far_it_is():
    """Caching a real model's activations takes minutes: a line with the count, token share and ETA."""
    lines: list[str] = []
    cache = cache_with_progress(lambda ids: sum(ids), [[1, 2], [3], [4, 5, 6]], lines.append, every_s=0.0)
    assert cache == [3, 3, 15]                                  # every sequence, in order
    assert lines[0].startswith("cached 1/3 samples (33% of the tokens") and "ETA" in lines[0]
    assert len(lines) == 2                                       # none after the last one: 'cached in N s' follows


def test_time_check_measures_a_few_samples_and_projects_the_run(tiny, tmp_path):
    """``--time-check 2`` trains 2 samples for one epoch, projects all of them for --epochs at the measured
    seconds per token, and leaves no checkpoint behind; without --device cpu it is refused."""
    base = ["train", "sft", "--model", str(tiny["model"]), "--data", str(tiny["data"]), "--finetuning", "freeze",
            "--freeze-layers", "1", "--epochs", "3", "--batch", "1", "--threads", "1"]
    refused = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "gpu"), "--time-check", "2"])
    assert refused.exit_code != 0 and "--time-check and --prompt-grad need --device cpu" in refused.output
    run = tmp_path / "run"
    result = CliRunner().invoke(main, [*base, "--device", "cpu", "--out", str(run), "--time-check", "2"])
    assert result.exit_code == 0, result.output
    assert "a projection, not a measurement" in result.output
    assert sorted(p.name for p in run.iterdir()) == ["time_check.json"]      # no checkpoint, no scratch folder
    check = json.loads((run / "time_check.json").read_text())
    tokenizer = _tokenizer(str(tiny["model"]))
    lengths = [tokenize_sample(tokenizer, s).length for s in read_samples(dataset_file(tiny["data"]))]
    measured, whole, projected = check["measured"], check["run"], check["projected"]
    assert measured["samples"] == 2 and measured["tokens"] == sum(lengths[:2])
    assert whole == {"samples": len(lengths), "tokens": sum(lengths), "epochs": 3.0, "samples_seen": 3 * len(lengths)}
    ratio = sum(lengths) / sum(lengths[:2])
    assert projected["cache_s"] == pytest.approx(measured["cache_s"] * ratio, abs=0.1)
    assert projected["train_s"] == pytest.approx(measured["train_s"] * ratio * 3, abs=0.1)
    assert projected["total_s"] == pytest.approx(projected["cache_s"] + projected["train_s"] + measured["fixed_s"],
                                                 abs=0.2)
    assert measured["wall_s"] >= measured["cache_s"] + measured["train_s"] > 0


def test_time_check_projection_scales_per_token_and_epoch():
    from envsim.training.sft_time_check import minutes, project

    measured = {"tokens": 1000, "cache_s": 10.0, "train_s": 20.0, "fixed_s": 5.0}
    assert project(measured, 10_000, 3) == {"cache_s": 100.0, "train_s": 600.0, "fixed_s": 5.0, "total_s": 705.0}
    assert minutes(705.0) == "12 min" and minutes(26_000) == "7 h 13 min"

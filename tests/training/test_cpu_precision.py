"""bfloat16 autocast in the CPU trainers (``training.cpu_precision``): ``auto`` follows the CPU's flags, the bf16
loss of a sample stays within bfloat16's rounding of the fp32 one, the gradient still reaches only the trainable
layers, and ``--no-bf16`` / the resolved precision are recorded with the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envsim.training.cpu_precision import cpu_flags, native_bf16, resolve_precision

EPYC_FLAGS = "fpu vme avx2 fma avx512f avx512_bf16 avx512_vnni"


def test_auto_follows_the_cpu_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(f"processor\t: 0\nflags\t\t: {EPYC_FLAGS}\n\nprocessor\t: 1\nflags\t\t: {EPYC_FLAGS}\n")
    assert "avx512_bf16" in cpu_flags(info)
    assert native_bf16(cpu_flags(info)) and resolve_precision("auto", cpu_flags(info)) == "bf16"
    assert resolve_precision("auto", {"avx2", "fma", "avx512f"}) == "fp32"
    assert resolve_precision("auto", {"amx_bf16", "amx_tile"}) == "bf16"
    assert resolve_precision("bf16", set()) == "bf16" and resolve_precision("fp32", {"avx512_bf16"}) == "fp32"
    assert cpu_flags(tmp_path / "missing") == set()
    with pytest.raises(ValueError, match="unknown precision"):
        resolve_precision("fp16")


torch = pytest.importorskip("torch", reason="needs the [train] extra")
pytest.importorskip("transformers", reason="needs the [train] extra")


@pytest.mark.train
def test_bf16_loss_is_the_fp32_loss_within_rounding_and_trains_the_last_layers(tmp_path):
    from transformers import AutoModelForCausalLM

    from envsim.training.grpo_cpu import freeze_all_but_last
    from envsim.training.rl import _tokenizer
    from envsim.training.sft_cpu import FrozenActivations, TokenizedSample, answer_loss
    from envsim.training.tiny_model import build_tiny_model

    texts = [f'{{"observation": {{"id": "R-{i}", "ok": true}}, "patch": []}}' for i in range(40)]
    build_tiny_model(tmp_path / "model", texts, hidden_size=64, layers=3, tie_embeddings=False)
    tokenizer = _tokenizer(str(tmp_path / "model"))
    model = AutoModelForCausalLM.from_pretrained(str(tmp_path / "model"), dtype=torch.float32)
    trainable = freeze_all_but_last(model, 2)
    ids = tokenizer(texts[3] + texts[5], add_special_tokens=False)["input_ids"]
    sample = TokenizedSample("s", ids[:-8], ids[-8:])
    losses = {}
    for precision in ("fp32", "bf16"):
        cached = FrozenActivations(model, 2, (), precision)(sample.prompt_ids + sample.answer_ids[:-1])
        loss, _ = answer_loss(model, cached, sample, 2, precision)
        assert loss.dtype == torch.float32                    # the loss comes from fp32 logits
        model.zero_grad(set_to_none=True)
        loss.backward()
        assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in trainable)
        assert all(p.grad is None for p in model.parameters() if not p.requires_grad)
        losses[precision] = float(loss.detach())
    assert losses["bf16"] == pytest.approx(losses["fp32"], rel=3e-2)
    assert losses["bf16"] != losses["fp32"]                   # the products did run in bfloat16


@pytest.mark.train
def test_cli_records_the_precision_and_no_bf16_keeps_fp32(tmp_path):
    from click.testing import CliRunner

    from envsim.cli import main
    from envsim.training.tiny_model import build_tiny_model, texts_from_sft
    from envsim.training.sft_cpu import dataset_file

    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps({"name": "tiny", "prompt_mode": "mdp-view", "prompt_version": "3",
                                  "envs": ["spa_appointments-v1"], "rollout": {"seed": 13, "episodes": 1, "steps": 10},
                                  "cells": [{"stratum": "failure", "n": 2}]}))
    made = CliRunner().invoke(main, ["train", "data", "--recipe", str(recipe), "--out", str(tmp_path / "data")])
    assert made.exit_code == 0, made.output
    build_tiny_model(tmp_path / "model", texts_from_sft(dataset_file(tmp_path / "data")), hidden_size=32, layers=2)
    base = ["train", "sft", "--model", str(tmp_path / "model"), "--data", str(tmp_path / "data"), "--device", "cpu",
            "--finetuning", "freeze", "--freeze-layers", "1", "--epochs", "1", "--batch", "2", "--threads", "1"]
    for flag, expected in (([], resolve_precision("auto")), (["--no-bf16"], "fp32")):
        out = tmp_path / f"run{len(flag)}"
        result = CliRunner().invoke(main, [*base, "--out", str(out), *flag])
        assert result.exit_code == 0, result.output
        config = json.loads((out / "sft_cpu_config.json").read_text())
        assert config["precision"] == ("fp32" if flag else "auto")
        assert config["precision_resolved"] == expected
        assert json.loads((out / "summary.json").read_text())["precision"] == expected

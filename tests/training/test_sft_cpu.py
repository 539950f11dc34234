"""Real training steps on CPU: tiny local model -> envsim train data -> envsim train sft (llamafactory-cli)
-> envsim serve -> envsim eval. (GRPO steps run in test_learning_cpu.py, from the checkpoint that learned.)

Runs where the [train] extra is installed (CI installs it in a second virtual environment)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("llamafactory", reason="needs the [train] extra")
pytestmark = pytest.mark.train

from envsim.cli import main  # noqa: E402
from envsim.construction.splits import training_envs  # noqa: E402
from envsim.envs.registry import list_envs  # noqa: E402
from envsim.training.data import build_sft_data  # noqa: E402

RECIPE = {"name": "cpu_smoke", "prompt_mode": "mdp", "rollout": {"seed": 5, "episodes": 1, "steps": 20},
          "cells": [{"stratum": "failure", "n": 4}, {"stratum": "no_change", "n": 4}, {"stratum": "simple", "n": 4},
                    {"delta_range": [3, 12], "n": 4}]}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> dict[str, Path]:
    """SFT data of 4 training envs, a tiny model built on it, and 2 real LLaMA-Factory SFT steps."""
    import os
    import sys

    root = tmp_path_factory.mktemp("smoke")
    data = root / "data"
    build_sft_data(RECIPE, data, env_ids=training_envs([e.id for e in list_envs() if e.builtin])[:4])
    runner = CliRunner()
    built = runner.invoke(main, ["train", "tiny-model", "--data", str(data), "--out", str(root / "tiny")])
    assert built.exit_code == 0, built.output
    old_path = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{old_path}"
    try:
        assert shutil.which("llamafactory-cli")
        sft = runner.invoke(main, ["train", "sft", "--model", str(root / "tiny"), "--data", str(data),
                                   "--out", str(root / "sft"), "--cutoff", "4096", "--batch", "2", "--max-steps", "2",
                                   "--no-bf16"])
    finally:
        os.environ["PATH"] = old_path
    return {"data": data, "tiny": root / "tiny", "sft": root / "sft" / "checkpoints", "built": built.output,
            "sft_output": sft.output, "sft_exit": sft.exit_code}


def test_tiny_model_then_real_llamafactory_sft_steps(smoke):
    info = json.loads(smoke["built"][smoke["built"].rindex('{"model_dir"'):])
    assert info["parameters"] < 1_000_000
    assert (smoke["tiny"] / "model.safetensors").exists() and (smoke["tiny"] / "tokenizer.json").exists()
    assert smoke["sft_exit"] == 0, smoke["sft_output"]
    assert (smoke["sft"] / "model.safetensors").exists()
    state = json.loads((smoke["sft"] / "trainer_state.json").read_text())
    assert state["global_step"] == 2


def test_serve_trained_tiny_model_and_evaluate(smoke, tmp_path, serve_and_evaluate):
    """tiny model -> 2 SFT steps -> envsim serve (transformers) -> envsim eval --limit 20: a complete run directory."""
    assert smoke["sft_exit"] == 0, smoke["sft_output"]
    summary = serve_and_evaluate(smoke["sft"], tmp_path / "eval")
    assert summary["scored"] == 20 and summary["infra_failures"] == 0


def test_freeze_finetuning_trains_only_the_last_layers(smoke, tmp_path):
    """``--finetuning freeze --freeze-layers 1`` on the 2-layer tiny model: layer 1 moves, layer 0 and the
    embeddings stay exactly as they were (what makes it cheap: no backward pass below the trained layers)."""
    import os
    import sys

    from safetensors.torch import load_file

    old_path = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{old_path}"
    try:
        result = CliRunner().invoke(main, ["train", "sft", "--model", str(smoke["tiny"]), "--data", str(smoke["data"]),
                                           "--out", str(tmp_path / "freeze"), "--cutoff", "4096", "--batch", "2",
                                           "--max-steps", "2", "--lr", "1e-3", "--no-bf16", "--finetuning", "freeze",
                                           "--freeze-layers", "1", "--no-gradient-checkpointing"])
    finally:
        os.environ["PATH"] = old_path
    assert result.exit_code == 0, result.output
    before = load_file(str(smoke["tiny"] / "model.safetensors"))
    after = load_file(str(tmp_path / "freeze" / "checkpoints" / "model.safetensors"))
    assert set(after) <= set(before)
    changed = {name for name in after if not before[name].equal(after[name])}
    assert changed and all(name.startswith("model.layers.1.") for name in changed), sorted(changed)
    assert not any(name.startswith(("model.layers.0.", "model.embed_tokens")) for name in changed)

"""The CPU GRPO loop without torch: group-relative advantages and the CLI's checks (dry run)."""

from __future__ import annotations

import math

import pytest

from envsim.training.grpo_cpu import EPS, group_advantages


def test_group_advantages_are_normalised_within_each_group():
    rewards = [1.0, 0.0, 0.0, 0.0, 2.2, 2.2, 0.2, 0.2, 0.5, 0.5, 0.5, 0.5]
    advantages, zero = group_advantages(rewards, 4)
    assert zero == 1 and advantages[8:] == [0.0] * 4
    std = math.sqrt(sum((r - 0.25) ** 2 for r in rewards[:4]) / 3)          # unbiased, as TRL
    assert advantages[:4] == pytest.approx([(r - 0.25) / (std + EPS) for r in rewards[:4]])
    for start in (0, 4):
        group = advantages[start:start + 4]
        assert sum(group) == pytest.approx(0.0, abs=1e-9)
        assert math.sqrt(sum(a * a for a in group) / 3) == pytest.approx(1.0, abs=1e-3)
    assert group_advantages([0.2, 0.2], 2) == ([0.0, 0.0], 1)


def test_cli_generator_dry_run_prints_the_cpu_loop_settings(tmp_path):
    import json

    from click.testing import CliRunner

    from envsim.cli import main
    from envsim.construction.pipeline import build_pool, write_jsonl
    from envsim.construction.splits import training_envs
    from envsim.envs.registry import list_envs

    records = tmp_path / "records.jsonl"
    write_jsonl(build_pool(training_envs([e.id for e in list_envs() if e.builtin])[:1], 0, 1, 4, "train"), records)
    base = ["train", "rl", "--model", "m", "--records", str(records), "--out", str(tmp_path / "rl"),
            "--generator", "llama.cpp", "--num-generations", "4", "--batch", "8"]
    result = CliRunner().invoke(main, [*base, "--device", "cpu", "--dry-run", "--sync-every", "3"])
    assert result.exit_code == 0, result.output
    settings = json.loads(result.output)
    assert (settings["generator"], settings["sync_every"], settings["freeze_layers"]) == ("llama.cpp", 3, 4)
    assert settings["output_dir"] == str((tmp_path / "rl").resolve())
    refused = CliRunner().invoke(main, [*base, "--device", "cuda", "--dry-run"])
    assert refused.exit_code != 0 and "--device cpu" in refused.output
    odd = CliRunner().invoke(main, [*base[:-2], "--batch", "6", "--device", "cpu", "--dry-run"])
    assert odd.exit_code != 0 and "multiple of --num-generations" in odd.output

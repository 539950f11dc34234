"""The honest learning check, then RL from the checkpoint that learned.

Real SFT steps on CPU must raise the parse-valid rate and no-change CM on held-out samples (from
environments the model never saw) over the untrained tiny model. Then ``envsim train rl`` runs two
GRPO steps from that checkpoint: its completions are often valid, so the rewards are not all zero,
and every logged reward must equal our scorer's verdict. The policy is served and evaluated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("llamafactory", reason="needs the [train] extra")
pytestmark = pytest.mark.train

from envsim.cli import main  # noqa: E402
from envsim.evaluation.scoring.parsing import parse_answer  # noqa: E402
from envsim.evaluation.scoring.scoring import score_prediction  # noqa: E402
from envsim.training.learning_check import LearningCheckSettings, run_learning_check  # noqa: E402
from envsim.training.rewards import COMPONENTS, RewardWeights  # noqa: E402


@pytest.fixture(scope="module")
def learned(tmp_path_factory) -> tuple[Path, dict]:
    """The learning check's work directory and figures (about 5 minutes on 2 cores)."""
    work = tmp_path_factory.mktemp("learning")
    return work, run_learning_check(work, LearningCheckSettings())


def test_sft_raises_parse_valid_rate_and_no_change_cm_on_held_out_samples(learned):
    _, figures = learned
    before, after = figures["before"], figures["after"]
    assert figures["heldout_samples"] == 32 and figures["train_samples"] >= 200
    assert not set(figures["heldout_envs"]) & {json.loads(line)["env"] for line in
                                               (learned[0] / "data" / "learning_check.records.jsonl").open()}
    assert before["parse_valid"] <= 0.05 and before["cm_by_stratum"]["no_change"] <= 0.05
    assert after["parse_valid"] >= before["parse_valid"] + 0.25, figures
    assert after["cm_by_stratum"]["no_change"] >= before["cm_by_stratum"]["no_change"] + 0.25, figures


def test_two_grpo_steps_rewarded_by_our_scorer_then_serve_and_evaluate(learned, tmp_path, serve_and_evaluate):
    work, _ = learned
    records_path = work / "data" / "learning_check.records.jsonl"
    run = tmp_path / "rl"
    result = CliRunner().invoke(main, ["train", "rl", "--model", str(work / "sft" / "checkpoints"), "--records",
                                       str(records_path), "--out", str(run), "--device", "cpu", "--num-generations",
                                       "4", "--batch", "4", "--max-completion-length", "64", "--max-steps", "2",
                                       "--lr", "1e-4", "--fm-weight", "0.5",
                                       "--prompt-version", "1"])   # the learning check's SFT data is version 1
    assert result.exit_code == 0, result.output
    policy = run / "policy"
    assert (policy / "model.safetensors").exists() and (policy / "tokenizer.json").exists()
    assert json.loads((policy / "trainer_state.json").read_text())["global_step"] == 2
    steps = [json.loads(line) for line in (policy / "rewards.jsonl").read_text().splitlines()]
    assert len(steps) == 2
    for component in COMPONENTS:
        assert all(f"rewards/envsim_{component}/mean" in step for step in steps)
    records = {json.loads(line)["id"]: json.loads(line) for line in records_path.read_text().splitlines()}
    logged = [json.loads(line) for line in (policy / "completions.jsonl").read_text().splitlines()]
    assert len(logged) == 8 and sorted({row["step"] for row in logged}) == [0, 1]   # 2 steps x 4 completions
    for row in logged:                                  # every logged verdict is the scorer's
        score = score_prediction(records[row["record_id"]], parse_answer(row["text"]))
        assert (row["format"], row["fm"], row["cm"]) == (float(score.parsed), float(score.fm), float(score.cm))
    assert sum(row["format"] for row in logged) > 0     # the learned policy writes valid answers
    weights = RewardWeights(cm=1.0, fm=0.5, format=0.2)
    for index, step in enumerate(steps):                # and TRL optimised exactly their weighted sum
        group = [row for row in logged if row["step"] == index]
        mean = sum(sum(w * r[c] for w, c in zip(weights.as_list(), COMPONENTS)) for r in group) / len(group)
        assert step["reward"] == pytest.approx(mean, abs=1e-6)
    summary = serve_and_evaluate(policy, tmp_path / "eval")
    assert summary["scored"] == 20 and summary["infra_failures"] == 0

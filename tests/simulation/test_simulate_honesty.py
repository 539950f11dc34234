"""``envsim simulate`` tells the truth about a failed simulator (issue 24 item 1): the eval preflight and
exit codes, fallback steps never counted as matches, fallbacks at the top of drift.md and on the console,
``--max-fallback-rate`` and trajectories with fallback steps kept out of the training file."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from envsim.cli import main

DEAD_URL = "http://127.0.0.1:9/v1"   # the discard port: nothing listens there


def _simulate(out: Path, *extra: str) -> object:
    args = ["simulate", "--env", "online_store-v1", "--episodes", "2", "--steps", "3", "--out", str(out), *extra]
    return CliRunner().invoke(main, args)


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_dead_simulator_fails_preflight_with_exit_1_and_writes_nothing(tmp_path):
    result = _simulate(tmp_path / "port9", "--simulator", "my-sim", "--base-url", DEAD_URL)
    assert result.exit_code == 1
    assert "preflight failed" in result.stderr and "127.0.0.1:9" in result.stderr
    assert not (tmp_path / "port9").exists()


def test_misspelt_builtin_simulator_is_a_clear_error(tmp_path):
    result = _simulate(tmp_path / "nul", "--simulator", "nul")
    assert result.exit_code == 1
    assert "did you mean 'null'" in result.stderr
    assert not (tmp_path / "nul").exists()


def test_unreachable_simulator_without_preflight_is_all_misses_and_exits_3(tmp_path):
    out = tmp_path / "port9"
    result = _simulate(out, "--simulator", "my-sim", "--base-url", DEAD_URL, "--no-preflight", "--max-attempts", "1")
    assert result.exit_code == 3, result.output
    assert "6 fallback steps" in result.output and "APIConnectionError" in result.stderr
    assert "above --max-fallback-rate 0" in result.stderr and "exit code 3" in result.stderr
    steps = _rows(out / "steps.jsonl")
    assert len(steps) == 6 and all(s["fallback"] and s["fm"] is False and s["cm"] is False for s in steps)
    drift = json.loads((out / "drift.json").read_text())
    assert drift["cm_at_k"] == {"1": 0.0, "2": 0.0, "3": 0.0}
    assert drift["fallback_steps"] == 6 and drift["fallback_rate"] == 1.0
    head = (out / "drift.md").read_text().splitlines()[2]     # right under the title
    assert head.startswith("**6 of 6 steps (100.0%)") and "APIConnectionError" in head
    assert (out / "trajectories.jsonl").read_text() == ""    # the training file holds no error trajectory
    held = _rows(out / "fallback_trajectories.jsonl")
    assert [row["fallback_steps"] for row in held] == [3, 3]


def test_fallback_rate_threshold_and_include_flag(tmp_path):
    out = tmp_path / "lenient"
    result = _simulate(out, "--simulator", "my-sim", "--base-url", DEAD_URL, "--no-preflight", "--max-attempts", "1",
                       "--max-fallback-rate", "1", "--include-fallbacks")
    assert result.exit_code == 0, result.output
    kept = _rows(out / "trajectories.jsonl")
    assert [row["fallback_steps"] for row in kept] == [3, 3]
    assert not (out / "fallback_trajectories.jsonl").exists()


def test_clean_run_exits_0_with_every_trajectory_in_the_training_file(tmp_path):
    out = tmp_path / "oracle"
    result = _simulate(out, "--simulator", "oracle")
    assert result.exit_code == 0, result.output
    assert "0 fallback steps (0.0%)" in result.output
    assert [row["fallback_steps"] for row in _rows(out / "trajectories.jsonl")] == [0, 0]
    assert not (out / "drift.md").read_text().splitlines()[2].startswith("**")

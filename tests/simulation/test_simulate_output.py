"""``envsim simulate`` output (issue 29 items 5 and 6): progress like ``envsim eval`` (``--no-progress`` turns
it off), and every file written through the safe writer, so a lone surrogate in a simulator's answer is
escaped instead of crashing the run after all its episodes were played."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from click.testing import CliRunner

from envsim.cli import main
from envsim.envs.registry import get_env
from envsim.evaluation.endpoints.providers import Generation
from envsim.simulation.simulate import simulate


def _simulate(out: Path, *extra: str, env: dict[str, str] | None = None, args: list[str] | None = None):
    command = ["simulate", "--env", "online_store-v1", "--simulator", "oracle", "--episodes", "3", "--steps", "2",
               "--out", str(out), *extra, *(args or [])]
    return CliRunner().invoke(main, command, env=env)


def test_simulate_shows_progress_lines_and_no_progress_silences_them(tmp_path):
    shown = _simulate(tmp_path / "shown", env={"ENVSIM_PROGRESS": "lines"})
    assert shown.exit_code == 0, shown.output
    lines = [line for line in shown.stderr.splitlines() if line.startswith("simulate oracle:")]
    assert lines and "\r" not in shown.stderr
    assert lines[-1].startswith("simulate oracle: 3/3 episode (100%)"), lines
    assert "steps=6" in lines[-1] and "fallback=0" in lines[-1] and "diverged=0" in lines[-1]
    quiet = _simulate(tmp_path / "quiet", "--no-progress", env={"ENVSIM_PROGRESS": "lines"})
    assert quiet.exit_code == 0, quiet.output
    assert "simulate oracle" not in quiet.stderr and "3 episodes, 6 steps" in quiet.stdout
    assert (tmp_path / "shown" / "steps.jsonl").read_text().count("\n") == 6


class SurrogateSimulator:
    """Answers a lone surrogate (valid JSON, not encodable UTF-8): in the observation, or in a patch path
    (which does not apply, so the fallback reason quotes it)."""

    name = "surrogate"

    def __init__(self, where: str) -> None:
        self.where = where

    async def generate(self, messages: list[dict[str, str]], record: dict) -> Generation:
        if self.where == "observation":
            return Generation('{"observation": {"success": true, "note": "bad \\ud800 text"}, "patch": []}')
        return Generation('{"observation": {"success": true}, "patch": '
                          '[{"op": "replace", "path": "/\\ud800", "value": 1}]}')

    def should_retry(self, exc: BaseException) -> bool:
        return False


def _run(tmp_path: Path, where: str, monkeypatch) -> tuple[Path, object]:
    monkeypatch.setenv("ENVSIM_PROGRESS", "off")
    out = tmp_path / where
    run = asyncio.run(simulate([get_env("online_store-v1")], SurrogateSimulator(where), out, episodes=2, steps=2,
                               max_attempts=1, include_fallbacks=True))
    return out, run


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().decode("utf-8").splitlines()]   # strict UTF-8


def test_lone_surrogate_in_an_observation_is_written_escaped(tmp_path, monkeypatch):
    out, run = _run(tmp_path, "observation", monkeypatch)
    assert run.stats["steps"] == 4 and run.fallbacks["fallback_steps"] == 0
    steps = _rows(out / "steps.jsonl")
    assert len(steps) == 4 and all(s["observation"]["note"] == "bad \ud800 text" for s in steps)
    trajectories = _rows(out / "trajectories.jsonl")
    observations = [json.loads(turn["value"]) for row in trajectories for turn in row["conversations"]
                    if turn["from"] == "observation"]
    assert len(trajectories) == 2 and [o["note"] for o in observations] == ["bad \ud800 text"] * 4
    lines = (out / "steps.jsonl").read_text(encoding="utf-8").splitlines()
    assert all("\\ud800" in line for line in lines)                    # escaped, the rest stays as it was


def test_lone_surrogate_in_a_fallback_reason_is_written_escaped(tmp_path, monkeypatch):
    out, run = _run(tmp_path, "patch", monkeypatch)
    assert run.fallbacks["fallback_steps"] == 4
    steps = _rows(out / "steps.jsonl")
    assert all(s["fallback"] and "\ud800" in s["reason"] for s in steps)
    assert [row["fallback_steps"] for row in _rows(out / "trajectories.jsonl")] == [2, 2]
    drift = (out / "drift.md").read_bytes().decode("utf-8")
    assert "replace /\\ud800" in drift and "**4 of 4 steps" in drift


def test_the_executor_baseline_simulates_from_its_prompts_alone(tmp_path):
    result = _simulate(tmp_path / "executor", "--no-progress", "--prompt-mode", "mdp",
                       args=["--simulator", "executor"])
    assert result.exit_code == 0, result.output
    stats = json.loads((tmp_path / "executor" / "stats.json").read_text())
    assert stats["steps"] == 6 and stats["fallback_steps"] == 0, stats
    drift = json.loads((tmp_path / "executor" / "drift.json").read_text())
    assert drift["diverged_episodes"] == 0, drift
    misspelt = _simulate(tmp_path / "misspelt", args=["--simulator", "executr"])
    assert misspelt.exit_code == 1 and "did you mean 'executor'" in misspelt.output

"""The rollout track cannot be gamed: a no-change baseline scores nothing, a dead endpoint scores nothing
(its episodes are infrastructure failures, retried by a re-run), and the drift plot reads honestly."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envsim.benchmark import load
from envsim.envs.registry import get_env
from envsim.evaluation.endpoints.providers import NullProvider, OpenAICompatibleProvider, OracleProvider
from envsim.simulation.agents import ChangingStartAgent, stable_seed
from envsim.simulation.drift import DASH, drift_figure, drift_markdown, drift_report
from envsim.simulation.rollout_track import run_rollout_track

HORIZON = 4


@pytest.fixture(scope="module")
def held_out_envs() -> list[str]:
    """Six held-out environments of the shipped v1 test split."""
    return sorted({r["env"] for r in load("v1", "test")})[:6]


def _run(env_ids: list[str], provider, out: Path, episodes: int = 2) -> dict:
    return asyncio.run(run_rollout_track(env_ids, provider, out, episodes=episodes, horizon=HORIZON))


def _episodes(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def null_run(held_out_envs, tmp_path_factory) -> tuple[dict, list[dict]]:
    out = tmp_path_factory.mktemp("null")
    return _run(held_out_envs, NullProvider(), out), _episodes(out)


def test_null_baseline_scores_nothing(null_run):
    report, _ = null_run
    assert report["scored"] == 12 and report["infra_failures"] == 0
    assert report["cm_at_k"] == {str(k): 0.0 for k in range(1, HORIZON + 1)}
    assert report["cm_at_k_changed"] == {str(k): 0.0 for k in range(1, HORIZON + 1)}
    assert report["cm_at_k_changed_n"]["1"] == 12
    assert report["by_step"]["1"]["cm"] == 0.0 and report["by_step"]["1"]["n_changed"] == 12
    assert report["first_divergence_histogram"]["1"] == 12


def test_oracle_scores_everything(held_out_envs, tmp_path):
    report = _run(held_out_envs, OracleProvider(), tmp_path)
    assert report["scored"] == 12 and report["diverged_episodes"] == 0
    assert set(report["cm_at_k"].values()) == {1.0} and set(report["cm_at_k_changed"].values()) == {1.0}
    assert all(s["cm"] == 1.0 and s["fm"] == 1.0 for s in report["by_step"].values())
    assert all(s["cm_changed"] in (1.0, None) for s in report["by_step"].values())


def test_every_first_step_changes_the_true_state(null_run):
    _, episodes = null_run
    for episode in episodes:
        assert episode["status"] == "scored"
        first = episode["steps"][0]
        if episode["first_step_changes_state"] is False:   # recorded fallback: no state-changing call found
            continue
        assert episode["first_step_changes_state"] is True and first["true_delta_size"] > 0, episode["env"]


def test_explorer_is_seeded_per_environment(null_run, held_out_envs):
    _, episodes = null_run
    patterns = set()
    for episode in episodes:
        specs = get_env(episode["env"]).tool_specs()
        patterns.add(tuple(specs[s["action"]["name"]].write for s in episode["steps"]))
    assert len(patterns) > 1
    first_draws = [ChangingStartAgent(get_env(e), 0).policy.rng.random() for e in held_out_envs]
    assert len(set(first_draws)) == len(held_out_envs)
    assert ChangingStartAgent(get_env(held_out_envs[0]), 0).policy.rng.random() == first_draws[0]


def test_stable_seed_does_not_depend_on_the_hash_salt():
    code = "from envsim.simulation.agents import stable_seed; print(stable_seed('online_store-v1', 3))"
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": salt}).stdout.strip() for salt in ("1", "2")}
    assert seen == {str(stable_seed("online_store-v1", 3))}
    assert stable_seed("online_store-v1", 3) != stable_seed("online_store-v1", 4)


def test_dead_endpoint_is_an_infrastructure_failure_and_is_retried(held_out_envs, tmp_path):
    env_ids = held_out_envs[:2]
    dead = OpenAICompatibleProvider("m", base_url="http://127.0.0.1:9/v1", timeout=2.0)
    report = _run(env_ids, dead, tmp_path)
    assert report["scored"] == 0 and report["infra_failures"] == 4
    assert sum(report["infra_failure_reasons"].values()) == 4
    assert all(r.startswith("request failed") for r in report["infra_failure_reasons"])
    assert report["by_step"] == {} and report["first_divergence_histogram"]["never"] == 0
    rows = _episodes(tmp_path)
    assert [r["status"] for r in rows] == ["infra_failure"] * 4
    assert all(len(r["steps"]) == 1 and r["steps"][0]["fallback"] for r in rows)   # the agent stopped at once
    assert (tmp_path / "trajectories.jsonl").read_text() == ""
    markdown = (tmp_path / "drift.md").read_text()
    assert "4 infrastructure failures" in markdown and f"| 1 | 0 | {DASH} | {DASH} |" in markdown

    resumed = _run(env_ids, OracleProvider(), tmp_path)                     # a re-run retries them
    assert resumed["scored"] == 4 and resumed["infra_failures"] == 0 and resumed["cm_at_k"]["1"] == 1.0
    assert len(_episodes(tmp_path)) == 8

    again = _run(env_ids, dead, tmp_path)                                   # scored episodes are kept
    assert again["scored"] == 4 and len(_episodes(tmp_path)) == 8


def test_rows_without_status_count_as_scored(held_out_envs, tmp_path):
    _run(held_out_envs[:1], OracleProvider(), tmp_path, episodes=1)
    row = _episodes(tmp_path)[0]
    row.pop("status")
    (tmp_path / "episodes.jsonl").write_text(json.dumps(row) + "\n")
    dead = OpenAICompatibleProvider("m", base_url="http://127.0.0.1:9/v1", timeout=2.0)
    report = _run(held_out_envs[:1], dead, tmp_path, episodes=1)
    assert report["scored"] == 1 and report["infra_failures"] == 0 and len(_episodes(tmp_path)) == 1


def test_drift_figure_has_integer_step_ticks_and_ordered_histogram(null_run):
    report, _ = null_run
    shuffled = dict(reversed(list(report["first_divergence_histogram"].items())))   # "never" first
    fig = drift_figure({**report, "first_divergence_histogram": shuffled}, "null")
    left, right = fig.axes[:2]
    ticks = list(left.get_xticks())
    assert ticks == [1, 2, 3, 4] and all(float(t).is_integer() for t in ticks)
    assert all(float(t).is_integer() for t in right.get_yticks())
    assert [t.get_text() for t in right.get_xticklabels()] == ["1", "2", "3", "4", "never"]
    assert "n=12 / 12" in left.get_xticklabels()[0].get_text()
    labels = fig.legends[0].get_texts()
    assert len(labels) == 5 and any("true change by step k" in t.get_text() for t in labels)
    markers = {line.get_marker() for line in left.get_lines()}
    assert len(markers) == 5                                                   # every line distinguishable


def test_markdown_shows_empty_groups_as_a_dash():
    episode = {"env": "e", "seed": 0, "first_divergence": None,
               "steps": [{"index": 0, "fm": True, "cm": True, "true_delta_size": 0}]}
    text = drift_markdown(drift_report([episode], 2), "t")
    assert f"| 1 | 1 | 100.0 | 100.0 | 0 | {DASH} | 100.0 (1) | {DASH} (0) |" in text
    assert f"| 2 | 0 | {DASH} | {DASH} | 0 | {DASH} |" in text


@pytest.mark.parametrize("version", ["1", "2"])
def test_rollout_track_sends_the_requested_prompt_version(held_out_envs, tmp_path, version):
    from envsim.evaluation.prompting.prompts import system_prompt
    from tests.fixtures.recording_provider import SystemPromptRecorder

    recording = SystemPromptRecorder()
    asyncio.run(run_rollout_track(held_out_envs[:1], recording, tmp_path, episodes=1, horizon=2,
                                  prompt_version=version))
    assert recording.systems == {system_prompt(version)}

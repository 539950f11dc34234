"""``envsim simulate`` on τ-bench domains with views: the full database tracked, the simulator shown the view
of each call (prompt mode mdp-view, version 3), shadow drift measured against the real database."""

from __future__ import annotations

import asyncio
import json

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.envs.registry import get_env
from envsim.envs.views.oracle import view_oracle_answer
from envsim.evaluation.endpoints.providers import Generation
from envsim.simulation.simulate import simulate

pytestmark = pytest.mark.tau  # every test here steps τ-bench's real environments


class ViewOnlySimulator:
    """Answers from the view alone: the real tool run on the view its prompt shows (never on the full state)."""

    name = "view-oracle"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def generate(self, messages, record):
        self.prompts.append(messages[-1]["content"])
        return Generation(json.dumps(view_oracle_answer(record)))

    def should_retry(self, exc):
        return False


@pytest.mark.slow
def test_a_simulator_shown_only_views_tracks_the_full_database_without_drift(tmp_path):
    simulator = ViewOnlySimulator()
    run = asyncio.run(simulate([get_env("tau/retail"), get_env("tau/airline")], simulator, tmp_path, episodes=1,
                               steps=3, prompt_mode="mdp-view", prompt_version="3"))
    assert run.stats["steps"] == 6 and run.fallbacks["fallback_steps"] == 0
    assert run.drift["diverged_episodes"] == 0  # CM against the real database after every step
    assert all(p.startswith("Environment: tau/") and "State view" in p and len(p) < 100_000 for p in simulator.prompts)
    assert all(s["cm"] and s["fm"] for e in run.episodes for s in e["steps"])


@pytest.mark.slow
def test_simulate_cli_on_tau_with_views(tmp_path):
    oracle = CliRunner().invoke(main, ["simulate", "--env", "tau/retail", "--simulator", "oracle", "--prompt-mode",
                                       "mdp-view", "--episodes", "1", "--steps", "3", "--out", str(tmp_path / "o")])
    assert oracle.exit_code == 0, oracle.output
    assert "diverged episodes: 0/1" in oracle.output
    null = CliRunner().invoke(main, ["simulate", "--env", "tau/airline", "--simulator", "null", "--prompt-mode",
                                     "mdp-view", "--episodes", "2", "--steps", "2", "--out", str(tmp_path / "n")])
    assert null.exit_code == 0, null.output  # a wrong simulator is drift, not a failed run
    steps = [json.loads(line) for line in (tmp_path / "n" / "steps.jsonl").read_text().splitlines()]
    assert len(steps) == 4 and all(s["env"] == "tau/airline" and s["true_observation"] is not None for s in steps)
    assert json.loads((tmp_path / "n" / "drift.json").read_text())["episodes"] == 2

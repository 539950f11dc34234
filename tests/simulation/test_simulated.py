"""Simulated environments: shadow-mode drift, fallback policy, envsim simulate, RL wrapper, rollout track."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.envs.registry import get_env, list_envs
from envsim.evaluation.baselines.fake_server import FakeOpenAIServer
from envsim.evaluation.endpoints.providers import NullProvider, OracleProvider
from envsim.simulation.agents import ExplorerAgent
from envsim.simulation.rl_env import SimulatedToolEnv, Task
from envsim.simulation.simulate import run_episode
from envsim.simulation.simulated import FALLBACK_PREFIX, EnvSpec, SimulatedEnvironment

import asyncio


def _episode(env_id: str, provider, seed: int, steps: int) -> dict:
    cls = get_env(env_id)
    env = SimulatedEnvironment(EnvSpec.from_class(cls), provider, shadow=True)
    return asyncio.run(run_episode(env, ExplorerAgent(cls, seed), seed, steps))


@pytest.mark.slow
def test_oracle_never_diverges_over_100_episodes_in_20_envs():
    env_ids = [e.id for e in list_envs() if e.builtin][:20]
    assert len(env_ids) == 20
    episodes = [_episode(env_id, OracleProvider(), seed, 6) for env_id in env_ids for seed in range(5)]
    assert len(episodes) == 100
    assert all(e["first_divergence"] is None for e in episodes)
    assert all(s["cm"] and s["fm"] for e in episodes for s in e["steps"])


def test_null_diverges_at_the_first_state_changing_step():
    changed = 0
    for seed in range(10):
        episode = _episode("online_store-v1", NullProvider(), seed, 8)
        first_change = next((s["index"] for s in episode["steps"] if s["true_delta_size"]), None)
        assert episode["first_divergence"] == first_change
        changed += first_change is not None
    assert changed >= 5


def test_schema_only_spec_runs_without_shadow():
    cls = get_env("online_store-v1")
    full = EnvSpec.from_class(cls)
    spec = EnvSpec.from_code("online_store-v1", full.tools, full.code, [cls.sample_state(0)])
    env = SimulatedEnvironment(spec, OracleProvider())
    state = env.reset(0)
    order_id = next(iter(state["orders"]))
    observation = env.step({"name": "get_order", "arguments": {"order_id": order_id}})
    assert observation["success"] and env.state == state
    with pytest.raises(ValueError, match="shadow mode needs a runnable"):
        SimulatedEnvironment(spec, OracleProvider(), shadow=True)
    env.close()


def test_simulate_cli_against_local_server_with_corrupt_outputs(tmp_path):
    with FakeOpenAIServer([]) as server:
        runner = CliRunner()
        good = runner.invoke(main, ["simulate", "--env", "online_store-v1", "--simulator", "corrupt-once",
                                    "--base-url", server.base_url, "--episodes", "2", "--steps", "4",
                                    "--price-in", "1.0", "--price-out", "2.0", "--out", str(tmp_path / "ok")])
        assert good.exit_code == 0, good.output
        bad = runner.invoke(main, ["simulate", "--env", "online_store-v1", "--simulator", "corrupt",
                                   "--base-url", server.base_url, "--episodes", "1", "--steps", "3",
                                   "--max-attempts", "2", "--out", str(tmp_path / "bad")])
        assert bad.exit_code == 3, bad.output      # every step a fallback: above the default --max-fallback-rate 0
    ok = tmp_path / "ok"
    for name in ("trajectories.jsonl", "steps.jsonl", "stats.json", "drift.json", "drift.md", "drift.png"):
        assert (ok / name).exists(), name
    trajectory = json.loads((ok / "trajectories.jsonl").read_text().splitlines()[0])
    roles = [turn["from"] for turn in trajectory["conversations"]]
    assert roles[:2] == ["system", "human"] and roles[2:] == ["function_call", "observation"] * 4
    assert json.loads(trajectory["tools"])[0]["type"] == "function"
    stats = json.loads((ok / "stats.json").read_text())
    assert stats["steps"] == 8 and stats["retries"] == 8 and stats["fallback_steps"] == 0
    assert stats["prompt_tokens"] > 0 and stats["cost"] > 0
    assert json.loads((ok / "drift.json").read_text())["diverged_episodes"] == 0
    steps = [json.loads(l) for l in (tmp_path / "bad" / "steps.jsonl").read_text().splitlines()]
    assert all(s["fallback"] and s["attempts"] == 2 for s in steps)
    assert all(s["observation"]["error"].startswith(FALLBACK_PREFIX + "patch op 0") for s in steps)
    assert all(s["patch"] == [] for s in steps)
    assert json.loads((tmp_path / "bad" / "stats.json").read_text())["fallback_steps"] == 3


def test_rl_wrapper_rewards_from_task_checks():
    cls = get_env("online_store-v1")
    state = cls.sample_state(0)
    product = next(iter(state["products"]))
    task = Task(f"Restock {product} by 5 units.",
                checks=[lambda s: s["products"][product]["stock"] == state["products"][product]["stock"] + 5,
                        lambda s: s["products"][product]["active"]])
    env = SimulatedToolEnv(EnvSpec.from_class(cls), OracleProvider(), task, max_steps=3)
    prompt = env.reset(0)
    assert "Restock" in prompt and "restock_product" in prompt
    obs, reward, done, info = env.step(json.dumps({"name": "restock_product",
                                                   "arguments": {"product_id": product, "quantity": 5}}))
    assert json.loads(obs)["success"] and reward == 0.0 and not done
    obs, reward, done, info = env.step("not json")
    assert "invalid action" in obs and info["invalid_action"]
    obs, reward, done, _ = env.step({"name": "finish"})
    assert done and reward == 1.0
    env.close()


def test_eval_rollout_track(tmp_path, small_benchmark, small_records):
    runner = CliRunner()
    args = ["eval", "--model", "oracle", "--benchmark", str(small_benchmark), "--track", "rollout",
            "--horizon", "4", "--episodes", "2", "--run-dir", str(tmp_path / "rollout")]
    result = runner.invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "rollout" / "drift.json").read_text())
    assert report["cm_at_k"] == {"1": 1.0, "2": 1.0, "3": 1.0, "4": 1.0}
    assert report["mean_steps_before_divergence"] == 4.0
    again = runner.invoke(main, args, catch_exceptions=False)       # resumes: nothing left to run
    assert again.exit_code == 0
    assert len((tmp_path / "rollout" / "episodes.jsonl").read_text().splitlines()) == 2


def test_simulate_with_an_llm_agent(tmp_path):
    with FakeOpenAIServer([]) as server:
        result = CliRunner().invoke(main, ["simulate", "--env", "online_store-v1", "--simulator", "oracle",
                                           "--base-url", server.base_url, "--agent", "agent", "--agent-base-url",
                                           server.base_url, "--episodes", "1", "--steps", "6",
                                           "--out", str(tmp_path / "agent")])
    assert result.exit_code == 0, result.output
    trajectory = json.loads((tmp_path / "agent" / "trajectories.jsonl").read_text())
    calls = [json.loads(t["value"]) for t in trajectory["conversations"] if t["from"] == "function_call"]
    assert len(calls) == 3 and all(c["arguments"] == {} for c in calls)     # the agent stopped after three calls
    assert json.loads((tmp_path / "agent" / "drift.json").read_text())["diverged_episodes"] == 0


# --- the prompt version reaches the simulator ---------------------------------------------------

def test_simulated_environment_sends_the_version_train_data_writes_by_default():
    from envsim.evaluation.prompting.prompts import LATEST_PROMPT_VERSION, system_prompt
    from tests.fixtures.recording_provider import SystemPromptRecorder

    cls = get_env("online_store-v1")
    for version, expected in ((None, LATEST_PROMPT_VERSION), ("1", "1")):
        recording = SystemPromptRecorder()
        kwargs = {} if version is None else {"prompt_version": version}
        env = SimulatedEnvironment(EnvSpec.from_class(cls), recording, shadow=True, **kwargs)
        asyncio.run(run_episode(env, ExplorerAgent(cls, 0), 0, 2))
        assert recording.systems == {system_prompt(expected)}


@pytest.mark.parametrize("args, version", [([], "2"), (["--prompt-version", "1"], "1")])
def test_simulate_cli_sends_the_chosen_prompt_version(tmp_path, args, version):
    from envsim.evaluation.prompting.prompts import system_prompt

    with FakeOpenAIServer([]) as server:
        result = CliRunner().invoke(main, ["simulate", "--env", "online_store-v1", "--simulator", "oracle",
                                           "--base-url", server.base_url, "--episodes", "1", "--steps", "2",
                                           "--out", str(tmp_path / "out"), *args])
        assert result.exit_code == 0, result.output
    assert server.system_prompts == {system_prompt(version)}

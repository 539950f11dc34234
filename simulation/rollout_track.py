"""The multi-step evaluation track: K-step explorer trajectories on held-out environments where the
simulator's own predicted state is fed forward; reported as CM@k and mean steps before divergence.

Every episode's first call changes the true state (``simulation.agents.ChangingStartAgent``, seeded per
environment and episode), so a simulator that predicts "no change" cannot score CM@1. An episode in
which a simulator request failed (connection refused, timeouts after retries) stops there and is an
infrastructure failure (``"status": "infra_failure"`` with its ``reason``), kept out of the figures.
Episodes are appended to ``episodes.jsonl`` as they finish; a re-run skips the scored ones (rows
written before ``status`` existed count as scored) and retries the rest.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable, Sequence

from envsim.envs.base import Environment
from envsim.envs.registry import get_env
from envsim.evaluation.prompting.prompts import PROMPT_VERSION
from envsim.evaluation.endpoints.providers import Provider
from envsim.evaluation.running.runner import open_results_for_append
from envsim.jsonsafe import dumps_line
from envsim.simulation.agents import ChangingStartAgent, is_request_failure
from envsim.simulation.drift import is_scored
from envsim.simulation.simulate import cost_summary, run_episode, write_outputs
from envsim.simulation.simulated import EnvSpec, SimulatedEnvironment


def _key(env_id: str, seed: int) -> str:
    return f"{env_id}#{seed}"


def _read_episodes(path: Path) -> dict[str, dict[str, Any]]:
    """The latest row per episode in ``episodes.jsonl`` (unreadable lines are skipped)."""
    from envsim.evaluation.running.runner import iter_result_lines

    done: dict[str, dict[str, Any]] = {}
    for row in iter_result_lines(path):  # bounded, never through a link (envsim.safe_files)
        if isinstance(row, dict) and isinstance(row.get("env"), str) and "seed" in row:
            done[_key(row["env"], row["seed"])] = row
    return done


async def play_rollout_episode(env: SimulatedEnvironment, env_class: type[Environment], seed: int,
                               horizon: int) -> dict[str, Any]:
    """One rollout-track episode in ``env`` (shadow mode) as its result row, with ``status`` (``scored`` or
    ``infra_failure`` plus ``reason``) and ``first_step_changes_state``."""
    agent = ChangingStartAgent(env_class, seed, env)
    episode = await run_episode(env, agent, seed, horizon)
    episode["first_step_changes_state"] = agent.first_step_changes_state
    reason = next((s["reason"] for s in episode["steps"] if is_request_failure(s["reason"])), None)
    if reason is not None:
        return {**episode, "status": "infra_failure", "reason": reason}
    return {**episode, "status": "scored"}


async def run_rollout_track(env_ids: Sequence[str], simulator: Provider, out: Path, *, episodes: int, horizon: int,
                            seed: int = 0, concurrency: int = 8, prompt_mode: str = "mdp",
                            prompt_version: str = PROMPT_VERSION,
                            on_episode: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run (or resume) the rollout track and write its reports under ``out``; returns the drift report
    (``simulation.drift.drift_report``: ``cm_at_k``, ``cm_at_k_changed``, ``scored``, ``infra_failures``,
    ``infra_failure_reasons``, ...)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "episodes.jsonl"
    done = _read_episodes(path)
    jobs = [(env_id, seed + i) for env_id in env_ids for i in range(episodes)]
    semaphore = asyncio.Semaphore(max(1, concurrency))
    envs: list[SimulatedEnvironment] = []
    with open_results_for_append(path) as sink:

        async def one(env_id: str, episode_seed: int) -> None:
            if is_scored(done.get(_key(env_id, episode_seed), {"status": "missing"})):
                return
            cls = get_env(env_id)
            env = SimulatedEnvironment(EnvSpec.from_class(cls), simulator, prompt_mode=prompt_mode, shadow=True,
                                       prompt_version=prompt_version)
            envs.append(env)
            async with semaphore:
                episode = await play_rollout_episode(env, cls, episode_seed, horizon)
            sink.write(dumps_line(episode) + "\n")
            sink.flush()
            done[_key(env_id, episode_seed)] = episode
            if on_episode is not None:
                on_episode(episode)

        try:
            await asyncio.gather(*(one(e, s) for e, s in jobs))
        finally:
            close = getattr(simulator, "aclose", None)
            if close is not None:
                await close()
    finished = [done[_key(e, s)] for e, s in jobs if _key(e, s) in done]
    return write_outputs(finished, out, horizon=horizon, shadow=True, stats=cost_summary(envs, 0.0, 0.0),
                         title=f"rollout track: {getattr(simulator, 'name', 'model')}, {len(finished)} episodes")

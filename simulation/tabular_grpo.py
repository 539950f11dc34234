"""A tiny GRPO loop on CPU for any OpenEnv environment: a tabular softmax policy over candidate tool-call plans.

Each GRPO step samples a group of ``group_size`` episodes from the current policy, runs every plan
(a fixed sequence of tool calls, then ``finish``) through the environment's OpenEnv
``reset``/``step`` API, takes the episode reward from the final observation, and moves the logits
along ``sum_i A_i * grad log pi(plan_i)`` with the group-relative advantage
``A_i = (r_i - mean(r)) / (std(r) + eps)`` (GRPO without clipping or KL: the policy is tabular and
the update is on-policy). It exists to show - in seconds, without torch - that a policy learns
against a real EnvSim environment and against its simulated twin through the same interface.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

Plan = Sequence[dict[str, Any]]


@dataclass
class GRPOLog:
    """Per-step mean reward and the probability of each plan after the step."""

    mean_reward: list[float] = field(default_factory=list)
    probabilities: list[list[float]] = field(default_factory=list)


def run_plan(env: Any, plan: Plan, seed: int) -> float:
    """One episode: ``reset(seed)``, the plan's tool calls, then ``finish``; returns the final reward."""
    from openenv.core.env_server.mcp_types import CallToolAction

    env.reset(seed=seed)
    observation = None
    for call in plan:
        observation = env.step(CallToolAction(tool_name=call["name"], arguments=call.get("arguments", {})))
        if observation.done:
            return float(observation.reward or 0.0)
    observation = env.step(CallToolAction(tool_name="finish"))
    return float(observation.reward or 0.0)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Numerically stable softmax."""
    shifted = np.exp(logits - logits.max())
    return shifted / shifted.sum()


def train_tabular_grpo(env_factory: Callable[[], Any], plans: Sequence[Plan], *, steps: int = 5,
                       group_size: int = 8, learning_rate: float = 1.0, seed: int = 0,
                       episode_seed: int = 0) -> tuple[np.ndarray, GRPOLog]:
    """Run ``steps`` GRPO updates; returns the final plan probabilities and the per-step log."""
    rng = np.random.default_rng(seed)
    logits = np.zeros(len(plans))
    log = GRPOLog()
    env = env_factory()
    try:
        for _ in range(steps):
            probs = softmax(logits)
            chosen = rng.choice(len(plans), size=group_size, p=probs)
            rewards = np.array([run_plan(env, plans[i], episode_seed) for i in chosen])
            advantages = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
            gradient = np.zeros_like(logits)
            for index, advantage in zip(chosen, advantages):
                one_hot = np.zeros_like(logits)
                one_hot[index] = 1.0
                gradient += advantage * (one_hot - probs)      # d log softmax(index) / d logits
            logits += learning_rate * gradient / group_size
            log.mean_reward.append(float(rewards.mean()))
            log.probabilities.append([float(p) for p in softmax(logits)])
    finally:
        env.close()
    return softmax(logits), log

"""A RAGEN-style environment class for agent RL on simulated environments.

``reset(seed)`` returns a text observation; ``step(action)`` returns ``(observation, reward, done,
info)``. Actions are tool calls as JSON text (``{"name": ..., "arguments": {...}}``) or dicts; the
reward is given at the end of the episode by task checks on the final tracked state (the share
of checks that pass), so Simia-RL-style training gets programmatic rewards.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from envsim.evaluation.endpoints.providers import Provider, make_provider
from envsim.records import Action
from envsim.simulation.simulated import EnvSpec, SimulatedEnvironment

StateCheck = Callable[[dict[str, Any]], bool]


@dataclass
class Task:
    """An instruction plus checks on the final state (each check is one part of the reward)."""

    instruction: str
    checks: Sequence[StateCheck] = field(default_factory=list)

    def reward(self, state: dict[str, Any]) -> float:
        """Share of checks the state passes (0 when there are none); a crashing check counts as failed."""
        if not self.checks:
            return 0.0
        passed = 0
        for check in self.checks:
            try:
                passed += bool(check(state))
            except Exception:  # noqa: BLE001 - a check on a simulated state may meet any shape
                continue
        return passed / len(self.checks)


class SimulatedToolEnv:
    """RAGEN-style wrapper: text in, text out, reward from task checks at the end of the episode."""

    FINISH = "finish"

    def __init__(self, spec: EnvSpec, simulator: Provider | str, task: Task, *, max_steps: int = 10,
                 base_url: str | None = None, shadow: bool = False) -> None:
        provider = make_provider(simulator, base_url) if isinstance(simulator, str) else simulator
        self.env = SimulatedEnvironment(spec, provider, shadow=shadow)
        self.task = task
        self.max_steps = max_steps
        self.steps = 0

    def reset(self, seed: int = 0) -> str:
        """Start an episode; the observation is the task and the tool list."""
        self.env.reset(seed)
        self.steps = 0
        names = ", ".join(t["function"]["name"] for t in self.env.spec.tools)
        return (f"{self.task.instruction}\nTools: {names}.\nAnswer with one tool call as JSON "
                f'{{"name": ..., "arguments": {{...}}}}, or {{"name": "{self.FINISH}"}} when done.')

    def step(self, action: str | dict[str, Any]) -> tuple[str, float, bool, dict[str, Any]]:
        """Apply one tool call; returns ``(observation, reward, done, info)``."""
        try:
            call = json.loads(action) if isinstance(action, str) else action
            parsed = Action.from_json(call)
        except (ValueError, TypeError) as exc:
            self.steps += 1
            done = self.steps >= self.max_steps
            return (json.dumps({"success": False, "error": f"invalid action: {exc}"}),
                    self.task.reward(self.env.state) if done else 0.0, done, {"invalid_action": True})
        if parsed.name == self.FINISH:
            return "episode finished", self.task.reward(self.env.state), True, {"finished": True}
        observation = self.env.step(parsed)
        self.steps += 1
        done = self.steps >= self.max_steps
        reward = self.task.reward(self.env.state) if done else 0.0
        info = {"fallback": self.env.history[-1].fallback, "diverged": self.env.history[-1].diverged}
        return json.dumps(observation, ensure_ascii=False), reward, done, info

    def close(self) -> None:
        """Release resources."""
        self.env.close()

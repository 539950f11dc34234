"""Agent policies that act in (simulated) environments: the seeded explorer or an LLM with tool calling."""

from __future__ import annotations

import hashlib
import json
import os
import random
from typing import Any, Protocol

from envsim.construction.explorer import ExplorerPolicy, StatePools
from envsim.delta import canonical_json
from envsim.envs.base import Environment
from envsim.envs.sandbox import execute
from envsim.evaluation.scoring.chained import INFRA_PREFIX
from envsim.records import Action

FIRST_STEP_TRIES = 64


def stable_seed(*parts: Any) -> int:
    """A 64-bit seed from JSON-serialisable ``parts``, the same in every process (unlike the salted ``hash()``)."""
    return int.from_bytes(hashlib.sha256(canonical_json(list(parts)).encode()).digest()[:8], "big")


def is_request_failure(reason: str | None) -> bool:
    """Whether a step's ``reason`` says the simulator could not be reached (an infrastructure failure)."""
    return (reason or "").startswith(INFRA_PREFIX)


class AgentPolicy(Protocol):
    """Chooses the next tool call from the conversation so far; ``None`` ends the episode."""

    async def next_action(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                          state: dict[str, Any]) -> Action | None: ...


class ExplorerAgent:
    """The seeded explorer as an agent (needs the runnable class for its tool signatures)."""

    def __init__(self, env_class: type[Environment], seed: int) -> None:
        from envsim.construction.state_explorer import explorer_for

        self.env_class = env_class
        self.policy = explorer_for(env_class, seed)  # ExplorerPolicy for built-ins, StateExplorer for a user's class

    async def next_action(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                          state: dict[str, Any]) -> Action | None:
        """A plausible random call on the state the agent currently sees."""
        return self.policy.next_action(self.env_class, state)


class TauAgent:
    """τ-bench's own call shapes with values from the state: a tool call of the domain's *train* tasks (test
    tasks where τ-bench ships none: airline), its ids redrawn from the state the agent currently sees
    (``construction.tau_track.StateArguments``: ids that exist, now and then one that does not)."""

    def __init__(self, env_class: type[Environment], seed: int) -> None:
        from envsim.envs.adapters.tau import task_actions

        domain = getattr(env_class, "_tau_domain")
        tasks = task_actions(domain, "train") or task_actions(domain, "test")
        self.templates = [action for actions in tasks for action in actions]
        self.rng = random.Random(stable_seed("tau-agent", env_class.env_id(), seed))

    async def next_action(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                          state: dict[str, Any]) -> Action | None:
        """One template call with argument values drawn from ``state``."""
        from envsim.construction.tau_track import StateArguments

        return StateArguments(state, self.rng).fill(self.rng.choice(self.templates))


def explorer_agent(env_class: type[Environment], seed: int) -> AgentPolicy:
    """The seeded explorer of an environment: ``TauAgent`` for τ-bench domains (random ids never hit a
    record of a production database), ``ExplorerAgent`` otherwise."""
    from envsim.envs.adapters.tau import is_tau

    return TauAgent(env_class, seed) if is_tau(env_class) else ExplorerAgent(env_class, seed)


class ChangingStartAgent:
    """The explorer of the rollout track, seeded per (environment, episode seed), whose first call changes the state.

    Step 0: up to ``tries`` explorer draws are executed on the real class from the current state and
    the first that changes it is played (``first_step_changes_state`` becomes True); when none does, a
    write-tool call is played and ``first_step_changes_state`` becomes False. Later steps: the explorer's
    draws as they come. Given the simulated environment ``env``, the agent stops after a step whose
    simulator request failed (the episode is then an infrastructure failure).
    """

    def __init__(self, env_class: type[Environment], seed: int, env: Any = None,
                 tries: int = FIRST_STEP_TRIES) -> None:
        self.env_class = env_class
        self.policy = ExplorerPolicy(seed=stable_seed(env_class.env_id(), seed))
        self.env = env
        self.tries = tries
        self.first_step_changes_state: bool | None = None

    async def next_action(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                          state: dict[str, Any]) -> Action | None:
        """A state-changing call first, then plausible random calls; ``None`` after a failed request."""
        history = getattr(self.env, "history", None)
        if history and is_request_failure(history[-1].reason):
            return None
        if self.first_step_changes_state is None:
            return self._first_action(state)
        return self.policy.next_action(self.env_class, state)

    def _first_action(self, state: dict[str, Any]) -> Action:
        for _ in range(max(1, self.tries)):
            action = self.policy.next_action(self.env_class, state)
            if execute(self.env_class, state, action).delta_size > 0:
                self.first_step_changes_state = True
                return action
        self.first_step_changes_state = False
        return self._write_call(state)

    def _write_call(self, state: dict[str, Any]) -> Action:
        writes = [s for s in self.env_class.tool_specs().values() if s.write]
        if not writes:
            return self.policy.next_action(self.env_class, state)
        spec = self.policy.rng.choice(writes)
        return Action(spec.name, self.policy.arguments_for(spec, StatePools.harvest(state)))


class LLMAgent:
    """Any OpenAI-compatible chat model with function calling."""

    def __init__(self, model: str, base_url: str | None = None, temperature: float = 0.7,
                 timeout: float = 120.0) -> None:
        import openai

        self.model = model
        self.temperature = temperature
        self.client = openai.AsyncOpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY") or "EMPTY",
                                         timeout=timeout, max_retries=3)

    async def next_action(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                          state: dict[str, Any]) -> Action | None:
        """The model's first tool call, or ``None`` when it answers without one."""
        response = await self.client.chat.completions.create(model=self.model, messages=messages, tools=tools,
                                                             temperature=self.temperature)
        if not response.choices:
            return None
        calls = response.choices[0].message.tool_calls or []
        if not calls:
            return None
        call = calls[0].function
        try:
            arguments = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            arguments = {"__unparseable__": call.arguments}
        return Action(call.name, arguments if isinstance(arguments, dict) else {"value": arguments})

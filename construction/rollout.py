"""Multi-step rollouts: a policy acts on an evolving state, every step is executed and labelled."""

from __future__ import annotations

from typing import Any, Iterator, Protocol

from envsim.envs.base import Environment
from envsim.envs.sandbox import execute
from envsim.records import Action, Transition


class Policy(Protocol):
    """Anything that proposes the next action for an environment in a state."""

    def next_action(self, env_class: type[Environment], state: dict[str, Any]) -> Action: ...


def rollout(env_class: type[Environment], state: dict[str, Any], policy: Policy, steps: int,
            *, check_determinism: bool = False) -> Iterator[Transition]:
    """Run ``steps`` calls from ``state``, feeding each next state forward; yield the transitions."""
    for _ in range(steps):
        transition = execute(env_class, state, policy.next_action(env_class, state),
                             check_determinism=check_determinism)
        yield transition
        state = transition.next_state


def seeded_rollouts(env_class: type[Environment], seed: int, episodes: int, steps: int,
                    *, check_determinism: bool = False) -> Iterator[Transition]:
    """``episodes`` explorer rollouts of ``steps`` calls, episode ``i`` starting from ``sample_state(seed + i)``
    (``state_explorer.explorer_for``: the built-ins' ``ExplorerPolicy``, or ``StateExplorer`` for a user's class)."""
    from envsim.construction.state_explorer import explorer_for

    for episode in range(episodes):
        policy = explorer_for(env_class, seed * 100_003 + episode)
        yield from rollout(env_class, env_class.sample_state(seed + episode), policy, steps,
                           check_determinism=check_determinism)

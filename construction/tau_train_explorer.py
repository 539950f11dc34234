"""Read and failure calls on τ-bench's *train* task states, for ``envsim train data --track tau``.

τ-bench's train tasks replay almost only writes (retail: 736 changes and 20 failures), while agents mostly
read (527 of the 843 calls of the shipped τ test track are no-change reads). On each replayed train state
the generic explorer (``construction.state_explorer``) adds ``READS_PER_STATE`` calls of reading tools
(look-ups weighted ``LOOKUP_WEIGHT`` to one against ``think`` and the like) and,
at ``FAILURE_RATE``, one call of any tool with one id that does not exist; its memory starts with the
task's own records (the order and user the task works on), so id look-ups (``get_order_details``,
``get_user_details``) revisit them at the explorer's ``revisit_rate`` (other values come from the whole
database). Argument values come from an index of the initial database (ids never disappear in τ-bench);
every call is labelled on the task's current state. Deterministic in the seed.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from envsim.construction.state_explorer import StateExplorer, may_write
from envsim.construction.state_index import StateIndex, param_stem
from envsim.envs.base import Environment
from envsim.records import Action

READS_PER_STATE = 2
FAILURE_RATE = 0.2
#: Reads that look records up (a parameter naming a collection or a field of the state) are drawn this many
#: times as often as the others (``think``, ``calculate``): an agent on a task mostly looks things up.
LOOKUP_WEIGHT = 4


class TrainStateCalls:
    """The ``extra`` hook of ``tau_track.replay_tasks``: explorer calls on each replayed train state."""

    def __init__(self, seed: int = 0, reads: int = READS_PER_STATE, failure_rate: float = FAILURE_RATE) -> None:
        self.seed, self.reads, self.failure_rate = seed, reads, failure_rate
        self.indexes: dict[str, StateIndex] = {}

    def __call__(self, env_class: type[Environment], state: dict[str, Any], task_index: int, step: int,
                 actions: Sequence[Action]) -> list[Action]:
        """Calls to label on ``state``: reads about the task's records, now and then a call bound to fail."""
        env_id = env_class.env_id()
        if env_id not in self.indexes:
            self.indexes[env_id] = StateIndex.of(env_class.sample_state(0))
        index = self.indexes[env_id]
        explorer = StateExplorer(seed=hash_seed(self.seed, env_id, task_index, step), miss_rate=0.0)
        explorer.remembered = task_records(index, actions)
        specs = list(env_class.tool_specs().values())
        reads = [s for s in specs if not may_write(s)]
        weights = [LOOKUP_WEIGHT if looks_up(s, index) else 1 for s in reads]
        calls = [Action(spec.name, explorer.arguments_from(env_class, spec, index))
                 for spec in (explorer.rng.choices(reads, weights)[0] for _ in range(self.reads if reads else 0))]
        if explorer.rng.random() < self.failure_rate:
            spec = explorer.rng.choice(specs)
            explorer.miss_rate = 1.0
            calls.append(Action(spec.name, explorer.arguments_from(env_class, spec, index)))
        return calls


def looks_up(spec: Any, index: StateIndex) -> bool:
    """Whether a tool has a parameter that names a collection (``order_id``) or a field of the state (``email``)."""
    names = list(spec.signature.parameters)
    return any(index.named(param_stem(n)[0]) or n in index.field_values for n in names)


def hash_seed(seed: int, env_id: str, task_index: int, step: int) -> int:
    """A stable per-state seed (no ``hash()``: it changes between processes)."""
    return random.Random(f"tau-train-explorer/{seed}/{env_id}/{task_index}/{step}").randrange(2**32)


def task_records(index: StateIndex, actions: Sequence[Action]) -> list[tuple[tuple[str, ...], str]]:
    """``(collection path, key)`` of the top-level records a task's calls name (``order_id`` -> ``orders``)."""
    remembered: list[tuple[tuple[str, ...], str]] = []
    for action in actions:
        for name, value in action.arguments.items():
            if not isinstance(value, str):
                continue
            for collection in index.named(param_stem(name)[0]):
                if len(collection.path) == 1 and value in collection.records \
                        and (collection.path, value) not in remembered:
                    remembered.append((collection.path, value))
    return remembered

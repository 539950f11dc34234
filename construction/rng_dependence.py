"""Labels that no simulator can derive: a call whose observation or next state depends on a random draw.

BFCL classes draw ids and readings from ``self._random``, which EnvSim re-seeds before every call from
the sha256 of the state (``envs.adapters.bfcl.state_seed``); the prompt cannot show that draw. A record
is *draw-dependent* when executing its call on the same state with the generator seeded differently
gives another observation or next state. Environments without a per-call generator (the built-ins,
τ-bench) are deterministic and never draw-dependent.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterable, Iterator

from envsim.delta import same_json

OTHER_DRAW_SALT = 0x5BD1E995


@contextmanager
def other_random_draws() -> Iterator[None]:
    """Within this block, BFCL's per-call generator is seeded differently from the real one."""
    import envsim.envs.adapters.bfcl as bfcl

    real = bfcl.state_seed
    bfcl.state_seed = lambda class_name, state: real(class_name, state) ^ OTHER_DRAW_SALT
    try:
        yield
    finally:
        bfcl.state_seed = real


def draw_dependent(record: dict[str, Any]) -> bool:
    """Whether the record's label changes when the environment's random draws change (see the module)."""
    from envsim.envs.executor import execute
    from envsim.envs.registry import get_env

    if not str(record.get("env", "")).startswith("bfcl/"):
        return False                       # no per-call generator: the label follows from the prompt
    with other_random_draws():
        other = execute(get_env(record["env"]), record["state"], record["action"])
    return not (same_json(other.observation, record["observation"])
                and same_json(other.next_state, record["next_state"]))


def draw_dependent_ids(records: Iterable[dict[str, Any]]) -> list[str]:
    """Ids of the draw-dependent records, in input order."""
    return [r["id"] for r in records if draw_dependent(r)]

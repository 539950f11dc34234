"""Labels that no simulator can derive: a call whose observation or next state depends on a random draw.

BFCL classes draw ids and readings from ``self._random``, which EnvSim re-seeds before every call from
the sha256 of the state (``envs.adapters.bfcl.state_seed``); the prompt cannot show that draw.

**Detection rule (exact).** A record is *draw-dependent* when executing its call on its state draws
from that generator at all. The call is re-executed with the generator replaced by an instrumented
copy (same internal state, so the same stream and the same label) that counts every draw: each public
method of ``random.Random`` (``randint``, ``uniform``, ``choice``, ``shuffle``, ``randbytes``, ...) goes
through ``random()``, ``getrandbits()`` or ``randbytes()``, and those three are counted. A call that never
draws has a label that is a function of (state, call) alone, whatever the seed; a call that draws has
its label computed from a value the prompt does not show. This replaces an earlier check that compared
the label under one other seed, which would miss a call whose draw happened to coincide under both
seeds (on the shipped track both rules find the same 22 calls; every one of them changes its label under
each of 8 other seeds, see ``label_changes_with_seed``).

Environments without a per-call generator (the built-ins, τ-bench, any environment that is not a
wrapped BFCL class) are deterministic and never draw-dependent: they are not executed here.
The instrumentation patches ``BFCLCodec.decode`` for the duration of a ``with`` block: neither thread-safe
nor reentrant (an inner block counts nothing).
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

from envsim.delta import same_json

OTHER_DRAW_SALT = 0x5BD1E995


class DrawCounter:
    """How many times the per-call generator was drawn from inside a ``recorded_draws`` block."""

    def __init__(self) -> None:
        self.draws = 0


@contextmanager
def recorded_draws() -> Iterator[DrawCounter]:
    """Within this block, every draw from BFCL's per-call generator is counted (the stream is unchanged)."""
    import envsim.envs.adapters.bfcl as bfcl

    counter = DrawCounter()

    class CountingRandom(random.Random):
        """``random.Random`` counting calls of its three primitives (every other method goes through them)."""

        def random(self) -> float:
            counter.draws += 1
            return super().random()

        def getrandbits(self, k: int) -> int:
            counter.draws += 1
            return super().getrandbits(k)

        def randbytes(self, n: int) -> bytes:
            counter.draws += 1
            return super().randbytes(n)

    real = bfcl.BFCLCodec.decode

    def decode(self: Any, instance: Any, state: dict[str, Any]) -> None:
        real(self, instance, state)
        generator = getattr(instance, "_random", None)
        if type(generator) is random.Random:
            counting = CountingRandom()
            counting.setstate(generator.getstate())     # same position in the same stream: same label
            instance._random = counting

    bfcl.BFCLCodec.decode = decode  # type: ignore[method-assign]
    try:
        yield counter
    finally:
        bfcl.BFCLCodec.decode = real  # type: ignore[method-assign]


@contextmanager
def other_random_draws(salt: int = OTHER_DRAW_SALT) -> Iterator[None]:
    """Within this block, BFCL's per-call generator is seeded differently from the real one (xor ``salt``)."""
    import envsim.envs.adapters.bfcl as bfcl

    real = bfcl.state_seed
    bfcl.state_seed = lambda class_name, state: real(class_name, state) ^ salt
    try:
        yield
    finally:
        bfcl.state_seed = real


def has_call_generator(record: dict[str, Any]) -> bool:
    """Whether the record's environment re-seeds a generator per call (wrapped BFCL classes only)."""
    return str(record.get("env", "")).startswith("bfcl/")


def draw_count(record: dict[str, Any]) -> int:
    """How many draws from the per-call generator executing the record's call makes (0 without one)."""
    from envsim.envs.sandbox import execute
    from envsim.envs.registry import get_env

    if not has_call_generator(record):
        return 0
    with recorded_draws() as counter:
        execute(get_env(record["env"]), record["state"], record["action"])
    return counter.draws


def draw_dependent(record: dict[str, Any]) -> bool:
    """Whether the record's call draws from the environment's generator (the exact rule, see the module)."""
    return draw_count(record) > 0


def draw_dependent_ids(records: Iterable[dict[str, Any]]) -> list[str]:
    """Ids of the draw-dependent records, in input order."""
    return [r["id"] for r in records if draw_dependent(r)]


def split_draw_dependent(records: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(kept, dropped)``: records whose label follows from the prompt, and the draw-dependent ones (order kept)."""
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    for record in records:
        (dropped if draw_dependent(record) else kept).append(record)
    return kept, dropped


def label_changes_with_seed(record: dict[str, Any], salt: int = OTHER_DRAW_SALT) -> bool:
    """Whether the record's label differs when the generator is seeded differently (a diagnostic, not the rule)."""
    from envsim.envs.sandbox import execute
    from envsim.envs.registry import get_env

    if not has_call_generator(record):
        return False
    with other_random_draws(salt):
        other = execute(get_env(record["env"]), record["state"], record["action"])
    return not (same_json(other.observation, record["observation"])
                and same_json(other.next_state, record["next_state"]))

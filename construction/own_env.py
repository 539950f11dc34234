"""Test and training data from one environment of the user's own (``--env module:Class``).

Built-in splits are environment-disjoint and τ-bench's task-disjoint; a user who brings one environment
gets both splits from it, so the split is by **explorer episodes**, and no (state, action) pair of one
split reaches the other:

* the test (and dev) split and the train split roll out explorer episodes from **disjoint seed streams**
  (``split_seed``): different calls, and different initial states where ``sample_state`` gives several;
* the states both streams surely share are the environment's initial states (every episode of a class with
  one initial state starts from it, and a read leaves it as it was); a record on an initial state goes to
  the split its identity hash names (``identity_split``: one in ``TEST_SHARE`` to test), so no call on
  an initial state is in both;
* ``--exclude TEST.jsonl`` (``construct --split train``, ``train data --env``) drops every record whose
  ``id`` (the sha256 of environment, state and action) is in the test file: exact, whatever the seeds;
* with ``--policy replay`` the user's own call sequences (tasks) are the unit: give the train and test
  logs of different tasks (and ``--exclude`` the test file).

Only ``module:Class`` targets named explicitly go to a train split; BFCL classes, τ-bench through its
adapter and plugin environments stay held out (DESIGN: foreign environments are held out unless the user
says otherwise: naming one's own class with ``--env`` for a train split says so).
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable, Sequence

#: One record identity in ``TEST_SHARE`` on an initial state belongs to the test split.
TEST_SHARE = 4
#: Seed offset of the train stream (test and dev use ``seed`` itself).
TRAIN_STREAM = 7_919_000_003


def is_own_target(env_id: str) -> bool:
    """Whether ``env_id`` names a user's class (``module:Class``), not a track (``bfcl/...``) or a plugin id."""
    return ":" in env_id and "/" not in env_id.partition(":")[0]


def split_seed(seed: int, split: str) -> int:
    """The explorer seed stream of ``split``: the train split's never meets the test's."""
    return seed + TRAIN_STREAM if split == "train" else seed


def identity_split(record_id: str) -> str:
    """``"test"`` for one record identity in ``TEST_SHARE``, else ``"train"`` (a stable hash, no RNG state)."""
    digest = hashlib.sha256(f"envsim-own-split:{record_id}".encode()).digest()
    return "test" if digest[0] % TEST_SHARE == 0 else "train"


def keep_split(records: Iterable[dict[str, Any]], split: str,
               initial_states: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` without those on an initial state whose identity belongs to the other split."""
    side = "train" if split == "train" else "test"
    kept = []
    for record in records:
        state = record.get("state")
        if any(state == initial for initial in initial_states) and identity_split(record["id"]) != side:
            continue
        kept.append(record)
    return kept


def stream_start(env_id: str, seed: int, split: str) -> int:
    """The first ``sample_state`` seed of ``split``'s episodes (``pipeline.env_records``' per-environment stream)."""
    return split_seed(seed, split) * 1_000_003 + sum(env_id.encode())


def initial_states(env_class: Any, env_id: str, seed: int, episodes: int) -> list[dict[str, Any]]:
    """The distinct initial states of both streams' first ``max(episodes, 16)`` episodes."""
    states: list[dict[str, Any]] = []
    for split in ("test", "train"):
        start = stream_start(env_id, seed, split)
        for episode in range(max(episodes, 16)):
            state = env_class.sample_state(start + episode)
            if not any(state == s for s in states):
                states.append(state)
    return states


def own_env_records(env_id: str, seed: int, episodes: int, steps: int, split: str,
                    workers: int = 1, counts: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Explorer records of one user environment for ``split`` under the policy above (deduplicated), without the
    records of tools that are not deterministic (``construction.determinism``). ``counts``
    (if given) is told ``labelled_calls``, ``repeated_calls`` (same state and call: one record),
    ``on_initial_states_of_the_other_split`` and ``nondeterministic`` (tool -> its records, those not reproduced;
    a train split counts them as ``records_of_tools_not_deterministic``)."""
    from envsim.construction.determinism import without_nondeterministic
    from envsim.construction.pipeline import build_pool
    from envsim.envs.registry import get_env

    pool = build_pool([env_id], split_seed(seed, split), episodes, steps, split, workers=workers)
    kept = keep_split(pool, split, initial_states(get_env(env_id), env_id, seed, episodes))
    # a record is scored (or trained on) against one answer: a tool that answers differently when run again is left
    # out of every split (construction.determinism)
    kept, dropped = without_nondeterministic(kept)
    if counts is not None:
        for key, value in (("labelled_calls", episodes * steps), ("repeated_calls", episodes * steps - len(pool)),
                           ("on_initial_states_of_the_other_split", len(pool) - len(kept)
                            - sum(c["records"] for c in dropped.values()))):
            counts[key] = counts.get(key, 0) + value
        if dropped and split != "train":  # construct names the tools
            counts.setdefault("nondeterministic", {}).update(dropped)
        elif dropped:  # train data counts their records in its shortfall line
            counts["records_of_tools_not_deterministic"] = (counts.get("records_of_tools_not_deterministic", 0)
                                                            + sum(c["records"] for c in dropped.values()))
    return kept

"""The v2 long-state tier: one-step samples whose prompt holds a production-sized state (8k-32k tokens).

States are never padded with filler. Each one is drawn by the environment's own ``sample_state``
with its record collections scaled (``scaled_sampling``: every ``Sampler.ids(prefix, n)`` call
asks for ``n * factor`` ids, so the generator writes ``factor`` times as many customers, orders,
tickets... with all their cross-references, by the environment's own code), then advanced by
``history`` seeded explorer calls (audit logs, ledgers and histories grow as in a system in use).
From there the explorer makes ``steps`` more calls; each is executed and labelled like any sample,
and kept when its ``mdp`` prompt (prompt version 2, chat framing included, Qwen BPE) counts
between ``min_tokens`` and ``max_tokens``.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence
from unittest import mock

from envsim.construction.explorer import ExplorerPolicy
from envsim.construction.labelling import to_record
from envsim.construction.pipeline import pooled_records
from envsim.envs.sandbox import execute
from envsim.envs.registry import get_env
from envsim.envs.sampling import Sampler

DEFAULT_SCALES = (4, 8, 16)
PROMPT_MODE = "mdp"
PROMPT_VERSION = "2"


@contextlib.contextmanager
def scaled_sampling(factor: int) -> Iterator[None]:
    """Inside the block, ``Sampler.ids(prefix, count, ...)`` returns ``count * factor`` sequential ids."""
    original = Sampler.ids

    def ids(self: Sampler, prefix: str, count: int, start: int = 1, width: int = 3) -> list[str]:
        return original(self, prefix, count * factor, start, width)

    with mock.patch.object(Sampler, "ids", ids):
        yield


def scaled_state(env_id: str, seed: int, factor: int) -> dict[str, Any]:
    """``sample_state(seed)`` of an environment with its collections scaled ``factor`` times."""
    cls = get_env(env_id)
    with scaled_sampling(factor):
        return cls.sample_state(seed)


def prompt_tokens(record: dict[str, Any], counter: Any = None) -> int:
    """Counted tokens of a record's ``mdp`` prompt, version 2, chat framing and generation prompt included."""
    from envsim.evaluation.prompting.prompts import build_messages
    from envsim.tokens import chat_tokens

    return chat_tokens(build_messages(record, PROMPT_MODE, version=PROMPT_VERSION), counter)


def env_candidates(env_id: str, seed: int, *, scales: Sequence[int] = DEFAULT_SCALES, history: int = 30,
                   steps: int = 10, min_tokens: int = 8192, max_tokens: int = 32768,
                   split: str = "test") -> list[dict[str, Any]]:
    """Labelled long-state records of one environment whose prompt lies in ``[min_tokens, max_tokens]``.

    Each record carries ``long_state``: the scale factor, the history length, and its counted
    ``prompt_tokens`` (with the tokenizer and prompt version they were counted with).
    """
    from envsim.tokens import get_tokenizer, tokenizer_name

    cls = get_env(env_id)
    counter = get_tokenizer()
    base = seed * 1_000_003 + sum(env_id.encode())
    records: list[dict[str, Any]] = []
    for factor in scales:
        state = scaled_state(env_id, base + factor, factor)
        policy = ExplorerPolicy(seed=base * 31 + factor)
        for _ in range(history):  # the history: executed, not labelled
            _, state = cls.run_call(state, policy.next_action(cls, state))
        for index in range(steps):
            transition = execute(cls, state, policy.next_action(cls, state))
            state = transition.next_state
            record = to_record(transition, cls, split)
            tokens = prompt_tokens(record, counter)
            if min_tokens <= tokens <= max_tokens:
                record["long_state"] = {"scale": factor, "history_steps": history + index, "prompt_tokens": tokens,
                                        "tokenizer": tokenizer_name(counter), "prompt_mode": PROMPT_MODE,
                                        "prompt_version": PROMPT_VERSION}
                records.append(record)
    return records


def _candidates_args(args: tuple[str, int, dict[str, Any]]) -> list[dict[str, Any]]:
    env_id, seed, options = args
    return env_candidates(env_id, seed, **options)


def long_state_pool(env_ids: Sequence[str], seed: int, *, workers: int = 1, progress: Any = None,
                    **options: Any) -> list[dict[str, Any]]:
    """Deduplicated long-state candidates of every environment, in environment order (``options``: see
    ``env_candidates``). The result does not depend on ``workers``."""
    jobs = [(env_id, seed, options) for env_id in env_ids]
    return pooled_records(_candidates_args, jobs, workers=workers, progress=progress, chunksize=2)

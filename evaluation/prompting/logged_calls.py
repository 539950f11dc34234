"""Logged calls of the same tool, shown in the prompt as worked examples (retrieval from a service's own log).

A user who trains a simulator of their own service has its logged calls: the training data. At inference the
simulator can look those up. The prompt then lists ``k`` earlier calls of the same tool, each with the answer
the service gave (observation and patch, written in the form the model is trained to write), from other
states. A small model that cannot infer every effect from the tool's code can copy the shape of a logged
effect (which fields a call of this tool changes, how a tally moves) onto the current state.

Which calls: those of the same environment and tool, never the call itself (same id, or same state and call).
The pool's calls are grouped by their *effect shape* (outcome, and the patch's operations with id-like path
segments abstracted); the most common shapes come first, one call each, so ``k`` examples show the tool's ``k``
commonest effects. Within a shape the call sharing most argument values with the asked call is taken (ties by a
stable hash), so an example often concerns the same record. Deterministic: the same pool and call give the same
examples in training and at evaluation.

The examples are an opt-in part of the user turn (``build_messages(..., examples=...)``): without them every prompt
version reads byte for byte as before.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

#: The heading of the prompt part; the examples follow it, numbered.
EXAMPLES_HEADING = ("Logged calls of this tool on other states (what the service answered then; ids and values "
                    "there are not this state's):")


@dataclass(frozen=True)
class LoggedCall:
    """One logged call: its call text as the prompt shows it, the answer text, and what picking needs."""

    id: str
    env: str
    tool: str
    call: str
    answer: str
    arguments: tuple[tuple[str, str], ...]
    situation: str
    shape: tuple[Any, ...]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def situation_key(record: dict[str, Any]) -> str:
    """A digest of the record's (state, call): two records with the same key ask the same question."""
    action = record["action"]
    return _digest([record.get("state"), action["name"], action.get("arguments") or {}])


def effect_shape(record: dict[str, Any]) -> tuple[Any, ...]:
    """The record's outcome and its patch's operations with id-like path segments (any holding a digit) as ``*``."""
    observation = record.get("observation")
    if isinstance(observation, dict) and observation.get("success") is False:
        return ("error",)
    ops = []
    for op in record.get("patch") or []:
        parts = str(op.get("path", "")).split("/")
        ops.append((op.get("op"), "/".join("*" if re.search(r"\d", p) else p for p in parts)))
    return ("change", tuple(sorted(set(ops)))) if ops else ("no-change",)


def logged_call(record: dict[str, Any], answer: str, version: str) -> LoggedCall:
    """A record of the log (benchmark format) and the answer text the model should write for it."""
    from envsim.evaluation.prompting.prompts import action_text

    arguments = record["action"].get("arguments") or {}
    return LoggedCall(id=str(record["id"]), env=str(record["env"]), tool=str(record["action"]["name"]),
                      call=action_text(record["action"], version), answer=answer,
                      arguments=tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in arguments.items())),
                      situation=situation_key(record), shape=effect_shape(record))


class LoggedCalls:
    """A pool of logged calls, indexed by (environment, tool)."""

    def __init__(self, calls: Iterable[LoggedCall]) -> None:
        self.by_tool: dict[tuple[str, str], list[LoggedCall]] = defaultdict(list)
        for call in calls:
            self.by_tool[(call.env, call.tool)].append(call)
        self.size = sum(len(v) for v in self.by_tool.values())

    def digest(self) -> str:
        """A hash of the pool's calls and answers (a run's config names the pool it was shown)."""
        return _digest(sorted([c.id, c.call, c.answer] for calls in self.by_tool.values() for c in calls))

    def pick(self, record: dict[str, Any], k: int) -> list[LoggedCall]:
        """Up to ``k`` logged calls of the record's tool (never the record's own question), commonest shapes first."""
        if k <= 0:
            return []
        own_id, own_situation = str(record.get("id")), situation_key(record)
        asked = record["action"].get("arguments") or {}
        arguments = {(key, json.dumps(v, sort_keys=True)) for key, v in asked.items()}
        candidates = [c for c in self.by_tool.get((str(record["env"]), str(record["action"]["name"])), [])
                      if c.id != own_id and c.situation != own_situation]
        by_shape: dict[tuple[Any, ...], list[LoggedCall]] = defaultdict(list)
        for call in candidates:
            by_shape[call.shape].append(call)
        shapes = sorted(by_shape, key=lambda s: (-len(by_shape[s]), _digest(list(map(str, s)))))
        ranked = [sorted(by_shape[s], key=lambda c: (-len(arguments & set(c.arguments)), _digest([own_id, c.id])))
                  for s in shapes]
        picked: list[LoggedCall] = []
        depth = 0
        while len(picked) < k and any(depth < len(r) for r in ranked):
            picked += [r[depth] for r in ranked if depth < len(r)][:k - len(picked)]
            depth += 1
        return picked

    def examples_for(self, k: int) -> Callable[[dict[str, Any]], list[tuple[str, str]]]:
        """A record's prompt examples (``examples_of(self.pick(record, k))``), as the runner and GRPO take them."""
        return lambda record: examples_of(self.pick(record, k))


def recorded_k(data_dir: Path) -> int:
    """How many logged calls the prompts of an ``envsim train data`` folder list (``stats.json``'s
    ``logged_examples``; 0 when it says nothing or cannot be read)."""
    try:
        return int(json.loads((Path(data_dir) / "stats.json").read_text()).get("logged_examples") or 0)
    except (OSError, ValueError, TypeError, AttributeError):
        return 0


def examples_of(calls: Sequence[LoggedCall]) -> list[tuple[str, str]]:
    """``(call text, answer text)`` pairs, as ``build_messages(examples=...)`` takes them."""
    return [(c.call, c.answer) for c in calls]


def examples_part(examples: Sequence[tuple[str, str]]) -> str:
    """The prompt part listing the examples under ``EXAMPLES_HEADING``."""
    lines = [f"{i}. {call}\n-> {answer}" for i, (call, answer) in enumerate(examples, 1)]
    return EXAMPLES_HEADING + "\n" + "\n".join(lines)


def pool_from_samples(samples: Sequence[dict[str, Any]], records: Sequence[dict[str, Any]]) -> LoggedCalls:
    """The pool of SFT samples (chat, the answer last) and their records, matched by id."""
    by_id = {str(r["id"]): r for r in records}
    calls = []
    for sample in samples:
        record = by_id.get(str(sample["id"]))
        if record is None:
            raise ValueError(f"sample {sample['id']} has no record")
        calls.append(logged_call(record, sample["messages"][-1]["content"], str(sample.get("prompt_version", "2"))))
    return LoggedCalls(calls)


def load_logged_calls(data_dir: Path) -> LoggedCalls:
    """The pool of an ``envsim train data`` output directory (its chat samples and their records). A pool holding
    calls of a shipped benchmark's held-out environments (v1 or v2) is refused (``LeakError``): its answers would
    be shown in that benchmark's prompts."""
    from envsim.construction.splits import assert_no_test_envs
    from envsim.training.rl import read_records
    from envsim.training.sft_cpu import dataset_file, read_samples

    samples_path = dataset_file(Path(data_dir))
    records_path = samples_path.with_name(samples_path.name.removesuffix(".jsonl") + ".records.jsonl")
    if not records_path.is_file():
        raise FileNotFoundError(f"{data_dir} has no {records_path.name} beside {samples_path.name}")
    records = read_records(records_path)
    assert_no_test_envs((r["env"] for r in records), "v2")  # read_records checked v1's
    return pool_from_samples(read_samples(samples_path), records)

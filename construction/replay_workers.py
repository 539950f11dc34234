"""Replaying a log in worker processes (``construct --policy replay --workers N``).

Whole tasks (log lines) go to the workers, which label and record them as one process does
(``policies.replay_calls`` and ``cow_labelling.RecordMaker``). A worker reads its line from the log at the byte
offset the parent found, and sends each record back without its two states (``None`` in their places): the first call of a task sends
its starting state whole, every call what its next state changed (``state_change``). The copy-on-write
labeller's next state shares every record the call left as it was, so the change is found by identity and
holds only the records the call wrote; the parent rebuilds each state (``rebuilt_state``) sharing the records
the previous one holds, as the labeller did. Records, their order and the files written are the same as with
one process (``tests/construction/test_replay_workers.py``); a call the executor labelled (no sharing) sends
its whole next state, which is slower, never different.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Iterator

from envsim.delta import canonical_json

_ABSENT = object()

#: Per worker process: one ``RecordMaker`` per class, the labellers of starting states, ``sample_state``s.
_MAKERS: dict[tuple[type, str], Any] = {}
_STARTS: dict[Any, Any] = {}
_INITIAL: dict[tuple[type, int], dict[str, Any]] = {}

#: A state change: (top-level key order, {name: ("value", value) | ("records", (changed, removed, order))}).
StateChange = tuple[list[str], dict[str, tuple[str, Any]]]


def line_offsets(path: Path) -> Iterator[tuple[int, int]]:
    """``(line number, byte offset)`` of each non-blank line of ``path``."""
    offset = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            if raw.strip():
                yield number, offset
            offset += len(raw)


def state_change(state: dict[str, Any], next_state: dict[str, Any]) -> StateChange:
    """What ``next_state`` holds that ``state`` does not, found by identity: the values and records that are not
    the same objects, the keys it lost, and a collection's key order where it is not ``state``'s with new keys
    last."""
    parts: dict[str, tuple[str, Any]] = {}
    for name, value in next_state.items():
        old = state.get(name, _ABSENT)
        if value is old:
            continue
        if not (isinstance(value, dict) and isinstance(old, dict)):
            parts[name] = ("value", value)
            continue
        changed = {k: v for k, v in value.items() if old.get(k, _ABSENT) is not v}
        removed = [k for k in old if k not in value]
        gone = set(removed)
        expected = [k for k in old if k not in gone] + [k for k in changed if k not in old]
        keys = list(value)
        parts[name] = ("records", (changed, removed, None if keys == expected else keys))
    return list(next_state), parts


def rebuilt_state(state: dict[str, Any], change: StateChange) -> dict[str, Any]:
    """The next state ``state_change`` described, sharing every value and record of ``state`` it did not name."""
    order, parts = change
    rebuilt: dict[str, Any] = {}
    for name in order:
        part = parts.get(name)
        if part is None:
            rebuilt[name] = state[name]
        elif part[0] == "value":
            rebuilt[name] = part[1]
        else:
            changed, removed, keys = part[1]
            collection = dict(state[name])
            collection.update(changed)
            for key in removed:
                del collection[key]
            rebuilt[name] = collection if keys is None else {k: collection[k] for k in keys}
    return rebuilt


def task_records(job: tuple[Path, int, int, str]) -> list[tuple[dict[str, Any], Any, StateChange]]:
    """In a worker: the records of one log line's calls, each as ``(record without its states, the starting state
    for the task's first call else None, the next state's change)``."""
    from envsim.construction.cow_labelling import RecordMaker
    from envsim.construction.policies import episode_calls, read_episode

    path, number, offset, split = job
    with path.open("rb") as handle:
        handle.seek(offset)
        line = handle.readline().decode("utf-8")
    episode = read_episode(path, number, line, _INITIAL)
    maker = _MAKERS.setdefault((episode.env_class, split), RecordMaker(episode.env_class, split))
    sent: list[tuple[dict[str, Any], Any, StateChange]] = []
    previous: Any = None
    for call in episode_calls(episode, _STARTS):
        record = maker.record(call)
        before, after = record["state"], record["next_state"]
        record["state"] = record["next_state"] = None  # sent apart; the keys keep their places in the record
        start = before if previous is None or before is not previous else None
        sent.append((record, start, state_change(before, after)))
        previous = after
    return sent


def replayed_records(path: Path, split: str, workers: int, progress: Any = None) -> Iterator[dict[str, Any]]:
    """The records of every logged call of ``path``, in log order, labelled in ``workers`` processes (the log is
    checked whole first: ``policies.check_log``); ``progress.update(n)`` after each task's ``n`` calls."""
    from envsim.construction.policies import check_log

    check_log(path)
    jobs = [(path, number, offset, split) for number, offset in line_offsets(path)]
    starts: dict[str, dict[str, Any]] = {}  # tasks from one starting state share it, as the labeller's forks do
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for sent in pool.map(task_records, jobs):
            state: Any = None
            for record, start, change in sent:
                if start is not None:
                    digest = hashlib.sha256(canonical_json(start).encode("utf-8", "surrogatepass")).hexdigest()
                    state = starts.setdefault(digest, start)
                next_state = rebuilt_state(state, change)
                record["state"], record["next_state"] = state, next_state
                yield record
                state = next_state
            if progress is not None:
                progress.update(len(sent))


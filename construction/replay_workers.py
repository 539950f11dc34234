"""Labelling a replay log (``construct --policy replay``), in this process or in ``--workers N`` processes.

Both ways share everything but where a task runs: the log is checked whole first (``replay_log.checked_lines``),
tasks (log lines) are labelled by ``labelled_task`` (``policies.episode_calls`` and ``cow_labelling.RecordMaker``),
in batches of consecutive tasks (one round trip per batch, not per task: ``batches``), each line read again at
the byte offset the check found and refused when its bytes changed since. Each record comes back without its two
states (``None`` in their places): a task's starting state is sent once per process under its digest, every call
sends what its next state changed (``state_change``). Worker processes die with their parent and leave Ctrl-C to
it (``replay_processes``); labelled tasks are journaled by the caller's choice (``replay_journal``). The copy-on-write
labeller's next state shares every record the call left as it was, so the change is found by identity and
holds only the records the call wrote; the parent rebuilds each state (``rebuilt_state``) sharing the records
the previous one holds, as the labeller did. Records, their order and the files written are the same as with
one process (``tests/construction/test_replay_workers.py``); a call the executor labelled (no sharing) sends
its whole next state, which is slower, never different.
"""

from __future__ import annotations

import os
import secrets
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable, Iterator

from envsim.construction.replay_log import LogLine, ReplayError, checked_lines, read_episode, read_line, state_digest
from envsim.construction.replay_processes import ctrl_c_ignored, stop_workers, worker_start
from envsim.jsonsafe import MAX_DEPTH, too_deep

_ABSENT = object()

#: Per worker process: one ``RecordMaker`` per class, the labellers of starting states, ``sample_state``s.
_MAKERS: dict[tuple[type, str], Any] = {}
_STARTS: dict[Any, Any] = {}
_INITIAL: dict[tuple[type, int], dict[str, Any]] = {}

#: A state change: (top-level key order, {name: ("value", value) | ("records", (changed, removed, order))}).
StateChange = tuple[list[str], dict[str, tuple[str, Any]]]


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


#: Per process: the digests of the starting states this process has sent in the current run (the run's token and
#: the digests; the parent holds every one sent).
_SENT: tuple[list[str], set[str]] = ([""], set())
#: Per process: the digest of each starting state met, by identity (the state held, so its id stays its own).
_DIGESTS: dict[int, tuple[Any, str]] = {}

#: A labelled call as sent: (record without its states, starting state's digest or None, the state itself the first
#: time this process sends that digest else None, the next state's change).
SentCall = tuple[dict[str, Any], "str | None", Any, StateChange]
#: A batch of consecutive checked log lines to label in one round trip: (log, split, lines, the run's token).
Batch = tuple[Path, str, list[LogLine], str]

#: Tasks of one batch at most, and bytes of log lines (a batch holds at least one line).
BATCH_TASKS = 256
BATCH_BYTES = 1 << 20


def _digest_of(state: Any) -> str:
    held = _DIGESTS.get(id(state))
    if held is None or held[0] is not state:
        if len(_DIGESTS) > 64:
            _DIGESTS.clear()
        held = (state, state_digest(state))
        _DIGESTS[id(state)] = held
    return held[1]


def _too_deep_problem(record: dict[str, Any], change: StateChange) -> str | None:
    """Why a labelled record would nest deeper than a benchmark file may (``jsonsafe.MAX_DEPTH``), else None: the
    record without its states, and what the call wrote into the next state (the rest was checked in the log)."""
    if too_deep(record, MAX_DEPTH):
        return "its observation or arguments"
    for name, (kind, value) in change[1].items():
        if kind == "value" and too_deep(value, MAX_DEPTH - 2):
            return f"next_state/{name}"
        if kind == "records" and any(too_deep(v, MAX_DEPTH - 3) for v in value[0].values()):
            return f"a record of next_state/{name}"
    return None


def labelled_task(path: Path, line: LogLine, split: str, sent_starts: set[str]) -> list[SentCall]:
    """The records of one checked log line's calls (``SentCall``s); anything that stops labelling is a
    ``ReplayError`` at ``LOG:LINE``, never a traceback. A starting state is sent whole only when its digest is not in
    ``sent_starts`` (then added)."""
    from envsim.construction.cow_labelling import RecordMaker
    from envsim.construction.policies import episode_calls

    where = f"{path}:{line.number}"
    episode = read_episode(path, line.number, read_line(path, line), _INITIAL)
    maker = _MAKERS.setdefault((episode.env_class, split), RecordMaker(episode.env_class, split))
    sent: list[SentCall] = []
    previous: Any = None
    try:
        for index, call in enumerate(episode_calls(episode, _STARTS), 1):
            record = maker.record(call)
            before, after = record["state"], record["next_state"]
            record["state"] = record["next_state"] = None  # sent apart; the keys keep their places in the record
            change = state_change(before, after)
            problem = _too_deep_problem(record, change)
            if problem is not None:
                raise ReplayError(f"{where}: call {index} ({record['action']['name']}): {problem} nests deeper than "
                                  f"{MAX_DEPTH} levels (jsonsafe.MAX_DEPTH); a benchmark file cannot hold it")
            digest = start = None
            # a new starting state: the task's first, or a state that is not (equal to) the one the last call left
            if previous is None or (before is not previous and _digest_of(before) != _digest_of(previous)):
                digest = _digest_of(before)
                if digest not in sent_starts:
                    sent_starts.add(digest)
                    start = before
            sent.append((record, digest, start, change))
            previous = after
    except ReplayError:
        raise
    except Exception as exc:  # noqa: BLE001 - a tool or environment failing outside its call: named, not a traceback
        raise ReplayError(f"{where}: labelling stopped: {type(exc).__name__}: {str(exc)[:300]}") from None
    return sent


def labelled_batch(batch: Batch) -> list[list[SentCall]]:
    """``labelled_task`` of every line of ``batch``, in order (what one round trip to a worker does)."""
    path, split, lines, run = batch
    if _SENT[0][0] != run:  # a new run (a test's second construct in one process, a forked parent's leftovers)
        _SENT[0][0] = run
        _SENT[1].clear()
    return [labelled_task(path, line, split, _SENT[1]) for line in lines]


def batches(path: Path, split: str, lines: list[LogLine], workers: int, run: str = "") -> list[Batch]:
    """Consecutive lines grouped so that each worker gets several batches (``BATCH_TASKS`` lines and
    ``BATCH_BYTES`` of log at most, one line at least)."""
    per_batch = max(1, min(BATCH_TASKS, -(-len(lines) // (4 * workers))))
    grouped: list[Batch] = []
    current: list[LogLine] = []
    size = 0
    for line in lines:
        if current and (len(current) >= per_batch or size + line.size > BATCH_BYTES):
            grouped.append((path, split, current, run))
            current, size = [], 0
        current.append(line)
        size += line.size
    if current:
        grouped.append((path, split, current, run))
    return grouped


def _warm(path: Path, line: LogLine, split: str) -> None:
    """Before the workers are forked: make, in this process, what every worker would make first for the first task
    (its starting state, normalised once; the record maker; the labeller of that state; the modules labelling
    imports), so that workers share it instead of each making it again (a log whose tasks start from one large
    state: its load->save form and first labeller once, not once per worker)."""
    from envsim.construction.cow_labelling import RecordMaker, labels_traced, start_labeller

    episode = read_episode(path, line.number, read_line(path, line), _INITIAL)
    _MAKERS.setdefault((episode.env_class, split), RecordMaker(episode.env_class, split))
    if labels_traced(episode.env_class):
        start_labeller(episode.env_class, episode.state, _STARTS)
    _digest_of(episode.state)


class ReplayStopped(Exception):
    """Labelling stopped before the end (a worker died, Ctrl-C, a bad line met while labelling); the message says
    what is kept and how to resume. ``interrupted``: stopped by Ctrl-C."""

    def __init__(self, message: str, interrupted: bool = False) -> None:
        super().__init__(message)
        self.interrupted = interrupted


def _labelled_batches(path: Path, split: str, lines: list[LogLine], workers: int,
                      running: Callable[[int], None]) -> Iterator[list[list[SentCall]]]:
    """The labelled batches of ``lines`` in order, in this process (``workers`` 1) or in a pool of ``workers``
    processes; ``running(i)`` is told the index of the first line of the batch now awaited."""
    grouped = batches(path, split, lines, workers, secrets.token_hex(8))
    first = 0
    if workers <= 1:
        for batch in grouped:
            running(first)
            yield labelled_batch(batch)
            first += len(batch[2])
        return
    if lines:
        _warm(path, lines[0], split)
    pool = ProcessPoolExecutor(max_workers=workers, initializer=worker_start, initargs=(os.getpid(),))
    try:
        with ctrl_c_ignored():  # the workers are forked here: none sees Ctrl-C before it ignores it itself
            futures = [pool.submit(labelled_batch, batch) for batch in grouped]
        # futures, not pool.map: map cancels what is pending when stopped, racing the pool's own clean-up (3.11)
        for batch, future in zip(grouped, futures):
            running(first)
            yield future.result()
            first += len(batch[2])
    except BaseException:
        stop_workers(pool)
        raise
    pool.shutdown(wait=True)


def replayed_records(path: Path, split: str, workers: int = 1, progress: Any = None, *,
                     journal: Path | None = None, echo: Callable[[str], None] | None = None
                     ) -> Iterator[dict[str, Any]]:
    """The records of every logged call of ``path``, in log order, labelled in this process (``workers`` 1) or in
    ``workers`` processes: the log is checked whole first (``ReplayError`` at ``LOG:LINE``); with ``journal``, each
    labelled task is journaled (``replay_journal``) and tasks an earlier run journaled are taken from it (said
    through ``echo``); a worker that dies, Ctrl-C, or a line that fails while labelling raises ``ReplayStopped``
    saying what is kept. ``progress.update(n)`` after each task's ``n`` calls."""
    from envsim.construction.replay_journal import ReplayJournal

    say = echo or (lambda text: None)
    lines = checked_lines(path)
    try:
        book = ReplayJournal.open(journal, split) if journal is not None else None
    except OSError as exc:
        raise ReplayError(f"{journal}: cannot write the replay journal ({exc.strerror or exc})") from None
    starts: dict[str, Any] = dict(book.starts) if book is not None else {}
    done: dict[tuple[int, str], Any] = dict(book.tasks) if book is not None else {}
    if book is not None:
        changed = _changed_environments(done)
        if changed:  # records of an environment whose code changed since: labelled again, all of them
            book.notes.append(f"{journal} set aside: {', '.join(changed[:3])} changed since it was written")
            done, starts = {}, {}
        for note in book.notes:
            say(f"replay: {note}")
        resumed = [line for line in lines if (line.number, line.digest) in done]
        if resumed:
            calls = sum(len(done[(line.number, line.digest)].calls) for line in resumed)
            say(f"replay: resuming from {journal}: {len(resumed)} of {len(lines)} tasks ({calls} calls) already "
                "labelled")
    todo = [line for line in lines if (line.number, line.digest) not in done]
    labelled_tasks = calls_done = 0
    state_of_line = {"first": 0}

    def kept() -> str:
        where = f" are kept in {journal}; run the same command again to resume" if book is not None else " are lost"
        return f"{labelled_tasks} of {len(lines)} tasks ({calls_done} calls) labelled{where}"

    stream = _labelled_batches(path, split, todo, workers, lambda first: state_of_line.update(first=first))
    pending: list[list[SentCall]] = []
    try:
        for line in lines:
            journaled = done.get((line.number, line.digest))
            if journaled is not None:
                calls = [(record, digest, None, change) for record, digest, change in journaled.calls]
            else:
                if not pending:
                    pending = list(next(stream))
                calls = pending.pop(0)
                for _record, digest, start, _change in calls:
                    if start is not None:
                        starts.setdefault(digest, start)
                if book is not None:
                    book.add(line.number, line.digest, [[r, d, c] for r, d, _s, c in calls], starts)
            yield from _rebuilt(calls, starts, f"{path}:{line.number}", journal)
            labelled_tasks += 1
            calls_done += len(calls)
            if progress is not None:
                progress.update(len(calls))
    except BrokenProcessPool:
        at = todo[min(state_of_line["first"], len(todo) - 1)].number if todo else 0
        raise ReplayStopped(f"a replay worker stopped unexpectedly (killed, or out of memory) while labelling from "
                            f"{path}:{at}; {kept()}") from None
    except KeyboardInterrupt:
        raise ReplayStopped(f"interrupted: {kept()}", interrupted=True) from None
    except ReplayError as exc:
        raise ReplayStopped(f"{exc}; {kept()}") from None
    finally:
        stream.close()
        if book is not None:
            book.close()


def _changed_environments(done: dict[tuple[int, str], Any]) -> list[str]:
    """The environments of journaled records whose ``env_version`` is not what the environment hashes to now."""
    from envsim.envs.registry import get_env, refusal
    from envsim.envs.shown import env_version

    versions: dict[str, str | None] = {}
    changed: list[str] = []
    for task in done.values():
        for record, _digest, _change in task.calls:
            env_id = record.get("env")
            if not isinstance(env_id, str):
                return ["a record without an environment"]
            if env_id not in versions:
                try:  # an id the log did not trust is never imported because a journal names it
                    versions[env_id] = None if refusal(env_id) else env_version(get_env(env_id))
                except Exception:  # noqa: BLE001 - an environment gone since: its records are not taken
                    versions[env_id] = None
            if record.get("env_version") != versions[env_id] and env_id not in changed:
                changed.append(env_id)
    return changed


def _rebuilt(calls: list[SentCall], starts: dict[str, Any], where: str,
             journal: Path | None) -> Iterator[dict[str, Any]]:
    """The records of one task's calls with their states rebuilt, sharing what each call left as it was."""
    state: Any = None
    for record, digest, _start, change in calls:
        try:
            if digest is not None:
                state = starts[digest]
            next_state = rebuilt_state(state, change)
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            raise ReplayError(f"{where}: the journal {journal} does not rebuild this task's states "
                              f"({type(exc).__name__}); remove it and run again") from None
        record = dict(record)
        record["state"], record["next_state"] = state, next_state
        yield record
        state = next_state

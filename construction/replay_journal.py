"""The journal of a replay (``construct --policy replay``): labelled tasks kept as they are done, so that a killed
worker, a killed ``construct`` or Ctrl-C loses nothing and the same command resumes.

The journal is ``OUT.replay-journal`` beside the output, JSONL:

* a header ``{"envsim_replay_journal": 1, "split": SPLIT}``;
* a starting state once per digest: ``{"start": DIGEST, "state": {...}}``;
* one line per labelled task: ``{"task": LINE, "line": SHA256 of the log line, "calls": [[record without its
  states, DIGEST of the starting state or null, what the call changed], ...]}``
  (``replay_workers.state_change``).

A task is taken from the journal only when its log line has the same number and the same bytes (digest) as when
it was journaled; a journal of another split, or holding records of an environment whose code changed since
(``env_version``, checked by ``replay_workers``), is set aside. It is read without following a link, only as a
regular file, each line by ``jsonsafe``'s strict rules; the first line it cannot read ends what is taken (a task
cut short by a kill) and the rest is labelled again. A resumed journal is rewritten whole (renamed into place)
before anything is added, then appended to, one task at a time. It is removed once the output is written.
A journal is trusted as the output is: whoever can write the output folder can write either.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from envsim.jsonsafe import MAX_DEPTH, dumps_line, loads
from envsim.safe_files import MAX_LINE_BYTES, open_regular, write_lines

__all__ = ["JOURNAL_SUFFIX", "JournaledTask", "ReplayJournal", "journal_path", "remove_journal"]

JOURNAL_SUFFIX = ".replay-journal"
_FORMAT = 1
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def journal_path(out: Path) -> Path:
    """Where the replay writing ``out`` keeps its journal."""
    return out.with_name(out.name + JOURNAL_SUFFIX)


def remove_journal(out: Path) -> None:
    """Delete the journal of the replay that wrote ``out`` (a link there is removed, never followed)."""
    try:
        os.unlink(journal_path(out))
    except FileNotFoundError:
        pass


def _dump(value: Any) -> str:
    return dumps_line(value, separators=(",", ":"))


@dataclass
class JournaledTask:
    """A labelled task as the journal holds it: per call ``[record, start digest or None, change]``."""

    calls: list[list[Any]]


@dataclass
class ReplayJournal:
    """An open journal: tasks and starting states read back from an earlier run, and the file appended to."""

    path: Path
    tasks: dict[tuple[int, str], JournaledTask] = field(default_factory=dict)
    starts: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    _handle: IO[str] | None = None
    _written_starts: set[str] = field(default_factory=set)

    @classmethod
    def open(cls, path: Path, split: str) -> "ReplayJournal":
        """The journal at ``path`` for a replay of ``split``: what an earlier run journaled (``tasks``, ``starts``,
        with ``notes`` saying what was set aside), rewritten whole and opened for appending."""
        journal = cls(path)
        header = {"envsim_replay_journal": _FORMAT, "split": split}
        kept = journal._read(header)
        write_lines(path, [_dump(header), *kept])  # renamed into place: a torn tail is cut, a link replaced
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | _NOFOLLOW | _CLOEXEC)
        journal._handle = os.fdopen(fd, "w", encoding="utf-8")
        journal._written_starts = set(journal.starts)
        return journal

    def _read(self, header: dict[str, Any]) -> list[str]:
        """Read an earlier journal at ``self.path`` (none: nothing); returns the lines kept, as they were."""
        try:
            fd = open_regular(self.path)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self.notes.append(f"{self.path} set aside: {exc}")
            return []
        kept: list[str] = []
        with os.fdopen(fd, "rb") as handle:
            first = handle.readline(MAX_LINE_BYTES + 1)
            if self._parsed(first) != header:
                self.notes.append(f"{self.path} set aside: written by another replay (not split "
                                  f"{header['split']!r}) or unreadable")
                return []
            number = 1
            while True:
                raw = handle.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    break
                number += 1
                entry = self._parsed(raw) if raw.endswith(b"\n") else None
                if not self._take(entry):
                    self.notes.append(f"{self.path}:{number}: unreadable (a task cut short when the run stopped?); "
                                      "what follows is labelled again")
                    break
                kept.append(raw[:-1].decode("utf-8"))
        return kept

    @staticmethod
    def _parsed(raw: bytes) -> Any:
        try:
            return loads(raw.decode("utf-8"), max_depth=MAX_DEPTH + 8)  # a call nests a record five levels down
        except (UnicodeDecodeError, ValueError):
            return None

    def _take(self, entry: Any) -> bool:
        """Keep one journal entry read back; ``False`` when it is not one this module writes."""
        if not isinstance(entry, dict):
            return False
        if set(entry) == {"start", "state"} and isinstance(entry["start"], str) and isinstance(entry["state"], dict):
            self.starts[entry["start"]] = entry["state"]
            return True
        calls = entry.get("calls")
        if set(entry) != {"task", "line", "calls"} or not isinstance(entry["task"], int) \
                or not isinstance(entry["line"], str) or not isinstance(calls, list):
            return False
        for call in calls:
            if not (isinstance(call, list) and len(call) == 3 and isinstance(call[0], dict)
                    and (call[1] is None or call[1] in self.starts) and _is_change(call[2])):
                return False
        self.tasks[(entry["task"], entry["line"])] = JournaledTask(calls)
        return True

    def add(self, number: int, digest: str, calls: list[list[Any]], starts: dict[str, dict[str, Any]]) -> None:
        """Journal one labelled task (log line ``number`` of bytes ``digest``), writing first each starting state
        its calls name that the journal does not hold yet (taken from ``starts``)."""
        assert self._handle is not None, "journal not open"
        for call in calls:
            start = call[1]
            if start is not None and start not in self._written_starts:
                self._handle.write(_dump({"start": start, "state": starts[start]}) + "\n")
                self._written_starts.add(start)
        self._handle.write(_dump({"task": number, "line": digest, "calls": calls}) + "\n")
        self._handle.flush()  # in the kernel: a kill of this process (-9 included) keeps it

    def close(self) -> None:
        """Close the file (kept on disk)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def remove(self) -> None:
        """Close and delete the journal (the output holds its work)."""
        self.close()
        remove_journal(self.path.with_name(self.path.name[:-len(JOURNAL_SUFFIX)]))


def _is_change(change: Any) -> bool:
    """Whether ``change`` has the shape of ``replay_workers.state_change``'s value once through JSON."""
    if not (isinstance(change, list) and len(change) == 2 and isinstance(change[0], list)
            and isinstance(change[1], dict)):
        return False
    for part in change[1].values():
        if not (isinstance(part, list) and len(part) == 2 and part[0] in ("value", "records")):
            return False
        if part[0] == "records":
            body = part[1]
            if not (isinstance(body, list) and len(body) == 3 and isinstance(body[0], dict)
                    and isinstance(body[1], list) and (body[2] is None or isinstance(body[2], list))):
                return False
    return all(isinstance(name, str) for name in change[0])

"""Stand-ins for the records a call only counts, read from a view's notes (the executor baseline's reading).

A view of an object-model state shows a dict the call only counts (``len(self.db.tickets)`` for a new id)
without its records, and says how many there are: ``- /tickets has 36 entries in all (the call counts them)``.
A reader answers from that number; the executor runs code, so it fills the dict with as many stand-ins (keys no
real record has, each a copy of one record of that dict: a shown one, or the one the call itself adds when it
runs on the view as shown). The call reads neither their keys nor their contents, so its answer is the one it
gives on the full state (construction verified each view with such stand-ins, ``envs.views.verify``).
"""

from __future__ import annotations

import copy
import re
from typing import Any

COUNT_NOTE = re.compile(r"^- (/\S*) has (\d+) entries in all \(the call counts them\)$", re.MULTILINE)
STAND_IN_KEY = "<stand-in {}>"


def _path(pointer: str) -> tuple[str, ...]:
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in pointer.split("/")[1:])


def _at(state: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(state, dict) or key not in state:
            return None
        state = state[key]
    return state


def short_counts(notes: str, state: Any) -> dict[tuple[str, ...], int]:
    """Dicts the notes say the call counts, which the view shows with fewer entries: path -> entries in all."""
    counts = {_path(m[1]): int(m[2]) for m in COUNT_NOTE.finditer(notes or "")}
    return {p: n for p, n in counts.items() if isinstance(_at(state, p), dict) and len(_at(state, p)) < n}


def templates(state: Any, counts: dict[tuple[str, ...], int], ran: Any = None) -> dict[tuple[str, ...], Any]:
    """One record per counted dict: a shown one, else one the call added there when it ran (``ran``: the next
    state of a run on the view as shown)."""
    found: dict[tuple[str, ...], Any] = {}
    for path in counts:
        shown = _at(state, path)
        added = _at(ran, path) if ran is not None else None
        pool = list(shown.values()) or [v for k, v in (added or {}).items() if k not in shown]
        if pool:
            found[path] = pool[0]
    return found


def with_stand_ins(state: Any, counts: dict[tuple[str, ...], int], records: dict[tuple[str, ...], Any]) -> Any:
    """``state`` with each counted dict filled up to its number of entries with copies of its template record."""
    out = copy.deepcopy(state)
    for path, count in counts.items():
        node, record = _at(out, path), records.get(path)
        if record is None:
            continue
        i = 0
        while len(node) < count:
            key = STAND_IN_KEY.format(i)
            if key not in node:
                node[key] = copy.deepcopy(record)
            i += 1
    return out

"""Top-level lists of records shown in part (object-model code only), and running a call on such a view.

Code that reaches the state through an object model (``self.db.customers``) and finds records by scanning a list
(``for c in self.db.customers: if c.customer_id == customer_id``) reads the records the scan keeps, not the whole
list. Such a view shows a top-level list of records **as an object keyed by list index** (``"customers": {"88":
{...}}``): a JSON pointer does not tell a list index from an object key, so a patch written against the view
(``/customers/88/lines/0/status``) applies to the full state as it is. The view's note says so and how long the
list is: ``- /customers is a list of 120 records shown in part (1 shown): the object's keys are list indices; the
code runs on the shown ones as a list, in index order``.

The call runs on the view with each such list **compacted** (the shown records in index order) and the patch it
makes is mapped back (``full_patch``): position ``i`` of the compact list is the ``i``-th shown index, a position
past the shown ones is the full list's end plus its offset (an appended record). Construction's verification
(``verify.py``) and the executor baseline (from the prompt's notes alone: ``lists_in_notes``) run it so. A call that
reads a list's length or an index (``len``, ``[i]``, ``sorted``) sees the list whole: only scans make it partial.
"""

from __future__ import annotations

import re
from typing import Any

from envsim.envs.views.values import Path, pointer

#: The note a partly shown list gets (``View.notes``); ``lists_in_notes`` reads it back.
LIST_NOTE = ("{where} is a list of {length} records shown in part ({shown} shown): the object's keys are list "
             "indices; the code runs on the shown ones as a list, in index order")
_NOTE = re.compile(r"^- (/[^\s/]+) is a list of (\d+) records shown in part \(\d+ shown\): ", re.MULTILINE)


def is_record_list(value: Any) -> bool:
    """A non-empty list whose items are all objects (records)."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def list_note(path: Path, length: int, shown: int) -> str:
    """The note of a top-level list shown in part."""
    return LIST_NOTE.format(where=pointer(path), length=length, shown=shown)


def lists_in_notes(notes: str, state: Any) -> dict[Path, int]:
    """Partly shown lists a view's notes name, whose shown part ``state`` holds as an object: path -> length."""
    found: dict[Path, int] = {}
    for match in _NOTE.finditer(notes or ""):
        key = match[1][1:].replace("~1", "/").replace("~0", "~")
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            found[(key,)] = int(match[2])
    return found


Mapping = dict[str, tuple[list[int], int]]


def compact(state: Any, lists: dict[Path, int]) -> tuple[Any, Mapping]:
    """``state`` with each partly shown list (an object keyed by index) as a list of its shown records in index
    order, and the mapping ``full_patch`` needs (top-level key -> (shown indices, full length))."""
    if not lists or not isinstance(state, dict):
        return state, {}
    out = dict(state)
    mapping: Mapping = {}
    for path, length in lists.items():
        key = path[0]
        node = state.get(key)
        if not isinstance(node, dict):
            continue
        indices = sorted(int(k) for k in node)
        by_index = {int(k): v for k, v in node.items()}
        out[key] = [by_index[i] for i in indices]
        mapping[key] = (indices, length)
    return out, mapping


def _full_index(segment: str, indices: list[int], length: int) -> str:
    if not segment.isdigit():
        return segment  # "-": the end of the list, the same on the full state
    position = int(segment)
    return str(indices[position] if position < len(indices) else length + position - len(indices))


def _full_pointer(path: str, mapping: Mapping) -> str:
    parts = path.split("/")
    if len(parts) >= 3 and parts[1] in mapping:
        indices, length = mapping[parts[1]]
        parts[2] = _full_index(parts[2], indices, length)
    return "/".join(parts)


def full_patch(patch: list[dict[str, Any]], mapping: Mapping) -> list[dict[str, Any]]:
    """A patch made on a compacted state, in full-state paths (see the module docstring)."""
    if not mapping:
        return patch
    out = []
    for op in patch:
        op = dict(op)
        for field in ("path", "from"):
            if isinstance(op.get(field), str):
                op[field] = _full_pointer(op[field], mapping)
        out.append(op)
    return out

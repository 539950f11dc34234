"""Benchmark records held once in memory: what a record repeats is shared, not copied.

A JSON line holds ``state`` and ``next_state`` whole, although a call changes a few leaves, and every record
of an environment repeats its ``tools`` schemas. Read as-is, the 400 v1 test records take ~35 MB of Python
objects for 6.3 MB of text. ``compact_records`` makes ``next_state`` reuse every subtree of ``state`` that is
strictly equal at the same path (same JSON types, same key order) and makes records with identical ``tools``
lists share one list. The records read exactly as before (same values, same key order, same JSON text);
shared containers must be treated as read-only, as the states of ``benchmark.state_store`` already are
(the executor and the scorers copy what they change).
"""

from __future__ import annotations

import json
import math
from typing import Any

from envsim.delta import exactly_equal


def share_unchanged(old: Any, new: Any) -> Any:
    """``new`` with each subtree that is strictly equal to ``old``'s at the same path replaced by ``old``'s object
    (``new`` is edited in place; ``old`` itself is returned when the whole value is unchanged).

    Strictly equal: the same JSON type at every level (``1``, ``1.0`` and ``True`` stay distinct) and, for
    objects, the same keys in the same order, so the JSON text of ``new`` is unchanged."""
    if type(old) is not type(new):
        return new
    if isinstance(new, (dict, list)) and exactly_equal(old, new):
        return old
    if isinstance(new, dict):
        same = len(old) == len(new)
        for key, value in new.items():
            if key not in old:
                same = False
                continue
            shared = share_unchanged(old[key], value)
            if shared is not value:
                new[key] = shared
            same = same and shared is old[key]
        return old if same and list(old) == list(new) else new
    if isinstance(new, list):
        same = len(old) == len(new)
        for i in range(min(len(old), len(new))):
            shared = share_unchanged(old[i], new[i])
            if shared is not new[i]:
                new[i] = shared
            same = same and shared is old[i]
        return old if same else new
    if type(new) is float:  # 0.0 == -0.0, but the JSON text differs
        return old if old == new and math.copysign(1.0, old) == math.copysign(1.0, new) else new
    return old if old == new else new


def compact_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Share ``next_state``'s unchanged subtrees with ``state`` and identical ``tools`` lists across records, in
    place (plain dict records only: records resolved from stored states share already); returns ``records``."""
    tools_by_text: dict[str, list[Any]] = {}
    for record in records:
        if type(record) is not dict:  # noqa: E721 - a StoredRecord (dict subclass) resolves on read
            continue
        if isinstance(record.get("state"), dict) and isinstance(record.get("next_state"), dict):
            record["next_state"] = share_unchanged(record["state"], record["next_state"])
        tools = record.get("tools")
        if isinstance(tools, list):
            record["tools"] = tools_by_text.setdefault(json.dumps(tools, ensure_ascii=False), tools)
    return records

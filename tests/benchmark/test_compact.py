"""Records held once in memory (benchmark/compact.py): shared subtrees, same values and JSON text."""

from __future__ import annotations

import json

from envsim.benchmark import load
from envsim.benchmark.compact import compact_records, share_unchanged


def test_unchanged_subtrees_are_shared_and_changed_ones_kept():
    old = {"a": {"x": 1, "y": [1, 2]}, "b": {"k": "v"}, "c": [{"id": 1}, {"id": 2}]}
    new = {"a": {"x": 1, "y": [1, 2]}, "b": {"k": "w"}, "c": [{"id": 1}, {"id": 2}, {"id": 3}]}
    text = json.dumps(new)
    result = share_unchanged(old, new)
    assert json.dumps(result) == text
    assert result["a"] is old["a"] and result["c"][0] is old["c"][0] and result["c"][1] is old["c"][1]
    assert result["b"] is not old["b"] and result["c"] is not old["c"]
    assert share_unchanged(old, json.loads(json.dumps(old))) is old


def test_only_strictly_equal_json_is_shared():
    old = {"n": 1, "f": 1.0, "t": True, "order": {"a": 1, "b": 2}}
    new = {"n": True, "f": 1, "t": 1, "order": {"b": 2, "a": 1}}  # == in Python, other JSON
    text = json.dumps(new)
    result = share_unchanged(old, new)
    assert json.dumps(result) == text
    assert result["order"] is not old["order"] and list(result["order"]) == ["b", "a"]


def test_compacted_v1_records_read_exactly_as_loaded():
    records = load("v1", "test")
    texts = [json.dumps(r) for r in records]
    compact_records(records)
    assert [json.dumps(r) for r in records] == texts
    by_env: dict[str, list] = {}
    for record in records:
        by_env.setdefault(record["env"], []).append(record)
    assert all(all(r["tools"] is group[0]["tools"] for r in group) for group in by_env.values())
    changed = next(r for r in records if r["delta_size"] >= 1)
    shared = [k for k in changed["state"] if changed["next_state"].get(k) is changed["state"][k]]
    assert shared and len(shared) < len(changed["state"]) + 1

"""Records held once in memory (benchmark/compact.py): shared subtrees, same values and JSON text."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

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


def _reference_share(old, new):
    """The plain recursive walk ``share_unchanged`` must agree with (it only adds a C-speed shortcut)."""
    if type(old) is not type(new):
        return new
    if isinstance(new, dict):
        same = len(old) == len(new)
        for key, value in new.items():
            if key not in old:
                same = False
                continue
            new[key] = _reference_share(old[key], value)
            same = same and new[key] is old[key]
        return old if same and list(old) == list(new) else new
    if isinstance(new, list):
        same = len(old) == len(new)
        for i in range(min(len(old), len(new))):
            new[i] = _reference_share(old[i], new[i])
            same = same and new[i] is old[i]
        return old if same else new
    return old if json.dumps(old) == json.dumps(new) else new


def _sharing(value, old_ids):
    """Which containers of ``value`` are objects of the old state: the shape of the sharing."""
    if isinstance(value, dict):
        return (id(value) in old_ids, {k: _sharing(v, old_ids) for k, v in value.items()})
    if isinstance(value, list):
        return (id(value) in old_ids, [_sharing(v, old_ids) for v in value])
    return None


def _ids(value, into):
    if isinstance(value, (dict, list)):
        into.add(id(value))
        for child in (value.values() if isinstance(value, dict) else value):
            _ids(child, into)
    return into


_LEAVES = st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from([0.0, -0.0, 1.0, 2.5]) | st.text("ab", max_size=2)
_JSON = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("abc", max_size=1),
                                                                                           inner, max_size=3),
                     max_leaves=25)


#: ``==``-equal values of other JSON, keyed by type and value (``1``, ``True`` and ``1.0`` are one dict key).
_TWINS = {(int, 1): [True, 1.0], (bool, True): [1, 1.0], (int, 0): [False, 0.0, -0.0],
          (bool, False): [0, 0.0, -0.0], (float, 0.0): [-0.0, 0, False], (float, 1.0): [1, True], (float, 2.5): [2.5]}


def _twist(value, draw):
    """A copy of ``value`` with some parts made ``==``-equal but other JSON (``1`` -> ``True`` / ``1.0``, ``0.0``
    -> ``-0.0``, keys reordered), some replaced outright, the rest copied as they are."""
    choice = draw(st.integers(0, 5))
    if isinstance(value, dict):
        items = [(k, _twist(v, draw)) for k, v in value.items()]
        return dict(reversed(items) if choice == 0 else items)
    if isinstance(value, list):
        return [_twist(v, draw) for v in value] + ([None] if choice == 0 else [])
    if choice <= 1 and (type(value), value) in _TWINS:
        return draw(st.sampled_from(_TWINS[type(value), value]))
    return draw(_LEAVES) if choice == 2 else value


@settings(max_examples=400, deadline=None)
@given(_JSON, st.data())
def test_sharing_is_exactly_the_plain_walks(old, data):
    """Same JSON text as ``new`` and the same subtrees shared as the plain recursive walk, for ``new`` a copy of
    ``old`` with parts twisted (``1``/``1.0``/``True``, ``0.0``/``-0.0``, key order) or replaced."""
    new = _twist(old, data.draw)
    expected_new = json.loads(json.dumps(new))
    text = json.dumps(new)
    result = share_unchanged(old, new)
    reference = _reference_share(old, expected_new)
    assert json.dumps(result) == text
    old_ids = _ids(old, set())
    assert _sharing(result, old_ids) == _sharing(reference, old_ids)

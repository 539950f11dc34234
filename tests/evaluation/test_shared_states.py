"""Copy-on-write scoring: a prediction never modifies the record's state, shares what it does not change,
and scores exactly as a deep copy would (same verdicts, same errors)."""

from __future__ import annotations

import copy
import json

import jsonpatch
import pytest

from envsim.delta import same_json
from envsim.evaluation.scoring.original_rule import apply_patch_leniently
from envsim.evaluation.scoring.scoring import apply_prediction
from envsim.evaluation.scoring.shared_states import same_json_shared

STATE = {"orders": {"#1": {"items": [{"id": 1}, {"id": 2}], "status": "open"}, "#2": {"items": [], "status": "x"}},
         "users": {"u": {"orders": ["#1"]}}, "n": 1}

PATCHES = [
    [{"op": "replace", "path": "/orders/#1/status", "value": "closed"}],
    [{"op": "add", "path": "/orders/#1/items/-", "value": {"id": 3}}, {"op": "remove", "path": "/orders/#1/items/0"}],
    [{"op": "move", "from": "/orders/#2", "path": "/users/u/moved"}],
    [{"op": "copy", "from": "/orders/#1", "path": "/orders/#3"}, {"op": "replace", "path": "/orders/#3/status", "value": 1}],
    [{"op": "add", "path": "", "value": {"a": 1}}],
    [{"op": "move", "from": "/orders", "path": ""}, {"op": "replace", "path": "/#1/status", "value": "y"}],
]


@pytest.mark.parametrize("patch", PATCHES)
def test_prediction_leaves_the_state_untouched_and_shares_the_rest(patch):
    state = copy.deepcopy(STATE)
    before = json.dumps(state, sort_keys=True)
    predicted = apply_prediction(state, patch)
    lenient = apply_patch_leniently(state, patch)
    assert json.dumps(state, sort_keys=True) == before
    expected = jsonpatch.apply_patch(copy.deepcopy(STATE), patch)
    assert same_json(predicted, expected)
    if patch[0] != {"op": "move", "from": "/orders", "path": ""}:  # the lenient rule skips a move to the root
        assert same_json(lenient, expected)
    if "users" in predicted and patch[0]["path"].startswith("/orders/#1"):
        assert predicted["users"] is state["users"]  # untouched subtrees are shared, not copied


def test_lenient_creation_of_missing_parents_copies_only_that_path():
    state = copy.deepcopy(STATE)
    lenient = apply_patch_leniently(state, [{"op": "add", "path": "/orders/#1/items/5/id", "value": 9}])
    assert len(lenient["orders"]["#1"]["items"]) == 6 and len(state["orders"]["#1"]["items"]) == 2
    assert lenient["users"] is state["users"]


def test_a_copy_bomb_is_still_refused():
    state = {"a": "x" * 60_000}
    with pytest.raises(ValueError, match="grows the state"):
        apply_prediction(state, [{"op": "copy", "from": "/a", "path": f"/b{i}"} for i in range(5)])


@pytest.mark.parametrize("a,b", [({"a": 1}, {"a": 1.0}), ({"a": True}, {"a": 1}), ({"a": [1]}, {"a": [1, 2]}),
                                 ({"a": {"b": 1}}, {"a": {"c": 1}}), ({1: 2}, {"1": 2}), ([{"a": 1}], [{"a": 1}])])
def test_shared_comparison_is_same_json(a, b):
    assert same_json_shared(a, b) == same_json(a, b)
    shared = {"big": list(range(10))}
    assert same_json_shared({"s": shared, "x": a}, {"s": shared, "x": b}) == same_json(a, b)


def test_added_keys_and_written_values_take_their_sorted_place():
    state = {"a": {"b": 1, "d": 2}, "z": {"y": 1, "x": 2}}  # /z is not touched: its order is its own
    predicted = apply_prediction(state, [{"op": "add", "path": "/a/c", "value": {"q": 1, "p": [{"n": 1, "m": 2}]}}])
    assert list(predicted["a"]) == ["b", "c", "d"] and list(predicted["a"]["c"]) == ["p", "q"]
    assert list(predicted["a"]["c"]["p"][0]) == ["m", "n"] and predicted["z"] is state["z"]
    assert list(state["a"]) == ["b", "d"]

"""Δ: the stored patch reproduces the next state; |Δ| follows the documented leaf rule."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envsim.delta import apply_patch, compute_delta, same_json

scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000),
                    st.floats(allow_nan=False, allow_infinity=False, width=32), st.text(max_size=6))
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=5),
                               st.dictionaries(st.text(max_size=5), children, max_size=5)),
    max_leaves=25,
)
states = st.dictionaries(st.text(max_size=5), json_values, max_size=6)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states, states)
def test_patch_reproduces_any_pair(old, new):
    delta = compute_delta(old, new)
    assert same_json(apply_patch(old, delta.patch), new)
    assert (delta.size == 0) == same_json(old, new)


@st.composite
def edited_states(draw):
    """A state and an edited copy of it: realistic small edits on a shared structure."""
    old = draw(states)
    new = copy.deepcopy(old)
    for _ in range(draw(st.integers(0, 4))):
        keys = list(new)
        action = draw(st.sampled_from(["set", "add", "del", "append"]))
        if action == "add" or not keys:
            new[draw(st.text(max_size=4))] = draw(json_values)
        elif action == "del":
            del new[draw(st.sampled_from(keys))]
        elif action == "append" and isinstance(new[keys[0]], list):
            new[keys[0]].append(draw(scalars))
        else:
            new[draw(st.sampled_from(keys))] = draw(scalars)
    return old, new


@settings(max_examples=300, deadline=None)
@given(edited_states())
def test_patch_reproduces_edited_state(pair):
    old, new = pair
    delta = compute_delta(old, new)
    assert same_json(apply_patch(old, delta.patch), new)


@pytest.mark.parametrize("old,new,size", [
    ({"a": 1}, {"a": 1}, 0),
    ({"a": 1}, {"a": 2}, 1),                                                   # changed scalar
    ({"a": {"b": {"c": 1, "d": 2}}}, {"a": {"b": {"c": 5, "d": 6}}}, 2),       # nested scalars
    ({"a": {}}, {"a": {"k": {"x": 1, "y": [1, 2]}}}, 1),                       # key added: whole value is one
    ({"a": {"k": {"x": 1, "y": 2}}}, {"a": {}}, 1),                            # key removed
    ({"l": [1, 2]}, {"l": [1, 2, 3]}, 1),                                      # list append
    ({"l": [1, 2, 3]}, {"l": [1, 3]}, 1),                                      # list item removed
    ({"l": [{"id": 1}]}, {"l": [{"id": 1}, {"id": 2, "v": [1, 2]}]}, 1),       # record appended
    ({"l": []}, {"l": [1, 2, 3]}, 3),                                          # three items added
    ({"a": 1}, {"a": "1"}, 1),                                                 # type change int -> str
    ({"a": {"x": 1, "y": 2}}, {"a": [1, 2]}, 1),                               # type change dict -> list
    ({"a": None}, {"a": {"x": 1}}, 1),                                         # null -> object
    ({"a": True}, {"a": 1}, 1),                                                # bool -> int is a change
    ({"o": {"s": "paid", "n": 2}, "log": []}, {"o": {"s": "void", "n": 3}, "log": ["x"], "c": 1}, 4),
    ({"m": [[0, 0], [0, 0]]}, {"m": [[0, 1], [2, 0]]}, 2),                     # matrix cells
    ({"d": [{"n": "x", "a": 1}, {"n": "y", "a": 2}, {"n": "z", "a": 3}]},       # first record removed
     {"d": [{"n": "y", "a": 2}, {"n": "z", "a": 3}]}, 1),
    ({"q": [1, 2, 3, 4]}, {"q": [2, 3, 4, 5]}, 2),                            # window slides: -1, +1
    ({"d": [{"id": 1, "s": "a", "v": 1}, {"id": 2, "s": "a", "v": 1}]},        # record edited in place
     {"d": [{"id": 1, "s": "b", "v": 2}, {"id": 2, "s": "a", "v": 1}]}, 2),
    ({"d": [{"id": 1}, {"id": 2}]}, {"d": [{"id": 0}, {"id": 1}, {"id": 2}]}, 1),  # record prepended
])
def test_delta_size_rule(old, new, size):
    delta = compute_delta(old, new)
    assert delta.size == size
    assert same_json(apply_patch(old, delta.patch), new)


def test_changed_paths_are_json_pointers():
    delta = compute_delta({"a/b": {"c~d": 1}}, {"a/b": {"c~d": 2}})
    assert delta.paths == ("/a~1b/c~0d",)
    assert delta.patch == [{"op": "replace", "path": "/a~1b/c~0d", "value": 2}]


def test_same_json_keeps_bool_apart_from_numbers():
    assert same_json({"a": 1}, {"a": 1.0})
    assert not same_json({"a": 1}, {"a": True})
    assert not same_json([1, 2], [2, 1])
    assert same_json({"a": 0.0}, {"a": -0.0}) and same_json({"b": 1, "a": [True]}, {"a": [True], "b": 1.0})


def test_strictly_equal_ignores_key_order_and_exactly_equal_does_not():
    """Two comparisons, two names: ``strictly_equal`` (equal as JSON text, what Δ labelling prunes with) and
    ``exactly_equal`` (same types and key order, ``same_json``'s and ``share_unchanged``'s C-speed shortcut)."""
    from envsim.delta import changed_paths, exactly_equal, strictly_equal

    reordered = ({"a": 1, "b": [2]}, {"b": [2], "a": 1})
    assert strictly_equal(*reordered) and not exactly_equal(*reordered)
    assert not strictly_equal(1, True) and not exactly_equal(1, 1.0) and exactly_equal([1, {"a": "x"}], [1, {"a": "x"}])
    assert list(changed_paths({"s": reordered[0]}, {"s": reordered[1]})) == []


_JSON = st.recursive(st.none() | st.booleans() | st.sampled_from([0, 1, -1, 2]) | st.sampled_from([0.0, -0.0, 1.0, 2.5])
                     | st.sampled_from(["", "a", "\ud800"]),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("ab"), inner, max_size=2),
                     max_leaves=8)


@settings(max_examples=400)
@given(_JSON, _JSON)
def test_same_json_with_its_strict_shortcut_agrees_with_the_comparison_by_json_text(a, b):
    """``same_json`` answers True at once for exactly equal values (``delta.exactly_equal``); it must agree with
    the comparison it shortcuts: canonical JSON texts, then the walk where numbers compare by value."""
    from envsim.delta import _equal, canonical_json

    reference = canonical_json(a) == canonical_json(b) or _equal(a, b)
    assert same_json(a, b) == reference
    assert same_json(a, copy.deepcopy(a))


# --- issue 21.7: aligning lists is bounded; within the bound it is difflib's alignment ----------------------

@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=40), st.lists(st.integers(0, 3), max_size=40))
def test_within_budget_lists_align_exactly_as_difflib_does(left, right):
    import difflib

    from envsim.delta import list_opcodes

    keys_l, keys_r = [str(x) for x in left], [str(x) for x in right]
    assert list_opcodes(keys_l, keys_r) == difflib.SequenceMatcher(None, keys_l, keys_r, autojunk=False).get_opcodes()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 2), max_size=60), st.lists(st.integers(0, 2), max_size=60))
def test_over_budget_lists_get_an_exact_linear_patch(old, new):
    from unittest import mock

    from envsim import delta as delta_module

    # a budget of 0: every alignment takes the linear path (at 5, a short list such as [0, 0, 0, 1] against
    # [1, 2, 2] stayed within it and difflib aligned the 1, 5 changes for 4 slots: hypothesis found it in CI)
    with mock.patch.object(delta_module, "ALIGN_BUDGET", 0):
        delta = compute_delta({"x": old}, {"x": new})
    assert same_json(apply_patch({"x": old}, delta.patch), {"x": new})
    assert delta.size <= max(len(old), len(new))  # the middle paired in order: at most one change per slot


def test_hostile_repeats_stop_difflib_at_the_budget():
    from envsim.delta import ALIGN_BUDGET, _BoundedMatcher, _OverBudget, list_opcodes

    left, right = ["0"] * 2000, ["0"] * 4000  # difflib: 8 million steps in its first call
    with pytest.raises(_OverBudget):
        _BoundedMatcher(left, right, ALIGN_BUDGET).get_opcodes()
    assert list_opcodes(left, right) == [("equal", 0, 2000, 0, 2000), ("insert", 2000, 2000, 2000, 4000)]
    delta = compute_delta({"x": [0] * 2000}, {"x": [0] * 4000})
    assert delta.size == 2000 and same_json(apply_patch({"x": [0] * 2000}, delta.patch), {"x": [0] * 4000})

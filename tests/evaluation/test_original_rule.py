"""The original EnvSimBench config rule (cm_original), CM-lenient (the same rule with deletions and JSON
types fixed), and the answer forms the original's prompt invites. Hand-built samples, one rule each."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envsim.delta import canonical_json
from envsim.evaluation.scoring.original_rule import (apply_original_changes, apply_patch_leniently, original_changes,
                                             strictly_applied_is_lenient)
from envsim.evaluation.scoring.parsing import parse_answer
from envsim.evaluation.scoring.scoring import apply_prediction, score_prediction

RECORD = {
    "state": {"items": [1, 2, 3], "count": 3, "meta": {"owner": "ana", "tag": "x"}, "flag": False},
    "next_state": {"items": [1, 2, 3, 4], "count": 4, "meta": {"owner": "ana"}, "flag": False},
    "observation": {"success": True, "count": 4},
}
RECORD["changed_paths"] = ["/count", "/items/3", "/meta/tag"]
TRUE_CHANGES = [{"type": "modify", "path": "items", "value": [1, 2, 3, 4]},
                {"type": "modify", "path": "count", "value": 4},
                {"type": "delete", "path": "meta.tag"}]


def _original(changes, feedback=RECORD["observation"], record=RECORD):
    return score_prediction(record, parse_answer(json.dumps({"feedback": feedback, "config_changes": changes})))


def _patch(patch, record=RECORD):
    return score_prediction(record, parse_answer(json.dumps({"observation": record["observation"], "patch": patch})))


def test_exact_original_answer_passes_every_rule_but_the_originals_deletion():
    s = _original(TRUE_CHANGES)
    assert s.parsed and s.fm and s.cm and s.cm_lenient
    assert not s.cm_original  # the original reads the deleted key back and wants None


def test_list_compared_whole_an_extra_edit_inside_a_changed_list_fails():
    s = _patch([{"op": "add", "path": "/items/-", "value": 4}, {"op": "replace", "path": "/items/0", "value": 9},
                {"op": "replace", "path": "/count", "value": 4}, {"op": "remove", "path": "/meta/tag"}])
    assert not s.cm and not s.cm_lenient and not s.cm_original


def test_extra_edit_outside_the_changed_paths_passes_lenient_and_original():
    s = _original(TRUE_CHANGES + [{"type": "add", "path": "meta.note", "value": "hi"},
                                  {"type": "modify", "path": "flag", "value": True}])
    assert not s.cm and s.cm_lenient


def test_missing_path_modify_creates_parents_and_passes_lenient():
    changes = TRUE_CHANGES + [{"type": "modify", "path": "audit.last.by", "value": "bot"}]
    s = _original(changes)
    assert not s.cm and "does not apply" in s.reason  # strict CM: RFC replace of a missing path
    assert s.cm_lenient
    created = apply_original_changes(RECORD["state"], [("modify", ["audit", "last", "by"], "bot")])
    assert created["audit"] == {"last": {"by": "bot"}}


def test_missing_path_replace_in_an_rfc_patch_is_created_for_lenient():
    good = [{"op": "add", "path": "/items/-", "value": 4}, {"op": "replace", "path": "/count", "value": 4},
            {"op": "remove", "path": "/meta/tag"}]
    s = _patch(good + [{"op": "replace", "path": "/audit/by", "value": "bot"}])
    assert not s.cm and s.cm_lenient


def test_list_padding_follows_the_original():
    state = {"log": []}
    assert apply_original_changes(state, [("add", ["log", "2"], "c")]) == {"log": [None, None, "c"]}
    assert apply_original_changes(state, [("add", ["log", "1", "k"], 1)]) == {"log": [{}, {"k": 1}]}


def test_deletion_absent_is_a_match_for_lenient_and_none_for_the_original():
    keep_as_null = [c for c in TRUE_CHANGES if c["type"] != "delete"] + [
        {"type": "modify", "path": "meta.tag", "value": None}]
    s = _original(keep_as_null)
    assert not s.cm and not s.cm_lenient and s.cm_original
    forgot = _original([c for c in TRUE_CHANGES if c["type"] != "delete"])
    assert not forgot.cm_lenient and not forgot.cm_original


def test_json_types_are_strict_in_lenient_and_python_equality_in_the_original():
    record = {"state": {"on": False}, "next_state": {"on": True}, "observation": {"success": True}}
    s = _original([{"type": "modify", "path": "on", "value": 1}], record=record)
    assert not s.cm and not s.cm_lenient and s.cm_original
    assert _original([{"type": "modify", "path": "on", "value": True}], record=record).cm_lenient


def test_after_is_read_as_the_value():
    changes = [{"type": "modify", "path": "items", "after": [1, 2, 3, 4]},
               {"type": "modify", "path": "count", "before": 3, "after": 4}, {"type": "delete", "path": "meta.tag"}]
    s = _original(changes)
    assert s.parsed and s.cm and s.cm_lenient


@pytest.mark.parametrize("change,reason", [
    ({"type": "modify", "path": "count", "value": 4, "after": 5},
     "config change 0 (modify count) has both value and after"),
    ({"type": "modify", "path": "count"}, "config change 0 (modify count) has no value"),
    ({"type": "rename", "path": "count", "value": 1}, "config change 0 has unknown type 'rename'"),
    ({"type": "modify", "path": {"a": 1}, "value": 1}, "path must be a string or list"),
])
def test_ambiguous_changes_are_scored_failures_with_a_precise_reason(change, reason):
    s = _original([change])
    assert not s.parsed and not s.cm and not s.cm_lenient and not s.cm_original
    assert reason in s.reason and len(s.reason) < 200


def test_null_config_changes_is_scored_not_dropped():
    s = _original(None)
    assert not s.parsed and not s.cm_original and "config_changes must be a list" in s.reason


@pytest.mark.parametrize("feedback", [json.dumps(RECORD["observation"]), "{'success': True, 'count': 4}",
                                      RECORD["observation"]])
def test_feedback_as_string_or_object_matches(feedback):
    assert _original(TRUE_CHANGES, feedback=feedback).fm


def test_wrong_or_loosely_typed_feedback_string_fails():
    assert not _original(TRUE_CHANGES, feedback='{"success": true, "count": 5}').fm
    assert not _original(TRUE_CHANGES, feedback='{"success": 1, "count": 4}').fm
    assert not _original(TRUE_CHANGES, feedback="success").fm


def test_string_observation_compares_raw_text():
    record = {**RECORD, "observation": "123"}
    assert _original(TRUE_CHANGES, feedback="123", record=record).fm
    assert not _original(TRUE_CHANGES, feedback="123", record={**RECORD, "observation": 124}).fm


def test_original_raising_op_is_a_failure_not_a_drop():
    changes = TRUE_CHANGES + [{"type": "modify", "path": "items.-9", "value": 0}]
    s = _original(changes)
    assert s.parsed and not s.cm and not s.cm_original  # the original raises IndexError and drops the sample
    assert s.cm_lenient  # ours skips the op that cannot apply; the true paths still match


def test_huge_padding_and_deep_paths_are_bounded():
    start = time.process_time()
    s = _original(TRUE_CHANGES + [{"type": "modify", "path": "items.999999999", "value": 0},
                                  {"type": "add", "path": ".".join(["d"] * 5000), "value": 1}])
    assert time.process_time() - start < 1.0
    assert s.parsed and not s.cm and s.cm_lenient  # the capped ops are skipped; the list still matches


def test_original_diff_recurses_dicts_only():
    changes = original_changes({"a": {"b": [1, 2]}, "c": 1}, {"a": {"b": [1, 3]}, "d": {"e": 1}})
    assert [(c["path"], c["type"]) for c in changes] == [(("a", "b"), "modified"), (("c",), "removed"),
                                                          (("d",), "added")]
    assert original_changes({"x": 1}, {"x": True}, python_equality=True) == []
    assert len(original_changes({"x": 1}, {"x": True})) == 1


def test_does_not_apply_reason_is_short_even_on_a_big_state():
    record = {**RECORD, "state": {**RECORD["state"], "blob": {f"k{i}": "v" * 50 for i in range(200)}}}
    record["next_state"] = {**RECORD["next_state"], "blob": record["state"]["blob"]}
    s = _patch([{"op": "replace", "path": "/blob/missing/x", "value": 1}], record=record)
    assert "does not apply" in s.reason and len(s.reason) < 200


@pytest.mark.parametrize("answer", [
    {"feedback": "[" * 50_000 + "]" * 50_000, "config_changes": []},
    {"feedback": "{'a': " * 3000 + "1" + "}" * 3000, "config_changes": []},
    {"feedback": "[" + "9" * 100_000 + "]", "config_changes": []},
    {"feedback": "{1, 2}", "config_changes": [{"type": "modify", "path": ["items", 5], "value": 1}]},
    {"feedback": None, "config_changes": [{"type": "add", "path": f"items.{i + 3}", "value": 0} for i in range(1500)]},
    {"feedback": None, "config_changes": [{"type": "add", "path": ".".join(["k"] * 60) + f".{i}", "value": i}
                                          for i in range(2000)]},
    {"observation": None, "patch": [{"op": "copy", "from": "", "path": f"/c{i}"} for i in range(40)]},
    {"observation": None, "patch": [{"op": "replace", "path": f"/x{i}/y/{10**9}", "value": 1} for i in range(3000)]},
])
def test_hostile_original_format_answers_are_bounded(answer):
    start = time.process_time()
    s = score_prediction(RECORD, parse_answer(json.dumps(answer)))
    assert time.process_time() - start < 2.0
    assert not s.fm and not s.cm


_KEYS = st.sampled_from(["a", "b", "items", "0", "x~y", "c/d"])
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["s", ""]))
_VALUES = st.one_of(_LEAVES, st.dictionaries(_KEYS, _LEAVES, max_size=2), st.lists(_LEAVES, max_size=2))
_STATES = st.dictionaries(_KEYS, st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)), max_leaves=8), max_size=4)


def _pointers(value, prefix=""):
    """Every pointer of ``value`` (the root ``""`` first), and for each container one past its end."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _pointers(child, prefix + "/" + key.replace("~", "~0").replace("/", "~1"))
        yield prefix + "/new"
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _pointers(child, f"{prefix}/{index}")
        yield from (f"{prefix}/{len(value)}", f"{prefix}/-", f"{prefix}/0{len(value)}")


@st.composite
def _state_and_patch(draw):
    """A state and 1-4 ops mostly on its own pointers (so that most patches apply), some on missing ones."""
    state = draw(_STATES)
    pointer = st.one_of(st.sampled_from(sorted(set(_pointers(state)))), st.sampled_from(["/a/b/c", "/items/9"]))
    ops = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["add", "replace", "test", "remove", "move", "copy"]))
        op = {"op": kind, "path": draw(pointer)}
        if kind in ("add", "replace", "test"):
            op["value"] = draw(_VALUES)
        elif kind in ("move", "copy"):
            op["from"] = draw(pointer)
        ops.append(op)
    return state, ops


@settings(max_examples=500, deadline=None)
@given(_state_and_patch())
def test_a_patch_that_applies_strictly_is_the_same_state_under_the_lenient_rule(state_and_patch):
    """``score_prediction`` hands CM-lenient and CM-original the state ``apply_prediction`` made where
    ``strictly_applied_is_lenient`` says so: there, applying the patch leniently gives that very state."""
    state, patch = state_and_patch
    try:
        strict = apply_prediction(state, patch)
    except ValueError:
        return
    if strictly_applied_is_lenient(patch):
        assert canonical_json(apply_patch_leniently(state, patch)) == canonical_json(strict)


def test_a_patch_on_the_whole_document_is_applied_again_by_the_lenient_rule():
    state, patch = {"a": 1}, [{"op": "replace", "path": "", "value": {"b": 2}}]
    assert apply_prediction(state, patch) == {"b": 2}
    assert apply_patch_leniently(state, patch) == {"a": 1}      # the lenient rule skips it: the two differ
    assert not strictly_applied_is_lenient(patch)

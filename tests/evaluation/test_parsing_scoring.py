"""Parsing and scoring: accepted formats, and the original scripts' flaws that ours must not share."""

from __future__ import annotations

import json

import pytest

from envsim.evaluation.scoring.parsing import parse_answer
from envsim.evaluation.scoring.scoring import score_prediction

RECORD = {
    "state": {"orders": {"O-1": {"status": "paid", "note": "gift"}}, "log": [], "stock": {"P-1": 3}},
    "next_state": {"orders": {"O-1": {"status": "cancelled"}}, "log": ["cancel O-1"], "stock": {"P-1": 4}},
    "observation": {"success": True, "order_id": "O-1"},
}
RECORD["changed_paths"] = ["/log/0", "/orders/O-1/note", "/orders/O-1/status", "/stock/P-1"]
GOOD_PATCH = [{"op": "replace", "path": "/orders/O-1/status", "value": "cancelled"},
              {"op": "remove", "path": "/orders/O-1/note"},
              {"op": "add", "path": "/log/-", "value": "cancel O-1"},
              {"op": "replace", "path": "/stock/P-1", "value": 4}]
GOOD = json.dumps({"observation": RECORD["observation"], "patch": GOOD_PATCH})


def _score(text: str):
    return score_prediction(RECORD, parse_answer(text))


def test_our_format_scores_perfect():
    s = _score(GOOD)
    assert s.parsed and s.fm and s.cm and s.cm_lenient and s.delta_f1 == 1.0


def test_spurious_extra_edit_fails_cm_but_passes_lenient():
    patch = GOOD_PATCH + [{"op": "replace", "path": "/stock/P-1", "value": 4},
                          {"op": "add", "path": "/orders/O-1/refund", "value": 10}]
    s = _score(json.dumps({"observation": RECORD["observation"], "patch": patch}))
    assert not s.cm and s.cm_lenient and s.delta_precision < 1.0 and s.delta_recall == 1.0


def test_correct_deletion_passes_cm_and_lenient():
    s = _score(GOOD)
    assert s.cm and s.cm_lenient
    missing_delete = [op for op in GOOD_PATCH if op["op"] != "remove"]
    s2 = _score(json.dumps({"observation": RECORD["observation"], "patch": missing_delete}))
    assert not s2.cm and not s2.cm_lenient


def test_prose_before_unfenced_nested_json_parses():
    text = "I traced the code: the order {O-1} is paid, so it is cancelled.\n" + GOOD + "\nDone."
    s = _score(text)
    assert s.parsed and s.cm and s.fm


def test_rationale_with_fence_and_decoy_objects():
    text = 'Step 1 reads {"status": "paid"}.\n```json\n' + GOOD + "\n```"
    assert _score(text).cm


def test_unparseable_answer_is_a_scored_failure_with_reason():
    s = _score("The order gets cancelled.")
    assert not s.parsed and not s.cm and not s.fm and s.reason == "no JSON object in answer"


def test_original_format_config_changes():
    answer = {"feedback": RECORD["observation"], "config_changes": [
        {"type": "update", "path": "orders.O-1.status", "value": "cancelled"},
        {"type": "delete", "path": "orders.O-1.note"},
        {"type": "add", "path": "log[0]", "value": "cancel O-1"},
        {"type": "modify", "path": ["stock", "P-1"], "value": 4}]}
    s = _score(json.dumps(answer))
    assert s.cm and s.fm


def test_full_next_state_format():
    s = _score(json.dumps({"observation": RECORD["observation"], "next_state": RECORD["next_state"]}))
    assert s.cm and s.fm


@pytest.mark.parametrize("patch,reason", [
    ([{"op": "replace", "path": "/x/999999999", "value": 1}], "does not apply"),
    ([{"op": "add", "path": "/log/999999999", "value": 1}], "does not apply"),
    ([{"op": "explode", "path": "/log"}], "invalid patch operation"),
    ([{"op": "add", "path": "/log/-"}], "add operation without value"),
    ("not a list", "patch must be a list"),
])
def test_bad_patches_are_scored_failures(patch, reason):
    s = _score(json.dumps({"observation": RECORD["observation"], "patch": patch}))
    assert not s.cm and reason in s.reason


def test_copy_bomb_is_bounded():
    patch = [{"op": "copy", "from": "", "path": f"/k{i}"} for i in range(60)]
    s = _score(json.dumps({"observation": RECORD["observation"], "patch": patch}))
    assert not s.cm and ("grows the state" in s.reason or "does not apply" in s.reason)


def test_types_are_compared_as_json():
    obs_true_as_one = json.dumps({"observation": {"success": 1, "order_id": "O-1"}, "patch": GOOD_PATCH})
    assert not _score(obs_true_as_one).fm

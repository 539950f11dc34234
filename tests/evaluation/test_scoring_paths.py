"""Δ diagnostics of a wrong answer: ``changed_paths`` over the subtrees a prediction does not share with the
state gives exactly ``compute_delta``'s paths (so the same precision/recall/F1), without building and
verifying a patch on a deep copy of the whole state (about 1 s a sample on τ-bench's megabyte databases)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import envsim.delta
from envsim.benchmark.state_store import resolve, state_folder
from envsim.delta import changed_paths, compute_delta, pointer
from envsim.evaluation.scoring.parsing import ParsedAnswer, parse_answer
from envsim.evaluation.scoring.scoring import _prf, apply_prediction, score_prediction, true_changed_paths
from envsim.evaluation.scoring.shared_states import pointer_parts, strictly_equal_shared

ROOT = Path(__file__).resolve().parents[2]
V1_TEST = ROOT / "benchmark" / "v1" / "test.jsonl"
TAU = ROOT / "benchmark" / "v2" / "tau.jsonl"


def _bump(value: Any) -> Any:
    """A different value of the same kind."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, "x"]
    if isinstance(value, dict):
        return {**value, "zz_extra": 1}
    return "x"


def _first_leaf(state: Any, parts: list[Any] | None = None) -> tuple[list[Any], Any]:
    """The path and value reached by always taking the first (sorted) key or index."""
    parts = list(parts or [])
    node = state
    for part in parts:
        node = node[int(part)] if isinstance(node, list) else node[part]
    while isinstance(node, (dict, list)) and node:
        key = sorted(node)[0] if isinstance(node, dict) else 0
        parts.append(key)
        node = node[key]
    return parts, node


def corrupted_answers(record: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The oracle patch spoiled four ways: one wrong value, a spurious extra op, a missing op, a removed key."""
    patch, state = record["patch"], record["state"]
    answers: dict[str, list[dict[str, Any]]] = {}
    wrong = copy.deepcopy(patch)
    for op in wrong:
        if "value" in op:
            op["value"] = _bump(op["value"])
            answers["wrong_value"] = wrong
            break
    leaf, value = _first_leaf(state)
    answers["extra_op"] = [*copy.deepcopy(patch), {"op": "replace", "path": pointer(leaf), "value": _bump(value)}]
    if len(patch) >= 2:
        answers["missing_op"] = copy.deepcopy(patch[:-1])
    parent = pointer_parts(patch[0]["path"])[:-1]
    node = state
    try:
        for part in parent:
            node = node[int(part)] if isinstance(node, list) else node[part]
    except (KeyError, IndexError, ValueError, TypeError):
        node = None
    if isinstance(node, dict) and node:
        removed = pointer([*parent, sorted(node)[-1]])
    else:
        removed = pointer(_first_leaf(state)[0])
    answers["removed_key"] = [*copy.deepcopy(patch), {"op": "remove", "path": removed}]
    return answers


def _check_record(record: dict[str, Any]) -> int:
    """Score each corrupted answer; assert its paths and P/R/F1 are ``compute_delta``'s. Returns answers checked."""
    state = record["state"]
    truth = set(compute_delta(state, record["next_state"]).paths)
    assert set(changed_paths(state, record["next_state"], strictly_equal_shared)) == truth
    assert truth == set(true_changed_paths(record))
    checked = 0
    for kind, patch in corrupted_answers(record).items():
        try:
            predicted = apply_prediction(state, patch)
        except ValueError:
            continue  # the spoiled patch does not apply: scored as such, no paths to compare
        expected = compute_delta(state, predicted).paths
        assert changed_paths(state, predicted, strictly_equal_shared) == expected, (record["id"], kind)
        score = score_prediction(record, ParsedAnswer(observation=record["observation"], patch=patch))
        if not score.cm:
            assert (score.delta_precision, score.delta_recall, score.delta_f1) == _prf(set(expected), truth), kind
            checked += 1
    return checked


def test_wrong_answers_on_v1_score_the_paths_compute_delta_gives():
    rows = [json.loads(line) for line in V1_TEST.open(encoding="utf-8")]
    changing = [r for r in rows if r["patch"]][::6]
    assert sum(_check_record(r) for r in changing) >= 3 * len(changing)


def _tau_records(count: int) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in TAU.open(encoding="utf-8")]
    changing = [r for r in rows if r["patch"]]
    picked = changing[:: max(1, len(changing) // count)][:count]
    return [resolve(r, state_folder(TAU)) for r in picked]


@pytest.mark.slow
def test_wrong_answers_on_tau_score_the_paths_compute_delta_gives():
    records = _tau_records(4)
    assert {r["env"] for r in records} >= {"tau/retail"}
    assert sum(_check_record(r) for r in records) >= 3 * len(records)


def test_a_wrong_tau_answer_is_scored_without_verifying_a_whole_state_patch(monkeypatch):
    record = _tau_records(1)[0]

    def refuse(*_: Any) -> bool:
        raise AssertionError("scoring built and verified a whole-state patch")

    monkeypatch.setattr(envsim.delta, "_reproduces", refuse)
    answers = corrupted_answers(record)
    wrong = score_prediction(record, ParsedAnswer(observation=record["observation"], patch=answers["wrong_value"]))
    assert not wrong.cm and wrong.fm
    # a wrong value at the right paths: every predicted path is a true one
    assert (wrong.delta_precision, wrong.delta_recall) == (1.0, 1.0)
    extra = score_prediction(record, ParsedAnswer(observation=record["observation"], patch=answers["extra_op"]))
    truth = set(record["changed_paths"])
    assert not extra.cm and extra.delta_recall == 1.0
    assert extra.delta_precision == pytest.approx(len(truth) / (len(truth) + 1))


def test_a_score_row_is_what_asdict_gives_and_owns_its_failure_classes():
    import dataclasses

    record = {"state": {"a": 1}, "next_state": {"a": 2}, "observation": {"ok": True}}
    answers = [json.dumps({"observation": {"ok": False}, "patch": [{"op": "replace", "path": "/a", "value": 3}]}),
               "no json here", json.dumps({"observation": {"ok": True}, "patch": [{"op": "replace", "path": "/a",
                                                                                   "value": 2}]})]
    for text in answers:
        score = score_prediction(record, parse_answer(text))
        row = score.to_json()
        assert row == dataclasses.asdict(score) and list(row) == list(dataclasses.asdict(score))
        if row["failure"] is not None:
            row["failure"]["state"] = "changed"
            assert score.failure["state"] != "changed"

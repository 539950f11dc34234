"""Partial credit (``training.partial_credit``) and the reward's ``partial`` component: exact answers score 1,
empty patches on state-changing calls score only their observation, and a GRPO group of answers that all miss
CM on a change sample still has reward variance (the failure of the 2026-11-27 run: binary rewards, zero spread)."""

from __future__ import annotations

import json

import pytest

from envsim.construction.pipeline import build_pool
from envsim.evaluation.prompting.prompts import target_answer
from envsim.evaluation.scoring.parsing import parse_answer
from envsim.training.grpo_cpu import group_advantages
from envsim.training.partial_credit import leaves, multiset_f1, observation_f1, partial_credit, patch_op_f1
from envsim.training.rewards import COMPONENTS, RewardWeights, component_value, score_completion, total_reward


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return build_pool(["spa_appointments-v1"], 13, 2, 30, "train")


def _answer(observation, patch) -> str:
    return json.dumps({"observation": observation, "patch": patch})


def test_multiset_f1_counts_duplicates_and_empty_sets():
    assert multiset_f1([], []) == 1.0
    assert multiset_f1(["a"], []) == 0.0 and multiset_f1([], ["a"]) == 0.0
    assert multiset_f1(["a", "a"], ["a"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert multiset_f1(["a", "b"], ["b", "c"]) == pytest.approx(0.5)


def test_patch_ops_compare_whole_and_keep_int_and_float_apart():
    truth = [{"op": "replace", "path": "/a/b", "value": 1}, {"op": "remove", "path": "/c/0"}]
    assert patch_op_f1(truth, truth) == 1.0
    assert patch_op_f1([{"op": "replace", "path": "/a/b", "value": 1.0}], truth) == 0.0
    assert patch_op_f1([{"path": "/a/b", "value": 1, "op": "replace"}], truth) == pytest.approx(2 / 3)


def test_observation_leaves_and_f1():
    assert sorted(leaves({"a": {"b": 1}, "c": [], "d/e": "x"})) == ['/a/b=1', '/c=[]', '/d~1e="x"']
    assert observation_f1("done", "done") == 1.0
    truth = {"success": True, "id": "AP-021", "room": "RM-1"}
    assert observation_f1({"success": True, "id": "AP-020", "room": "RM-1"}, truth) == pytest.approx(2 / 3)


def test_exact_answers_score_one_and_unparseable_zero(records):
    for record in records[:40]:
        answer = parse_answer(target_answer(record, "3"))
        assert partial_credit(record, answer) == 1.0
        assert partial_credit(record, parse_answer("no json here")) == 0.0


def test_null_answer_on_a_change_sample_gets_only_observation_credit(records):
    change = next(r for r in records if r["stratum"] == "medium")
    score = score_completion(change, _answer(change["observation"], []))
    assert not score.cm and score.fm and score.parsed
    assert score.partial == pytest.approx(0.5)                 # observation right, patch-op F1 0
    assert component_value(score, "partial") == score.partial
    assert total_reward(change, _answer(change["observation"], []), RewardWeights()) == pytest.approx(0.2 + 1 + 0.5)


def test_a_group_that_misses_cm_on_a_change_sample_still_has_variance(records):
    """Four answers, none exactly right: binary rewards (format/FM/CM) tie them, partial credit orders them."""
    change = next(r for r in records if r["stratum"] == "medium" and len(r["patch"]) >= 3)
    patch = change["patch"]
    wrong_obs = {"success": True}
    group = [_answer(wrong_obs, []), _answer(wrong_obs, patch[:1]), _answer(wrong_obs, patch[:2]),
             _answer(wrong_obs, patch[:-1])]
    binary = RewardWeights(partial=0.0)
    rewards_binary = [total_reward(change, g, binary) for g in group]
    assert len(set(rewards_binary)) == 1 and group_advantages(rewards_binary, 4)[1] == 1     # zero spread
    rewards = [total_reward(change, g, RewardWeights()) for g in group]
    assert rewards == sorted(rewards) and len(set(rewards)) == 4
    advantages, zero = group_advantages(rewards, 4)
    assert zero == 0 and advantages[-1] > 0 > advantages[0]


def test_components_and_weights_agree():
    assert COMPONENTS == ("format", "fm", "cm", "partial")
    assert RewardWeights().as_list() == [0.2, 1.0, 1.0, 1.0]
    assert RewardWeights(partial=0.0).to_json()["partial"] == 0.0

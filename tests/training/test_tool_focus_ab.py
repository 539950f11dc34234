"""The tool-focused A/B's ``wide`` arm: more distinct calls of the same tools, none of them held out or repeated."""

import pytest

from tests.training.conftest import load_benchmark


@pytest.fixture(scope="module")
def ab():
    return load_benchmark("tool_focus_ab")


def record(rid: str, tool: str, changes: bool) -> dict:
    return {"id": rid, "env": "shop-v1", "action": {"name": tool, "arguments": {}},
            "patch": [{"op": "replace", "path": "/n", "value": 1}] if changes else []}


def test_more_of_the_same_keeps_each_tool_and_outcome_share(ab):
    train = [record("t1", "buy", True), record("t2", "buy", True), record("t3", "buy", False), record("t4", "pay", True)]
    fresh = [record(f"b{i}", "buy", True) for i in range(9)] + [record(f"f{i}", "buy", False) for i in range(4)] \
        + [record(f"p{i}", "pay", True) for i in range(5)] + [record(f"x{i}", "refund", True) for i in range(5)] + train[:3]
    more = ab.more_of_the_same(train, fresh, 3)
    counts = {}
    for r in more:
        key = (r["action"]["name"], bool(r["patch"]))
        counts[key] = counts.get(key, 0) + 1
    assert counts == {("buy", True): 6, ("buy", False): 3, ("pay", True): 3}
    assert len({r["id"] for r in more}) == len(more)
    assert not {r["id"] for r in more} & {r["id"] for r in train}
    assert more == ab.more_of_the_same(train, fresh, 3)          # the draw is seeded


def test_more_of_the_same_refuses_a_rollout_too_short(ab):
    train = [record("t1", "pay", True), record("t2", "pay", True)]
    with pytest.raises(SystemExit, match="2 fresh"):                 # t1 is not fresh
        ab.more_of_the_same(train, [record("p1", "pay", True), record("p2", "pay", True), train[0]], 2)


def test_every_arm_names_a_known_target_form(ab):
    from envsim.training.patch_form import REPLACE_TESTS
    from envsim.training.data import check_logged_examples
    from envsim.training.sft_cpu import PROMPT_GRADS

    assert ab.BASELINE in ab.ARMS
    for spec in ab.ARMS.values():
        assert spec["replace_tests"] in REPLACE_TESTS and spec["scale"] >= 1
        assert spec.get("prompt_grad", "full") in PROMPT_GRADS
        assert spec.get("examples", 0) == 0 or spec.get("cutoff", 2048) > 2048  # logged calls need the room
        check_logged_examples(spec.get("examples", 0))

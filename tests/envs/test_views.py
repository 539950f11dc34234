"""State views: computed without running the call, full-state paths, membership notes, coverage."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonpatch
import pytest

from envsim.envs.views import compute_view, trace_call, traced, unwrap
from envsim.evaluation.prompts import build_messages

TAU = Path(__file__).resolve().parents[3] / "shared" / "third_party" / "tau-bench"
ROOT = Path(__file__).resolve().parents[2]

SHOP = {
    "orders": {f"#W{i}": {"user_id": f"u{i % 3}", "status": "pending", "items": [{"item_id": f"i{i}", "price": i}]}
               for i in range(40)},
    "users": {f"u{i}": {"email": f"U{i}@x.com", "payment_methods": {"gift_card_1": {"balance": 10.0}}}
              for i in range(3)},
}

CALLS = {"n": 0}

TOOL = '''
def invoke(data, order_id, payment_method_id):
    CALLS["n"] += 1
    orders = data["orders"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if payment_method_id not in data["users"][order["user_id"]]["payment_methods"]:
        return "Error: payment method not found"
    order["status"] = "cancelled"
    data["users"][order["user_id"]]["payment_methods"][payment_method_id]["balance"] += order["items"][0]["price"]
    return order
'''


def _run(state, order_id, payment_method_id):
    namespace = {"CALLS": CALLS}
    exec(TOOL, namespace)  # noqa: S102 - the test's own tool
    return namespace["invoke"](state, order_id=order_id, payment_method_id=payment_method_id)


def test_view_never_executes_the_call():
    before = copy.deepcopy(SHOP)
    CALLS["n"] = 0
    view = compute_view(SHOP, "invoke", {"order_id": "#W4", "payment_method_id": "gift_card_1"}, TOOL)
    assert CALLS["n"] == 0 and SHOP == before
    assert set(view.state["orders"]) == {"#W4"} and set(view.state["users"]) == {"u1"}  # reference followed


def test_patch_predicted_on_the_view_applies_to_the_full_state():
    args = {"order_id": "#W4", "payment_method_id": "gift_card_1"}
    view = compute_view(SHOP, "invoke", args, TOOL)
    on_view = copy.deepcopy(view.state)
    _run(on_view, **args)  # a perfect simulator that only sees the view
    patch = jsonpatch.make_patch(view.state, on_view)
    full = copy.deepcopy(SHOP)
    _run(full, **args)
    assert patch.patch and patch.apply(SHOP) == full


def test_membership_note_for_a_missing_id():
    view = compute_view(SHOP, "invoke", {"order_id": "#W999", "payment_method_id": "x"}, TOOL)
    assert (("orders",), "#W999") in view.absent
    assert '/orders has no key "#W999"' in view.render()
    assert view.state == {"orders": {}}  # the container is there (empty), so the tool runs on the view alone
    assert _run(copy.deepcopy(view.state), "#W999", "x") == _run(copy.deepcopy(SHOP), "#W999", "x")


def test_omissions_say_how_many_records_and_key_shape():
    text = compute_view(SHOP, "invoke", {"order_id": "#W4", "payment_method_id": "gift_card_1"}, TOOL).render()
    assert "/orders: 39 of 40 records not shown" in text and "#W99" in text


def test_coverage_counts_a_read_outside_the_view_as_uncovered():
    args = {"order_id": "#W4", "payment_method_id": "gift_card_1"}
    view = compute_view(SHOP, "invoke", args, TOOL)
    state, log = traced(copy.deepcopy(SHOP))
    _, reads = trace_call(state, log, lambda s: _run(s, **args))
    assert reads and all(view.covers(*r) for r in reads)
    assert not view.covers("get", ("orders", "#W5", "status"))
    assert unwrap(state)["orders"]["#W4"]["status"] == "cancelled"


def test_scan_filter_keeps_matching_records_only():
    tool = '''
def invoke(data, email):
    for user_id, profile in data["users"].items():
        if profile["email"].lower() == email.lower():
            return user_id
    return "Error: user not found"
'''
    view = compute_view(SHOP, "invoke", {"email": "u2@X.com"}, tool)
    assert set(view.state["users"]) == {"u2"} and "no other record matches" in view.render()
    state, log = traced(copy.deepcopy(SHOP))
    _, reads = trace_call(state, log, lambda s: exec(tool, ns := {}) or ns["invoke"](s, email="u2@X.com"))
    assert all(view.covers(*r) for r in reads)


def test_mdp_view_prompt_builds_for_every_v1_sample():
    records = [json.loads(line) for line in (ROOT / "benchmark" / "v1" / "test.jsonl").open()]
    for record in records:
        messages = build_messages(record, "mdp-view", version="3")
        assert "State view" in messages[1]["content"] and record["action"]["name"] in messages[1]["content"]
    with pytest.raises(ValueError, match="version 3"):
        build_messages(records[0], "mdp-view", version="2")


def test_v1_views_are_derived_without_widening():
    """The analysis resolves every v1 test tool without falling back to the whole state."""
    records = [json.loads(line) for line in (ROOT / "benchmark" / "v1" / "test.jsonl").open()]
    for record in records:
        view = compute_view(record["state"], record["action"]["name"], record["action"]["arguments"], record["code"])
        assert not view.widened, record["id"]


@pytest.mark.slow
@pytest.mark.skipif(not TAU.exists(), reason="τ-bench third-party copy not present")
def test_tau_test_calls_read_coverage(monkeypatch):
    monkeypatch.setenv("ENVSIM_TAU_BENCH", str(TAU))
    import sys
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from view_coverage import tau_figures

    from envsim.tokens import get_tokenizer

    figures = tau_figures("retail", get_tokenizer())
    assert figures["calls"] == 582
    assert figures["coverage"] >= 0.99
    assert figures["tokens"]["p95"] <= 6000 and figures["tokens"]["max"] <= 16000

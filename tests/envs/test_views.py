"""State views: computed without running the call, full-state paths, membership notes, coverage."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonpatch
import pytest

from envsim.envs.views import compute_view, trace_call, traced, unwrap
from envsim.evaluation.prompting.prompts import build_messages
from tests.conftest import TAU_BENCH_PATH

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
    # the containers the code looks up are there (empty), so the tool runs on the view alone
    assert view.state == {"orders": {}, "users": {}}
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


def _agrees_on_view(tool: str, state: dict, **args) -> bool:
    """The tool run on the view alone gives the full run's observation, and its patch the full next state."""
    def run(data):
        namespace: dict = {}
        exec(tool, namespace)  # noqa: S102 - the test's own tool
        try:
            return namespace["invoke"](data, **args)
        except Exception as exc:  # noqa: BLE001 - an error is an observation
            return repr(exc)

    view = compute_view(state, "invoke", args, tool).state
    on_view, full = copy.deepcopy(view), copy.deepcopy(state)
    observed, truth = run(on_view), run(full)
    return observed == truth and jsonpatch.make_patch(view, on_view).apply(state) == full


def test_tool_runs_on_the_view_alone_through_sorts_helpers_and_own_writes():
    board = {"risks": {f"R{i}": {"score": i % 7, "owner": f"o{i}"} for i in range(30)},
             "incidents": {f"I{i}": {"level": 0, "team": f"T{i % 3}", "status": "open" if i % 2 else "closed"}
                           for i in range(20)},
             "teams": {f"T{i}": {"members": [f"E{i}{j}" for j in range(4)]} for i in range(3)},
             "engineers": {f"E{i}{j}": {"pages": 0} for i in range(3) for j in range(4)},
             "today": "2026-05-01", "log": []}
    top = """
def invoke(data):
    return [r["owner"] for r in sorted(data["risks"].values(), key=lambda r: r["score"])[:3]]
"""
    escalate = """
def invoke(data, incident_id):
    inc = data["incidents"][incident_id]
    inc["level"] += 1
    who = data["teams"][inc["team"]]["members"][inc["level"]]
    data["engineers"][who]["pages"] += 1
    data["log"].append({"date": data["today"], "who": who})
    return {"paged": who, "on": data["today"]}
"""
    sweep = """
def invoke(data, team):
    done = [k for k, i in data["incidents"].items() if i["team"] == team and i["status"] == "open"]
    for k in done:
        data["incidents"][k]["status"] = "swept"
    return done
"""
    assert _agrees_on_view(top, board)
    assert _agrees_on_view(escalate, board, incident_id="I4")  # reads the level it has just written
    assert _agrees_on_view(sweep, board, team="T1")
    view = compute_view(board, "invoke", {"team": "T1"}, sweep)
    assert set(view.state["incidents"]) == {f"I{i}" for i in range(20) if i % 3 == 1}  # the scan is filtered


def test_top_level_scalar_reads_of_an_environment_are_traced():
    from envsim.benchmark import load
    from envsim.envs.registry import get_env
    from envsim.envs.views import traced_env

    seen = 0
    for record in load("v2", "long_state"):
        if "self.today" not in record["code"] or record["outcome"] == "failure":
            continue
        state, log = traced(copy.deepcopy(record["state"]))
        env = traced_env(get_env(record["env"]), state, log)
        action = record["action"]
        _, reads = trace_call(state, log, lambda s: getattr(env, action["name"])(**action["arguments"]))
        if ("get", ("today",), None) in reads:
            seen += 1
            assert compute_view(record["state"], action["name"], action["arguments"], record["code"]).covers(
                "get", ("today",)), record["id"]
    assert seen >= 3


def test_reading_back_what_the_call_wrote_is_not_a_state_read():
    state, log = traced({"blocks": {"B1": {"n": 1}}})
    _, reads = trace_call(state, log, lambda s: (s["blocks"].__setitem__("B2", {"n": 2}), s["blocks"]["B2"]["n"]))
    assert ("get", ("blocks", "B2", "n"), None) not in reads and ("absent", ("blocks",), "B2") not in reads


def _coverage_script():
    import sys
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import view_coverage

    return view_coverage


@pytest.mark.slow
def test_oracle_through_views_on_v1_test_and_v2_long_state():
    """Every v1 test and v2 long_state sample: the tool run on the view alone, scored against the full truth by
    the real parser and scorer, gives FM = CM = 100%; every traced read lies in the view."""
    from envsim.tokens import get_tokenizer

    script = _coverage_script()
    for benchmark, split in (("v1", "test"), ("v2", "long_state")):
        figures = script.track_figures(benchmark, split, get_tokenizer())
        assert (figures["fm"], figures["cm"], figures["coverage"]) == (1.0, 1.0, 1.0), (benchmark, figures["misses"])
    assert figures["shrink"]["p50"] > 5


@pytest.mark.slow
def test_cli_oracle_on_long_state_with_mdp_view(tmp_path, monkeypatch):
    """``envsim eval --prompt-mode mdp-view`` picks prompt version 3 by itself and scores 100% with the oracle."""
    from click.testing import CliRunner

    from envsim.cli import main

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["eval", "--model", "oracle", "--benchmark", "v2", "--tier", "long_state",
                                       "--prompt-mode", "mdp-view", "--runs-root", str(tmp_path), "--no-progress"])
    assert result.exit_code == 0, result.output
    run = next(tmp_path.glob("*/long_state"))
    summary = json.loads((run / "summary.json").read_text())
    assert json.loads((run / "config.json").read_text())["prompt_version"] == "3"
    assert summary["overall"]["n"] == 80 and summary["overall"]["fm"] == summary["overall"]["cm"] == 1.0


@pytest.mark.slow
@pytest.mark.tau
def test_tau_test_calls_coverage_tokens_and_oracle_through_views(monkeypatch):
    """All 740 τ-bench test-task calls: read coverage, mdp-view prompt tokens within the targets, the tool run on
    the view reproduces the full state's observation and next state; the first tasks through the real scorer."""
    monkeypatch.setenv("ENVSIM_TAU_BENCH", str(TAU_BENCH_PATH))
    from envsim.tokens import get_tokenizer

    script = _coverage_script()
    counter = get_tokenizer()
    rows = script.tau_rows("retail", counter) + script.tau_rows("airline", counter)
    figures = script.summarise(rows)
    assert figures["calls"] == 740
    assert figures["coverage"] >= 0.99
    assert figures["tokens"]["p95"] <= 6000 and figures["tokens"]["max"] <= 16000
    assert figures["fm"] == figures["cm"] == 1.0, figures["misses"]
    assert figures["coverage"] > figures["base_covered"]  # beats following references one hop
    for domain in ("retail", "airline"):
        scored = script.summarise(script.tau_rows(domain, counter, real_scorer=True, tasks=2))
        assert scored["calls"] > 0 and scored["fm"] == scored["cm"] == 1.0, scored["misses"]

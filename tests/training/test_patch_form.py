"""The form of SFT targets' patches (``training.patch_form``): end-of-list ``add``s become ``<list>/-``, anything
else keeps its stored path, and the rewritten patch always gives the stored patch's next state; ``path-first``
targets write each operation's pointers before its ``op`` and are the same patch."""

from __future__ import annotations

import json

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envsim.delta import compute_delta, same_json
from envsim.evaluation.scoring.parsing import parse_answer
from envsim.training.data import sft_sample
from envsim.training.partial_credit import partial_credit
from envsim.training.patch_form import dash_appends, order_keys, target_patch, with_replace_tests

STATE = {"audit_log": [{"n": 1}, {"n": 2}, {"n": 3}], "rooms": {"R1": {"guests": ["ana"]}}, "count": 3}


def test_an_append_at_the_end_becomes_dash_and_an_insert_keeps_its_index() -> None:
    patch = [{"op": "replace", "path": "/count", "value": 4},
             {"op": "add", "path": "/audit_log/3", "value": {"n": 4}},
             {"op": "add", "path": "/audit_log/4", "value": {"n": 5}},
             {"op": "add", "path": "/rooms/R1/guests/0", "value": "bo"},
             {"op": "add", "path": "/rooms/R2", "value": {"guests": []}}]
    assert dash_appends(STATE, patch) == [
        {"op": "replace", "path": "/count", "value": 4},
        {"op": "add", "path": "/audit_log/-", "value": {"n": 4}},
        {"op": "add", "path": "/audit_log/-", "value": {"n": 5}},
        {"op": "add", "path": "/rooms/R1/guests/0", "value": "bo"},  # a one-item list: index 0 is an insert
        {"op": "add", "path": "/rooms/R2", "value": {"guests": []}}]


def test_an_append_after_a_removal_counts_the_list_at_that_point() -> None:
    patch = [{"op": "remove", "path": "/audit_log/0"}, {"op": "add", "path": "/audit_log/2", "value": {"n": 9}}]
    assert dash_appends(STATE, patch)[1]["path"] == "/audit_log/-"
    assert dash_appends(STATE, [{"op": "add", "path": "/audit_log/03", "value": 0}])[0]["path"] == "/audit_log/03"


def test_a_patch_that_does_not_apply_is_returned_as_stored() -> None:
    broken = [{"op": "add", "path": "/audit_log/3", "value": 1}, {"op": "remove", "path": "/nowhere"}]
    assert dash_appends(STATE, broken) == broken
    assert dash_appends(STATE, ["not an op", {"op": "add"}]) == ["not an op", {"op": "add"}]
    with pytest.raises(ValueError, match="append_form must be one of"):
        target_patch({"state": STATE, "patch": []}, "minus")


@settings(max_examples=150, deadline=None)
@given(old=st.lists(st.integers(0, 5), max_size=6), new=st.lists(st.integers(0, 5), max_size=8),
       other=st.dictionaries(st.sampled_from("abc"), st.lists(st.integers(0, 3), max_size=3), max_size=3))
def test_the_rewritten_patch_gives_the_stored_next_state(old: list[int], new: list[int], other: dict) -> None:
    before, after = {"items": old, **other}, {"items": new, **other, "z": [*old, 7]}
    patch = compute_delta(before, after).patch
    rewritten = dash_appends(before, patch)
    assert same_json(jsonpatch.apply_patch(before, rewritten), after)
    assert all(op["path"] == p["path"] or op["path"].endswith("/-") for op, p in zip(rewritten, patch))


def test_sft_targets_and_partial_credit_use_the_dash_form() -> None:
    record = {"id": "x-1", "env": "e-v1", "stratum": "simple", "state": STATE, "tool": "log",
              "action": {"name": "log", "arguments": {"n": 4}}, "code": "def log(self, n): ...",
              "observation": {"ok": True}, "patch": [{"op": "add", "path": "/audit_log/3", "value": {"n": 4}}]}
    dash = json.loads(sft_sample(record, "mdp", version="2", append_form="dash")["messages"][-1]["content"])
    index = json.loads(sft_sample(record, "mdp", version="2")["messages"][-1]["content"])
    assert dash["patch"][0]["path"] == "/audit_log/-" and index["patch"] == record["patch"]
    for answer in (dash, index):  # either form is the true operation for GRPO's partial credit, as for CM
        assert partial_credit(record, parse_answer(json.dumps(answer))) == 1.0
    wrong = {**dash, "patch": [{"op": "add", "path": "/audit_log/2", "value": {"n": 4}}]}
    assert partial_credit(record, parse_answer(json.dumps(wrong))) == 0.5


def test_a_dash_recipe_writes_dash_targets_that_score_cm_and_the_shipped_recipes_use_it(tmp_path) -> None:
    from envsim.evaluation.scoring.scoring import score_prediction
    from envsim.training.data import build_sft_data, load_recipe

    assert {load_recipe(n).get("append_form") for n in ("default", "small-view", "in-env")} == {"dash"}
    recipe = {**load_recipe("in-env"), "name": "dash", "cells": [{"stratum": "difficult", "n": 5}, {"stratum": "medium", "n": 8}],
              "rollout": {"seed": 13, "episodes": 2, "steps": 30}}
    recipe.pop("heldout")
    stats = build_sft_data(recipe, tmp_path, env_ids=recipe["envs"][-3:])
    rows = [json.loads(line) for line in (tmp_path / "dash.jsonl").read_text().splitlines()]
    records = [json.loads(line) for line in (tmp_path / "dash.records.jsonl").read_text().splitlines()]
    dashed = [row for row in rows if '/-"' in row["messages"][-1]["content"]]
    assert stats["append_form"] == "dash" and stats["dash_appends"] == len(dashed) > 0
    for row, record in zip(rows, records, strict=True):  # every target, rewritten or not, gives the true next state
        assert score_prediction(record, parse_answer(row["messages"][-1]["content"])).cm


def test_an_unknown_append_form_is_refused_before_the_rollout(tmp_path) -> None:
    from envsim.training.data import build_sft_data, load_recipe

    with pytest.raises(ValueError, match="append_form must be one of index, dash, not 'minus'"):
        build_sft_data({**load_recipe("smoke"), "append_form": "minus"}, tmp_path)
    assert not any(tmp_path.iterdir())


def test_path_first_writes_the_pointers_before_op_and_changes_no_value() -> None:
    patch = [{"op": "add", "path": "/audit_log/-", "value": {"op": "x", "path": "y"}},
             {"op": "remove", "path": "/count"}, {"op": "move", "from": "/a", "path": "/b"},
             {"value": 2, "op": "replace", "path": "/c", "note": "kept"}, "not an op"]
    ordered = order_keys(patch, "path-first")
    assert [list(op) if isinstance(op, dict) else op for op in ordered] == [
        ["path", "op", "value"], ["path", "op"], ["path", "from", "op"], ["path", "op", "value", "note"], "not an op"]
    assert ordered == patch                                   # the same operations: dicts compare without order
    assert list(ordered[0]["value"]) == ["op", "path"]        # a value is data: its keys keep their order
    assert [list(op) for op in order_keys(patch[:4], "op-first")] == [list(op) for op in patch[:4]]
    with pytest.raises(ValueError, match="patch_key_order must be one of op-first, path-first, not 'value-first'"):
        order_keys(patch, "value-first")


def test_a_path_first_target_is_the_dash_target_written_path_first() -> None:
    record = {"id": "x-1", "env": "e-v1", "stratum": "simple", "state": STATE, "tool": "log",
              "action": {"name": "log", "arguments": {"n": 4}}, "code": "def log(self, n): ...",
              "observation": {"ok": True}, "patch": [{"op": "add", "path": "/audit_log/3", "value": {"n": 4}},
                                                     {"op": "replace", "path": "/count", "value": 4}]}
    text = sft_sample(record, "mdp", version="2", append_form="dash", key_order="path-first")["messages"][-1]["content"]
    dash = sft_sample(record, "mdp", version="2", append_form="dash")["messages"][-1]["content"]
    assert '"patch":[{"path":"/audit_log/-","op":"add","value":{"n":4}},{"path":"/count","op":"replace"' in text
    assert text != dash and json.loads(text) == json.loads(dash)
    assert partial_credit(record, parse_answer(text)) == 1.0


def test_a_path_first_recipe_writes_path_first_targets_that_score_cm(tmp_path) -> None:
    from envsim.evaluation.scoring.scoring import score_prediction
    from envsim.training.data import build_sft_data, load_recipe

    recipe = {**load_recipe("in-env"), "name": "pf", "patch_key_order": "path-first",
              "cells": [{"stratum": "difficult", "n": 2}, {"stratum": "medium", "n": 6}],
              "rollout": {"seed": 13, "episodes": 2, "steps": 30}}
    recipe.pop("heldout")
    stats = build_sft_data(recipe, tmp_path, env_ids=recipe["envs"][-2:])
    rows = [json.loads(line) for line in (tmp_path / "pf.jsonl").read_text().splitlines()]
    records = [json.loads(line) for line in (tmp_path / "pf.records.jsonl").read_text().splitlines()]
    assert stats["patch_key_order"] == "path-first" and rows
    for row, record in zip(rows, records, strict=True):
        patch = json.loads(row["messages"][-1]["content"])["patch"]
        assert patch and all(list(op)[0] in ("path", "from") and "op" in op for op in patch), record["id"]
        assert score_prediction(record, parse_answer(row["messages"][-1]["content"])).cm


def test_an_unknown_key_order_is_refused_before_the_rollout(tmp_path) -> None:
    from envsim.training.data import build_sft_data, load_recipe

    with pytest.raises(ValueError, match="patch_key_order must be one of op-first, path-first"):
        build_sft_data({**load_recipe("smoke"), "patch_key_order": "op-last"}, tmp_path)
    assert not any(tmp_path.iterdir())


TALLY = {"tally": {"DEM": 2, "GRN": 1}, "voters": {"V-1": {"party": "DEM", "log": [1]}}, "hidden": 7}


def test_a_tested_target_copies_each_shown_old_value_before_its_replace() -> None:
    patch = [{"op": "replace", "path": "/tally/DEM", "value": 1}, {"op": "replace", "path": "/tally/GRN", "value": 2},
             {"op": "replace", "path": "/voters/V-1/party", "value": "GRN"},
             {"op": "replace", "path": "/voters/V-1/log", "value": []},       # a list: no test
             {"op": "replace", "path": "/hidden", "value": 8},               # not shown: no test
             {"op": "replace", "path": "/tally/DEM", "value": 0}]            # changed since the prompt: no test
    shown = {"tally": {"DEM": 2, "GRN": 1}, "voters": {"V-1": {"party": "DEM", "log": [1]}}}
    tested = with_replace_tests(TALLY, shown, patch)
    assert [op for op in tested if op["op"] == "test"] == [
        {"op": "test", "path": "/tally/DEM", "value": 2}, {"op": "test", "path": "/tally/GRN", "value": 1},
        {"op": "test", "path": "/voters/V-1/party", "value": "DEM"}]
    assert [op for op in tested if op["op"] != "test"] == patch
    assert tested[tested.index({"op": "test", "path": "/tally/GRN", "value": 1}) + 1] == patch[1]
    assert jsonpatch.apply_patch(TALLY, tested) == jsonpatch.apply_patch(TALLY, patch)


def test_a_value_the_view_shows_differently_or_a_patch_that_does_not_apply_gets_no_test() -> None:
    patch = [{"op": "replace", "path": "/tally/DEM", "value": 3}]
    assert with_replace_tests(TALLY, {"tally": {"DEM": 5}}, patch) == patch       # the view would contradict the state
    broken = [{"op": "remove", "path": "/nowhere"}, *patch]
    assert with_replace_tests(TALLY, TALLY, broken) == broken


def test_the_prompt_shows_what_its_mode_shows() -> None:
    from envsim.training.data import prompt_shown_state

    record = {"state": TALLY, "action": {"name": "x", "arguments": {}}}
    assert prompt_shown_state(record, "mdp") is TALLY and prompt_shown_state(record, "pomdp") == {}
    record = {"id": "x-1", "env": "e-v1", "state": TALLY, "tools": [], "action": {"name": "vote",
              "arguments": {"voter_id": "V-1"}},
              "code": "def vote(self, voter_id: str):\n    voter = self.voters[voter_id]\n"
                      "    if voter['party'] == 'GRN':\n        raise ToolError('already GRN')\n"
                      "    voter['party'] = 'GRN'\n"}
    view = prompt_shown_state(record, "mdp-view")        # the view this call's code reads: not the tally
    assert "tally" not in view and view["voters"]["V-1"]["party"] == "DEM"
    patch = [{"op": "replace", "path": "/voters/V-1/party", "value": "GRN"},
             {"op": "replace", "path": "/tally/DEM", "value": 1}]
    assert [op["path"] for op in target_patch({**record, "patch": patch}, "dash", "op-first", "shown", view)
            if op["op"] == "test"] == ["/voters/V-1/party"]


@given(values=st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 3), min_size=1),
       changes=st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 3)))
@settings(max_examples=60, deadline=None)
def test_tests_never_change_the_next_state_and_partial_credit_ignores_the_ones_that_hold(values: dict,
                                                                                        changes: dict) -> None:
    state = {"v": values}
    after = {"v": {**values, **changes}}
    record = {"state": state, "observation": {"ok": True}, "patch": compute_delta(state, after).patch}
    tested = with_replace_tests(state, state, record["patch"])
    assert same_json(jsonpatch.apply_patch(state, tested), after)
    answer = parse_answer(json.dumps({"observation": {"ok": True}, "patch": tested}))
    assert partial_credit(record, answer) == 1.0
    wrong = [{"op": "test", "path": f"/v/{k}", "value": v + 1} for k, v in values.items()][:1]
    if record["patch"]:   # a failing test is a wrong operation: below full credit
        assert partial_credit(record, parse_answer(json.dumps({"observation": {"ok": True},
                                                                "patch": wrong + tested}))) < 1.0


@pytest.mark.slow   # a rollout: the unit tests above hold the logic; the README tier has no seconds to spare
def test_a_tested_recipe_writes_tests_that_score_cm_and_an_unknown_choice_is_refused(tmp_path) -> None:
    from envsim.evaluation.scoring.scoring import score_prediction
    from envsim.training.data import build_sft_data, load_recipe

    recipe = {**load_recipe("in-env"), "name": "rt", "replace_tests": "shown",
              "cells": [{"stratum": "medium", "n": 6}], "rollout": {"seed": 13, "episodes": 2, "steps": 30}}
    recipe.pop("heldout")
    stats = build_sft_data(recipe, tmp_path / "ok", env_ids=recipe["envs"][-1:])
    rows = [json.loads(line) for line in (tmp_path / "ok" / "rt.jsonl").read_text().splitlines()]
    records = [json.loads(line) for line in (tmp_path / "ok" / "rt.records.jsonl").read_text().splitlines()]
    assert stats["replace_tests"] == "shown" and rows
    assert any('"op":"test"' in row["messages"][-1]["content"] for row in rows)
    for row, record in zip(rows, records, strict=True):
        assert score_prediction(record, parse_answer(row["messages"][-1]["content"])).cm
    with pytest.raises(ValueError, match=r"replace_tests must be one of none, shown, shown\+read-keys, shown\+reads, "
                                         r"shown\+change-read-keys, not 'all'"):
        build_sft_data({**load_recipe("smoke"), "replace_tests": "all"}, tmp_path / "bad")
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").iterdir())


def test_the_in_env_reads_recipe_is_in_env_with_reads_first_on_changes_in_write_order() -> None:
    """The shipped recipe of the first run that beat ``null`` (docs/real-model.md): the in-env recipe's data and
    held-out set, only the target form changed."""
    from envsim.training.data import load_recipe

    reads, base = load_recipe("in-env-reads"), load_recipe("in-env")
    changed = {k for k in set(reads) | set(base) if reads.get(k) != base.get(k)}
    assert changed == {"name", "description", "replace_tests", "patch_op_order"}
    assert (reads["replace_tests"], reads["patch_op_order"]) == ("shown+change-read-keys", "writes")

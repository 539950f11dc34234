"""Views that shrink list-shaped collections and scans (issue 53, item 3): object-model code that finds records by
scanning a top-level list is shown the records the scan keeps (an object keyed by list index, with a note), the
view is verified by running the call on it alone, and the executor baseline answers from the prompt alone."""

from __future__ import annotations

import json

import pytest

from envsim.construction.labelling import to_record
from envsim.construction.rollout import seeded_rollouts
from envsim.envs.registry import get_env
from envsim.envs.sandbox import trust_target
from envsim.envs.views.partial_lists import compact, full_patch, lists_in_notes
from envsim.envs.views.verify import check_view, stored_view
from envsim.evaluation.baselines.executor_baseline import run_shown
from envsim.evaluation.prompting.prompts import build_messages
from envsim.evaluation.prompting.shown_prompt import read_prompt

TELECOM = "tests.fixtures.telecom.wrapper:TelecomEnv"
AIRLINE = "tests.fixtures.flights.wrapper:AirlineEnv"


def _records(target: str, steps: int = 24) -> list[dict]:
    trust_target(target)
    cls = get_env(target)
    return cls, [to_record(t, cls, "test") for t in seeded_rollouts(cls, seed=1, episodes=1, steps=steps)]


def test_a_patch_on_the_compacted_list_lands_at_full_state_indices():
    view_state = {"customers": {"7": {"id": "a"}, "30": {"id": "b"}}, "plans": []}
    state, mapping = compact(view_state, {("customers",): 120})
    assert state["customers"] == [{"id": "a"}, {"id": "b"}]
    patch = [{"op": "replace", "path": "/customers/1/status", "value": "x"},
             {"op": "add", "path": "/customers/2", "value": {"id": "c"}},
             {"op": "add", "path": "/customers/-", "value": {"id": "d"}}]
    assert [op["path"] for op in full_patch(patch, mapping)] == ["/customers/30/status", "/customers/120",
                                                                 "/customers/-"]


@pytest.mark.parametrize("target", [TELECOM, pytest.param(AIRLINE, marks=pytest.mark.slow)])
def test_scanned_lists_are_shown_in_part_verified_and_answered_from_the_prompt(target):
    cls, records = _records(target)
    full_chars = min(len(json.dumps(r["state"])) for r in records)
    in_part = 0
    for record in records:
        view = stored_view(record)
        assert check_view(cls, record).widening is None, record["action"]  # the call on the view alone reproduces it
        text = view.render()
        assert len(text) < full_chars / 8, (record["action"], len(text))
        in_part += bool(view.lists)
        shown = read_prompt(build_messages(record, "mdp-view", version="4"))
        assert lists_in_notes(shown.view_notes, shown.state) == view.lists
        answer = run_shown(shown)
        assert answer.status == "ran", answer.detail
        assert (answer.observation, answer.patch) == (record["observation"], record["patch"]), record["action"]
    assert in_part == len(records)


def test_a_search_over_flight_objects_shows_the_flights_its_condition_keeps():
    cls, records = _records(AIRLINE, steps=1)
    state = records[0]["state"]
    flight = state["flights"][17]
    record = {**records[0], "action": {"name": "search_flights", "arguments": {
        "origin": flight["origin"], "destination": flight["destination"], "date": flight["date"]}}}
    from envsim.envs.shown import shown_tool_code
    from envsim.envs.sandbox import execute

    record["code"] = shown_tool_code(cls, "search_flights")
    record["tools"] = [t for t in cls.tool_schemas() if t.get("function", t).get("name") == "search_flights"]
    transition = execute(cls, state, record["action"])
    record.update(observation=transition.observation, patch=transition.patch, next_state=state)
    view = stored_view(record)
    shown = view.state["flights"]
    assert 17 in shown and len(shown) < len(state["flights"]) / 4
    assert all(state["flights"][i]["origin"] == flight["origin"] for i in shown)
    assert any(note.startswith("- /flights: records whose origin equals") for note in view.notes())
    assert check_view(cls, record).widening is None

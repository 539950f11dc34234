"""Copy-on-write labelling of one's own environment (construction.cow_labelling): the executor's labels and ids
exactly, records shared between states, untraced writes caught, and the construct paths that use it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from envsim.construction.cow_labelling import EpisodeLabeller, label_calls, labels_traced, traceable
from envsim.construction.explorer import ExplorerPolicy
from envsim.construction.labelling import sample_id
from envsim.construction.state_explorer import StateExplorer
from envsim.delta import canonical_json
from envsim.envs.adapters.foreign import wrap_class
from envsim.envs.base import Environment
from envsim.envs.sandbox import execute
from envsim.envs.registry import get_env
from envsim.envs.tool import tool
from envsim.envs.sandbox import trust_module

SMALL_SHOP = "tests.fixtures.shopdb.small:SmallShopEnv"


def _same_as_executor(env_class: type, state: dict, policy: Any, steps: int) -> EpisodeLabeller:
    """Label ``steps`` calls both ways, from ``state``; every label, state and id must be the executor's."""
    labeller = EpisodeLabeller(env_class, state)
    state = json.loads(canonical_json(state))
    for _ in range(steps):
        action = policy.next_action(env_class, state)
        expected = execute(env_class, state, action)
        call = labeller.label(action)
        got = call.transition
        assert json.dumps(got.observation) == json.dumps(expected.observation)
        assert json.dumps(got.next_state) == json.dumps(expected.next_state)    # values and key order
        assert (got.patch, got.delta_size, got.changed_paths) == (expected.patch, expected.delta_size,
                                                                 expected.changed_paths)
        assert call.record_id == sample_id(env_class.env_id(), state, action.to_json())
        state = expected.next_state
    return labeller


def test_a_wrapped_pydantic_shop_is_labelled_exactly_as_the_executor_labels_it():
    trust_module("tests.fixtures.shopdb.small")
    shop = get_env(SMALL_SHOP)
    assert traceable(shop) and labels_traced(shop)
    labeller = _same_as_executor(shop, shop.sample_state(0), StateExplorer(3), 40)
    assert labeller.fallbacks == 0                      # every call traced, none left to the executor


@pytest.mark.parametrize("env_id", ["online_store-v1", "library_circulation-v1", "airline_seat_map-v1", "budget_envelopes-v1"])
def test_environment_classes_are_labelled_exactly_as_the_executor_labels_them(env_id):
    env = get_env(env_id)
    assert traceable(env) and not labels_traced(env)    # built-ins keep the executor: shipped files unchanged
    _same_as_executor(env, env.sample_state(1), ExplorerPolicy(seed=5), 40)


def test_the_next_state_shares_every_record_the_call_left_alone():
    trust_module("tests.fixtures.shopdb.small")
    shop = get_env(SMALL_SHOP)
    labeller = EpisodeLabeller(shop, shop.sample_state(0))
    before = labeller.state
    order_id = next(k for k, o in before["orders"].items() if o["status"] == "pending")
    call = labeller.label({"name": "cancel_pending_order", "arguments": {"order_id": order_id,
                                                                      "reason": "no longer needed"}})
    after = call.transition.next_state
    assert call.transition.delta_size > 0 and after["orders"][order_id]["status"] == "cancelled"
    unchanged = [k for k in before["orders"] if k != order_id]
    assert all(after["orders"][k] is before["orders"][k] for k in unchanged)
    assert after["products"] is before["products"]      # a collection the call did not change: the same object
    assert before["orders"][order_id]["status"] == "pending"    # the state before is never written


class _Sweeper(Environment):
    """Writes records it reaches by iterating (a path the copy-on-write run does not trace)."""

    name = "sweeper"

    def __init__(self) -> None:
        self.jobs: dict[str, dict[str, Any]] = {}

    @classmethod
    def sample_state(cls, seed: int) -> dict[str, Any]:
        return {"jobs": {f"j{i}": {"done": False, "n": i} for i in range(6)}}

    @tool(write=True)
    def finish_all(self) -> int:
        """Mark every job done."""
        for job in self.jobs.values():
            job["done"] = True
        return len(self.jobs)

    @tool(write=True)
    def finish(self, job_id: str) -> bool:
        """Mark one job done.

        Args:
            job_id: The job.
        """
        self.jobs[job_id]["done"] = True
        return True


def test_a_write_through_iteration_is_undone_and_labelled_by_the_executor():
    labeller = EpisodeLabeller(_Sweeper, _Sweeper.sample_state(0))
    first = labeller.label({"name": "finish", "arguments": {"job_id": "j1"}})
    second = labeller.label({"name": "finish_all", "arguments": {}})
    assert first.traced and not second.traced and labeller.fallbacks == 1
    # the shared records were put back: the first call's next state is what it was
    assert [j["done"] for j in first.transition.next_state["jobs"].values()] == [False, True, False, False, False,
                                                                                  False]
    assert second.transition.delta_size == 5 and all(j["done"] for j in second.transition.next_state["jobs"].values())
    expected = execute(_Sweeper, first.transition.next_state, {"name": "finish_all", "arguments": {}})
    assert second.transition.patch == expected.patch


class _Ledger:
    """A class of one's own (no Environment): its tools rebuild every entry, as a wrapper writing a dump back does."""

    def __init__(self) -> None:
        self.entries = {"a": {"amount": 5.0, "flag": True}, "b": {"amount": 2.5, "flag": False}}

    def round_amount(self, entry: str) -> float:
        """Store the amount as a whole number (5.0 becomes 5: equal in Python, not in JSON)."""
        self.entries = {k: dict(v) for k, v in self.entries.items()}
        self.entries[entry]["amount"] = int(self.entries[entry]["amount"])
        return 0.0

    def touch(self) -> int:
        """Rebuild every entry unchanged."""
        self.entries = {k: dict(v) for k, v in self.entries.items()}
        return len(self.entries)


def test_a_change_of_number_type_in_a_rebuilt_dictionary_is_a_change():
    ledger = wrap_class(_Ledger, env_id="tests.ledger:Ledger")
    assert traceable(ledger)
    state = ledger.sample_state(0)
    calls = list(label_calls(ledger, state, [{"name": "touch", "arguments": {}},
                                             {"name": "round_amount", "arguments": {"entry": "a"}},
                                             {"name": "touch", "arguments": {}}]))
    assert [c.transition.delta_size for c in calls] == [0, 1, 0]
    assert calls[1].transition.patch == [{"op": "replace", "path": "/entries/a/amount", "value": 5}]
    assert json.dumps(calls[2].transition.state["entries"]["a"]["amount"]) == "5"


def test_a_state_the_tracing_cannot_follow_is_labelled_by_the_executor():
    class Scenario:
        def __init__(self) -> None:
            self.items: list[int] = []

        def _load_scenario(self, config: dict) -> None:
            self.items = list(config.get("items", []))

        def add(self, value: int) -> int:
            """Append a value."""
            self.items.append(value)
            return len(self.items)

    env = wrap_class(Scenario, load="scenario", initial_states=[{"items": [1]}], env_id="tests.scenario:Scenario")
    assert not traceable(env)
    calls = list(label_calls(env, env.sample_state(0), [{"name": "add", "arguments": {"value": 2}}]))
    assert calls[0].transition.next_state == {"items": [1, 2]} and not calls[0].traced

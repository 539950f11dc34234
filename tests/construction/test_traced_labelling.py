"""Traced labelling: Δ on the touched records equals the whole-state Δ, never mutates its input, catches
writes it did not trace."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest

from envsim.construction.traced_labelling import StateDigest, TracingError, label_traced
from envsim.delta import canonical_json
from envsim.envs import Environment, tool
from envsim.envs.adapters.tau import task_actions, tau_env
from envsim.envs.sandbox import NondeterminismError, execute


class Shop(Environment):
    """Collections of records, with tools that write in every way the tracing must see."""

    name = "traced_shop"
    domain = "testing"

    @classmethod
    def sample_state(cls, seed: int) -> dict[str, Any]:
        return {"orders": {"o1": {"status": "open", "items": [1, 2]}, "o2": {"status": "open", "items": []}},
                "clock": 0}

    @tool(write=True)
    def close(self, order_id: str) -> dict:
        """Close an order.

        Args:
            order_id: The order.
        """
        self.orders[order_id]["status"] = "closed"
        self.orders[order_id]["items"].append(3)
        self.clock += 1
        return {"success": True}

    @tool(write=True)
    def add_and_drop(self, new_id: str, drop_id: str) -> dict:
        """Add an order and remove another.

        Args:
            new_id: Id of the new order.
            drop_id: Id of the order removed.
        """
        self.orders[new_id] = {"status": "new", "items": []}
        del self.orders[drop_id]
        return {"success": True}

    @tool(write=True)
    def close_all_sneakily(self) -> dict:
        """Close every order through iteration (a write the key tracing cannot see)."""
        for order in self.orders.values():
            order["status"] = "closed"
        return {"success": True}

    @tool(write=True)
    def flaky(self) -> dict:
        """Write a value that differs between runs."""
        Shop._runs = getattr(Shop, "_runs", 0) + 1
        self.orders["o1"]["status"] = f"run {Shop._runs}"
        return {"success": True}


@pytest.mark.parametrize("action", [{"name": "close", "arguments": {"order_id": "o1"}},
                                    {"name": "add_and_drop", "arguments": {"new_id": "o9", "drop_id": "o2"}},
                                    {"name": "close", "arguments": {"order_id": "missing"}}])
def test_traced_delta_matches_the_whole_state_delta(action):
    state = Shop.sample_state(0)
    before = copy.deepcopy(state)
    traced, digest = label_traced(Shop, state, action)
    full = execute(Shop, state, action)
    assert state == before  # the input state is never mutated
    assert canonical_json(traced.next_state) == canonical_json(full.next_state)
    assert (traced.delta_size, traced.outcome) == (full.delta_size, full.outcome)
    assert canonical_json(jsonpatch.apply_patch(state, traced.patch)) == canonical_json(full.next_state)
    assert digest.hexdigest() == StateDigest.of(full.next_state).hexdigest()


def test_write_through_iteration_is_caught():
    with pytest.raises(TracingError, match="through iteration"):
        label_traced(Shop, Shop.sample_state(0), {"name": "close_all_sneakily", "arguments": {}})


def test_nondeterministic_call_is_caught():
    with pytest.raises(NondeterminismError):
        label_traced(Shop, Shop.sample_state(0), {"name": "flaky", "arguments": {}})


@pytest.mark.tau
def test_tau_retail_chained_calls_match_the_whole_state_labels():
    env_class = tau_env("retail")
    initial = env_class.sample_state(0)
    digest = StateDigest.of(initial)
    for actions in task_actions("retail", "test")[:2]:
        state, chain = initial, digest
        for action in actions:
            traced, chain = label_traced(env_class, state, action, digest=chain)
            full = execute(env_class, state, action)
            assert (traced.delta_size, traced.outcome, traced.observation) == \
                (full.delta_size, full.outcome, full.observation)
            assert canonical_json(traced.next_state) == canonical_json(full.next_state)
            state = traced.next_state

"""τ-bench retail through the generic path (``tests/fixtures/tau_generic.py``, a user-style wrapper and
``wrap_target``, not the τ adapter): τ's refused calls are failures, and the generic explorer reaches every
stratum up to difficult, failure included (issue 31)."""

from __future__ import annotations

import importlib.util
import os
from collections import Counter

import pytest

from envsim.construction.labelling import to_record
from envsim.construction.rollout import seeded_rollouts
from envsim.envs.sandbox import execute
from envsim.envs.registry import get_env
from envsim.envs.sandbox import trust_target

TAU_GENERIC = "tests.fixtures.tau_generic:TauRetail"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tau_bench") is None
                                and not os.environ.get("ENVSIM_TAU_BENCH"), reason="τ-bench not available")


@pytest.fixture(scope="module")
def tau():
    trust_target(TAU_GENERIC)
    return get_env(TAU_GENERIC)


def test_a_refused_tau_call_is_a_failure_whose_code_shows_the_raise(tau) -> None:
    state = tau.sample_state(0)
    order_id = next(iter(state["orders"]))
    refused = to_record(execute(tau, state, {"name": "cancel_pending_order",
                                             "arguments": {"order_id": "#W0000000", "reason": "no longer needed"}}),
                        tau, "test")
    assert refused["outcome"] == refused["stratum"] == "failure"
    assert refused["observation"] == {"success": False, "error": "TauToolError: order not found"}
    assert "def _raise_errors(" in refused["code"] and "def invoke(" in refused["code"]
    assert refused["view"] == {"widening": None, "verified": True}
    read = to_record(execute(tau, state, {"name": "get_order_details", "arguments": {"order_id": order_id}}),
                     tau, "test")
    assert read["outcome"] == "no_change" and order_id in read["observation"]  # τ's answer, unchanged


@pytest.mark.slow
def test_the_generic_explorer_reaches_every_stratum_on_tau_retail(tau) -> None:
    transitions = list(seeded_rollouts(tau, 0, 2, 20))
    strata = Counter(t.stratum for t in transitions)
    assert sum(t.delta_size > 0 for t in transitions) / len(transitions) >= 0.4
    assert all(strata[s] for s in ("failure", "no_change", "simple", "medium", "difficult")), strata

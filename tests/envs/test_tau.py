"""The τ-bench adapter: finding τ-bench, τ-bench's schemas, the Error: rule, the ground-truth task calls."""

from __future__ import annotations

import pytest

from envsim.envs.adapters.tau import TauBenchNotFound, locate_tau_bench, task_actions, tool_classes
from envsim.envs.sandbox import execute
from envsim.envs.registry import get_env


def test_locate_rejects_a_folder_without_tau_bench(tmp_path):
    with pytest.raises(TauBenchNotFound, match="ENVSIM_TAU_BENCH"):
        locate_tau_bench(tmp_path)


@pytest.mark.tau
@pytest.mark.parametrize("domain, tasks, calls", [("retail", 115, 582), ("airline", 50, 158)])
def test_test_tasks_have_the_published_call_counts(domain, tasks, calls):
    actions = task_actions(domain, "test")
    assert (len(actions), sum(len(a) for a in actions)) == (tasks, calls)


@pytest.mark.tau
def test_train_tasks_exist_for_retail_only():
    assert len(task_actions("retail", "train")) == 500
    assert task_actions("airline", "train") == []


@pytest.mark.tau
def test_schemas_are_tau_benchs_own_get_info():
    cls = get_env("tau/retail")
    declared = [tool.get_info() for tool in tool_classes("retail")]
    assert cls.tool_schemas() == declared
    assert cls.env_id() == "tau/retail"


@pytest.mark.tau
def test_error_strings_are_failures_and_writes_change_state():
    cls = get_env("tau/retail")
    state = cls.sample_state(0)
    missing = execute(cls, state, {"name": "cancel_pending_order",
                                   "arguments": {"order_id": "#W0000000", "reason": "no longer needed"}})
    assert missing.observation == "Error: order not found" and missing.outcome == "failure"
    pending = next(k for k, o in state["orders"].items() if o["status"] == "pending")
    done = execute(cls, state, {"name": "cancel_pending_order",
                                "arguments": {"order_id": pending, "reason": "no longer needed"}})
    assert done.outcome == "change"
    assert done.next_state["orders"][pending]["status"] == "cancelled"

"""The executor: labels, copies, JSON checks, tool-layer errors, captured exceptions, determinism."""

from __future__ import annotations

import pytest

from envsim.delta import apply_patch, same_json
from envsim.envs.sandbox import NondeterminismError, StateError, execute
from envsim.envs.base import Environment
from envsim.envs import tool
from tests.envs.fake_env import Counter


def test_change_is_labelled():
    state = Counter.sample_state(3)
    t = execute(Counter, state, {"name": "bump", "arguments": {"key": "a", "by": 2}})
    assert t.observation == {"success": True, "value": 5}
    assert t.next_state["counters"]["a"] == 5
    assert t.delta_size == 2 and t.outcome == "change" and t.stratum == "simple" and t.arg_count == 2
    assert same_json(apply_patch(t.state, t.patch), t.next_state)
    assert t.env == "counter-v1" and len(t.env_version) == 16


def test_state_is_copied_in_and_out():
    state = Counter.sample_state(1)
    t = execute(Counter, state, {"name": "bump", "arguments": {"key": "a"}})
    assert state == {"counters": {"a": 1, "b": 0}, "history": []}
    t.next_state["counters"]["a"] = 99
    t2 = execute(Counter, state, {"name": "read", "arguments": {"key": "a"}})
    assert t2.observation["value"] == 1 and t.state["counters"]["a"] == 1


def test_read_is_no_change_and_tool_error_is_failure():
    state = Counter.sample_state(0)
    assert execute(Counter, state, {"name": "total", "arguments": {}}).outcome == "no_change"
    failed = execute(Counter, state, {"name": "read", "arguments": {"key": "zz"}})
    assert failed.observation == {"success": False, "error": "No counter zz"}
    assert failed.outcome == "failure" and failed.stratum == "failure" and failed.patch == []


@pytest.mark.parametrize("arguments,message", [
    ({}, "Missing required argument(s) for tool 'bump': key"),
    ({"key": "a", "extra": 1}, "Unexpected argument(s) for tool 'bump': extra"),
    ({"key": 3}, "Invalid value for argument 'key' of tool 'bump': expected string, got integer"),
    ({"key": "a", "by": True}, "Invalid value for argument 'by' of tool 'bump': expected integer, got boolean"),
    ({"key": "a", "by": 1.5}, "Invalid value for argument 'by' of tool 'bump': expected integer, got number"),
    ({"key": "a", "mode": "triple"}, "Invalid value for argument 'mode' of tool 'bump': expected one of 'add', 'double', got string"),
])
def test_bad_arguments_answer_like_a_tool_layer(arguments, message):
    t = execute(Counter, Counter.sample_state(0), {"name": "bump", "arguments": arguments})
    assert t.observation == {"success": False, "error": message}
    assert t.delta_size == 0 and t.outcome == "failure"


def test_optional_and_container_arguments_are_type_checked():
    state = Counter.sample_state(0)
    ok = execute(Counter, state, {"name": "bump", "arguments": {"key": "a", "note": None}})
    assert ok.observation["success"]
    bad = execute(Counter, state, {"name": "tag", "arguments": {"labels": ["x", 1], "weights": {}}})
    assert "expected array of string" in bad.observation["error"]
    good = execute(Counter, state, {"name": "tag", "arguments": {"labels": ["x"], "weights": {"x": 1}}})
    assert good.delta_size == 1


def test_unknown_tool_lists_available_tools():
    t = execute(Counter, Counter.sample_state(0), {"name": "explode", "arguments": {}})
    assert t.observation["error"].startswith("Unknown tool 'explode'. Available tools: total, read, bump")


def test_exception_is_captured_and_mutation_kept():
    t = execute(Counter, Counter.sample_state(4), {"name": "half_then_fail", "arguments": {"key": "a"}})
    assert t.observation == {"success": False, "error": "ValueError: boom"}
    assert t.next_state["counters"]["a"] == 0 and t.outcome == "change"


def test_non_json_state_is_rejected_with_the_path():
    with pytest.raises(StateError, match=r"/counters/a: set is not a JSON value"):
        execute(Counter, {"counters": {"a": {1}}, "history": []}, {"name": "total", "arguments": {}})
    with pytest.raises(StateError, match="non-finite"):
        execute(Counter, {"counters": {"a": float("nan")}, "history": []}, {"name": "total", "arguments": {}})
    with pytest.raises(StateError, match="next state"):
        execute(Counter, Counter.sample_state(0), {"name": "corrupt", "arguments": {}})


class Clocky(Environment):
    """Cheats with hidden mutable class state."""

    calls = [0]

    @classmethod
    def sample_state(cls, seed):
        return {"n": 0}

    @tool(write=True)
    def tick(self) -> dict:
        """Advance."""
        Clocky.calls[0] += 1
        self.n = Clocky.calls[0]
        return {"success": True}


def test_determinism_check_catches_hidden_state():
    execute(Counter, Counter.sample_state(0), {"name": "bump", "arguments": {"key": "a"}}, check_determinism=True)
    with pytest.raises(NondeterminismError):
        execute(Clocky, {"n": 0}, {"name": "tick", "arguments": {}}, check_determinism=True)


def test_arguments_given_as_json_string_are_accepted():
    t = execute(Counter, Counter.sample_state(0), {"name": "read", "arguments": '{"key": "b"}'})
    assert t.observation == {"success": True, "value": 0}

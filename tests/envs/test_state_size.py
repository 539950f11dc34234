"""Issue 21.9: a huge answer (a state of millions of values, a Δ of a million items) is refused with a reason
before it is copied or diffed; memory figures: benchmarks/state_size_memory.py."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

from envsim import delta as delta_module
from envsim.envs import Environment, tool
from envsim.envs.sandbox import executor as executor_module
from envsim.envs.base import StateError
from envsim.envs.sandbox import execute
from envsim.evaluation.scoring.parsing import ParsedAnswer
from envsim.evaluation.scoring.scoring import score_prediction


class Bloat(Environment):
    """A tool that fills the state with ``n`` empty objects."""

    name = "bloat"

    @classmethod
    def sample_state(cls, seed: int) -> dict[str, Any]:
        """An empty list."""
        return {"items": []}

    @tool(write=True)
    def fill(self, n: int) -> dict:
        """Fill the list.

        Args:
            n: How many objects.
        """
        self.items = [{} for _ in range(n)]
        return {"success": True}


def _fill(n: int):
    return execute(Bloat, {"items": []}, {"name": "fill", "arguments": {"n": n}})


def test_a_next_state_over_the_value_cap_is_a_state_error_with_the_limit():
    with mock.patch.object(executor_module, "MAX_STATE_VALUES", 1_000):
        assert _fill(990).delta_size == 990
        with pytest.raises(StateError, match="next state holds more than 1,000 JSON values"):
            _fill(1_001)


def test_a_delta_over_the_cap_is_refused_before_deepdiff_sees_it():
    with mock.patch.object(delta_module, "MAX_DELTA_VALUES", 500):
        assert _fill(490).delta_size == 490
        with pytest.raises(StateError, match=r"bloat-v1.fill: the states differ in more than 500 values"), \
                mock.patch.object(delta_module, "_diff", side_effect=AssertionError("deepdiff reached")):
            _fill(600)
        with pytest.raises(delta_module.DeltaTooLarge):  # equal-length lists, every cell changed
            delta_module.compute_delta({"x": list(range(600))}, {"x": list(range(1, 601))[::-1]})
        with pytest.raises(delta_module.DeltaTooLarge):  # a dict with many new keys
            delta_module.compute_delta({}, {f"k{i}": i for i in range(600)})


def test_a_huge_predicted_next_state_is_a_scored_failure_with_a_reason():
    record = {"state": {"items": []}, "next_state": {"items": [{}]}, "observation": {"success": True},
              "changed_paths": ["/items/0"]}
    answer = ParsedAnswer(observation={"success": True}, next_state={"items": [{}] * 600}, format="next_state")
    with mock.patch.object(delta_module, "MAX_DELTA_VALUES", 500):
        score = score_prediction(record, answer)
    assert score.parsed and score.fm and not score.cm and "DeltaTooLarge" in score.reason

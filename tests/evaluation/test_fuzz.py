"""Fuzz the parser and scorer with hostile outputs: no exception, bounded time, bounded memory."""

from __future__ import annotations

import gc
import json
import time

import pytest
import tracemalloc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envsim.evaluation.scoring.parsing import parse_answer
from envsim.evaluation.scoring.scoring import score_prediction
from tests.evaluation.test_parsing_scoring import GOOD, RECORD

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)),
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.text(max_size=6), c, max_size=4)),
    max_leaves=30)
paths = st.one_of(st.just("/x/999999999"), st.just("/orders/O-1/status"), st.just("/log/-"), st.just(""),
                  st.text(max_size=12).map(lambda t: "/" + t), st.integers())
ops = st.fixed_dictionaries({"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bogus"]),
                             "path": paths}, optional={"value": json_values, "from": paths})
answers = st.one_of(
    st.text(max_size=300),
    json_values.map(json.dumps),
    st.builds(lambda o, p: json.dumps({"observation": o, "patch": p}), json_values, st.lists(ops, max_size=8)),
    st.builds(lambda o, p: json.dumps({"observation": o, "next_state": p}), json_values, json_values),
    st.builds(lambda o, c: json.dumps({"feedback": o, "config_changes": c}), json_values,
              st.lists(st.fixed_dictionaries({"type": st.sampled_from(["add", "update", "delete", "x"]),
                                              "path": paths, "value": json_values}), max_size=5)),
    st.builds(lambda prose, cut: (prose + GOOD)[: cut], st.text(max_size=40), st.integers(0, len(GOOD) + 40)),
)

HOSTILE = [
    "[" * 100_000 + "]" * 100_000,
    "{" * 50_000,
    '{"observation": ' + "[" * 5000 + "]" * 5000 + ', "patch": []}',
    '{"observation": 1' + "0" * 10_000 + ', "patch": []}',
    '{"observation": 1e999999, "patch": []}',
    '{"observation": {}, "patch": [{"op": "add", "path": "/x/999999999", "value": 1}]}',
    "{" + '"a": 1, ' * 50_000 + "}",
    "```json\n" + "{" * 1000 + "\n```",
    "x" * 2_000_000,
    '{"observation": null, "patch": [' + ",".join(['{"op":"copy","from":"","path":"/a"}'] * 40) + "]}",
]


# A hang guard, not a speed target (those live in benchmarks/eval_overhead.py): typical answers take
# about a millisecond, a quadratic or exponential blow-up on these inputs takes many seconds.
HANG_BOUND_S = 1.0


def _check(text: str) -> float:
    """CPU seconds spent parsing and scoring ``text`` (CPU time, so a loaded machine does not flake;
    the garbage collector is paused so a full collection of the test session's heap is not counted)."""
    gc.disable()
    try:
        start = time.thread_time()
        score = score_prediction(RECORD, parse_answer(text))
        elapsed = time.thread_time() - start
    finally:
        gc.enable()
    assert isinstance(score.cm, bool)
    return elapsed


_FUZZ_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=300, **_FUZZ_SETTINGS)
@given(answers)
def test_random_outputs_never_raise_and_stay_fast(text):
    """The everyday tier: 300 generated answers."""
    assert _check(text) < HANG_BOUND_S


@pytest.mark.slow
@settings(max_examples=3000, **_FUZZ_SETTINGS)
@given(answers)
def test_random_outputs_never_raise_and_stay_fast_3000(text):
    """The CI tier: 3,000 generated answers."""
    assert _check(text) < HANG_BOUND_S


def test_hand_made_hostile_outputs():
    for text in HOSTILE:
        elapsed = _check(text)
        assert elapsed < HANG_BOUND_S, (text[:40], elapsed)
    tracemalloc.start()  # memory is measured apart: tracing slows allocation-heavy inputs a lot
    for text in HOSTILE:
        _check(text)
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 200 * 1024 * 1024


def test_memory_does_not_grow_over_repeated_hostile_inputs():
    tracemalloc.start()
    for text in HOSTILE[:6]:
        _check(text)
    baseline, _ = tracemalloc.get_traced_memory()
    for _ in range(20):
        for text in HOSTILE[:6]:
            _check(text)
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert after - baseline < 5 * 1024 * 1024

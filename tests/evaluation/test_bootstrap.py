"""The bootstrap's intervals: verdict columns packed into bits give the very numbers of the float means."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from envsim.evaluation import report


def _reference(columns: list[list[float]], seed: int, samples: int) -> list[list[float]]:
    """The definition: one draw of ``samples`` x ``n`` indices, each column's mean over each row, percentiles."""
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, len(columns[0]), size=(samples, len(columns[0])))
    result = []
    for column in columns:
        means = np.asarray(column, dtype=float)[indices].mean(axis=1)
        low, high = np.percentile(means, [2.5, 97.5])
        result.append([round(float(low), 4), round(float(high), 4)])
    return result


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 60).flatmap(lambda n: st.lists(st.lists(st.sampled_from([0.0, 1.0]), min_size=n, max_size=n),
                                                     min_size=1, max_size=9)),
       st.integers(0, 3), st.integers(1, 300), st.sampled_from([50, 1_000, 2_000_000]))
def test_packed_verdicts_give_the_intervals_of_the_float_means(columns, seed, samples, block):
    """Up to 8 columns of 0/1 are packed one bit each (a ninth falls back to floats); the indices are drawn in
    blocks of any size; every interval equals the one the plain definition gives."""
    original = report.BOOTSTRAP_BLOCK_VALUES
    report.BOOTSTRAP_BLOCK_VALUES = block
    try:
        assert report.bootstrap_cis(columns, seed, samples) == _reference(columns, seed, samples)
    finally:
        report.BOOTSTRAP_BLOCK_VALUES = original


def test_only_columns_of_verdicts_are_packed():
    assert report._packed_verdicts([np.array([0.0, 1.0, 1.0]), np.array([1.0, 1.0, 0.0])]).tolist() == [2, 3, 1]
    assert report._packed_verdicts([np.array([0.0, 0.5])]) is None              # an F1 column is a float mean
    assert report._packed_verdicts([np.array([1.0])] * 9) is None                # more columns than bits
    assert report.bootstrap_cis([[0.0, 0.5, 1.0]], samples=200) == _reference([[0.0, 0.5, 1.0]], 0, 200)


def test_eight_different_verdict_columns_keep_their_own_bits():
    rng = np.random.default_rng(7)
    columns = [list(rng.integers(0, 2, 64).astype(float)) for _ in range(8)]
    assert report.bootstrap_cis(columns, 3, 500) == _reference(columns, 3, 500)

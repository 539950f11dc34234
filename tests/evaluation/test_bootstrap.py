"""The bootstrap's intervals: verdict columns packed into bits give the very numbers of the float means."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envsim.evaluation.reporting import report


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


def test_columns_that_are_not_verdicts_take_the_float_means():
    """An F1-like column of fractions is resampled as floats, beside verdict columns or alone."""
    for columns in ([[0.0, 0.5, 1.0]], [[0.0, 1.0, 1.0], [0.25, 0.25, 0.25]]):
        assert report.bootstrap_cis(columns, samples=200) == _reference(columns, 0, 200)


def test_equal_and_constant_verdict_columns_are_not_drawn_again(monkeypatch):
    """CM, CM-lenient and CM-original agree on most runs: one resampling serves them; all-true and all-false
    columns need no draw at all (their interval is their value)."""
    draws = []
    original = report._bootstrap_means
    monkeypatch.setattr(report, "_bootstrap_means", lambda *args: draws.append(args[1]) or original(*args))
    varying = [1.0, 0.0, 1.0, 1.0]
    columns = [varying, list(varying), [1.0] * 4, [0.0] * 4, list(varying)]
    assert report.bootstrap_cis(columns, samples=300) == _reference(columns, 0, 300)
    assert draws == [1]
    draws.clear()
    assert report.bootstrap_cis([[1.0] * 4, [0.0] * 4], samples=300) == [[1.0, 1.0], [0.0, 0.0]] and draws == []


@pytest.mark.parametrize("count", [8, 9, 17])
def test_different_verdict_columns_keep_their_own_bits(count):
    """Eight varying columns share a byte; a ninth starts another."""
    rng = np.random.default_rng(7)
    columns = [list(rng.integers(0, 2, 64).astype(float)) for _ in range(count)]
    assert report.bootstrap_cis(columns, 3, 500) == _reference(columns, 3, 500)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 400, 4_000, 40_000, 2**20 + 1, 2**31 - 1])
def test_int32_draws_are_the_int64_draws(n):
    """The bootstrap draws int32 indices: the very values of the int64 draws of the same generator."""
    wide = np.random.default_rng(0).integers(0, n, size=(3, 1_000))
    narrow = np.random.default_rng(0).integers(0, n, size=(3, 1_000), dtype=np.int32)
    assert np.array_equal(wide, narrow)

"""Shared fixtures: a small benchmark file built from the built-in library."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

#: τ-bench's airline/retail subset for tests and CI (read in place, never copied): $ENVSIM_TAU_BENCH when set
#: (.ci/run sets it), else ../shared/third_party/tau-bench next to the checkout. A user's clone has neither:
#: tests marked ``tau`` are then skipped, saying why; with ``CI=true`` they fail instead (CI must prove them).
TAU_BENCH_PATH = Path(os.environ.get("ENVSIM_TAU_BENCH")
                      or Path(__file__).resolve().parents[2] / "shared" / "third_party" / "tau-bench")
TAU_BENCH_FOUND = ((TAU_BENCH_PATH / "tau_bench" / "envs" / "tool.py").is_file()
                   or importlib.util.find_spec("tau_bench") is not None)
if TAU_BENCH_FOUND:
    os.environ["ENVSIM_TAU_BENCH"] = str(TAU_BENCH_PATH)
TAU_BENCH_MISSING = (f"needs τ-bench: no tau_bench/ at {TAU_BENCH_PATH} and no installed tau_bench package "
                     "(set ENVSIM_TAU_BENCH to the folder holding tau_bench/, or pip install "
                     "git+https://github.com/sierra-research/tau-bench)")

from envsim.construction.composition import Spec, stratified_sample
from envsim.construction.pipeline import build_pool, write_jsonl

SMALL_SPEC = Spec.from_json({"name": "small", "cells": [
    {"stratum": "failure", "n": 6}, {"stratum": "no_change", "n": 6}, {"stratum": "simple", "n": 6},
    {"stratum": "medium", "n": 6}, {"stratum": "difficult", "n": 2}]})


@pytest.fixture(scope="session")
def small_records() -> list[dict]:
    """26 labelled records from a few built-in environments, covering every default stratum."""
    pool = build_pool(["online_store-v1"], seed=0, episodes=6, steps=30, split="test")
    return stratified_sample(pool, SMALL_SPEC, seed=0)


@pytest.fixture(scope="session")
def small_benchmark(tmp_path_factory, small_records) -> Path:
    """The small records written as a benchmark JSONL file."""
    path = tmp_path_factory.mktemp("bench") / "small.jsonl"
    write_jsonl(small_records, path)
    return path


@pytest.fixture(autouse=True)
def _forget_trusted_modules():
    """Modules trusted in one test (``--env-module``, ``--env module:Class``) are not trusted in the next."""
    yield
    from envsim.envs.sandbox import forget_trusted

    forget_trusted()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Where a confinement layer is missing, run the untrusted-adapter tests unconfined, and say so.

    The escape tests skip themselves on such a machine (they need every layer); the adapter tests
    still check that string classes work. Production code never opts out on its own.
    """
    import os
    import warnings

    from envsim.envs.sandbox import confinement_report, uncovered_layers

    missing = uncovered_layers(confinement_report())
    if missing and "ENVSIM_ALLOW_UNCONFINED_SANDBOX" not in os.environ:
        os.environ["ENVSIM_ALLOW_UNCONFINED_SANDBOX"] = "1"
        warnings.warn(f"sandbox layers missing here ({missing}); untrusted-adapter tests run unconfined",
                      stacklevel=1)


def in_ci() -> bool:
    """Whether the suite runs in CI (``CI=true``, as GitHub Actions, GitLab and .ci/run set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``tau`` is skipped where τ-bench is absent, with the reason and how to get it; in CI
    (``CI=true``) τ-bench's absence fails the test instead, so CI never passes without proving them."""
    if item.get_closest_marker("tau") is None or TAU_BENCH_FOUND:
        return
    if in_ci():
        pytest.fail(f"CI=true and this test {TAU_BENCH_MISSING}", pytrace=False)
    pytest.skip(TAU_BENCH_MISSING)

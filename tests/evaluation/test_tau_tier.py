"""The τ-bench tiers say up front when τ-bench cannot be found, and ``--tau-path`` finds it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import TAU_BENCH_PATH


def _eval(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ENVSIM_TAU_BENCH"} | {"ENVSIM_PROGRESS": "off"}
    command = [sys.executable, "-c", "from envsim.cli import main; main()", "eval", "--benchmark", "v2",
               "--runs-root", str(tmp_path), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_tau_tiers_stop_before_running_without_tau_bench(tmp_path):
    oracle = _eval(tmp_path, "--model", "oracle", "--tier", "tau")
    assert oracle.returncode == 1, oracle.stderr
    assert "tier tau needs τ-bench" in oracle.stderr and "--tau-path" in oracle.stderr
    chained = _eval(tmp_path, "--model", "null", "--tier", "tau_chained")  # episodes step the real environment
    assert chained.returncode == 1 and "tier tau_chained needs τ-bench" in chained.stderr
    assert not any(tmp_path.iterdir())  # nothing ran


@pytest.mark.tau
def test_tau_path_finds_tau_bench_and_a_wrong_folder_is_a_usage_error(tmp_path):
    run = _eval(tmp_path / "runs", "--model", "oracle", "--tier", "tau", "--limit", "3", "--tau-path", str(TAU_BENCH_PATH))
    assert run.returncode == 0, run.stderr
    summary = json.loads(next((tmp_path / "runs").rglob("summary.json")).read_text())
    assert (summary["scored"], summary["overall"]["fm"], summary["overall"]["cm"]) == (3, 1.0, 1.0)
    wrong = _eval(tmp_path / "none", "--model", "oracle", "--tier", "tau", "--tau-path", str(tmp_path))
    assert wrong.returncode == 2 and "τ-bench not found" in wrong.stderr

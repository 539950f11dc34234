"""``envsim eval --benchmark v2`` without ``--tier`` runs every tier whose requirements are met here and names
the others (why, how to get them); a tier asked for by name still stops the run up front."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

import envsim
from envsim.cli import main
from envsim.evaluation.running import tiers
from envsim.evaluation.errors import MissingRequirement

TAU_ABSENT = "τ-bench (no tau_bench/ folder; $ENVSIM_TAU_BENCH not set)"


@pytest.fixture
def machine_without_extras(monkeypatch):
    """No bfcl-eval and no τ-bench, whatever this machine has."""
    monkeypatch.setattr(tiers, "module_available", lambda name: name not in ("bfcl_eval", "mpmath"))
    requirements = {name: dataclasses.replace(need, missing=lambda: TAU_ABSENT) if need.missing else need
                    for name, need in tiers.TIER_REQUIREMENTS.items()}
    monkeypatch.setattr(tiers, "TIER_REQUIREMENTS", requirements)


def test_default_run_skips_tiers_it_cannot_run_and_names_them(tmp_path, machine_without_extras):
    result = CliRunner().invoke(main, ["eval", "--model", "oracle", "--benchmark", "v2", "--limit", "2",
                                       "--no-progress", "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    table = json.loads((tmp_path / "run" / "tiers.json").read_text())
    assert set(table) == {"core", "extreme", "long_state", "chained"}
    assert all(row["n"] == 2 and row["cm"] == 1.0 for row in table.values())
    said = result.output
    assert "3 tier(s) not run" in said
    assert "tier bfcl: needs mpmath, bfcl_eval (install: pip install -e \".[bfcl]\"" in said and "--no-deps" in said
    assert f"tier tau: needs {TAU_ABSENT}" in said and "tier tau_chained: needs" in said and "--tau-path" in said
    assert said.index("not run") < said.index("== tier core")  # said before anything runs (and again at the end)
    markdown = (tmp_path / "run" / "tiers.md").read_text()
    assert "**Not run here:** bfcl, tau, tau_chained" in markdown and "github.com/sierra-research/tau-bench" in markdown


@pytest.mark.slow
def test_null_model_needs_tau_bench_only_for_the_chained_tau_tier(tmp_path, machine_without_extras):
    summary = envsim.evaluate("null", benchmark="v2", limit=1, run_dir=tmp_path / "run")
    # one-step τ rows carry their states (stored once): only chained episodes step the real environment
    assert set(summary.not_run) == {"tau_chained"} and "τ-bench" in summary.not_run["tau_chained"]
    assert set(summary.tiers) == {"core", "extreme", "long_state", "chained", "bfcl", "tau"}  # bfcl: records only
    assert summary.enough_scored


@pytest.mark.parametrize("tier", ["tau", "all"])
def test_a_tier_asked_for_still_stops_up_front(tmp_path, machine_without_extras, tier):
    with pytest.raises(MissingRequirement, match="nothing was run: .*tier tau needs τ-bench"):
        envsim.evaluate("oracle", benchmark="v2", tier=tier, runs_root=tmp_path)
    result = CliRunner().invoke(main, ["eval", "--model", "oracle", "--benchmark", "v2", "--tier", tier,
                                       "--runs-root", str(tmp_path)])
    assert result.exit_code == 1 and "nothing was run" in result.output
    assert not any(tmp_path.iterdir())

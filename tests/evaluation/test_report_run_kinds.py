"""``envsim report`` recognises every run kind ``envsim`` writes and never replaces a correct file with a
wrong one (issue 24 item 2), and counts only valid rows of the run's own samples (issue 21 item 11).
Every run directory here is produced by the real ``envsim eval`` / ``envsim simulate``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.evaluation.reporting.report import _cm_by_delta_figure, compare_runs


def _cli(*args: str):
    return CliRunner().invoke(main, list(args))


def _eval(tmp: Path, model: str, *args: str) -> None:
    result = _cli("eval", "--model", model, "--runs-root", str(tmp), *args)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """null and oracle on the v2 tiers (4 samples / episodes each) and null on the v1 rollout track."""
    tmp = tmp_path_factory.mktemp("runs")
    for model in ("null", "oracle"):       # two tiers, one at a time, into one tiers directory
        for tier in ("core", "chained"):
            _eval(tmp, model, "--benchmark", "v2", "--tier", tier, "--limit", "4",
                  "--run-dir", str(tmp / f"{model}-v2-tiers"))
    _eval(tmp, "null", "--track", "rollout", "--limit", "3", "--episodes", "1", "--horizon", "2")
    return tmp


def _tier_parent(runs: Path, model: str, tier: str) -> Path:
    parent = runs / f"{model}-v2-tiers"
    assert (parent / tier / "config.json").is_file()
    return parent


def test_chained_tiers_compare_as_chained_and_keep_their_correct_reports(runs, tmp_path):
    null, oracle = _tier_parent(runs, "null", "chained") / "chained", _tier_parent(runs, "oracle", "chained") / "chained"
    before = (oracle / "report.md").read_text()
    result = _cli("report", str(null), str(oracle), "--out", str(tmp_path / "cmp"))
    assert result.exit_code == 0, result.output
    assert (oracle / "report.md").read_text() == before            # rebuilt by the chained rules: the same file
    assert "parse failures" not in before and "None" not in result.stdout
    oracle_row = next(line for line in result.stdout.splitlines() if line.startswith("| oracle"))
    assert "· v2/chained" in oracle_row and "| 100.0 | 100.0 | 100.0 |" in oracle_row


def test_rollout_dir_is_reported_from_its_episodes_not_as_samples(runs):
    rollout = next(p for p in runs.iterdir() if p.name.endswith("-rollout"))
    before = (rollout / "drift.md").read_text()
    result = _cli("report", str(rollout))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == before.strip() and "No sample was scored" not in result.stdout
    assert not (rollout / "report.md").exists() and not (rollout / "summary.json").exists()
    assert (rollout / "drift.md").read_text() == before


def test_tiers_directory_reports_its_tiers(runs):
    parent = _tier_parent(runs, "oracle", "core")
    result = _cli("report", str(parent))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# oracle on v2, by tier")
    assert "| core | " in result.stdout and "| chained | " in result.stdout
    assert f"wrote {parent / 'tiers.md'}" in result.stderr


def test_two_tiers_directories_compare_tier_by_tier(runs, tmp_path):
    null, oracle = _tier_parent(runs, "null", "core"), _tier_parent(runs, "oracle", "core")
    result = _cli("report", str(null), str(oracle), "--out", str(tmp_path / "cmp"))
    assert result.exit_code == 0, result.output
    assert "# tier core" in result.stdout and "# tier chained" in result.stdout
    assert (tmp_path / "cmp" / "core" / "cm_by_delta.png").exists()
    assert (tmp_path / "cmp" / "chained" / "comparison.md").exists()


def test_simulate_output_is_shown_untouched_and_unknown_dirs_are_refused(tmp_path, runs):
    sim = tmp_path / "sim"
    assert _cli("simulate", "--env", "online_store-v1", "--simulator", "oracle", "--episodes", "1", "--steps", "2",
                "--out", str(sim)).exit_code == 0
    files = {p.name: p.read_bytes() for p in sim.iterdir()}
    result = _cli("report", str(sim))
    assert result.exit_code == 0 and result.stdout.startswith("# Drift:")
    assert {p.name: p.read_bytes() for p in sim.iterdir()} == files
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = _cli("report", str(empty))
    assert refused.exit_code == 1 and "not a run directory envsim report knows" in refused.stderr
    mixed = _cli("report", str(_tier_parent(runs, "null", "core") / "core"),
                 str(_tier_parent(runs, "null", "chained") / "chained"), "--out", str(tmp_path / "cmp"))
    assert mixed.exit_code == 1 and "cannot compare runs of different kinds" in mixed.stderr


def test_legends_name_benchmark_and_tier_and_the_plot_carries_the_warning(runs, tmp_path):
    core = _tier_parent(runs, "null", "core") / "core"
    _eval(tmp_path, "oracle", "--limit", "5")
    v1 = next(p for p in tmp_path.iterdir() if p.name.startswith("oracle-v1"))
    comparison = compare_runs([core, v1], tmp_path / "cmp")
    labels = [line.split("|")[1].strip() for line in comparison.text.splitlines() if line.startswith("| null")
              or line.startswith("| oracle")]
    assert labels == [f"null ({core.name}) · v2/core", f"oracle ({v1.name}) · v1/test"]
    summaries = {label: json.loads((d / "summary.json").read_text()) for label, d in zip(labels, (core, v1))}
    figure = _cm_by_delta_figure(summaries, comparison.warnings)
    texts = [t.get_text() for t in figure.texts]
    assert any(t.startswith("Not directly comparable: different benchmark") for t in texts)
    legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert legend == labels


def _copy_run(source: Path, target: Path) -> Path:
    target.mkdir()
    for name in ("config.json", "results.jsonl"):
        (target / name).write_bytes((source / name).read_bytes())
    return target


def test_row_with_wrong_types_is_counted_invalid_not_a_crash(runs, tmp_path):
    run = _copy_run(_tier_parent(runs, "oracle", "core") / "core", tmp_path / "run")
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    rows[0] = {**rows[0], "delta_f1": "high", "fm": "yes"}
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '["not", "a", "row"]\n')
    result = _cli("report", str(run))
    assert result.exit_code == 0, result.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["scored"] == len(rows) - 1 and summary["invalid_rows"] == 2
    assert result.stdout.index("Invalid result rows: 2") < result.stdout.index("### Overall")
    assert "wrong types" in result.stderr


def test_row_whose_id_is_not_in_the_benchmark_is_ignored_with_a_warning(runs, tmp_path):
    run = _copy_run(_tier_parent(runs, "oracle", "core") / "core", tmp_path / "run")
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    stray = {**rows[0], "id": "not-a-sample", "fm": False, "cm": False}
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*rows, stray]))
    result = _cli("report", str(run))
    assert result.exit_code == 0, result.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["scored"] == len(rows) == 4 and summary["overall"]["fm"] == 1.0 and summary["ignored_rows"] == 1
    assert "1 result rows have ids that are not samples" in result.stderr and "'not-a-sample'" in result.stderr

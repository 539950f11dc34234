"""A re-run says what it reused, first and in every file; an interrupted run says what it kept (exit 130)."""

from __future__ import annotations

import json
import os

from click.testing import CliRunner

from envsim.cli import main
from envsim.evaluation.running.reuse import read_reuse


def run_null(run_dir, *extra):
    return CliRunner().invoke(main, ["eval", "--model", "null", "--limit", "5", "--run-dir", str(run_dir),
                                     "--no-progress", *extra])


def test_a_rerun_says_it_reused_every_result_before_anything_else(tmp_path):
    run = tmp_path / "run"
    first = run_null(run)
    assert first.exit_code == 0, first.output
    assert "already scored in" not in first.output and "reused from an earlier run" not in first.output
    assert "reused" not in json.loads((run / "summary.json").read_text())
    second = run_null(run)
    assert second.exit_code == 0, second.output
    lines = second.output.splitlines()
    assert lines[0].startswith(f"reusing all 5 of 5 results already scored in {run}, results last written 20")
    assert "--overwrite scores every sample again" in lines[0]
    assert "5 scored (5 reused from an earlier run of this directory" in second.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["reused"] == 5 and summary["reused_results_last_written"].endswith("UTC")
    assert "**Not scored again: 5 reused from an earlier run of this directory" in (run / "report.md").read_text()
    third = run_null(run, "--overwrite")
    assert "already scored in" not in third.output
    assert "reused" not in json.loads((run / "summary.json").read_text())


def test_a_partly_done_run_names_the_part_it_reuses(tmp_path):
    run = tmp_path / "run"
    assert run_null(run).exit_code == 0
    rows = (run / "results.jsonl").read_text().splitlines()
    (run / "results.jsonl").write_text("\n".join(rows[:3]) + "\n")
    again = run_null(run)
    assert again.exit_code == 0, again.output
    assert again.output.splitlines()[0].startswith(f"reusing 3 of 5 results already scored in {run}")
    assert json.loads((run / "summary.json").read_text())["reused"] == 3


def test_an_interrupted_run_keeps_its_results_and_exits_130(tmp_path, monkeypatch):
    run = tmp_path / "run"
    assert run_null(run).exit_code == 0
    (run / "results.jsonl").write_text((run / "results.jsonl").read_text().splitlines()[0] + "\n")

    async def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("envsim.evaluation.running.runner.run_samples", interrupted)
    result = run_null(run)
    assert result.exit_code == 130, result.output
    assert f"interrupted: 1 of 5 results are kept in {run}; run the same command again to resume" in result.output
    assert "Aborted!" not in result.output


def test_reuse_file_is_read_only_when_it_is_a_small_regular_json_object(tmp_path):
    assert read_reuse(tmp_path) is None
    (tmp_path / "reuse.json").write_text("[1, 2]")
    assert read_reuse(tmp_path) is None
    (tmp_path / "reuse.json").write_text(json.dumps({"reused": True}))
    assert read_reuse(tmp_path) is None
    (tmp_path / "reuse.json").write_text(json.dumps({"reused": 4, "pad": "x" * 70_000}))
    assert read_reuse(tmp_path) is None
    (tmp_path / "elsewhere.json").write_text(json.dumps({"reused": 4}))
    (tmp_path / "reuse.json").unlink()
    os.symlink(tmp_path / "elsewhere.json", tmp_path / "reuse.json")
    assert read_reuse(tmp_path) is None

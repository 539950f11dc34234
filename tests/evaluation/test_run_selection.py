"""Derived views of a run (``envsim report``, ``envsim view``) count exactly the samples ``envsim eval`` selected
(``--ids``, ``--limit``, both): ``RUN/selection.json``, or the same choice made again for a run without it, and a
clear refusal (nothing rewritten) when that choice cannot be made again identically (issue 55, item 1)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.evaluation.reporting.report import format_rate
from envsim.evaluation.reporting.view_data import view_data
from envsim.evaluation.running.selection import SELECTION_FILE

SHIPPED = "v1_test_smollm2_2048"
SELECTIONS = {"ids": ["--ids", SHIPPED], "limit": ["--limit", "20"], "ids-and-limit": ["--ids", SHIPPED, "--limit", "20"]}


def _eval(run_dir: Path, *selection: str) -> tuple[int, str]:
    """Run the null baseline on v1 test with ``selection``; the printed count scored and the run's CM."""
    result = CliRunner().invoke(main, ["eval", "--model", "null", "--run-dir", str(run_dir), "--no-progress",
                                       *selection])
    assert result.exit_code == 0, result.output
    scored = int(re.search(r"(\d+) scored", result.output).group(1))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["overall"]["n"] == scored
    return scored, format_rate(summary["overall"], "cm")


def _report(run_dir: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    summary = json.loads((run_dir / "summary.json").read_text())
    return summary["overall"]["n"], format_rate(summary["overall"], "cm"), result.output


def _view(run_dir: Path) -> tuple[int, str]:
    run = view_data([run_dir])["runs"][0]
    overall = next(f for f in run["figures"] if f["group"] == "overall")
    return overall["n"], overall["cm"]


@pytest.mark.parametrize("name", list(SELECTIONS))
def test_report_and_view_count_the_samples_the_run_selected(tmp_path, name):
    run_dir = tmp_path / name
    scored, cm = _eval(run_dir, *SELECTIONS[name])
    assert scored == (20 if "limit" in name else len(_shipped_ids()))
    n, report_cm, output = _report(run_dir)
    assert (n, report_cm) == (scored, cm) and "ignored" not in output
    assert _view(run_dir) == (scored, cm)
    # a run written before selection.json existed: the same samples chosen again (shipped subset, same file)
    (run_dir / SELECTION_FILE).unlink()
    assert _report(run_dir)[:2] == (scored, cm)
    assert _view(run_dir) == (scored, cm)


def _shipped_ids() -> list[str]:
    from envsim.evaluation.running.subsets import read_ids

    return read_ids(SHIPPED)


def test_an_id_list_that_cannot_be_found_again_is_refused_and_nothing_is_rewritten(tmp_path):
    ids = tmp_path / "mine.txt"
    ids.write_text("\n".join(_shipped_ids()[:30]) + "\n")
    run_dir = tmp_path / "run"
    scored, cm = _eval(run_dir, "--ids", str(ids), "--limit", "12")
    assert scored == 12 and _report(run_dir)[:2] == (12, cm)
    (run_dir / SELECTION_FILE).unlink()
    before = (run_dir / "summary.json").read_bytes()
    for command in (["report", str(run_dir)], ["view", str(run_dir), "--out", str(tmp_path / "page.html")]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 1 and "cannot be told here" in result.output, result.output
    assert (run_dir / "summary.json").read_bytes() == before and not (tmp_path / "page.html").exists()


def test_a_selection_file_that_disagrees_with_the_config_is_refused(tmp_path):
    run_dir = tmp_path / "run"
    _eval(run_dir, "--limit", "5")
    selection = json.loads((run_dir / SELECTION_FILE).read_text())
    (run_dir / SELECTION_FILE).write_text(json.dumps({**selection, "limit": 6}))
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 1 and "was written for limit 6" in result.output, result.output


def test_a_limit_cut_of_a_benchmark_file_changed_since_the_run_is_refused(tmp_path):
    bench = tmp_path / "bench.jsonl"
    lines = (Path(__file__).resolve().parents[2] / "benchmark" / "v1" / "test.jsonl").read_text().splitlines()[:40]
    bench.write_text("\n".join(lines) + "\n")
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(main, ["eval", "--model", "null", "--benchmark", str(bench), "--limit", "7",
                                       "--run-dir", str(run_dir), "--no-progress"])
    assert result.exit_code == 0, result.output
    (run_dir / SELECTION_FILE).unlink()
    assert _report(run_dir)[0] == 7                      # same file: the same 7 chosen again
    bench.write_text("\n".join(lines[:30]) + "\n")       # the file changed: a cut of it is another choice
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 1 and "is not the one the run read" in result.output, result.output

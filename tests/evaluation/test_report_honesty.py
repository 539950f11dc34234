"""Reports tell the truth loudly: empty groups read "–", unscored samples are named, runs that cannot be
compared say so, and the CM-vs-|Δ| plot shows how many samples stand behind each point."""

from __future__ import annotations

import json
import math
from pathlib import Path

from click.testing import CliRunner

from envsim.benchmark import load
from envsim.cli import main
from envsim.evaluation.reporting.report import (_cm_by_delta_figure, compare_runs, format_rate, group_stats, plot_cm_by_delta,
                                      summarize, write_reports)
from envsim.evaluation.running.runner import EvalConfig, prepare_run_dir

CONNECT = "request failed: APIConnectionError: cannot connect"
STRATUM_OF_DELTA = {0: "no_change", 1: "simple", 2: "simple", 3: "medium", 7: "difficult"}


def _scored(i: int, delta: int, ok: bool) -> dict:
    return {"id": f"s{i:04d}", "env": "online_store-v1", "domain": "retail", "stratum": STRATUM_OF_DELTA[delta],
            "delta_size": delta, "arg_count": 1, "status": "scored", "parsed": True, "fm": ok, "cm": ok,
            "cm_lenient": ok, "cm_original": ok, "delta_f1": 1.0 if ok else 0.0}


def _unscored(i: int, reason: str = CONNECT) -> dict:
    return {"id": f"u{i:04d}", "env": "online_store-v1", "stratum": "simple", "delta_size": 1, "arg_count": 1,
            "status": "infra_failure", "reason": reason}


def _run(path: Path, rows: list[dict], model: str = "m", **settings) -> Path:
    """A run directory as ``envsim eval`` leaves it: the real config.json writer, then result rows, whose
    ids become the run benchmark's sample ids in order (the report counts only samples of the benchmark)."""
    config = EvalConfig(model=model, **settings)
    prepare_run_dir(path, config)
    ids = [r["id"] for r in load(config.benchmark, config.split)]
    rows = [{**row, "id": ids[i]} for i, row in enumerate(rows)]
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _mixed(n: int) -> list[dict]:
    """``n`` scored rows over |Δ| 0..3 and 7, about half right."""
    deltas = list(STRATUM_OF_DELTA)
    return [_scored(i, deltas[i % len(deltas)], i % 2 == 0) for i in range(n)]


def test_format_rate_reads_dash_for_an_empty_group_and_na_for_a_missing_rate():
    assert format_rate(group_stats([]), "cm") == "–"
    stats = group_stats([_scored(0, 1, True), _scored(1, 1, False)])
    assert format_rate(stats, "cm") == "50.0 [0.0, 100.0]"
    assert format_rate(stats, "cm", ci=False) == "50.0"
    del stats["ci"]["cm_original"]
    assert format_rate(stats, "cm_original") == "n/a"


def test_nothing_scored_says_so_at_the_top_and_names_the_reasons(tmp_path):
    rows = [_unscored(i) for i in range(3)] + [_unscored(9, "request failed: ReadTimeout")]
    run = _run(tmp_path / "dead", rows)
    summary = write_reports(run)
    assert summary["infra_failure_reasons"] == {CONNECT: 3, "request failed: ReadTimeout": 1}
    saved = json.loads((run / "summary.json").read_text())
    assert saved["overall"]["n"] == 0 and saved["overall"]["cm"] == 0.0      # the JSON keeps numbers
    report = (run / "report.md").read_text()
    top = report.split("### Overall")[0]
    assert "**No sample was scored**" in top
    assert "Infrastructure failures: 4 of 4 samples were not scored" in top
    assert f"- 3× {CONNECT}" in top and "- 1× request failed: ReadTimeout" in top
    assert "re-run of the same command retries them" in top
    assert "parse failures –" in report and "| all | 0 | – | – | – | – | – |" in report
    assert "0.0" not in report and "### By stratum" not in report


def test_partly_unscored_run_lists_failures_above_the_tables(tmp_path):
    run = _run(tmp_path / "partial", _mixed(5) + [_unscored(0), _unscored(1)])
    write_reports(run)
    report = (run / "report.md").read_text()
    assert report.index("Infrastructure failures: 2 of 7 samples were not scored") < report.index("### Overall")
    assert f"- 2× {CONNECT}" in report and "No sample was scored" not in report


def test_all_scored_run_has_no_failure_section(tmp_path):
    run = _run(tmp_path / "clean", _mixed(5))
    write_reports(run)
    report = (run / "report.md").read_text()
    assert "Infrastructure failures" not in report and "No sample was scored" not in report
    assert json.loads((run / "summary.json").read_text())["infra_failure_reasons"] == {}


def test_infra_reasons_are_counted_most_common_first_cut_and_capped():
    rows = [_unscored(100 * k + j, f"reason {k:02d} " + "x" * 300) for k in range(12) for j in range(k + 1)]
    reasons = summarize(rows, {"model": "m"})["infra_failure_reasons"]
    assert len(reasons) == 10 and all(len(reason) == 200 for reason in reasons)
    assert list(reasons.values()) == list(range(12, 2, -1))


def test_comparison_shows_dash_for_a_run_that_scored_nothing_and_drops_empty_strata(tmp_path):
    dead = _run(tmp_path / "dead", [_unscored(i) for i in range(5)], model="dead")
    alive = _run(tmp_path / "alive", _mixed(5), model="alive")
    comparison = compare_runs([dead, alive], tmp_path / "cmp")
    text = (tmp_path / "cmp" / "comparison.md").read_text()
    assert text == comparison.text
    assert "0.0 [0.0, 0.0]" not in text
    dead_row = next(line for line in text.splitlines() if line.startswith("| dead (dead)"))
    assert dead_row.endswith("| – | – |") and "0 (+5 unscored)" in dead_row
    header = next(line for line in text.splitlines() if line.startswith("| run |"))
    assert "extreme" not in header and "failure CM" not in header      # no run has such samples
    assert "no_change CM %" in header and "difficult CM %" in header
    assert comparison.written == [tmp_path / "cmp" / "comparison.md", tmp_path / "cmp" / "cm_by_delta.png"]


def test_a_3_sample_run_next_to_a_400_sample_run_is_flagged(tmp_path):
    small = _run(tmp_path / "small", _mixed(3), model="a")
    large = _run(tmp_path / "large", _mixed(400), model="b")
    comparison = compare_runs([small, large])
    assert len(comparison.warnings) == 1
    assert comparison.warnings[0].startswith(
        "different numbers of scored samples: 3 in a (small) · v1/test; 400 in b (large) · v1/test")
    assert "> **Not directly comparable:**" in comparison.text
    assert comparison.text.index("| b (large) · v1/test |") < comparison.text.index("Not directly comparable")


def test_different_benchmarks_are_flagged_once_and_like_runs_not_at_all(tmp_path):
    v1 = _run(tmp_path / "v1", _mixed(5), benchmark="v1", benchmark_sha256="a" * 64)
    v2 = _run(tmp_path / "v2", _mixed(5), benchmark="v2", benchmark_sha256="b" * 64)
    twin = _run(tmp_path / "twin", _mixed(5), benchmark="v1", benchmark_sha256="a" * 64)
    edited = _run(tmp_path / "edited", _mixed(5), benchmark="v1", benchmark_sha256="c" * 64)
    assert compare_runs([v1, v2]).warnings == ["different benchmark: v1 in m (v1) · v1/test; v2 in m (v2) · v2/test"]
    alike = compare_runs([v1, twin])
    assert alike.warnings == [] and "Not directly comparable" not in alike.text
    assert compare_runs([v1, edited]).warnings == [
        f"different benchmark file sha256: {'a' * 12} in m (v1) · v1/test; {'c' * 12} in m (edited) · v1/test"]


def test_prompt_and_limit_differences_are_flagged(tmp_path):
    a = _run(tmp_path / "a", _mixed(5), prompt_mode="mdp")
    b = _run(tmp_path / "b", _mixed(5), prompt_mode="pomdp", limit=5)
    warnings = compare_runs([a, b]).warnings
    assert "different prompt mode: mdp in m (a) · v1/test; pomdp in m (b) · v1/test" in warnings
    assert "different --limit: not set in m (a) · v1/test; 5 in m (b) · v1/test" in warnings


def test_report_cli_prints_the_comparison_warnings_and_written_paths(tmp_path):
    v1 = _run(tmp_path / "v1", _mixed(3), model="a", benchmark="v1")
    v2 = _run(tmp_path / "v2", _mixed(40), model="b", benchmark="v2")
    out = tmp_path / "cmp"
    result = CliRunner().invoke(main, ["report", str(v1), str(v2), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("## Runs side by side")
    assert "warning: different benchmark: v1 in a (v1) · v1/test; v2 in b (v2) · v2/test" in result.stderr
    assert "warning: different numbers of scored samples: 3 in a (v1) · v1/test; 40 in b (v2) · v2/test" in result.stderr
    for run in (v1, v2):
        for name in ("summary.json", "report.md", "cm_by_delta.png"):
            assert f"wrote {run / name}" in result.stderr and (run / name).exists()
    for name in ("comparison.md", "cm_by_delta.png"):
        assert f"wrote {out / name}" in result.stderr and (out / name).exists()


def test_report_cli_on_one_run_prints_the_report_then_its_files(tmp_path):
    run = _run(tmp_path / "one", [_unscored(0)])
    result = CliRunner().invoke(main, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# EnvSim evaluation: m") and "**No sample was scored**" in result.stdout
    assert result.stderr.splitlines() == [f"wrote {run / name}" for name in
                                          ("summary.json", "report.md", "cm_by_delta.png")]


def _count_labels(ax, color) -> list[str]:
    """The sample counts written under the axis in one run's colour (the row header "n" left out)."""
    return [t.get_text() for t in ax.texts if t.get_color() == color and t.get_text() != "n"]


def test_plot_shows_each_points_n_and_leaves_empty_groups_out(tmp_path):
    rows = [_scored(i, 0, True) for i in range(4)] + [_scored(10 + i, 3, i == 0) for i in range(2)] \
        + [_scored(20, 7, False)]
    summary = summarize(rows, {"model": "m"})
    summary["by_delta"]["5"] = group_stats([])                      # an empty group: not a point at 0%
    fig = _cm_by_delta_figure({"m": summary})
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "3", "7"]
    line = ax.containers[0].lines[0]
    assert list(line.get_ydata()) == [100.0, 50.0, 0.0]
    assert _count_labels(ax, line.get_color()) == ["4", "2", "1"]
    path = tmp_path / "cm.png"
    plot_cm_by_delta({"m": summary}, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_of_several_runs_dodges_points_with_distinct_markers_and_counts():
    one = summarize([_scored(i, 0, True) for i in range(3)] + [_scored(9, 1, False)], {"model": "a"})
    two = summarize([_scored(i, 0, False) for i in range(5)] + [_scored(7, 3, True), _scored(8, 3, True)],
                    {"model": "b"})
    dead = summarize([_unscored(0)], {"model": "c"})
    ax = _cm_by_delta_figure({"a": one, "b": two, "c": dead}).axes[0]
    first, second = (c.lines[0] for c in ax.containers)
    assert first.get_marker() != second.get_marker()
    assert first.get_xdata()[0] != second.get_xdata()[0]              # same |Δ| 0, side by side
    assert _count_labels(ax, first.get_color()) == ["3", "1"]
    assert _count_labels(ax, second.get_color()) == ["5", "2"]
    (joining,) = [line for line in ax.get_lines() if line.get_color() == second.get_color()
                  and line.get_linestyle() == "-"]
    assert math.isnan(joining.get_ydata()[1])                       # b has no |Δ| 1: no line through it
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["a", "b", "c (no sample scored)"]

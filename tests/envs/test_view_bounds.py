"""Trust round three (issue 45), attacks 1 and 2: the view analysis (``--prompt-mode mdp-view``) is bounded by work,
memory and wall time per record, folds never build huge values, and tool code is size-checked before parsing.

Each attack is the outside audit's, scaled down so that the original code needed minutes or gigabytes and the
bounded one ends in seconds (``benchmarks/view_attacks.py`` runs the full-size ones and prints the figures)."""

from __future__ import annotations

import ast
import json
import subprocess
import textwrap
import time
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.benchmark import BENCHMARK_DIR
from envsim.cli import main
from tests.child_peak import measured_command, own_peak_kb
from envsim.envs.views import analysis, compute_view, values
from envsim.envs.views.analysis import MAX_TOOL_SOURCE_CHARS, ToolCodeUnreadable, parse_tool_source
from envsim.evaluation.prompting.prompts import view_problem

ROOT = Path(__file__).resolve().parents[2]


def loop_reads(records: int, statements: int) -> tuple[dict, str]:
    """The audit's hang: a dict of ``records`` records and ``statements`` reads of a loop variable (each read costs
    one path per record): 20,000 x 300 x 2 passes is 12 M path visits, ~50 s before the work budget."""
    state = {"d": {f"k{i}": {"a": i, "b": "x"} for i in range(records)}}
    code = "def f(self):\n    for x in self.d.values():\n" + "        y = x['a']\n" * statements + "    return 1\n"
    return state, code


def test_reads_of_a_loop_variable_over_many_records_stop_at_the_work_budget_and_widen():
    """In its own process, so its wall time and peak memory are its own (the Must-show bound: 60 s, 1 GB)."""
    script = textwrap.dedent("""
        import json
        from envsim.envs.views import compute_view
        from tests.envs.test_view_bounds import loop_reads
        state, code = loop_reads(20_000, 300)
        view = compute_view(state, "f", {}, code)
        print(json.dumps({"widened": view.widened, "whole": view.state == state}))
    """)
    started = time.monotonic()
    child = subprocess.Popen(measured_command(["-c", script]), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=ROOT)
    out, err = child.communicate()
    elapsed = time.monotonic() - started
    err, peak = own_peak_kb(err)
    assert child.returncode == 0, (out, err[-2000:])
    result = json.loads(out.strip().splitlines()[-1])
    assert result["widened"] == [f"analysis work budget ({values.MAX_WORK:,} units: state paths visited or held) "
                                 "spent: whole state"]
    assert result["whole"]  # widened as the view contract says: the whole state, never less
    assert elapsed < 60, f"{elapsed:.1f} s"
    assert peak is not None and peak < 1 << 20, f"peak {peak} KiB"  # its own VmHWM, not pytest's size


def test_the_work_budget_counts_path_visits_not_statements(monkeypatch):
    """Few statements, many paths: the statement budget alone (MAX_STEPS) would never stop this."""
    monkeypatch.setattr(values, "MAX_WORK", 5_000)
    state, code = loop_reads(2_000, 5)
    analyser = analysis.ReadAnalyzer(state, code)
    needs = analyser.analyse("f", {})
    assert analyser.steps < values.MAX_STEPS
    assert any("work budget (5,000 units" in w for w in needs.widened) and needs.full == {()}
    assert analyser.work.spent <= 5_000 + 2_001  # stopped within one charge of the limit


def test_a_real_view_is_far_inside_the_budget():
    record = json.loads((BENCHMARK_DIR / "v2" / "long_state.jsonl").open(encoding="utf-8").readline())
    analyser = analysis.ReadAnalyzer(record["state"], record["code"])
    needs = analyser.analyse(record["action"]["name"], record["action"].get("arguments") or {})
    assert not needs.widened and analyser.work.spent < values.MAX_WORK // 30


def test_the_wall_clock_backstop_widens_with_its_own_note(monkeypatch):
    monkeypatch.setattr(values, "MAX_ANALYSIS_SECONDS", 0.0)
    state, code = loop_reads(5_000, 20)
    view = compute_view(state, "f", {}, code)
    assert view.widened == ["analysis time limit (0 s) spent: whole state"] and view.state == state


#: Folds that grew without bound (``s = s + s`` grew 18 MB/s to 11.1 GB in the audit) or allocate a gigabyte at
#: once; each must stay an unknown value instead.
TUPLE = "(" + ",".join(str(i) for i in range(20_000)) + ")"
FOLD_BOMBS = {
    "doubling": "    s = str(T)\n" + "    s = s + s\n" * 40,
    "repeat": "    s = 'a' * 10**9\n",
    "repeat twice": "    s = 'a' * 100000\n    s = s * 100000\n",
    "power": "    n = 10**63\n" + "    n = n ** 63\n" * 6,
    "f-string width": "    s = f'{1:>999999999}'\n",
    "%-format width": "    s = '%999999999d' % 1\n",
    "%-format star": "    s = '%*d' % (999999999, 1)\n",
    "str.format width": "    s = '{:>999999999}'.format(1)\n",
    "replace empty": "    s = str(T)\n    s = s.replace('', str(T))\n",
    "join": "    s = str(T)\n    s = s.join([str(T), str(T), str(T)])\n",
    "round": "    s = round(5, -10**8)\n",
}


@pytest.mark.parametrize("name", sorted(FOLD_BOMBS))
def test_pure_folds_never_build_huge_values(name):
    state = {"d": {"k": {"a": 1}}, "s": {}}
    code = f"T = {TUPLE}\n\ndef f(self):\n{FOLD_BOMBS[name]}    return self.d\n"
    tracemalloc.start()
    try:
        started = time.monotonic()
        view = compute_view(state, "f", {}, code)
        elapsed = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert view.state["d"] == state["d"]
    assert peak < 64 * 2**20, f"{name}: peak {peak / 2**20:.0f} MiB"
    assert elapsed < 30, f"{name}: {elapsed:.1f} s"


def test_folds_within_the_bound_still_fold():
    state = {"orders": {"#W12": {"status": "x"}, "#W99": {"status": "y"}}}
    code = ("def get(self, n):\n    key = '#W' + str(n * 4)\n    key2 = f'{key:>4}'.strip()\n"
            "    return self.orders[key2]\n")
    view = compute_view(state, "get", {"n": 3}, code)
    assert view.state == {"orders": {"#W12": {"status": "x"}}} and not view.widened


def test_code_longer_than_the_limit_is_refused_before_parsing(monkeypatch):
    parsed: list[int] = []
    real_parse = ast.parse
    monkeypatch.setattr(analysis.ast, "parse", lambda source, *a, **k: parsed.append(len(source)) or real_parse(
        source, *a, **k))
    code = "x = [" + "1," * (MAX_TOOL_SOURCE_CHARS // 2) + "]\n"
    with pytest.raises(ToolCodeUnreadable, match=f"over the {MAX_TOOL_SOURCE_CHARS:,}-character limit"):
        parse_tool_source(code)
    assert parsed == []
    assert "over the 262,144-character limit" in view_problem({"code": code})
    parse_tool_source("def f(self):\n    return 1\n")
    assert parsed == [len("def f(self):\n    return 1\n")]


def test_oversized_code_is_a_bad_record_named_at_its_line_under_mdp_view(tmp_path):
    """The audit's 12 MB ``code`` peaked at 5.9 GB while parsed; scaled to 1 MB it is refused unparsed."""
    rows = [json.loads(line) for line in (BENCHMARK_DIR / "v1" / "test.jsonl").open(encoding="utf-8").readlines()[:3]]
    rows[1]["code"] = "x = [" + "1," * 500_000 + "]\n"
    path = tmp_path / "big_code.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tracemalloc.start()
    try:
        result = CliRunner().invoke(main, ["eval", "--model", "null", "--benchmark", str(path), "--prompt-mode",
                                           "mdp-view", "--no-progress", "--runs-root", str(tmp_path / "runs")])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.exit_code == 1, result.output
    assert f"{path}:2: field 'code' cannot be analysed for --prompt-mode mdp-view" in result.output
    assert "1,000,007 characters, over the 262,144-character limit" in result.output
    assert not (tmp_path / "runs").exists()
    assert peak < 200 * 2**20, f"peak {peak / 2**20:.0f} MiB"


def test_a_chained_step_whose_code_cannot_be_analysed_is_named_at_its_line_under_mdp_view(tmp_path):
    from envsim.construction.chained import load_episodes

    lines = (BENCHMARK_DIR / "v2" / "chained.jsonl").open(encoding="utf-8").readlines()[:2]
    episode = json.loads(lines[1])
    episode["steps"][1]["code"] = "x = [" + "1," * 200_000 + "]\n"
    path = tmp_path / "chained_x.jsonl"
    path.write_text(lines[0] + json.dumps(episode) + "\n")
    assert len(load_episodes(str(path))) == 2  # mdp shows the code as text: nothing to analyse
    with pytest.raises(ValueError, match=rf"^{path}:2: steps\[1\]: field 'code' cannot be analysed for "
                                         r"--prompt-mode mdp-view \(400,007 characters, over the 262,144"):
        load_episodes(str(path), check=view_problem)
    episode["steps"][1]["code"] = "def f(self):\n    return 1\n"
    episode["tools"] = [1]
    path.write_text(lines[0] + json.dumps(episode) + "\n")
    with pytest.raises(ValueError, match=rf"^{path}:2: field 'tools' item 0 must be a tool schema object"):
        load_episodes(str(path))
    path.write_text(lines[0] + "[" * 5_000 + "]" * 5_000 + "\n")  # past the decoder's depth: named, never a crash
    with pytest.raises(ValueError, match=rf"^{path}:2: not a JSON line"):
        load_episodes(str(path))

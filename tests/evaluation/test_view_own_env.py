"""``envsim view`` and ``envsim report`` on a run over your own environment (issue 43 item 3): with the ``--env-module``
the run was scored with, the page shows the expected answers and calls and the oracle's answers as equal; without
it, the warning is printed whole, naming the flag, and the page marks nothing as a difference."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.envs.sandbox import env_refusal, forget_trusted
from envsim.evaluation.reporting.view_values import page_samples
from tests.evaluation.chromium import render

MODULE = "tests.fixtures.foreign_envs"
ENV = f"{MODULE}:TicketDesk"


def _cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def own_run(tmp_path_factory) -> Path:
    """An oracle run over a pool built from a user's own environment class (the ticket desk fixture)."""
    tmp = tmp_path_factory.mktemp("own-env")
    bench, run = tmp / "desk.jsonl", tmp / "run"
    built = _cli("construct", "--split", "test", "--env", ENV, "--pool", "12", "--episodes", "2", "--steps", "10",
                 "--out", str(bench))
    assert built.exit_code == 0, built.output
    scored = _cli("eval", "--env-module", MODULE, "--benchmark", str(bench), "--model", "oracle", "--run-dir", str(run),
                  "--no-progress")
    assert scored.exit_code == 0, scored.output
    forget_trusted()  # the commands that follow are new ones: nothing trusted until they say so
    return run


def _page(run: Path, out: Path, *extra: str) -> tuple[list[dict], str]:
    result = _cli("view", str(run), "--out", str(out), *extra)
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="envsim-data">(.*?)</script>', text, re.S)
    data = json.loads(found.group(1))
    return page_samples(data["runs"][0]), result.output


def test_view_with_env_module_shows_expected_answers(own_run, tmp_path):
    samples, output = _page(own_run, tmp_path / "page.html", "--env-module", MODULE)
    bench = Path(json.loads((own_run / "config.json").read_text())["benchmark"])
    records = {record["id"]: record for record in map(json.loads, bench.read_text().splitlines())}
    assert "warning" not in output and len(samples) == len(records) > 0
    for sample in samples:
        record = records[sample["id"]]
        assert sample["observation"] == [{"v": record["observation"]}] * 2 and sample["call"] == {"v": record["action"]}
        assert sample["patch"][0] == {"v": record["patch"]} and not sample.get("expected_missing")
        assert all(row[1] == "same" for row in sample["changes"]["rows"])     # the oracle's changes are the truth's
        assert "[system]" in sample["prompt"]
    assert any(sample["changes"]["rows"] for sample in samples)


def test_view_without_env_module_says_so_whole_and_marks_nothing(own_run, tmp_path):
    samples, output = _page(own_run, tmp_path / "page.html")
    (warning,) = [line for line in output.splitlines() if line.startswith("warning:")]
    assert env_refusal(ENV) in warning and warning.endswith("expected answers, calls and prompts are not shown")
    assert f"--env-module {MODULE}" in warning
    for sample in samples:
        assert sample["expected_missing"] and sample["observation"][0] is None and sample["call"] is None
        assert sample["observation"][1] is not None and sample["changes"] is None


def test_report_takes_the_env_module(own_run):
    """The run's rows are checked against the ids eval recorded (RUN/selection.json), so the report needs neither
    the benchmark nor its environment's module: the same figures with and without --env-module, no warning."""
    assert (own_run / "selection.json").exists()
    outputs = []
    for extra in ((), ("--env-module", MODULE)):
        result = _cli("report", str(own_run), *extra)
        assert result.exit_code == 0 and "warning" not in result.output
        outputs.append(json.loads((own_run / "summary.json").read_text())["overall"])
    assert outputs[0] == outputs[1]


@pytest.mark.slow
def test_chromium_marks_no_oracle_answer_as_a_difference(own_run, tmp_path):
    marked = re.compile(r'class="(d-changed|d-left|d-right|c-differs|c-missed|c-spurious)"')
    for extra, name in (((), "without"), (("--env-module", MODULE), "with")):
        page = tmp_path / f"{name}.html"
        samples, _ = _page(own_run, page, *extra)
        dom, console = render(page, tmp_path)
        assert console == [] and f'data-rendered="{len(samples)}"' in dom
        assert not marked.search(dom), name
        assert ("<th>observation: expected (not available)</th>" in dom) == (name == "without")

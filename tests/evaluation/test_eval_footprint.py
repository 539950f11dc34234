"""What ``envsim eval`` does not pay for: heavy libraries a run does not use are not imported, and the reports
of a finished run do not read the benchmark a second time. Figures (CPU, peak memory) live in
``benchmarks/eval_overhead.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envsim.benchmark import load
from envsim.evaluation.reporting.report import write_reports
from envsim.evaluation.running.runner import EvalConfig, prepare_run_dir


def _imported_after(code: str) -> set[str]:
    """Top-level module names imported by ``code`` in a fresh interpreter."""
    probe = f"import sys\n{code}\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(out.split("\n")[-2].split())


def test_loading_and_scoring_import_neither_deepdiff_nor_plotting_nor_http_client():
    code = ("from envsim.benchmark import load\nfrom envsim.evaluation.running.runner import run_samples\n"
            "from envsim.evaluation.scoring.parsing import parse_answer\nfrom envsim.evaluation.scoring.scoring import score_prediction\n"
            "r = load('v1', 'test')[0]\n"
            "s = score_prediction(r, parse_answer('{\"observation\": 1, \"patch\": []}'))\nassert not s.fm")
    imported = _imported_after(code)
    assert not imported & {"deepdiff", "pandas", "pyarrow", "matplotlib", "openai"}


def test_a_wrong_patch_still_gets_its_delta_diagnostics():
    record = next(r for r in load("v1", "test") if r["delta_size"] >= 2)
    from envsim.evaluation.scoring.parsing import parse_answer
    from envsim.evaluation.scoring.scoring import score_prediction

    one_op = json.dumps({"observation": record["observation"], "patch": record["patch"][:1]})
    score = score_prediction(record, parse_answer(one_op))  # not CM: the predicted Δ is diffed (deepdiff, on use)
    assert not score.cm and score.delta_precision == 1.0 and 0 < score.delta_recall < 1


def _run_dir(path: Path, n: int) -> tuple[Path, list[str]]:
    config = EvalConfig(model="m", limit=n)
    prepare_run_dir(path, config)
    records = load(config.benchmark, config.split)
    ids = [records[i * len(records) // n]["id"] for i in range(n)]  # the --limit cut
    rows = [{"id": i, "env": "online_store-v1", "domain": "commerce", "stratum": "simple", "delta_size": 1,
             "arg_count": 1, "status": "scored", "parsed": True, "fm": k % 2 == 0, "cm": True, "cm_lenient": True,
             "cm_original": True, "delta_f1": 1.0} for k, i in enumerate(ids)]
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, ids


def test_reports_given_the_sample_ids_match_and_do_not_reload_the_benchmark(tmp_path, monkeypatch):
    run, ids = _run_dir(tmp_path / "run", 20)
    expected = write_reports(run)  # ids read from the benchmark named in config.json
    import envsim.benchmark

    monkeypatch.setattr(envsim.benchmark, "load", lambda *a, **k: pytest.fail("benchmark read again"))
    assert write_reports(run, ids) == expected
    assert json.loads((run / "summary.json").read_text())["overall"]["n"] == 20
    other = write_reports(run, ids[:10])  # rows of other samples are ignored, as with any other benchmark
    assert other["overall"]["n"] == 10 and other["ignored_rows"] == 10

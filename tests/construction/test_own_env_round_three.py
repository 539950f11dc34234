"""Environments written in styles no earlier fixture had (issue 53, item 7): a wrapper that looks each tool up by
name, a pydantic toolkit returning models with a third-party logger, a SQLite-backed service. Each test split,
constructed from scratch, is answered by the executor baseline from its mdp-view prompts at FM and CM of 95% or
more; every record shows the tool's own code; no miss is the sandbox's."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from envsim.cli import main

FIXTURES = [("tests.fixtures.ledger.wrapper:LedgerEnv", "ledger", []),
            ("tests.fixtures.hotel.wrapper:HotelEnv", "hotel", ["loguru", "pydantic"]),
            ("tests.fixtures.clinic.wrapper:ClinicEnv", "clinic", ["sqlite3"]),
            ("tests.fixtures.ledger.registry:RegistryLedgerEnv", "registry", [])]


def _run(args):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.slow
@pytest.mark.parametrize(("target", "name", "packages"), FIXTURES)
def test_the_executor_answers_view_prompts_of_code_nobody_here_wrote(tmp_path, target, name, packages):
    test = tmp_path / f"{name}_test.jsonl"
    _run(["construct", "--split", "test", "--env", target, "--pool", "40", "--episodes", "4", "--steps", "20",
          "--no-progress", "--out", str(test)])
    records = [json.loads(line) for line in test.read_text().splitlines() if line.strip()]
    assert len(records) == 40 and all(f"def {r['tool']}(" in r["code"] for r in records)
    assert sum(r["outcome"] == "change" for r in records) >= 10
    run_dir = tmp_path / "run"
    _run(["eval", "--model", "executor", "--benchmark", str(test), "--prompt-mode", "mdp-view", "--env-module",
          target.split(":")[0], "--run-dir", str(run_dir), "--no-progress"])
    summary = json.loads((run_dir / "summary.json").read_text())
    config = json.loads((run_dir / "config.json").read_text())
    assert set(packages) <= set(config["sandbox_packages"])
    assert summary["overall"]["n"] == 40 and summary["infra_failures"] == 0, summary.get("infra_failure_reasons")
    assert summary["overall"]["fm"] >= 0.95 and summary["overall"]["cm"] >= 0.95, summary["executor_misses"]
    misses = json.loads((run_dir / "executor_misses.json").read_text())["misses"]
    assert all(m["cause"] and m["cause"] not in ("sandbox_import", "sandbox_refusal") for m in misses)

"""``envsim eval`` against a real local OpenAI-compatible HTTP server (no mocked client)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.evaluation.baselines.fake_server import FakeOpenAIServer
from envsim.evaluation.running.runner import RetryPolicy

CHANGE_STRATA = ("simple", "medium", "difficult")


def _eval(tmp_path: Path, benchmark: Path, model: str, base_url: str | None, *extra: str, expect: int = 0) -> dict:
    run_dir = tmp_path / f"run-{model}"
    args = ["eval", "--model", model, "--benchmark", str(benchmark), "--run-dir", str(run_dir), *extra]
    if base_url:
        args += ["--base-url", base_url]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == expect, result.output
    return json.loads((run_dir / "summary.json").read_text())


def _results(tmp_path: Path, model: str) -> list[dict]:
    return [json.loads(l) for l in (tmp_path / f"run-{model}" / "results.jsonl").read_text().splitlines()]


def test_oracle_over_http_scores_100_everywhere(tmp_path, small_benchmark, small_records):
    with FakeOpenAIServer(small_records) as server:
        summary = _eval(tmp_path, small_benchmark, "oracle", server.base_url)
    assert summary["infra_failures"] == 0 and summary["scored"] == len(small_records)
    for name, group in {"overall": summary["overall"], **summary["by_stratum"]}.items():
        if group["n"]:
            assert group["fm"] == 1.0 and group["cm"] == 1.0 and group["cm_lenient"] == 1.0, name
    assert summary["tokens"]["prompt_mean"] > 0
    run_dir = tmp_path / "run-oracle"
    assert (run_dir / "report.md").read_text().startswith("# EnvSim evaluation: oracle")
    assert (run_dir / "cm_by_delta.png").read_bytes()[:4] == b"\x89PNG"
    config = json.loads((run_dir / "config.json").read_text())
    assert config["base_url"] == server.base_url and len(config["config_hash"]) == 16


def test_null_over_http(tmp_path, small_benchmark, small_records):
    with FakeOpenAIServer(small_records) as server:
        summary = _eval(tmp_path, small_benchmark, "null", server.base_url)
    assert summary["by_stratum"]["failure"]["cm"] == 1.0
    assert summary["by_stratum"]["no_change"]["cm"] == 1.0
    for stratum in CHANGE_STRATA:
        assert summary["by_stratum"][stratum]["cm"] == 0.0
    assert set(summary["by_stratum"]) == {"failure", "no_change", "simple", "medium", "difficult", "extreme"}
    assert all(k.isdigit() for k in summary["by_delta"])


@pytest.mark.parametrize("model", ["malformed", "truncated"])
def test_unparseable_answers_are_scored_wrong_not_dropped(tmp_path, small_benchmark, small_records, model):
    with FakeOpenAIServer(small_records) as server:
        summary = _eval(tmp_path, small_benchmark, model, server.base_url)
    overall = summary["overall"]
    assert overall["n"] == len(small_records)            # still in the denominator
    assert overall["parse_failure_rate"] == 1.0 and overall["cm"] == 0.0 and overall["fm"] == 0.0
    assert summary["infra_failures"] == 0
    assert all(r["reason"] for r in _results(tmp_path, model))


def test_timeouts_are_infrastructure_failures(tmp_path, small_benchmark, small_records):
    with FakeOpenAIServer(small_records[:4], slow_seconds=3) as server:
        bench = tmp_path / "four.jsonl"
        bench.write_text("".join(json.dumps(r) + "\n" for r in small_records[:4]))
        summary = _eval(tmp_path, bench, "slow", server.base_url, "--timeout", "0.5", "--max-retries", "1",
                        "--no-preflight", expect=3)
    assert summary["infra_failures"] == 4 and summary["scored"] == 0
    rows = _results(tmp_path, "slow")
    assert {r["status"] for r in rows} == {"infra_failure"} and all(r["attempts"] == 2 for r in rows)
    assert all(r["reason"].startswith("timeout") for r in rows)


def test_429_and_500_are_retried(tmp_path, small_benchmark, small_records, monkeypatch):
    # the backoff itself is RetryPolicy.delay's (test_backoff_doubles_per_retry_with_jitter_up_to_its_cap); here only that retries happen
    monkeypatch.setattr(RetryPolicy, "delay", lambda self, attempt: 0.01)
    with FakeOpenAIServer(small_records) as server:
        summary = _eval(tmp_path, small_benchmark, "flaky", server.base_url, "--max-retries", "3")
    assert summary["infra_failures"] == 0 and summary["overall"]["cm"] == 1.0
    assert {r["attempts"] for r in _results(tmp_path, "flaky")} == {3}


def test_backoff_doubles_per_retry_with_jitter_up_to_its_cap():
    policy = RetryPolicy(backoff_base=0.5, backoff_max=3.0)
    for attempt, full in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (9, 3.0)]:
        waits = [policy.delay(attempt) for _ in range(200)]
        assert all(full / 2 <= w <= full for w in waits), (attempt, min(waits), max(waits))
        assert max(waits) - min(waits) > full / 10  # jittered, not one fixed wait


@pytest.mark.parametrize("model", ["down", "nochoices"])
def test_persistent_server_errors_end_as_counted_infra_failures(tmp_path, small_benchmark, small_records, model):
    with FakeOpenAIServer(small_records) as server:
        summary = _eval(tmp_path, small_benchmark, model, server.base_url, "--max-retries", "1", "--no-preflight",
                        expect=3)
    assert summary["infra_failures"] == len(small_records) and summary["scored"] == 0
    assert summary["overall"]["n"] == 0


def test_unreachable_endpoint_is_an_infra_failure(tmp_path, small_benchmark):
    summary = _eval(tmp_path, small_benchmark, "any", "http://127.0.0.1:9/v1", "--max-retries", "0",
                    "--limit", "3", "--no-preflight", expect=3)
    assert summary["infra_failures"] == 3


def test_changed_settings_refuse_to_resume(tmp_path, small_benchmark):
    runner = CliRunner()
    run_dir = tmp_path / "run"
    base = ["eval", "--model", "null", "--benchmark", str(small_benchmark), "--run-dir", str(run_dir)]
    assert runner.invoke(main, base).exit_code == 0
    changed = runner.invoke(main, [*base, "--prompt-mode", "full-class"])
    assert changed.exit_code != 0 and "other settings (prompt_mode)" in changed.output
    assert runner.invoke(main, [*base, "--prompt-mode", "full-class", "--overwrite"]).exit_code == 0


def _strip(summary: dict) -> dict:
    drop = {"tokens", "latency_s"}
    return {k: v for k, v in summary.items() if k not in drop}


@pytest.mark.slow
def test_killed_run_resumes_only_missing_samples(tmp_path, small_benchmark, small_records):
    with FakeOpenAIServer(small_records, latency=0.15) as server:
        reference = _eval(tmp_path, small_benchmark, "oracle", server.base_url)
        run_dir = tmp_path / "killed"
        cmd = [sys.executable, "-m", "envsim.cli.main", "eval", "--model", "oracle", "--base-url", server.base_url,
               "--benchmark", str(small_benchmark), "--run-dir", str(run_dir), "--concurrency", "2"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        results = run_dir / "results.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if results.exists() and len(results.read_text().splitlines()) >= 6:
                break
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        first = [json.loads(l) for l in results.read_text().splitlines() if l.strip()]
        assert 6 <= len(first) < len(small_records)
        server.calls.clear()
        result = CliRunner().invoke(main, cmd[3:], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        finished_before = {r["id"] for r in first}
        requested = {server.by_prompt[p]["id"] for p in server.calls if p in server.by_prompt}  # not the preflight
        assert requested.isdisjoint(finished_before)               # nothing recomputed
        assert requested | finished_before == {r["id"] for r in small_records}
    rows = [json.loads(l) for l in results.read_text().splitlines()]
    assert len(rows) == len(small_records) and len({r["id"] for r in rows}) == len(small_records)
    resumed = json.loads((run_dir / "summary.json").read_text())
    assert resumed.pop("reused") == len(first) and resumed.pop("reused_results_last_written").endswith(" UTC")
    assert _strip(resumed) == _strip(reference)

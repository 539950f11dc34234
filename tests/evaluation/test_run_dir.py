"""Issue 14: run directories survive torn writes, refuse a second process, and summarise deterministically."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from envsim.cli import main
from envsim.evaluation.endpoints.providers import NullProvider
from envsim.evaluation.reporting.report import summarize
from envsim.evaluation.running.runner import (EvalConfig, lock_run_dir, prepare_run_dir, read_results, repair_results,
                                      run_samples)


def _bench(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _eval_args(bench: Path, run_dir: Path, *extra: str) -> list[str]:
    return ["eval", "--model", "null", "--benchmark", str(bench), "--run-dir", str(run_dir), *extra]


def test_torn_last_line_is_cut_before_appending(tmp_path, small_records):
    bench, run_dir = _bench(tmp_path, small_records), tmp_path / "run"
    runner = CliRunner()
    assert runner.invoke(main, _eval_args(bench, run_dir, "--limit", "10")).exit_code == 0
    results = run_dir / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    # a kill between write and newline: the last row is half written
    results.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    result = runner.invoke(main, _eval_args(bench, run_dir, "--limit", "10"))
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in results.read_text().splitlines()]  # every line whole JSON
    assert len(rows) == 10 and len({r["id"] for r in rows}) == 10
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["scored"] == 10


def test_repair_results_cuts_only_a_fragment(tmp_path):
    path = tmp_path / "results.jsonl"
    assert repair_results(path) == 0
    path.write_bytes(b'{"id": "a"}\n{"id": "b"}\n')
    assert repair_results(path) == 0 and path.read_bytes() == b'{"id": "a"}\n{"id": "b"}\n'
    path.write_bytes(b'{"id": "a"}\n{"id": "b", "st')
    assert repair_results(path) == len(b'{"id": "b", "st') and path.read_bytes() == b'{"id": "a"}\n'
    path.write_bytes(b"x" * 200_000)  # no newline at all
    assert repair_results(path) == 200_000 and path.read_bytes() == b""


HOLD = """
import sys, time
from pathlib import Path
from envsim.evaluation.running.runner import lock_run_dir
with lock_run_dir(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.readline()
"""


def test_second_process_on_a_run_dir_gets_a_clear_message(tmp_path, small_records):
    bench, run_dir = _bench(tmp_path, small_records[:4]), tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        result = CliRunner().invoke(main, _eval_args(bench, run_dir))
        assert result.exit_code == 1
        assert f"in use by another envsim eval (pid {holder.pid})" in result.output
        assert "Traceback" not in result.output and not (run_dir / "results.jsonl").exists()
        assert not (run_dir / "config.json").exists()
    finally:
        holder.communicate("\n", timeout=30)
    result = CliRunner().invoke(main, _eval_args(bench, run_dir))  # released when the holder ended
    assert result.exit_code == 0, result.output
    assert len((run_dir / "results.jsonl").read_text().splitlines()) == 4


def test_two_evals_started_together_never_both_run(tmp_path, small_records):
    bench, run_dir = _bench(tmp_path, small_records), tmp_path / "run"
    base = [sys.executable, "-m", "envsim.cli.main", *_eval_args(bench, run_dir)]
    procs = [subprocess.Popen(base + extra, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for extra in (["--max-tokens", "100"], ["--max-tokens", "200"])]
    outcomes = [(p.wait(timeout=120), p.stdout.read()) for p in procs]
    winners = [out for rc, out in outcomes if rc == 0]
    losers = [out for rc, out in outcomes if rc != 0]
    assert len(winners) == 1 and len(losers) == 1, outcomes
    assert "in use by another envsim eval" in losers[0] or "holds a run with other settings (max_tokens)" in losers[0]
    config = json.loads((run_dir / "config.json").read_text())
    assert f"--max-tokens {config['max_tokens']}" in " ".join(procs[[o[0] for o in outcomes].index(0)].args)
    assert len((run_dir / "results.jsonl").read_text().splitlines()) == len(small_records)


def test_lock_is_reentrant_in_one_process_and_released(tmp_path):
    with lock_run_dir(tmp_path):
        with lock_run_dir(tmp_path):
            pass
        probe = subprocess.run([sys.executable, "-c", HOLD, str(tmp_path)], input="\n", capture_output=True,
                               text=True, timeout=60)
        assert probe.returncode != 0 and "in use by another envsim eval" in probe.stderr
    probe = subprocess.run([sys.executable, "-c", HOLD, str(tmp_path)], input="\n", capture_output=True, text=True,
                           timeout=60)
    assert probe.returncode == 0 and "locked" in probe.stdout


def test_overwrite_keeps_the_lock_file(tmp_path, small_records):
    bench, run_dir = _bench(tmp_path, small_records[:3]), tmp_path / "run"
    runner = CliRunner()
    assert runner.invoke(main, _eval_args(bench, run_dir)).exit_code == 0
    (run_dir / "stray.txt").write_text("x")
    assert runner.invoke(main, _eval_args(bench, run_dir, "--max-tokens", "7", "--overwrite")).exit_code == 0
    assert not (run_dir / "stray.txt").exists() and (run_dir / ".lock").exists()
    assert json.loads((run_dir / "config.json").read_text())["max_tokens"] == 7


def test_bootstrap_does_not_depend_on_finishing_order(tmp_path, small_records):
    config = EvalConfig(model="null", benchmark="x")
    prepare_run_dir(tmp_path, config)
    rows = list(asyncio.run(run_samples(small_records, NullProvider(), config, tmp_path)).values())
    rng = random.Random(1)
    reference = summarize(rows, {"model": "null"})
    for _ in range(5):
        shuffled = rows[:]
        rng.shuffle(shuffled)
        assert summarize(shuffled, {"model": "null"}) == reference
    assert reference["overall"]["ci"]["cm"][0] < reference["overall"]["cm"] < reference["overall"]["ci"]["cm"][1]


def test_results_lines_that_are_not_rows_are_skipped(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"id": "a", "status": "scored"}\n[1]\n{"id": ["x"]}\n\xff\xfe\n{"id": "b"}\n')
    assert sorted(read_results(path)) == ["a", "b"]

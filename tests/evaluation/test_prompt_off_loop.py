"""Trust round three (issue 45), attack 1 at run level: a view that takes seconds to analyse is built in a worker
thread, never on the event loop, so the other samples' requests go on and their results do not change; a record
EnvSim's own code cannot handle (``RecursionError``) is a named bad record, never retried."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

from click.testing import CliRunner

from envsim.cli import main
from envsim.envs import views
from envsim.evaluation.prompting import prompts
from envsim.evaluation.endpoints.providers import NullProvider
from envsim.evaluation.running.runner import EvalConfig, prepare_run_dir, read_results, run_samples, scored_ids


def _hostile(template: dict) -> dict:
    """The audit's slow view, scaled: 20,000 records read 300 times through a loop variable (~6 s of analysis)."""
    state = {"d": {f"k{i}": {"a": i} for i in range(20_000)}}
    code = "def f(self):\n    for x in self.d.values():\n" + "        y = x['a']\n" * 300 + "    return 1\n"
    return {**template, "id": "hostile-view", "state": state, "next_state": state, "code": code,
            "action": {"name": "f", "arguments": {}}, "patch": [], "observation": 1, "tools": []}


async def _run_with_ticker(records: list[dict], run_dir: Path) -> tuple[dict, float]:
    """The run's rows and the longest the event loop went without running a 10 ms ticker."""
    config = EvalConfig(model="null", benchmark="x", prompt_mode="mdp-view", prompt_version="3")
    prepare_run_dir(run_dir, config)
    gaps = [0.0]
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    try:
        rows = await run_samples(records, NullProvider(), config, run_dir, concurrency=4)
    finally:
        done.set()
        await task
    return rows, max(gaps)


def test_a_slow_view_is_built_off_the_event_loop_and_the_other_samples_are_unchanged(tmp_path, small_records,
                                                                                   monkeypatch):
    threads: list[str] = []
    real = views.compute_view

    def recording(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(views, "compute_view", recording)
    clean, _ = asyncio.run(_run_with_ticker(list(small_records), tmp_path / "clean"))
    records = list(small_records)
    records.insert(3, _hostile(records[0]))
    rows, longest_gap = asyncio.run(_run_with_ticker(records, tmp_path / "hostile"))
    assert threads and all(name.startswith("envsim-prompt") for name in threads), set(threads)
    assert longest_gap < 1.0, f"the event loop stalled {longest_gap:.2f} s"
    assert rows["hostile-view"]["status"] == "scored"
    keep = ("status", "fm", "cm", "answer", "prompt_tokens")
    assert {k: {f: v.get(f) for f in keep} for k, v in rows.items() if k != "hostile-view"} == \
        {k: {f: v.get(f) for f in keep} for k, v in clean.items()}


def _bench(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_recursion_error_in_our_prompt_code_is_a_named_bad_record_that_a_rerun_does_not_retry(
        tmp_path, small_records, monkeypatch):
    bad_id = small_records[2]["id"]
    real = prompts.build_messages

    def deep(record, *args, **kwargs):
        if record["id"] == bad_id:
            raise RecursionError("maximum recursion depth exceeded while encoding a JSON object")
        return real(record, *args, **kwargs)

    monkeypatch.setattr("envsim.evaluation.running.runner.build_messages", deep)
    bench, run_dir = _bench(tmp_path, small_records), tmp_path / "run"
    args = ["eval", "--model", "null", "--benchmark", str(bench), "--run-dir", str(run_dir), "--no-progress"]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    assert "1 of 26 samples are bad records" in first.output and "RecursionError" in first.output
    rows = read_results(run_dir / "results.jsonl")
    assert rows[bad_id]["status"] == "bad_record" and rows[bad_id]["reason"].startswith("prompt: RecursionError")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["scored"], summary["infra_failures"], summary["bad_records"]) == (25, 0, 1)
    assert "## Bad records: 1 of 26 samples were not scored" in (run_dir / "report.md").read_text()
    assert bad_id in scored_ids(run_dir / "results.jsonl")  # done: a re-run does not try it again
    lines = (run_dir / "results.jsonl").read_text().count("\n")
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    assert (run_dir / "results.jsonl").read_text().count("\n") == lines
    monkeypatch.undo()
    clean = CliRunner().invoke(main, ["eval", "--model", "null", "--benchmark", str(bench), "--run-dir",
                                      str(tmp_path / "clean"), "--no-progress"])
    assert clean.exit_code == 0
    assert "bad_records" not in json.loads((tmp_path / "clean" / "summary.json").read_text())  # v1/v2 form kept

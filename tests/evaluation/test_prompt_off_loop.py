"""Trust round three (issue 45), attack 1 at run level: a view that takes seconds to analyse is built in a worker
thread, never on the event loop, so the other samples' requests go on and their results do not change; a record
EnvSim's own code cannot handle (``RecursionError``) is a named bad record, never retried."""

from __future__ import annotations

import asyncio
import json
import threading
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


#: Ticks of the event loop to see while the hostile view is held: proof that the loop runs beside it.
TICKS_WHILE_HELD = 3
#: How long the held view waits for those ticks: only reached when the view is built on the loop (a failure).
HOLD_TIMEOUT_S = 60.0


async def _run_with_ticker(records: list[dict], run_dir: Path, view_started: threading.Event | None = None,
                           loop_ran: threading.Event | None = None) -> dict:
    """The run's rows; a ticker on the event loop sets ``loop_ran`` once it has run ``TICKS_WHILE_HELD`` times
    after ``view_started`` was set (no timing figure: it waits for the events themselves)."""
    config = EvalConfig(model="null", benchmark="x", prompt_mode="mdp-view", prompt_version="3")
    prepare_run_dir(run_dir, config)
    done = asyncio.Event()

    async def ticker() -> None:
        ticks = 0
        while not done.is_set():
            await asyncio.sleep(0.01)
            if view_started is not None and loop_ran is not None and view_started.is_set():
                ticks += 1
                if ticks >= TICKS_WHILE_HELD:
                    loop_ran.set()

    task = asyncio.create_task(ticker())
    try:
        rows = await run_samples(records, NullProvider(), config, run_dir, concurrency=4)
    finally:
        done.set()
        await task
    return rows


def test_a_slow_view_is_built_off_the_event_loop_and_the_other_samples_are_unchanged(tmp_path, small_records,
                                                                                   monkeypatch):
    threads: list[str] = []
    real = views.compute_view
    view_started, loop_ran = threading.Event(), threading.Event()
    seen_while_held: list[bool] = []

    def recording(state, tool_name, *args, **kwargs):
        threads.append(threading.current_thread().name)
        if tool_name == "f" and isinstance(state, dict) and "d" in state:  # the hostile view: held until the
            view_started.set()                                             # event loop is seen to run beside it
            seen_while_held.append(loop_ran.wait(HOLD_TIMEOUT_S))
        return real(state, tool_name, *args, **kwargs)

    monkeypatch.setattr(views, "compute_view", recording)
    clean = asyncio.run(_run_with_ticker(list(small_records), tmp_path / "clean"))
    records = list(small_records)
    records.insert(3, _hostile(records[0]))
    rows = asyncio.run(_run_with_ticker(records, tmp_path / "hostile", view_started, loop_ran))
    assert threads and all(name.startswith("envsim-prompt") for name in threads), set(threads)
    assert seen_while_held and all(seen_while_held), "the event loop did not run while the slow view was built"
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

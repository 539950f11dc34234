"""Trust round four (issue 54), replay findings 4-8: a replay log is checked whole for what labelling or a benchmark
reader would refuse, by one reader both ``--workers 1`` and ``--workers N`` share; labelled work is journaled so
that a killed worker, a killed parent or Ctrl-C loses nothing and the same command resumes; workers die with their
parent; tasks go to workers in batches; state blobs are never written through a link planted at ``OUT_states``."""

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

from envsim.benchmark import load
from envsim.cli import main
from tests.construction.test_replay_whole import SMALL_SHOP, _log

ROOT = Path(__file__).resolve().parents[2]
SLOW = "tests.fixtures.slow_desk:SlowDesk"


def _construct(log: Path, out: Path, workers: int, module: str = "tests.fixtures.shopdb.small"):
    return CliRunner().invoke(main, ["construct", "--split", "test", "--policy", "replay", "--replay-log", str(log),
                                     "--env-module", module, "--out", str(out), "--no-progress",
                                     "--workers", str(workers)])


def _shop_line(**fields) -> str:
    return json.dumps({"env": SMALL_SHOP, **fields})


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


BAD_LINES = {
    "a line nested 100,000 deep": ('{"env": "x", "state": ' + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "}",
                                   "nested deeper than 200 levels"),
    "a state nested 900 deep": ('{"env": "' + SMALL_SHOP + '", "state": {"deep": ' + _nested(900) + '}, "actions": []}',
                                "nested deeper than 200 levels"),
    "an argument nested 900 deep": ('{"env": "' + SMALL_SHOP + '", "actions": [{"name": "get_user_details", '
                                    '"arguments": {"user_id": ' + _nested(900) + "}}]}", "nested deeper than 200"),
    "an argument nested 199 deep (a record would nest 201)": (
        '{"env": "' + SMALL_SHOP + '", "actions": [{"name": "get_user_details", "arguments": {"user_id": '
        + _nested(198) + "}}]}", "nested deeper than 200"),
    "1e999 in arguments": (_shop_line(actions=[{"name": "get_user_details", "arguments": {"user_id": 1}}])
                           .replace('"user_id": 1', '"user_id": 1e999'), "overflows to infinity"),
    "1e999 in arguments given as a JSON string": (
        _shop_line(actions=[{"name": "get_user_details", "arguments": '{"user_id": 1e999}'}]), "overflows to infinity"),
    "a state holding 3 M values": ('{"env": "' + SMALL_SHOP + '", "state": {"x": [' + ",".join(["0"] * 3_000_000)
                                   + ']}, "actions": []}', "more than 2,000,000 JSON values"),
    "arguments that are a list": (_shop_line(actions=[{"name": "get_user_details", "arguments": [1]}]),
                                  "'arguments' must be a JSON object"),
}


@pytest.mark.parametrize("name", list(BAD_LINES))
@pytest.mark.parametrize("workers", [1, 2])
def test_a_line_labelling_would_refuse_is_refused_at_its_line_before_any_call(tmp_path, name, workers):
    line, reason = BAD_LINES[name]
    log, out = tmp_path / "log.jsonl", tmp_path / "out.jsonl"
    _log(log, 1, 2)
    log.write_text(log.read_text() + line + "\n")
    result = _construct(log, out, workers)
    assert result.exit_code == 1, result.output
    assert f"{log}:3: " in result.output and reason in result.output
    assert "Traceback" not in result.output and not out.exists()


@pytest.mark.parametrize("workers", [1, 2])
def test_invalid_utf8_is_refused_at_its_line(tmp_path, workers):
    log, out = tmp_path / "log.jsonl", tmp_path / "out.jsonl"
    _log(log, 1, 2)
    log.write_bytes(log.read_bytes() + _shop_line(actions=[], note="x").encode().replace(b"x", b"\xff\xfe") + b"\n")
    result = _construct(log, out, workers)
    assert result.exit_code == 1 and f"{log}:3: not UTF-8 (byte 0xff" in result.output
    assert "Traceback" not in result.output and not out.exists()


def test_carriage_returns_read_the_same_in_both_modes(tmp_path):
    """A bare ``\\r`` is never a line break: two objects joined by one are one bad line in both modes, and a ``\\r``
    as white space inside a line is accepted by both, with the same files written."""
    log = tmp_path / "log.jsonl"
    _log(log, 1, 2)
    good = log.read_text()
    log.write_text(good + _shop_line(actions=[]) + "\r" + _shop_line(actions=[]) + "\n")
    answers = [_construct(log, tmp_path / f"joined{w}.jsonl", w) for w in (1, 2)]
    assert [r.exit_code for r in answers] == [1, 1]
    assert all(f"{log}:3: not a JSON line (Extra data" in r.output for r in answers)
    log.write_text(good.replace(', "actions"', ',\r"actions"'))
    answers = [_construct(log, tmp_path / f"inside{w}.jsonl", w) for w in (1, 2)]
    assert [r.exit_code for r in answers] == [0, 0], answers[0].output + answers[1].output
    assert (tmp_path / "inside1.jsonl").read_bytes() == (tmp_path / "inside2.jsonl").read_bytes()


def test_every_record_written_from_a_log_is_one_eval_reads(tmp_path):
    """An argument as deep as a log line may carry (197 levels under its call) is written and read back."""
    log, out = tmp_path / "log.jsonl", tmp_path / "out.jsonl"
    log.write_text(_shop_line(actions=[{"name": "get_user_details", "arguments": {"user_id": json.loads(
        _nested(196))}}]) + "\n")
    result = _construct(log, out, 1)
    assert result.exit_code == 0, result.output
    assert len(load(str(out))) == 1


def test_a_log_changed_after_its_check_is_named_and_the_work_before_it_kept(tmp_path, monkeypatch):
    import envsim.construction.replay_workers as workers

    log, out = tmp_path / "log.jsonl", tmp_path / "out.jsonl"
    _log(log, 3, 2)
    checked = workers.checked_lines

    def check_then_change(path):
        lines = checked(path)
        text = path.read_text().splitlines()
        text[1] = text[1].replace('"actions"', ' "actions"')  # same JSON, other bytes
        path.write_text("\n".join(text) + "\n")
        return lines

    monkeypatch.setattr(workers, "checked_lines", check_then_change)
    result = _construct(log, out, 1)
    assert result.exit_code == 1
    assert f"{log}:2: the log changed after it was checked" in result.output
    assert "1 of 4 tasks (2 calls) labelled are kept in" in result.output and "to resume" in result.output
    monkeypatch.undo()
    again = _construct(log, out, 1)
    assert again.exit_code == 0 and "resuming from" in again.output and "1 of 4 tasks (2 calls)" in again.output


def _slow_log(path: Path, tasks: int) -> None:
    path.write_text("".join(json.dumps({"env": SLOW, "actions": [
        {"name": "raise_counter", "arguments": {"counter_id": f"C{1 + (task + k) % 4}"}} for k in range(task % 3 + 1)]})
        + "\n" for task in range(tasks)))


def _start(log: Path, out: Path, workers: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-c", "from envsim.cli import main; main()", "construct", "--split",
                             "test", "--policy", "replay", "--replay-log", str(log), "--env-module",
                             "tests.fixtures.slow_desk", "--out", str(out), "--no-progress", "--workers",
                             str(workers)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_as_from_a_terminal)


def _as_from_a_terminal() -> None:
    """Ctrl-C's default action, as in a terminal's foreground job: a test run started in the background of a
    non-interactive shell (``.ci/run &``) ignores SIGINT, every child inherits that, and Python then installs no
    KeyboardInterrupt handler, so the interrupt these tests send would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _journaled_tasks(journal: Path) -> int:
    try:
        return journal.read_text().count('{"task":')
    except FileNotFoundError:
        return 0


def _wait_for_tasks(journal: Path, count: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while _journaled_tasks(journal) < count:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no task journaled in 60 s"
        time.sleep(0.05)


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def _clean_run(tmp_path: Path, log: Path) -> bytes:
    out = tmp_path / "clean" / "out.jsonl"
    result = _construct(log, out, 1, "tests.fixtures.slow_desk")
    assert result.exit_code == 0, result.output
    return out.read_bytes()


pytestmark_linux = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")


@pytestmark_linux
@pytest.mark.slow
def test_a_worker_killed_with_9_loses_no_labelled_task_and_the_rerun_resumes(tmp_path):
    log, out = tmp_path / "log.jsonl", tmp_path / "run" / "out.jsonl"
    _slow_log(log, 16)
    process = _start(log, out, 2)
    _wait_for_tasks(Path(f"{out}.replay-journal"), 2, process)
    os.kill(_children(process.pid)[0], signal.SIGKILL)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 1, err
    assert "a replay worker stopped unexpectedly (killed, or out of memory)" in err and "Traceback" not in err
    assert "are kept in" in err and "run the same command again to resume" in err
    kept = _journaled_tasks(Path(f"{out}.replay-journal"))
    assert kept >= 2
    again = _construct(log, out, 2, "tests.fixtures.slow_desk")
    assert again.exit_code == 0, again.output
    assert f"resuming from {out}.replay-journal: {kept} of 16 tasks" in again.output
    assert out.read_bytes() == _clean_run(tmp_path, log)
    assert not Path(f"{out}.replay-journal").exists()


@pytestmark_linux
@pytest.mark.slow
def test_workers_die_with_a_parent_killed_with_9(tmp_path):
    log, out = tmp_path / "log.jsonl", tmp_path / "out.jsonl"
    _slow_log(log, 40)
    process = _start(log, out, 2)
    _wait_for_tasks(Path(f"{out}.replay-journal"), 1, process)
    workers = _children(process.pid)
    assert len(workers) == 2
    process.kill()
    process.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers)
    assert _journaled_tasks(Path(f"{out}.replay-journal")) >= 1


@pytestmark_linux
@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_keeps_the_labelled_tasks_says_so_and_the_rerun_resumes(tmp_path, workers):
    log, out = tmp_path / "log.jsonl", tmp_path / "run" / "out.jsonl"
    _slow_log(log, 40)   # 8 s of calls in one process: Ctrl-C after 2 tasks lands well before the end under load
    process = _start(log, out, workers)
    _wait_for_tasks(Path(f"{out}.replay-journal"), 2, process)
    os.killpg(process.pid, signal.SIGINT)  # the terminal sends Ctrl-C to the whole foreground group
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "interrupted: " in err and "are kept in" in err and "Traceback" not in err and "Aborted!" not in err
    kept = _journaled_tasks(Path(f"{out}.replay-journal"))
    again = _construct(log, out, workers, "tests.fixtures.slow_desk")
    assert again.exit_code == 0 and f"resuming from {out}.replay-journal: {kept} of 40 tasks" in again.output
    assert out.read_bytes() == _clean_run(tmp_path, log)


def test_a_torn_journal_line_is_labelled_again(tmp_path):
    log, out = tmp_path / "log.jsonl", tmp_path / "out.jsonl"
    _log(log, 3, 2)
    clean = _construct(log, tmp_path / "clean.jsonl", 1)
    assert clean.exit_code == 0
    journal = Path(f"{out}.replay-journal")
    from envsim.construction.replay_workers import replayed_records

    list(replayed_records(log, "test", 1, journal=journal))  # journals every task; the journal stays
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # the last task cut short
    result = _construct(log, out, 2)
    assert result.exit_code == 0 and "3 of 4 tasks" in result.output and "unreadable" in result.output
    assert out.read_bytes() == (tmp_path / "clean.jsonl").read_bytes()


def test_a_journal_of_another_split_is_set_aside(tmp_path):
    log, out = tmp_path / "log.jsonl", tmp_path / "out.jsonl"
    _log(log, 2, 2)
    journal = Path(f"{out}.replay-journal")
    journal.write_text('{"envsim_replay_journal": 1, "split": "train"}\n')
    result = _construct(log, out, 1)
    assert result.exit_code == 0 and "set aside" in result.output and "resuming" not in result.output


def test_tasks_go_to_workers_in_batches_not_one_round_trip_each(tmp_path):
    from envsim.construction.replay_log import LogLine
    from envsim.construction.replay_workers import batches

    lines = [LogLine(n, n * 40, 39, "0" * 64) for n in range(1, 100_001)]
    grouped = batches(tmp_path / "log.jsonl", "test", lines, 2)
    assert len(grouped) <= 100_000 // 200 and [line for batch in grouped for line in batch[2]] == lines
    few = batches(tmp_path / "log.jsonl", "test", lines[:10], 2)
    assert len(few) >= 4  # a short log still spreads over the workers
    large = [LogLine(n, 0, 3 << 20, "0" * 64) for n in range(1, 5)]
    assert [len(batch[2]) for batch in batches(tmp_path / "log.jsonl", "test", large, 2)] == [1, 1, 1, 1]


def test_state_blobs_are_never_written_through_a_link_planted_at_out_states(tmp_path):
    log, out = tmp_path / "log.jsonl", tmp_path / "run" / "replayed.jsonl"
    _log(log, 3, 12)  # a pool heavy enough for its states to be stored once, in blobs (test_replay_whole)
    outside = tmp_path / "outside"
    outside.mkdir()
    out.parent.mkdir()
    (out.parent / "replayed_states").symlink_to(outside, target_is_directory=True)
    result = _construct(log, out, 1)
    assert list(outside.iterdir()) == []
    assert result.exit_code == 1 and "replayed_states" in result.output and "symbolic link" in result.output
    assert "Traceback" not in result.output and not out.exists()


def test_a_journal_of_an_environment_changed_since_is_set_aside(tmp_path):
    from envsim.construction.replay_workers import replayed_records

    log, out = tmp_path / "log.jsonl", tmp_path / "out.jsonl"
    _log(log, 2, 2)
    journal = Path(f"{out}.replay-journal")
    list(replayed_records(log, "test", 1, journal=journal))
    text = journal.read_text()
    assert '"env_version":"' in text
    start = text.index('"env_version":"') + len('"env_version":"')
    journal.write_text(text[:start] + "0" * 16 + text[start + 16:])  # as if the environment's code had changed
    result = _construct(log, out, 1)
    assert result.exit_code == 0 and "changed since it was written" in result.output and "resuming" not in result.output

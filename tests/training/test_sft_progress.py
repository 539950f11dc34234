"""SFT progress lines read from LLaMA-Factory's trainer_log.jsonl, and the CPU thread default."""

from __future__ import annotations

import json

from envsim.training.sft import thread_env
from envsim.training.sft_progress import ProgressFollower, duration_seconds, progress_line


def test_durations_parse_as_timedelta_prints_them():
    assert duration_seconds("0:12:05") == 725
    assert duration_seconds("1 day, 2:00:00") == 93600
    assert duration_seconds("3 days, 0:00:01.5") == 3 * 86400 + 1
    assert duration_seconds("soon") is None and duration_seconds(None) is None


def test_progress_line_gives_samples_per_second_and_eta():
    line = progress_line({"current_steps": 5, "total_steps": 40, "loss": 1.5, "elapsed_time": "0:05:00"}, 8)
    assert line == "sft step 5/40 · loss 1.5000 · 0.133 samples/s · elapsed 5 min 00 s · ETA 35 min 00 s"
    assert progress_line({"current_steps": 0, "total_steps": 40}, 8) is None
    assert progress_line({"loss": 1.0}, 8) is None


def test_follower_emits_only_new_complete_entries(tmp_path):
    log = tmp_path / "trainer_log.jsonl"
    log.write_text(json.dumps({"current_steps": 1, "total_steps": 2, "elapsed_time": "0:00:10"}) + "\n")
    lines: list[str] = []
    with ProgressFollower(log, 4, lines.append, interval=60) as follower:
        assert lines == []  # an earlier run's entry is not reported
        log.write_text("")  # the trainer starts over (overwrite_output_dir)
        follower.poll()
        with log.open("a") as handle:
            handle.write(json.dumps({"current_steps": 1, "total_steps": 2, "elapsed_time": "0:00:20"}) + "\n")
            handle.write("not json\n")
            handle.write('{"current_steps": 2, "total')  # half written
        follower.poll()
        assert lines == ["sft step 1/2 · 0.200 samples/s · elapsed 20 s · ETA 20 s"]
        with log.open("a") as handle:
            handle.write('_steps": 2, "elapsed_time": "0:00:40"}\n')
    assert lines[1] == "sft step 2/2 · 0.200 samples/s · elapsed 40 s · ETA 0 s"


def test_one_thread_by_default_on_two_cores(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert thread_env(None, {}) == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    assert thread_env(None, {"OMP_NUM_THREADS": "2"}) == {}
    assert thread_env(3, {"OMP_NUM_THREADS": "2"})["OMP_NUM_THREADS"] == "3"
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert thread_env(None, {}) == {}

"""``envsim.construct`` / ``envsim.train_data`` (the APIs under ``envsim construct`` / ``envsim train data``):
typed stop reasons with the command's exit codes, nothing written when they stop, and tracks as registrations."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import envsim
from envsim.cli import main
from envsim.construction.construct_options import ConstructOptions, ConstructSummary
from envsim.construction.construct_outputs import write_with_stats
from envsim.construction.errors import ConstructStopped, InvalidConstructOption
from envsim.construction.tracks import TRACKS
from envsim.training.errors import TrainDataStopped


def test_unusable_options_are_usage_errors_and_write_nothing(tmp_path):
    out = tmp_path / "chained.jsonl"
    with pytest.raises(InvalidConstructOption) as exc:
        envsim.construct("test", out, tier="chained", lengths="two-eight", envs=["online_store-v1"])
    assert exc.value.option == "--lengths"
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--tier", "chained", "--lengths", "two-eight",
                                       "--env", "online_store-v1", "--out", str(out)])
    assert result.exit_code == 2 and "--lengths" in result.output, result.output
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--policy", "replay", "--out", str(out)])
    assert result.exit_code == 2 and "--policy replay needs --replay-log" in result.output, result.output
    with pytest.raises(InvalidConstructOption, match="--tier"):
        envsim.construct("test", out, tier="long")
    assert not any(tmp_path.iterdir())


def test_stops_are_exit_1_and_write_nothing(tmp_path):
    out = tmp_path / "mine.jsonl"
    with pytest.raises(ConstructStopped, match="unknown environment"):
        envsim.construct("test", out, envs=["no_such_env-v1"])
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--env", "no_such_env-v1", "--out", str(out)])
    assert result.exit_code == 1 and "--env no_such_env-v1" in result.output, result.output
    with pytest.raises(ConstructStopped, match="unknown track 'nope'"):
        envsim.construct("test", out, track="nope")
    assert not any(tmp_path.iterdir())


def tiny_track(options: ConstructOptions) -> ConstructSummary:
    """A track of three records (for the registration test)."""
    records = [{"id": f"r{i}", "seed": options.seed} for i in range(3)]
    return write_with_stats(records, options.out, {"records": 3}, "# tiny\n", kind="tiny", pool=3,
                            lines=("3 tiny records",))


def test_a_track_is_one_registration(tmp_path, monkeypatch):
    monkeypatch.setitem(TRACKS, "tiny", f"{__name__}:tiny_track")
    summary = envsim.construct("test", tmp_path / "tiny.jsonl", track="tiny", seed=7)
    assert (summary.kind, summary.written, summary.lines) == ("tiny", 3, ("3 tiny records",))
    assert [json.loads(line)["seed"] for line in summary.out.read_text().splitlines()] == [7, 7, 7]
    assert summary.paths == (tmp_path / "tiny.jsonl", tmp_path / "tiny.stats.json", tmp_path / "tiny.stats.md")
    assert {"bfcl", "tau"} <= set(TRACKS)


def test_train_data_stops_on_a_bad_recipe(tmp_path):
    with pytest.raises(TrainDataStopped, match="cannot read recipe"):
        envsim.train_data(tmp_path / "data", recipe=str(tmp_path / "missing.json"))
    result = CliRunner().invoke(main, ["train", "data", "--recipe", str(tmp_path / "missing.json"),
                                       "--out", str(tmp_path / "data")])
    assert result.exit_code == 1 and "cannot read recipe" in result.output, result.output
    assert not (tmp_path / "data").exists()


def _hide_tau_bench(monkeypatch, tmp_path) -> None:
    """A machine without τ-bench: no ENVSIM_TAU_BENCH folder, nothing on sys.path, nothing imported yet."""
    import sys

    monkeypatch.setenv("ENVSIM_TAU_BENCH", str(tmp_path / "nowhere"))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if "tau-bench" not in p])
    for name in [m for m in sys.modules if m == "tau_bench" or m.startswith("tau_bench.")]:
        monkeypatch.delitem(sys.modules, name)


def test_a_track_without_its_source_stops_with_exit_1(tmp_path, monkeypatch):
    _hide_tau_bench(monkeypatch, tmp_path)
    result = CliRunner().invoke(main, ["construct", "--track", "tau", "--split", "test",
                                       "--out", str(tmp_path / "tau.jsonl")])
    assert result.exit_code == 1 and "τ-bench not found" in result.output, result.output
    assert not (tmp_path / "tau.jsonl").exists()

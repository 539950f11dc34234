"""``envsim.safe_files``: the one writer and reader of run-directory files never goes through a link, never blocks on
a FIFO and never reads without bound (issue 45, attacks 4 and 5, at the level of the helper)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from envsim import safe_files
from envsim.safe_files import (RunFileRefused, iter_lines, open_fresh, read_bytes, read_json, write_bytes, write_lines,
                               write_text)


@pytest.fixture()
def victim(tmp_path: Path) -> Path:
    """A file outside the run directory that a planted link points at."""
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_text("precious\n")
    return path


def test_a_link_at_the_final_name_is_replaced_never_followed(tmp_path, victim):
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").symlink_to(victim)
    write_text(run / "summary.json", "{}\n")
    assert victim.read_text() == "precious\n"
    assert not (run / "summary.json").is_symlink() and (run / "summary.json").read_text() == "{}\n"
    assert sorted(p.name for p in run.iterdir()) == ["summary.json"]  # no temporary file left behind


def test_links_at_every_temporary_name_it_could_pick_are_never_opened(tmp_path, victim, monkeypatch):
    """The old writers used fixed temporary names (``.summary.json.tmp``); a planted one is skipped, not followed."""
    run = tmp_path / "run"
    run.mkdir()
    names = iter(["aaaa", "aaaa", "bbbb"])
    monkeypatch.setattr(safe_files.secrets, "token_hex", lambda n: next(names))
    (run / ".report.md.aaaa.tmp").symlink_to(victim)
    write_text(run / "report.md", "# report\n")
    assert victim.read_text() == "precious\n" and (run / "report.md").read_text() == "# report\n"
    assert (run / ".report.md.aaaa.tmp").is_symlink()  # left as it was, not written through


def test_the_mode_of_a_replaced_regular_file_is_kept_and_a_directory_is_refused(tmp_path):
    path = tmp_path / "stats.json"
    path.write_text("old")
    os.chmod(path, 0o640)
    write_bytes(path, b"new")
    assert path.read_bytes() == b"new" and stat.S_IMODE(path.stat().st_mode) == 0o640
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(IsADirectoryError):
        write_text(tmp_path / "dir.json", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.json", "stats.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "steps.jsonl"
    path.write_text("old\n")

    def lines():
        yield "one"
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_lines(path, lines())
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["steps.jsonl"]


def test_open_fresh_removes_a_planted_link_before_creating_the_file(tmp_path, victim):
    (tmp_path / "sft.log").symlink_to(victim)
    with open_fresh(tmp_path / "sft.log") as handle:
        handle.write("log line\n")
    assert victim.read_text() == "precious\n" and (tmp_path / "sft.log").read_text() == "log line\n"


def test_reads_refuse_links_fifos_devices_and_oversized_files(tmp_path, victim):
    run = tmp_path / "run"
    run.mkdir()
    (run / "link.json").symlink_to(victim)
    (run / "zero.jsonl").symlink_to("/dev/zero")
    os.mkfifo(run / "plot.png")
    (run / "big.json").write_bytes(b" " * 1001)
    with pytest.raises(RunFileRefused, match="is a symbolic link"):
        read_json(run / "link.json")
    with pytest.raises(RunFileRefused, match="is a symbolic link"):
        list(iter_lines(run / "zero.jsonl"))
    with pytest.raises(RunFileRefused, match="not a regular file"):  # opened O_NONBLOCK: never waits for a writer
        read_bytes(run / "plot.png", 100)
    with pytest.raises(RunFileRefused, match="larger than 1,000 bytes"):
        read_bytes(run / "big.json", 1000)
    with pytest.raises(FileNotFoundError):
        read_bytes(run / "missing.json", 10)
    assert list(iter_lines(run / "missing.jsonl")) == []


def test_no_link_below_the_root_is_followed(tmp_path, victim):
    base = tmp_path / "tiers"
    (base / "core").mkdir(parents=True)
    (base / "core" / "config.json").write_text("{}")
    (base / "chained").symlink_to(victim.parent)  # a tier folder leading out of the directory
    (victim.parent / "config.json").write_text('{"outside": true}')
    assert read_json(base / "core" / "config.json", root=base) == {}
    with pytest.raises(RunFileRefused, match="'chained', which is a symbolic link"):
        read_json(base / "chained" / "config.json", root=base)
    with pytest.raises(RunFileRefused, match="is not inside"):
        read_json(victim, root=base)


def test_lines_are_streamed_and_an_overlong_line_is_skipped_without_being_held(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"id": "a"}\n' + b"x" * 5000 + b'\n{"id": "b"}\n{"id": "torn"')
    assert list(iter_lines(path, max_line=100)) == ['{"id": "a"}', '{"id": "b"}', '{"id": "torn"']
    with pytest.raises(RunFileRefused, match="larger than 10 bytes"):
        list(iter_lines(path, max_bytes=10))


def test_concurrent_writers_of_one_name_never_collide(tmp_path):
    path = tmp_path / "summary.json"
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            for _ in range(20):
                write_text(path, f"{i}\n" * 1000)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(path.read_text().split())) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]

"""Trust round three (issue 45), attacks 4 and 5: links planted in a run directory. No writer (eval, its resume,
the executor's misses, the chained tier, tiers, report, view, simulate, train data, construct) writes through one,
at a final name or at a temporary name the old writers used; no reader (report, view, eval's resume) reads through
one, blocks on a FIFO or reads ``/dev/zero`` until memory runs out, and a PNG outside the run directory is never
embedded in a page."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.cli import main
from tests.child_peak import measured_command, own_peak_kb

#: The names the old writers used for their temporary files, planted by the audit.
OLD_TEMPORARIES = (".summary.json.tmp", ".report.md.tmp", ".cm_by_delta.tmp.png", ".executor_misses.json.tmp",
                   ".executor_misses.md.tmp", ".reuse.json.tmp", "config.json.partial")


def _cli(*args: str):
    return CliRunner().invoke(main, list(args))


def plant(directory: Path, names: tuple[str, ...], outside: Path) -> dict[Path, bytes]:
    """A link at each of ``names`` in ``directory`` to its own file in ``outside``; returns victim -> content."""
    directory.mkdir(parents=True, exist_ok=True)
    outside.mkdir(parents=True, exist_ok=True)
    victims = {}
    for name in names:
        victim = outside / f"victim{name.replace('/', '_')}"
        victim.write_bytes(f"precious {name}\n".encode())
        (directory / name).unlink(missing_ok=True)
        (directory / name).symlink_to(victim)
        victims[victim] = victim.read_bytes()
    return victims


def assert_untouched(victims: dict[Path, bytes], directory: Path, finals: tuple[str, ...]) -> None:
    for victim, content in victims.items():
        assert victim.read_bytes() == content, f"{victim} was written through a link"
    for name in finals:
        assert (directory / name).is_file() and not (directory / name).is_symlink(), f"{name} is still a link"


SINGLE_FINALS = ("summary.json", "report.md", "cm_by_delta.png", "reuse.json")


def test_eval_and_its_resume_never_write_through_planted_links(tmp_path, small_benchmark):
    run = tmp_path / "run"
    args = ["eval", "--model", "null", "--benchmark", str(small_benchmark), "--run-dir", str(run), "--no-progress"]
    victims = plant(run, SINGLE_FINALS + OLD_TEMPORARIES, tmp_path / "outside")
    first = _cli(*args)
    assert first.exit_code == 0, first.output
    assert_untouched(victims, run, SINGLE_FINALS)
    victims = plant(run, SINGLE_FINALS + OLD_TEMPORARIES, tmp_path / "outside2")  # the audit: planted, then resumed
    again = _cli(*args)
    assert again.exit_code == 0, again.output
    assert_untouched(victims, run, SINGLE_FINALS)
    assert json.loads((run / "summary.json").read_text())["scored"] == 26


def test_report_never_writes_through_planted_links(tmp_path, small_benchmark):
    run = tmp_path / "run"
    assert _cli("eval", "--model", "null", "--benchmark", str(small_benchmark), "--run-dir", str(run),
                "--no-progress").exit_code == 0
    victims = plant(run, ("summary.json", "report.md", "cm_by_delta.png") + OLD_TEMPORARIES, tmp_path / "outside")
    result = _cli("report", str(run))
    assert result.exit_code == 0, result.output
    assert_untouched(victims, run, ("summary.json", "report.md", "cm_by_delta.png"))


def test_executor_misses_are_never_written_through_planted_links(tmp_path, small_benchmark):
    run = tmp_path / "run"
    names = ("executor_misses.json", "executor_misses.md", ".executor_misses.json.tmp", ".executor_misses.md.tmp")
    victims = plant(run, names, tmp_path / "outside")
    result = _cli("eval", "--model", "executor", "--benchmark", str(small_benchmark), "--limit", "4", "--run-dir",
                  str(run), "--no-progress")
    assert result.exit_code == 0, result.output
    assert_untouched(victims, run, names[:2])


def test_the_chained_tier_and_the_tiers_table_never_write_through_planted_links(tmp_path):
    base = tmp_path / "tiers"
    chained = ("summary.json", "report.md", ".summary.json.tmp", ".report.md.tmp")
    victims = plant(base / "chained", chained, tmp_path / "outside")
    victims.update(plant(base, ("tiers.json", "tiers.md"), tmp_path / "outside2"))
    result = _cli("eval", "--model", "null", "--benchmark", "v2", "--tier", "chained", "--limit", "2", "--run-dir",
                  str(base), "--no-progress")
    assert result.exit_code == 0, result.output
    assert_untouched(victims, base / "chained", ("summary.json", "report.md"))
    assert_untouched({}, base, ("tiers.json", "tiers.md"))
    again = plant(base / "chained", chained, tmp_path / "outside3")
    again.update(plant(base, ("tiers.json", "tiers.md"), tmp_path / "outside4"))
    reported = _cli("report", str(base))
    assert reported.exit_code == 0, reported.output
    assert_untouched(again, base / "chained", ("summary.json", "report.md"))


def test_view_writes_its_page_in_place_of_a_planted_link(tmp_path, small_benchmark):
    run = tmp_path / "run"
    assert _cli("eval", "--model", "null", "--benchmark", str(small_benchmark), "--limit", "3", "--run-dir",
                str(run), "--no-progress").exit_code == 0
    victims = plant(tmp_path / "pages", ("page.html",), tmp_path / "outside")
    result = _cli("view", str(run), "--out", str(tmp_path / "pages" / "page.html"))
    assert result.exit_code == 0, result.output
    assert_untouched(victims, tmp_path / "pages", ("page.html",))


def test_simulate_never_writes_through_planted_links(tmp_path):
    out = tmp_path / "sim"
    names = ("trajectories.jsonl", "steps.jsonl", "stats.json", "drift.json", "drift.md", "drift.png")
    victims = plant(out, names, tmp_path / "outside")
    result = _cli("simulate", "--env", "online_store-v1", "--simulator", "oracle", "--episodes", "1", "--steps", "2",
                  "--shadow", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert_untouched(victims, out, names)


def test_construct_never_writes_through_planted_links(tmp_path):
    out = tmp_path / "built"
    names = ("x.jsonl", "x.stats.json", "x.stats.md")
    victims = plant(out, names, tmp_path / "outside")
    result = _cli("construct", "--split", "test", "--env", "online_store-v1", "--pool", "5", "--episodes", "1",
                  "--steps", "5", "--out", str(out / "x.jsonl"))
    assert result.exit_code == 0, result.output
    assert_untouched(victims, out, names)


def test_train_data_and_sft_config_never_write_through_planted_links(tmp_path, small_records):
    from envsim.training.data import write_sft_files
    from envsim.training.sft import SFTSettings
    from envsim.training.sft import write_sft_files as write_sft_config

    out = tmp_path / "sft"
    names = ("tiny.jsonl", "tiny.records.jsonl", "dataset_info.json", "sft.yaml")
    victims = plant(out, names, tmp_path / "outside")
    write_sft_files(small_records[:5], out, "tiny")
    write_sft_config(SFTSettings(model="m", data_dir=out, dataset="tiny", output_dir=out / "ckpt"), out)
    assert_untouched(victims, out, names)


# -- reads ------------------------------------------------------------------------------------------------------


@pytest.fixture()
def single_run(tmp_path, small_benchmark) -> Path:
    run = tmp_path / "run"
    result = _cli("eval", "--model", "null", "--benchmark", str(small_benchmark), "--limit", "4", "--run-dir", str(run),
                  "--no-progress")
    assert result.exit_code == 0, result.output
    return run


def _envsim(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """The CLI in its own process, killed past ``timeout`` (a read that blocks fails the test instead of hanging);
    its own peak memory must stay under 1 GB (``/dev/zero`` read whole ran out of memory)."""
    child = subprocess.Popen(measured_command([str(Path(sys.executable).parent / "envsim"), *args]),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    streams: dict[str, str] = {}
    readers = [threading.Thread(target=lambda name=name, stream=stream: streams.__setitem__(name, stream.read()))
               for name, stream in (("out", child.stdout), ("err", child.stderr))]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout
    while True:
        pid, status = os.waitpid(child.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            child.kill()
            pytest.fail(f"envsim {' '.join(args)} ran past {timeout} s")
        time.sleep(0.05)
    for reader in readers:
        reader.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr, peak = own_peak_kb(streams["err"])
    assert peak is not None and peak < 1 << 20, f"{args[0]}: peak {peak} KiB, exit {child.returncode}: {stderr[-500:]}"
    return subprocess.CompletedProcess(child.args, child.returncode, streams["out"], stderr)


@pytest.mark.parametrize("command", ["report", "view"])
def test_results_linked_to_dev_zero_are_refused_not_read_until_memory_runs_out(single_run, tmp_path, command):
    (single_run / "results.jsonl").unlink()
    (single_run / "results.jsonl").symlink_to("/dev/zero")
    extra = ["--out", str(tmp_path / "page.html")] if command == "view" else []
    result = _envsim(command, str(single_run), *extra)
    assert result.returncode == 1, result.stderr
    assert f"{single_run / 'results.jsonl'} is a symbolic link; EnvSim does not read it" in result.stderr
    assert not (tmp_path / "page.html").exists()


def test_a_config_linked_to_dev_zero_is_refused_by_report_view_and_eval(single_run, tmp_path, small_benchmark):
    (single_run / "config.json").unlink()
    (single_run / "config.json").symlink_to("/dev/zero")
    for args in (["report", str(single_run)], ["view", str(single_run), "--out", str(tmp_path / "p.html")],
                 ["eval", "--model", "null", "--benchmark", str(small_benchmark), "--limit", "4", "--run-dir",
                  str(single_run), "--no-progress"]):
        result = _envsim(*args)
        assert result.returncode != 0 and "config.json is a symbolic link" in result.stderr, (args, result.stderr)


def test_a_fifo_plot_never_blocks_view_and_is_not_embedded(single_run, tmp_path):
    (single_run / "cm_by_delta.png").unlink()
    os.mkfifo(single_run / "cm_by_delta.png")
    result = _envsim("view", str(single_run), "--out", str(tmp_path / "page.html"))
    assert result.returncode == 0, result.stderr
    assert "data:image/png" in (tmp_path / "page.html").read_text() or "iVBOR" in (tmp_path / "page.html").read_text()


def test_a_png_outside_the_run_directory_is_never_embedded(single_run, tmp_path):
    secret = tmp_path / "outside" / "secret.png"
    secret.parent.mkdir()
    secret.write_bytes(b"\x89PNG\r\n\x1a\n" + b"SECRET-PIXELS" * 40)
    (single_run / "cm_by_delta.png").unlink()
    (single_run / "cm_by_delta.png").symlink_to(secret)
    result = _cli("view", str(single_run), "--out", str(tmp_path / "page.html"))
    assert result.exit_code == 0, result.output
    page = (tmp_path / "page.html").read_text()
    assert base64.b64encode(secret.read_bytes()).decode()[:60] not in page
    assert "iVBOR" in page  # the plot was drawn again from the run's own rows instead


def test_a_tier_folder_linked_out_of_the_tiers_directory_is_not_read(tmp_path, small_benchmark):
    base = tmp_path / "tiers"
    outside = tmp_path / "elsewhere"
    assert _cli("eval", "--model", "null", "--benchmark", str(small_benchmark), "--limit", "3", "--run-dir",
                str(outside), "--no-progress").exit_code == 0
    assert _cli("eval", "--model", "null", "--benchmark", "v2", "--tier", "chained", "--limit", "2", "--run-dir",
                str(base), "--no-progress").exit_code == 0
    (base / "core").symlink_to(outside)
    before = {p.name: p.read_bytes() for p in outside.iterdir() if p.is_file()}
    result = _cli("report", str(base))
    assert result.exit_code == 0, result.output
    assert "core" not in json.loads((base / "tiers.json").read_text())
    assert {p.name: p.read_bytes() for p in outside.iterdir() if p.is_file()} == before

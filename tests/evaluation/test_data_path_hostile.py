"""Issue 21 items 6, 8, 11: lone surrogates, parse bombs and symlinked run files end in a scored failure or a
clear error, never a crash, a lost file or a write through a link."""

from __future__ import annotations

import json
import os
import time

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.construction.pipeline import write_jsonl
from envsim.evaluation.scoring import parsing
from envsim.evaluation.baselines.hostile_server import HostileServer, hostile_text
from envsim.evaluation.scoring.parsing import parse_answer
from envsim.evaluation.running.runner import read_results
from envsim.jsonsafe import dumps_line


def _eval(server, bench, run_dir, *extra):
    return CliRunner().invoke(main, ["eval", "--model", "hostile", "--base-url", server.base_url, "--benchmark",
                                     str(bench), "--run-dir", str(run_dir), "--max-retries", "0", *extra])


# --- 6: lone surrogates -----------------------------------------------------------------------------------

def test_lone_surrogates_in_answers_and_ids_are_scored_and_rerun_works(tmp_path, small_records):
    records = [dict(r) for r in small_records[:4]]
    records[1]["id"] = "half \ud800 id"
    bench = tmp_path / "bench.jsonl"
    write_jsonl(records, bench)
    assert bench.read_bytes().decode("utf-8")  # escaped, still UTF-8
    run_dir = tmp_path / "run"
    behaviours = {records[0]["id"]: "surrogate", records[1]["id"]: "surrogate"}
    with HostileServer(records, behaviours) as server:
        first = _eval(server, bench, run_dir)
        assert first.exit_code == 0, first.output
        rows = read_results(run_dir / "results.jsonl")
        assert set(rows) == {r["id"] for r in records} and all(r["status"] == "scored" for r in rows.values())
        assert "\ud800" in rows[records[0]["id"]]["answer"]  # kept as given, written escaped
        assert rows[records[2]["id"]]["cm"]  # the others score as if nothing happened
        lines = (run_dir / "results.jsonl").read_bytes().decode("utf-8").splitlines()
        again = _eval(server, bench, run_dir)
    assert again.exit_code == 0, again.output
    assert (run_dir / "results.jsonl").read_bytes().decode("utf-8").splitlines() == lines  # nothing re-run


def test_write_jsonl_escapes_surrogates_and_never_loses_the_old_file(tmp_path):
    path = tmp_path / "out.jsonl"
    plain = [{"state": {"name": "Zoë"}}]
    write_jsonl(plain, path)
    assert path.read_text(encoding="utf-8") == '{"state":{"name":"Zoë"}}\n'  # unchanged bytes without surrogates
    old = path.read_bytes()

    def failing():
        yield {"state": {"k": "x"}}
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_jsonl(failing(), path)
    assert path.read_bytes() == old and [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]
    write_jsonl([{"state": {"k": "a\udfffb"}}], path)
    assert json.loads(path.read_bytes().decode("utf-8")) == {"state": {"k": "a\udfffb"}}
    assert dumps_line({"k": "a\ud800"}) == '{"k": "a\\ud800"}'


# --- 8: parse bombs -----------------------------------------------------------------------------------------

def test_parse_bomb_reads_a_bounded_number_of_characters(monkeypatch):
    read = []
    real = parsing.strict_raw_decode

    def counting(text, position, **kwargs):
        read.append(len(text) - position)
        return real(text, position, **kwargs)

    monkeypatch.setattr(parsing, "strict_raw_decode", counting)
    answer = parse_answer(hostile_text("bomb"))
    assert not answer.ok and answer.error
    # each attempt reads at most the rest of the text; attempts stop once the budget is spent
    assert sum(read) <= parsing.MAX_DECODE_CHARS + parsing.MAX_ANSWER_CHARS
    assert len(read) < 10


@pytest.mark.slow
def test_bomb_answers_do_not_delay_the_other_samples(tmp_path, small_records, monkeypatch):
    """Parsing runs off the event loop: three answers that take 1.5 s each to parse leave the others' latency_s
    (the server's time) at the server's milliseconds."""
    from envsim.evaluation.running import runner

    records = small_records[:6]
    bench = tmp_path / "bench.jsonl"
    write_jsonl(records, bench)
    bombs = {r["id"]: "bomb" for r in records[:3]}
    real = runner.parse_answer

    def slow_for_bombs(text):
        if text.startswith('{"a":{"a":'):
            time.sleep(1.5)
        return real(text)

    monkeypatch.setattr(runner, "parse_answer", slow_for_bombs)
    with HostileServer(records, bombs) as server:
        result = _eval(server, bench, tmp_path / "run", "--concurrency", "6")
    assert result.exit_code == 0, result.output
    rows = read_results(tmp_path / "run" / "results.jsonl")
    assert all(not rows[i]["parsed"] for i in bombs)
    others = [rows[r["id"]] for r in records[3:]]
    assert all(row["cm"] for row in others)
    assert max(row["latency_s"] for row in others) < 1.0, [row["latency_s"] for row in others]


# --- 11: run-directory symlinks ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", [".lock", "results.jsonl"])
def test_symlinked_run_files_are_refused_and_their_targets_untouched(tmp_path, small_benchmark, name):
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    os.symlink(target, run_dir / name)
    result = CliRunner().invoke(main, ["eval", "--model", "null", "--benchmark", str(small_benchmark),
                                       "--run-dir", str(run_dir)])
    assert result.exit_code == 1, result.output
    assert f"{run_dir / name} is a symbolic link or not a regular file" in result.output
    assert target.read_text() == "keep me\n"


def test_a_state_with_surrogates_is_labelled_written_and_read_back(tmp_path):
    from envsim.benchmark import load
    from envsim.construction.labelling import sample_id, to_record
    from envsim.envs.sandbox import execute
    from envsim.envs.registry import get_env

    env = get_env("online_store-v1")
    state = {**env.sample_state(0), "note": "half \ud800 pair"}
    transition = execute(env, state, {"name": "list_products", "arguments": {}})
    record = to_record(transition, env, "test")
    assert record["id"] == sample_id(record["env"], record["state"], record["action"])
    assert sample_id("e", {"a": "é"}, {}) == __import__("hashlib").sha256(
        '["e",{"a":"é"},{}]'.encode()).hexdigest()[:20]  # ordinary text hashes as before
    path = tmp_path / "bench.jsonl"
    write_jsonl([record], path)
    assert load(str(path))[0]["state"]["note"] == "half \ud800 pair"

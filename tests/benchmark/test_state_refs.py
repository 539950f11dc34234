"""Stored states are data (issue 32): a benchmark row's ``state_ref`` resolves within bounds, a digest is checked
before it becomes a file name, every ref error is named at ``file:line``, and a record whose code cannot be
analysed for ``mdp-view`` is a named bad record, not an infrastructure failure."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.benchmark import BENCHMARK_DIR, load
from envsim.benchmark import state_store
from envsim.benchmark.state_store import StateRefError, resolve
from envsim.benchmark.validation import BenchmarkFileError
from envsim.cli import main
from envsim.construction.chained import load_episodes
from envsim.envs.views import compute_view
from envsim.patch_bounds import MAX_GROWTH_CHARS, MAX_PATCH_OPS

V2 = BENCHMARK_DIR / "v2"
TAU_ROW = json.loads((V2 / "tau.jsonl").open(encoding="utf-8").readline())
BASE = TAU_ROW["state_ref"]["base"]


def _bench(tmp_path: Path, rows: list[dict], name: str = "tau_x.jsonl") -> Path:
    """A τ-style benchmark file in ``tmp_path`` with the blobs its first shipped row needs beside it."""
    folder = tmp_path / "tau_states"
    folder.mkdir(exist_ok=True)
    for ref in (BASE, TAU_ROW["tools_ref"]):
        name_ = ref.removeprefix("sha256:") + ".json.gz"
        shutil.copyfile(V2 / "tau_states" / name_, folder / name_)
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _with_ref_patch(patch: list[dict], row_id: str = "bomb") -> dict:
    return {**TAU_ROW, "id": row_id, "state_ref": {"base": BASE, "patch": patch}}


COPY_BOMB = ([{"op": "add", "path": "/n", "value": {"a": "x" * 100_000}}]
             + [{"op": "copy", "from": "/n", "path": f"/n/b{i}"} for i in range(25)])


def test_copy_bomb_in_a_stored_patch_stops_at_the_growth_limit_named_at_its_line(tmp_path):
    path = _bench(tmp_path, [TAU_ROW, _with_ref_patch(COPY_BOMB)])
    tracemalloc.start()
    try:
        with pytest.raises(BenchmarkFileError) as exc:
            load(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(exc.value)
    assert message.startswith(f"{path}:2: state_ref.patch op ")  # 2^25 copies of 100 kB were never made
    assert "copies grow the state beyond" in message and f"MAX_GROWTH_CHARS {MAX_GROWTH_CHARS}" in message
    assert peak < 200 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    result = CliRunner().invoke(main, ["eval", "--model", "null", "--benchmark", str(path), "--no-progress",
                                       "--runs-root", str(tmp_path / "runs")])
    assert result.exit_code == 1 and f"{path}:2: state_ref.patch op" in result.output
    assert not (tmp_path / "runs").exists()


def test_a_chained_episode_step_bomb_is_named_at_its_line(tmp_path):
    episode = json.loads((V2 / "tau_chained.jsonl").open(encoding="utf-8").readline())
    episode["steps"][0]["patch"] = COPY_BOMB
    path = _bench(tmp_path, [episode], "tau_chained_x.jsonl")
    with pytest.raises(ValueError, match=rf"^{path}:1: steps\[0\]\.patch op \d+ \(copy .*MAX_GROWTH_CHARS"):
        load_episodes(str(path))


def test_stored_patches_have_an_operation_limit_and_must_be_operations(tmp_path):
    too_many = [{"op": "test", "path": "/users", "value": None}] * (MAX_PATCH_OPS + 1)
    with pytest.raises(StateRefError, match=f"state_ref.patch has {MAX_PATCH_OPS + 1} operations .*{MAX_PATCH_OPS}"):
        resolve(_with_ref_patch(too_many), V2 / "tau_states")["state"]
    with pytest.raises(StateRefError, match="state_ref.patch must be a list"):
        resolve(_with_ref_patch("add /n"), V2 / "tau_states")["state"]  # type: ignore[arg-type]
    with pytest.raises(StateRefError, match=r"^patch op 0 is not an operation"):
        resolve({**TAU_ROW, "patch": [7]}, V2 / "tau_states")["next_state"]


@pytest.mark.parametrize("ref", ["sha256:../../../../tmp/x", "sha256:../outside", "sha256:" + "A" * 64,
                                 "sha256:" + "0" * 63, "sha256:" + "0" * 64 + "\n", "sha256:" + "0" * 64 + "/..",
                                 "md5:" + "0" * 64, 7])
def test_a_malformed_digest_is_refused_before_any_file_is_touched(tmp_path, monkeypatch, ref):
    (tmp_path / "outside.json.gz").write_bytes(gzip.compress(b'{"users": {}}'))  # what a traversal would read
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(state_store.os, "open", lambda p, *a, **k: opened.append(str(p)) or real_open(p, *a, **k))
    record = resolve({"id": "x", "state_ref": {"base": ref, "patch": []}}, tmp_path / "states")
    with pytest.raises(StateRefError, match=r"state_ref.base must be 'sha256:' \+ 64 lowercase hex digits"):
        record["state"]
    assert opened == []
    state_store._blob.cache_clear()
    resolve(TAU_ROW, V2 / "tau_states")["tools"]  # a well-formed ref is read (through the same os.open)
    assert opened and opened[-1].endswith(TAU_ROW["tools_ref"].removeprefix("sha256:") + ".json.gz")


def test_a_hash_mismatch_names_the_file_line_and_the_field(tmp_path):
    path = _bench(tmp_path, [TAU_ROW, {**TAU_ROW, "id": "swapped", "state_ref": {"base": "sha256:" + "a" * 64,
                                                                                  "patch": []}}])
    shutil.copyfile(tmp_path / "tau_states" / (BASE.removeprefix("sha256:") + ".json.gz"),
                    tmp_path / "tau_states" / ("a" * 64 + ".json.gz"))
    with pytest.raises(BenchmarkFileError) as exc:
        load(str(path))
    assert str(exc.value).startswith(f"{path}:2: state_ref.base sha256:aaaaaaaaaaaa")
    assert "content does not match its hash" in str(exc.value)


def test_blobs_are_read_bounded_and_only_from_regular_files(tmp_path, monkeypatch):
    digest = "b" * 64
    (tmp_path / f"{digest}.json.gz").write_bytes(gzip.compress(b"[" + b"0," * 5000 + b"0]"))
    monkeypatch.setattr(state_store, "MAX_BLOB_BYTES", 1000)
    with pytest.raises(StateRefError, match="decompresses to more than 1000 bytes"):
        state_store.load_blob(str(tmp_path), f"sha256:{digest}")
    fifo = "c" * 64
    os.mkfifo(tmp_path / f"{fifo}.json.gz")  # would block a plain read forever
    with pytest.raises(StateRefError, match="not a regular file"):
        state_store.load_blob(str(tmp_path), f"sha256:{fifo}")
    link = "d" * 64
    (tmp_path / f"{link}.json.gz").symlink_to(tmp_path / f"{digest}.json.gz")
    with pytest.raises(StateRefError, match="cannot read state blob"):
        state_store.load_blob(str(tmp_path), f"sha256:{link}")


def _v1_rows_with_code(code: str) -> list[dict]:
    lines = (BENCHMARK_DIR / "v1" / "test.jsonl").open(encoding="utf-8").readlines()[:3]
    rows = [json.loads(line) for line in lines]
    rows[1]["code"] = code
    return rows


def test_code_that_cannot_be_analysed_is_a_bad_record_named_at_its_line_not_an_infra_failure(tmp_path):
    path = tmp_path / "deep_code.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _v1_rows_with_code("(" * 900 + ")" * 900)))
    args = ["eval", "--model", "null", "--benchmark", str(path), "--prompt-mode", "mdp-view", "--no-progress",
            "--runs-root", str(tmp_path / "runs")]
    for _ in range(2):  # a re-run says the same and retries nothing: the record must be fixed
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1, result.output
        assert f"{path}:2: field 'code' cannot be analysed for --prompt-mode mdp-view" in result.output
        assert "too many nested parentheses" in result.output and "infrastructure" not in result.output
        assert not (tmp_path / "runs").exists()
    shown = CliRunner().invoke(main, [*args[:6], "mdp", *args[7:]])  # mdp shows the code as text: nothing to analyse
    assert shown.exit_code == 0, shown.output
    assert json.loads(next((tmp_path / "runs").rglob("summary.json")).read_text())["infra_failures"] == 0


def test_code_that_parses_but_nests_past_the_analyser_widens_the_view_to_the_whole_state():
    state = {"a": {"b": 1}, "c": [2]}
    view = compute_view(state, "f", {}, "def f(data):\n    return " + "+".join(["data['a']"] * 1500))
    assert json.JSONDecoder().raw_decode(view.render())[0] == state  # the view, then its widening note
    assert any("nested too deeply" in note for note in view.widened)

"""Trust round four (issue 54), finding 9: point releases never write into a shipped version or the base, outside
the benchmark folder or through links, never follow links inside the base, refuse bad lines and untrusted
environments with FILE:LINE, and verify every record equals its base record but for the import lines."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from envsim.benchmark import BENCHMARK_DIR, benchmark_path
from envsim.construction import point_release
from envsim.construction.point_release import ReleaseError, derive_release, release_line


def _folder_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _v1_lines(count: int = 3) -> list[str]:
    return benchmark_path("v1", "test").read_text(encoding="utf-8").splitlines()[:count]


def _small_base(tmp_path: Path) -> Path:
    """A base folder of three v1 records, a held-out list and a folder of stored files."""
    base = tmp_path / "base"
    (base / "states").mkdir(parents=True)
    (base / "test.jsonl").write_text("\n".join(_v1_lines()) + "\n", encoding="utf-8")
    (base / "test_envs.txt").write_text("a\nb\n")
    (base / "states" / "blob.json.gz").write_bytes(b"blob")
    return base


@pytest.mark.parametrize("base,release", [("v1", "v1"), ("v1", "v2.1"), ("v2", "v1.1"), ("v1", "v1.1")])
def test_a_release_never_writes_into_a_shipped_version_or_the_base(base, release, capsys):
    before = {name: _folder_hash(BENCHMARK_DIR / name) for name in (base, release)}
    assert point_release.main(["--base", base, "--release", release]) == 1
    assert "exists already" in capsys.readouterr().err
    assert {name: _folder_hash(BENCHMARK_DIR / name) for name in (base, release)} == before


@pytest.mark.parametrize("out", ["v1", "v2.1", "v1/inside"])
def test_out_inside_a_shipped_version_or_the_base_is_refused(out, capsys):
    target = BENCHMARK_DIR / out
    before = _folder_hash(BENCHMARK_DIR / out.split("/")[0])
    assert point_release.main(["--base", "v1", "--release", "x", "--out", str(target)]) == 1
    assert "a point release is written into a new folder" in capsys.readouterr().err
    assert _folder_hash(BENCHMARK_DIR / out.split("/")[0]) == before and not (BENCHMARK_DIR / "v1" / "inside").exists()


@pytest.mark.parametrize("name", ["../escaped", "ABSOLUTE", "a/b", "..", "."])
def test_release_names_outside_the_benchmark_folder_are_refused(name, capsys, tmp_path):
    name = str(tmp_path / "escaped-release") if name == "ABSOLUTE" else name
    assert point_release.main(["--base", "v1", "--release", name]) == 1
    assert "a release is a plain folder name" in capsys.readouterr().err
    assert not (BENCHMARK_DIR.parent / "escaped").exists() and not (tmp_path / "escaped-release").exists()


def test_links_planted_in_the_output_are_never_written_through(tmp_path):
    base, out = _small_base(tmp_path), tmp_path / "release"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("keep")
    out.mkdir()
    (out / "test_envs.txt").symlink_to(outside / "victim.txt")
    (out / "test.jsonl").symlink_to(outside / "victim.txt")
    derive_release(base, out)
    assert (outside / "victim.txt").read_text() == "keep"
    assert not (out / "test_envs.txt").is_symlink() and (out / "test_envs.txt").read_text() == "a\nb\n"
    (out / "states").rename(tmp_path / "old_states")
    (out / "states").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ReleaseError, match="a point release writes no link"):
        derive_release(base, out)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]


@pytest.mark.parametrize("where", ["test_envs.txt", "states/blob.json.gz", "states", "test.jsonl"])
def test_links_inside_the_base_are_refused_not_followed(tmp_path, where):
    base, out = _small_base(tmp_path), tmp_path / "release"
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "blob.json.gz").write_text("secret")
    planted = base / where
    if planted.is_dir():
        for child in planted.iterdir():
            child.unlink()
        planted.rmdir()
        planted.symlink_to(secret, target_is_directory=True)
    else:
        planted.unlink()
        planted.symlink_to(secret / "blob.json.gz")
    with pytest.raises(ReleaseError, match="symbolic link"):
        derive_release(base, out)
    assert not any("secret" in p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())


BAD = {
    "not JSON": ("{not json", "not a JSON line"),
    "100,000 deep": ('{"env": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper than 200"),
    "an untrusted environment": (None, "cannot be used"),
    "no env_version": (None, "no env_version"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_lines_are_refused_at_their_line(tmp_path, name):
    line, reason = BAD[name]
    record = json.loads(_v1_lines(1)[0])
    if name == "an untrusted environment":
        record["env"] = "os:system"
    if name == "no env_version":
        del record["env_version"]
    if line is None:
        line = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    base = _small_base(tmp_path)
    (base / "test.jsonl").write_text("\n".join([*_v1_lines(2), line]) + "\n", encoding="utf-8")
    with pytest.raises(ReleaseError, match=reason) as caught:
        derive_release(base, tmp_path / "release")
    assert f"{base / 'test.jsonl'}:3:" in str(caught.value)


def test_a_base_whose_code_is_not_its_environment_s_is_refused():
    record = json.loads(_v1_lines(1)[0])
    record["code"] = "def anything():\n    return 'not the tool'\n"
    line = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    with pytest.raises(ReleaseError, match="its code is not what"):
        release_line(line, "x:1", {})


def test_a_release_that_changes_more_than_the_import_lines_is_refused(monkeypatch):
    line = _v1_lines(1)[0]
    monkeypatch.setattr(point_release, "released_code", lambda env_class, code: code + "\nx = 1\n")
    with pytest.raises(ReleaseError, match="not the base record with imports"):
        release_line(line, "x:1", {})


def test_release_problem_names_a_changed_observation_or_code():
    from envsim.construction.point_release import release_problem

    old = json.loads(_v1_lines(1)[0])
    new = json.loads(json.dumps(old))
    new["code"] = "import datetime as _dt\n\n" + old["code"]
    assert release_problem(old, new) is None
    new["observation"] = {"changed": True}
    assert "observation" in release_problem(old, new)
    new = json.loads(json.dumps(old))
    new["code"] = old["code"].replace("def ", "def _", 1)
    assert "code" in release_problem(old, new)


@pytest.mark.parametrize("field", ["observation", "next_state"])
def test_a_base_record_whose_observation_or_next_state_was_changed_is_refused(field):
    record = json.loads(_v1_lines(1)[0])
    record[field] = {"changed": True} if field == "observation" else {**record["next_state"], "extra": 1}
    line = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    with pytest.raises(ReleaseError, match=f"its {field} is not what"):
        release_line(line, "x:1", {})


def test_a_base_record_whose_patch_was_changed_is_refused():
    record = json.loads(_v1_lines(1)[0])
    record["patch"] = [{"op": "add", "path": "/planted", "value": 1}]
    line = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    with pytest.raises(ReleaseError, match="its patch is not what"):
        release_line(line, "x:1", {})

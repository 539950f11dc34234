"""Point releases v1.1 and v2.1 (issue 44): the same samples as v1 and v2, with shown code that carries its
imports. Every field but the code is byte-identical; the code is the base's code headed by standard-library
import lines; re-deriving reproduces the shipped files; the original script reads the v1.1 export."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.benchmark import BENCHMARK_DIR, benchmark_path, load
from envsim.cli.main import main
from envsim.construction.point_release import ReleaseError, derive_release, release_line, released_lines
from envsim.envs.adapters.bfcl_shown import DUMP_METHOD, LOAD_METHOD
from envsim.envs.adapters.bfcl_shown import HEADER as MAPPING_HEADER
from envsim.evaluation.prompting.prompts import default_prompt_version
from envsim.evaluation.running.tiers import benchmark_tiers

RELEASES = {"v1.1": "v1", "v2.1": "v2"}
SPLITS = [(release, path.name) for release, base in RELEASES.items()
          for path in sorted((BENCHMARK_DIR / base).glob("*.jsonl"))]


def _derivable(name: str) -> str | None:
    """Why the base split ``name`` cannot be re-derived here (its environments need an extra), or None."""
    if name == "bfcl.jsonl" and importlib.util.find_spec("bfcl_eval") is None:
        return "bfcl-eval is not installed"
    if name.startswith("tau"):
        from envsim.evaluation.running.tiers import tau_bench_missing

        return tau_bench_missing()
    return None


def _codes(record: dict) -> list[str]:
    return [step["code"] for step in record["steps"]] if "steps" in record else [record["code"]]


def _without_code(record: dict) -> dict:
    record = json.loads(json.dumps(record))
    for holder in record["steps"] if "steps" in record else [record]:
        holder.pop("code")
    return record


@pytest.mark.parametrize("release,name", SPLITS, ids=[f"{r}-{n}" for r, n in SPLITS])
def test_a_release_holds_the_base_samples_with_import_lines_added_to_their_code(release: str, name: str) -> None:
    base_lines = (BENCHMARK_DIR / RELEASES[release] / name).read_text(encoding="utf-8").splitlines()
    new_lines = (BENCHMARK_DIR / release / name).read_text(encoding="utf-8").splitlines()
    assert len(new_lines) == len(base_lines)
    added = mappings = 0
    for old_line, new_line in zip(base_lines, new_lines):
        old, new = json.loads(old_line), json.loads(new_line)
        assert _without_code(new) == _without_code(old)
        for old_code, new_code in zip(_codes(old), _codes(new)):
            if new_code == old_code:
                continue
            new_code, mapped, mapping = new_code.partition("\n\n\n" + MAPPING_HEADER)
            if mapped:  # BFCL: how the JSON state maps to the object, after the code (tests/envs/test_bfcl_shown.py)
                assert old["env"].startswith("bfcl/") and LOAD_METHOD in mapping and DUMP_METHOD in mapping
                mappings += 1
                old_code = old_code.rstrip("\n")  # the mapping follows the code after two blank lines
                if new_code == old_code:
                    continue
            head, _, rest = new_code.partition("\n\n")
            assert rest == old_code
            imports = head.splitlines()
            assert imports == sorted(imports) and all(line.startswith(("import ", "from ")) for line in imports)
            assert all(line.split()[1].split(".")[0] in sys.stdlib_module_names for line in imports)
            added += 1
    assert added, f"{release}/{name}: no code needed an import"
    assert bool(mappings) == ((release, name) == ("v2.1", "bfcl.jsonl"))


#: Re-derivations run in the slow tier only (CI runs them; each takes 6-9 s): the dev splits and the two largest.
SLOW_DERIVATIONS = {("v1.1", "test.jsonl"), ("v2.1", "chained.jsonl")}


@pytest.mark.parametrize("release,name", [pytest.param(r, n, marks=[pytest.mark.slow]
                                                       if n == "dev.jsonl" or (r, n) in SLOW_DERIVATIONS else [])
                                          for r, n in SPLITS], ids=[f"{r}-{n}" for r, n in SPLITS])
def test_re_deriving_reproduces_the_shipped_release_byte_for_byte(release: str, name: str) -> None:
    missing = _derivable(name)
    if missing:
        pytest.skip(missing)
    expected = (BENCHMARK_DIR / release / name).read_text(encoding="utf-8").splitlines()
    assert released_lines(BENCHMARK_DIR / RELEASES[release] / name) == expected


def test_the_imports_are_those_the_misses_needed() -> None:
    v11 = {r["id"]: r["code"] for r in load("v1.1", "test")}
    assert v11["7e5ff200a2eb6dbf9b70"].startswith("import datetime as _dt\n\n")  # via require_date -> is_iso_date
    assert not v11["9813f4c3058642112974"].startswith(("import", "from"))       # needs nothing: unchanged


def test_a_line_that_does_not_re_serialise_identically_is_refused() -> None:
    line = benchmark_path("v1", "test").read_text(encoding="utf-8").splitlines()[0]
    with pytest.raises(ReleaseError, match="re-serialise"):
        release_line(line.replace('{"action":', '{ "action":', 1), "x:1", {})


def test_an_environment_changed_since_the_base_was_built_is_refused() -> None:
    record = json.loads(benchmark_path("v1", "test").read_text(encoding="utf-8").splitlines()[0])
    record["env_version"] = "0" * 16
    line = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    with pytest.raises(ReleaseError, match="environment changed"):
        release_line(line, "x:1", {})


@pytest.mark.slow
def test_derive_release_writes_the_folder_and_keeps_the_release_s_own_files(tmp_path: Path) -> None:
    counts = derive_release(BENCHMARK_DIR / "v1", tmp_path / "v1.1")
    assert counts["test"] == {"records": 400, "with_imports": 75}
    assert (tmp_path / "v1.1" / "test.jsonl").read_bytes() == benchmark_path("v1.1", "test").read_bytes()
    assert (tmp_path / "v1.1" / "test_envs.txt").read_bytes() == (BENCHMARK_DIR / "v1" / "test_envs.txt").read_bytes()
    assert not (tmp_path / "v1.1" / "build.json").exists() and not (tmp_path / "v1.1" / "README.md").exists()


def test_releases_keep_their_base_prompt_version_and_tiers() -> None:
    assert default_prompt_version("v1.1") == "1" and default_prompt_version("v2.1") == "2"
    assert default_prompt_version("v2.1", "mdp-view") == "3"
    assert list(benchmark_tiers("v2.1")) == list(benchmark_tiers("v2"))
    assert benchmark_tiers("v1.1") == {}
    build = json.loads((BENCHMARK_DIR / "v2.1" / "build.json").read_text())
    assert build["derived_from"] == "v2" and "point_release" in build["derive"]["command"]


def test_the_original_script_reads_the_v1_1_export_and_scores_the_truth_right(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        import seed_script_loop as script
    finally:
        sys.path.pop(0)
    out = tmp_path / "v1.1-test.original.json"
    result = CliRunner().invoke(main, ["export", "--benchmark", "v1.1", "--split", "test", "--out", str(out)])
    assert result.exit_code == 0, result.output
    samples = json.loads(out.read_text(encoding="utf-8"))  # the script's own reading: one JSON list
    assert len(samples) == 400
    with_imports = 0
    for sample in samples:
        step = sample["step_detail"]
        messages = script.seed_messages(step, sample.get("env_code") or "")
        with_imports += "import datetime as _dt" in messages[0]["content"]
        truth = {"feedback": step["observation"]["content"] if isinstance(step["observation"], dict)
                 else step["observation"], "config_changes": step["config_change"]["changes"]}
        verdict = script.score(step, json.dumps(truth))
        assert verdict["feedback_match"], sample.get("id")
    assert with_imports >= 75


@pytest.mark.slow
def test_oracle_is_perfect_on_the_point_releases(tmp_path: Path) -> None:
    for benchmark in ("v1.1", "v2.1"):
        run_dir = tmp_path / benchmark
        result = CliRunner().invoke(main, ["eval", "--model", "oracle", "--benchmark", benchmark, "--run-dir",
                                           str(run_dir), "--no-progress"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        rows = ([json.loads((run_dir / "summary.json").read_text())] if benchmark == "v1.1"
                else list(json.loads((run_dir / "tiers.json").read_text()).values()))
        for row in rows:
            figures = row.get("overall", row)
            assert row["infra_failures"] == 0 and (figures["fm"], figures["cm"]) == (1.0, 1.0), (benchmark, row)

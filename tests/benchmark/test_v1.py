"""The shipped v1 benchmark: composition, held-out environments, re-execution, rebuild, interop, loader."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from click.testing import CliRunner

from envsim.benchmark import BENCHMARK_DIR, benchmark_path, load, to_dataset
from envsim.cli import main
from envsim.construction.composition import load_spec
from envsim.construction.interop import from_envsimbench, to_envsimbench
from envsim.construction.splits import read_test_envs, training_envs
from envsim.delta import apply_patch, same_json
from envsim.envs.sandbox import execute
from envsim.envs.registry import get_env, list_envs
from envsim.envs.shown import env_version, tool_code

BUILD = json.loads((BENCHMARK_DIR / "v1" / "build.json").read_text())
TEST = load("v1", "test")
DEV = load("v1", "dev")


def test_test_split_matches_the_default_composition_exactly():
    spec = load_spec("default")
    assert len(TEST) == spec.total == 400
    for cell in spec.cells:
        assert sum(cell.matches(r) for r in TEST) >= cell.n, cell.label()
    by_stratum = Counter(r["stratum"] for r in TEST)
    assert by_stratum == {"failure": 20, "no_change": 80, "simple": 50, "medium": 200, "difficult": 50}
    assert Counter(r["arg_count"] for r in TEST if r["stratum"] == "no_change") == {0: 40, 1: 40}
    assert Counter(r["delta_size"] for r in TEST if r["stratum"] in ("simple", "medium")) == {
        1: 25, 2: 25, 3: 50, 4: 50, 5: 50, 6: 50}
    assert {r["delta_size"] for r in TEST if r["stratum"] == "difficult"} == set(range(7, 13))


def test_held_out_environments():
    held_out = set(read_test_envs("v1"))
    envs = Counter(r["env"] for r in TEST)
    assert len(envs) >= 60 and max(envs.values()) <= 8
    assert set(envs) <= held_out and {r["env"] for r in DEV} <= held_out
    assert len(DEV) > len(TEST) and not {r["id"] for r in DEV} & {r["id"] for r in TEST}
    train = set(training_envs([e.id for e in list_envs() if e.builtin]))
    assert not train & held_out


@pytest.mark.parametrize("split", ["test", pytest.param("dev", marks=pytest.mark.slow)])
def test_every_sample_re_executes_exactly(split):
    for record in load("v1", split):
        cls = get_env(record["env"])
        assert record["env_version"] == env_version(cls), f"{record['env']} changed since v1 was built"
        t = execute(cls, record["state"], record["action"])
        assert same_json(t.observation, record["observation"]), record["id"]
        assert same_json(t.next_state, record["next_state"]), record["id"]
        assert same_json(apply_patch(record["state"], record["patch"]), record["next_state"]), record["id"]
        assert t.delta_size == record["delta_size"] and t.stratum == record["stratum"]
        assert record["code"] == tool_code(cls, record["tool"]) or record["tool"] not in cls.tool_specs()
        assert record["tools"] == cls.tool_schemas()


@pytest.mark.slow
def test_rebuild_reproduces_test_split_byte_for_byte(tmp_path):
    out = tmp_path / "test.jsonl"
    args = ["construct", *BUILD["test"]["args"], "--out", str(out)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == benchmark_path("v1", "test").read_bytes()


def test_envsimbench_export_round_trips_v1():
    for record in TEST:
        assert from_envsimbench(json.loads(json.dumps(to_envsimbench(record)))) == record


def test_loader_and_dataset_export():
    dataset = to_dataset("v1", "test")
    assert len(dataset) == 400 and set(dataset.column_names) >= {"id", "env", "state", "stratum"}
    assert json.loads(dataset[0]["state"]) == TEST[0]["state"]
    with pytest.raises(FileNotFoundError, match="shipped: v1"):
        load("v9")


def _summary(model: str, tmp_path) -> dict:
    run_dir = tmp_path / model
    result = CliRunner().invoke(main, ["eval", "--model", model, "--run-dir", str(run_dir)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads((run_dir / "summary.json").read_text())


def test_null_baseline_on_v1(tmp_path):
    summary = _summary("null", tmp_path)
    assert summary["by_stratum"]["failure"]["cm"] == 1.0 and summary["by_stratum"]["no_change"]["cm"] == 1.0
    assert all(summary["by_stratum"][s]["cm"] == 0.0 for s in ("simple", "medium", "difficult"))


def test_oracle_baseline_on_v1_is_perfect(tmp_path):
    summary = _summary("oracle", tmp_path)
    assert summary["scored"] == 400 and summary["infra_failures"] == 0
    for name, group in summary["by_stratum"].items():
        if group["n"]:
            assert (group["fm"], group["cm"], group["cm_lenient"]) == (1.0, 1.0, 1.0), name

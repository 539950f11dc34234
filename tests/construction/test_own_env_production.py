"""The fixture shop at production size (a 1.1 M-character object-model dump) through the whole user path:
construct (test and train), eval with the oracle on view prompts, train data --env, simulate (issue 31)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from envsim.cli import main

SHOP = "tests.fixtures.shopdb.wrapper:ShopEnv"


def _run(args):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return result


def _ids(path):
    return {json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()}


@pytest.mark.slow
def test_a_production_size_environment_of_ones_own_from_construction_to_simulation(tmp_path):
    common = ["--env", SHOP, "--pool", "16", "--episodes", "2", "--steps", "10", "--no-progress"]
    test, train = tmp_path / "test.jsonl", tmp_path / "train.jsonl"
    _run(["construct", "--split", "test", *common, "--out", str(test)])
    _run(["construct", "--split", "train", *common, "--out", str(train)])
    assert _ids(test) and _ids(train) and not _ids(test) & _ids(train)
    for path in (test, train):  # states stored once: records refer to blobs beside the file
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        assert all("state_ref" in r and "state" not in r for r in rows)
        assert path.stat().st_size < 200_000 and (tmp_path / f"{path.stem}_states").is_dir()

    run_dir = tmp_path / "run"
    _run(["eval", "--model", "oracle", "--benchmark", str(test), "--prompt-mode", "mdp-view", "--run-dir",
          str(run_dir), "--env-module", "tests.fixtures.shopdb.wrapper", "--no-progress"])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["overall"]["n"] == len(_ids(test)) and summary["infra_failures"] == 0
    assert summary["overall"]["fm"] == 1.0 and summary["overall"]["cm"] == 1.0

    sft = tmp_path / "sft"
    _run(["train", "data", "--env", SHOP, "--recipe", "smoke", "--exclude", str(test), "--out", str(sft),
          "--cutoff", "32768", "--no-progress"])
    stats = json.loads((sft / "stats.json").read_text())
    records = sft / f"{stats['name']}.records.jsonl"
    assert stats["samples"] > 5 and (stats["prompt_mode"], stats["prompt_version"]) == ("mdp-view", "3")
    assert stats["states_stored_once"] and not _ids(records) & _ids(test)

    sim = tmp_path / "sim"
    _run(["simulate", "--env", SHOP, "--simulator", "oracle", "--prompt-mode", "mdp-view", "--episodes", "1",
          "--steps", "4", "--out", str(sim)])
    sim_stats = json.loads((sim / "stats.json").read_text())
    assert sim_stats["steps"] == 4 and sim_stats["fallback_steps"] == 0

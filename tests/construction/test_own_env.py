"""Test and training data from one environment of the user's own (construction.own_env, training.own_env_data)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import envsim
from envsim.cli import main
from envsim.construction.own_env import identity_split, is_own_target, keep_split
from envsim.training.errors import TrainDataStopped

SMALL_SHOP = "tests.fixtures.shopdb.small:SmallShopEnv"


def _ids(path):
    return {json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()}


def test_own_targets_are_module_class_ids_only():
    assert is_own_target("mylib.shop:ShopEnv") and is_own_target(SMALL_SHOP)
    assert not is_own_target("bfcl/GorillaFileSystem") and not is_own_target("tau/retail")
    assert not is_own_target("online_store-v1") and not is_own_target("my_plugin-v1")


def test_records_on_an_initial_state_go_to_one_split_by_identity():
    initial = {"orders": {"#1": {"status": "pending"}}}
    later = {"orders": {"#1": {"status": "cancelled"}}}
    records = [{"id": f"{i:020x}", "state": initial} for i in range(200)] + [{"id": "later", "state": later}]
    test, train = keep_split(records, "test", [initial]), keep_split(records, "train", [initial])
    assert not {r["id"] for r in test if r["state"] == initial} & {r["id"] for r in train if r["state"] == initial}
    assert len(test) + len(train) == len(records) + 1                     # the later state is in both streams' reach
    assert 20 < sum(identity_split(r["id"]) == "test" for r in records[:200]) < 80


@pytest.mark.slow
def test_construct_and_train_data_of_ones_own_class_share_no_state_action_pair(tmp_path):
    runner = CliRunner()
    common = ["--env", SMALL_SHOP, "--pool", "40", "--episodes", "2", "--steps", "15", "--no-progress"]
    test, train = tmp_path / "test.jsonl", tmp_path / "train.jsonl"
    for split, out in (("test", test), ("train", train)):
        result = runner.invoke(main, ["construct", "--split", split, *common, "--out", str(out)])
        assert result.exit_code == 0, result.output
    assert _ids(test) and _ids(train) and not _ids(test) & _ids(train)
    assert {json.loads(line)["split"] for line in train.read_text().splitlines()} == {"train"}
    data = envsim.train_data(tmp_path / "sft", recipe="smoke", envs=[SMALL_SHOP], exclude=[test], cutoff=32768)
    records = tmp_path / "sft" / f"{data.name}.records.jsonl"
    assert data.samples > 10 and not _ids(records) & _ids(test)
    assert data.stats["envs"] == [SMALL_SHOP] and data.stats["split_policy"].startswith("explorer episodes")
    samples = [json.loads(line) for line in data.sft_file.read_text().splitlines()]
    assert [s["id"] for s in samples] == [json.loads(line)["id"] for line in records.read_text().splitlines()]
    # without --exclude the train stream alone keeps the same guarantee for this construction
    alone = envsim.train_data(tmp_path / "sft2", recipe="smoke", envs=[SMALL_SHOP], cutoff=32768)
    assert not _ids(tmp_path / "sft2" / f"{alone.name}.records.jsonl") & _ids(test)


def test_train_data_env_takes_module_class_targets_only(tmp_path):
    with pytest.raises(TrainDataStopped, match="module:Class"):
        envsim.train_data(tmp_path / "out", recipe="smoke", envs=["online_store-v1"])
    result = CliRunner().invoke(main, ["train", "data", "--out", str(tmp_path / "o"), "--exclude", __file__])
    assert result.exit_code == 2 and "--exclude needs --env" in result.output
    result = CliRunner().invoke(main, ["construct", "--split", "train", "--env", "bfcl/GorillaFileSystem",
                                       "--out", str(tmp_path / "b.jsonl")])
    assert result.exit_code != 0 and not (tmp_path / "b.jsonl").exists()


def test_train_data_of_ones_own_class_says_why_it_wrote_fewer_samples_than_asked(tmp_path):
    out = tmp_path / "sft"
    result = CliRunner().invoke(main, ["train", "data", "--env", SMALL_SHOP, "--recipe", "smoke", "--out", str(out),
                                       "--cutoff", "3200", "--no-progress"])
    assert result.exit_code == 0, result.output
    stats = json.loads((out / "stats.json").read_text())
    short = stats["shortfall"]
    assert stats["asked"] == short["asked"] == 64 and short["written"] == stats["samples"] < 64
    reasons = short["reasons"]
    assert reasons["cells_unfilled"] > 0 and reasons["over_cutoff"] == stats["dropped_over_cutoff"] > 0
    assert reasons["cells_unfilled"] + reasons["over_cutoff"] == 64 - stats["samples"]      # every one accounted for
    assert sum(c["missing"] for c in short["cells"]) == reasons["cells_unfilled"]
    assert short["pool"]["labelled_calls"] == 20 and short["pool"]["pool_records"] == stats["pool"]
    assert f"warning: wrote {stats['samples']} of the 64 samples the recipe asks for: " in result.stderr
    assert "over the cutoff of 3,200 tokens" in result.stderr and "failure: " in result.stderr

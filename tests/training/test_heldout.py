"""The in-environment held-out set of a recipe (``training.heldout``): calls of the training environments from
other rollouts, none sharing its (environment, state, call) with any training record, stratified as asked, and
readable by ``envsim eval --benchmark``; the shipped ``in-env`` recipe names training-split environments only."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.construction.splits import training_envs
from envsim.envs.registry import list_envs
from envsim.training.data import load_recipe
from envsim.training.heldout import HeldoutOverlapError, build_heldout, shared_ids

RECIPE = {
    "name": "tiny-in-env", "prompt_mode": "mdp-view", "prompt_version": "3",
    "envs": ["spa_appointments-v1", "kitchen_tickets-v1"],
    "rollout": {"seed": 13, "episodes": 2, "steps": 20},
    "cells": [{"stratum": "failure", "n": 4}, {"stratum": "no_change", "n": 6}, {"stratum": "simple", "n": 4}],
    "heldout": {"seed": 1013, "episodes": 3, "steps": 20,
                "cells": [{"stratum": "failure", "n": 2}, {"stratum": "no_change", "n": 4},
                          {"stratum": "simple", "n": 3}, {"stratum": "medium", "n": 4}]},
}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("in-env")
    recipe = root / "recipe.json"
    recipe.write_text(json.dumps(RECIPE))
    result = CliRunner().invoke(main, ["train", "data", "--recipe", str(recipe), "--out", str(root / "data"),
                                       "--cutoff", "4096"])
    assert result.exit_code == 0, result.output
    return root / "data"


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_heldout_shares_no_state_call_pair_with_training(written):
    from envsim.construction.pipeline import build_pool

    heldout = _lines(written / "heldout.jsonl")
    training = _lines(written / "tiny_in_env.records.jsonl")
    stats = json.loads((written / "stats.json").read_text())["heldout"]
    assert len(heldout) == 13 == stats["samples"] and stats["shared_with_training"] == 0
    assert not shared_ids(heldout, training)
    # stronger: nothing of the whole training rollout pool (every record the recipe could have sampled)
    pool = build_pool(RECIPE["envs"], 13, 2, 20, "train")
    assert not {r["id"] for r in heldout} & {r["id"] for r in pool}
    assert {r["env"] for r in heldout} <= set(RECIPE["envs"])
    counts = {s: sum(r["stratum"] == s for r in heldout) for s in ("failure", "no_change", "simple", "medium")}
    assert counts == {"failure": 2, "no_change": 4, "simple": 3, "medium": 4}


def test_a_heldout_record_in_the_training_pool_is_refused():
    from envsim.construction.pipeline import build_pool
    from envsim.tokens import get_tokenizer

    block = {**RECIPE["heldout"], "seed": 13, "episodes": 2}          # the training rollout itself
    pool = build_pool(RECIPE["envs"], 13, 2, 20, "train")
    with pytest.raises(Exception) as caught:       # every record is in the pool: the cells cannot be filled
        build_heldout(block, RECIPE["envs"], pool, prompt_mode="mdp-view", prompt_version="3", cutoff=4096,
                      counter=get_tokenizer())
    assert not isinstance(caught.value, HeldoutOverlapError)
    assert "needs" in str(caught.value)


def test_eval_reads_the_heldout_file(written, tmp_path):
    result = CliRunner().invoke(main, ["eval", "--model", "null", "--benchmark", str(written / "heldout.jsonl"),
                                       "--prompt-mode", "mdp-view", "--prompt-version", "3",
                                       "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["scored"] == 13


def test_shipped_in_env_recipe_uses_training_environments_only():
    recipe = load_recipe("in-env")
    training = set(training_envs([e.id for e in list_envs() if e.builtin], "v1"))
    assert recipe["envs"] and set(recipe["envs"]) <= training
    cells = {c["stratum"]: c["n"] for c in recipe["heldout"]["cells"]}
    assert cells == {"failure": 5, "no_change": 20, "simple": 13, "medium": 50, "difficult": 12}
    assert recipe["heldout"]["seed"] != recipe["rollout"]["seed"]


def test_recipe_envs_outside_the_training_split_are_refused(tmp_path):
    test_env = next(e.id for e in list_envs() if e.builtin and e.id not in
                    set(training_envs([x.id for x in list_envs() if x.builtin], "v1")))
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({**RECIPE, "envs": [test_env]}))
    result = CliRunner().invoke(main, ["train", "data", "--recipe", str(recipe), "--out", str(tmp_path / "d")])
    assert result.exit_code != 0

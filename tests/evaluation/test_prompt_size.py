"""``envsim eval`` warns before a run whose whole-state prompts are large when a view prompt mode exists (issue 43)."""

from __future__ import annotations

import re

from click.testing import CliRunner

from envsim.cli import main
from envsim.construction.cow_labelling import RecordMaker, label_calls
from envsim.construction.pipeline import write_jsonl
from envsim.construction.state_explorer import StateExplorer
from envsim.envs.registry import get_env
from envsim.envs.sandbox import trust_module

SMALL_SHOP = "tests.fixtures.shopdb.small:SmallShopEnv"


def _records(calls: int = 6) -> list[dict]:
    trust_module("tests.fixtures.shopdb.small")
    shop = get_env(SMALL_SHOP)
    explorer, state = StateExplorer(8), shop.sample_state(0)
    actions = []
    for call in label_calls(shop, state, (explorer.next_action(shop, state) for _ in range(calls))):
        actions.append(call)
    maker = RecordMaker(shop, "test")
    return [maker.record(c) for c in actions]


def _inflated(record: dict) -> dict:
    """The record with an archive no tool reads beside its state (about 200,000 characters more in both states)."""
    archive = {f"A{i:04d}": {"note": f"archived ticket {i} " + "lorem ipsum dolor sit amet " * 12} for i in range(600)}
    return {**record, "state": {**record["state"], "archive": archive},
            "next_state": {**record["next_state"], "archive": archive}}


def _eval(tmp_path, bench, mode: str, name: str):
    args = ["eval", "--model", "null", "--benchmark", str(bench), "--prompt-mode", mode, "--run-dir",
            str(tmp_path / name), "--env-module", "tests.fixtures.shopdb.small", "--no-progress"]
    if mode == "mdp":
        args += ["--prompt-version", "2"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return result


def test_eval_warns_before_a_run_of_large_full_state_prompts_and_names_the_view_mode(tmp_path):
    records = _records()
    large, small = tmp_path / "large.jsonl", tmp_path / "small.jsonl"
    write_jsonl([_inflated(r) for r in records], large)
    write_jsonl(records, small)
    result = _eval(tmp_path, large, "mdp", "large")
    warning = next(line for line in result.stderr.splitlines() if line.startswith("warning: large prompts"))
    assert "6 of 6 samples, --prompt-mode mdp" in warning
    assert "--prompt-mode mdp-view --prompt-version 3 shows each call's verified state view" in warning
    full, view = (int(n.replace(",", "")) for n in re.findall(r"p95 ([\d,]+)", warning))
    assert full > 32_768 > 5 * view
    assert result.output.index("warning: large prompts") < result.output.index("FM")   # before the run's figures
    assert "large prompts" not in _eval(tmp_path, large, "mdp-view", "view").stderr      # the view mode: no warning
    assert "large prompts" not in _eval(tmp_path, small, "mdp", "small").stderr          # small prompts: none

"""``benchmarks/real_model_cpu.py``'s budget: before SFT, a time check projects the sequence; over the budget, SFT
is not started and the script exits 3 (``--over-budget`` starts it anyway). The script's time check itself
(``envsim train sft --time-check``) is tested in test_sft_cpu.py; here it is replaced by its file."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.training.conftest import load_benchmark

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "real_model_cpu.py"


@pytest.fixture(scope="module")
def script():
    return load_benchmark("real_model_cpu")


def arguments(work: Path, **changes) -> argparse.Namespace:
    values = {"work": work, "phases": ["fetch", "data", "sft", "null", "sft-eval"], "sft_lr": 1e-3, "sft_epochs": 10.0,
              "sft_batch": 1, "freeze_layers": 8, "sft_threads": 2, "time_check": 8, "budget_min": 150.0,
              "over_budget": False, "json": None, "recipe": "in-env", "sft_prompt_grad": "full", "cutoff": 2048}
    values.update(changes)
    return argparse.Namespace(**values)


def fake_time_check(work: Path, total_s: float):
    """A stand-in for the time-check command: writes the file it writes, with ``total_s`` projected."""
    def run(_work, phase, command, _env):
        assert phase == "sft-time-check" and command[-2:] == ["--time-check", "8"]
        (work / "sft").mkdir(parents=True, exist_ok=True)
        (work / "sft" / "time_check.json").write_text(json.dumps({
            "measured": {"samples": 8, "precision": "fp32"}, "projected": {"total_s": total_s}}))
        return 0
    return run


def test_the_other_waves_last_as_long_as_their_longest_lanes(script):
    walls = {"zeroshot-json": 100.0, "null": 1.0, "rl": 50.0, "sft-eval": 80.0, "zeroshot-json-in-env": 90.0,
             "null-in-env": 1.0, "sft-eval-in-env": 60.0, "curve": 120.0, "rl-eval": 70.0, "rl-eval-in-env": 40.0,
             "sft": 5000.0, "fetch": 20.0, "data": 10.0}
    chosen = list(walls)
    # the evals' wave: the lanes' own phases 100 + 1 + 80 + 70 = 251 and 90 + 1 + 50 + 60 + 40 = 241, the shared
    # curve fills the shorter first: (251 + 241 + 120) / 2 = 306; fetch, data, sft skipped
    assert script.waves_wall(walls, chosen, skip=("fetch", "data", "sft")) == pytest.approx(306.0)
    # a shared phase never makes a lane shorter than its own phases: max(70, (70 + 0 + 120) / 2) = 95 ...
    assert script.waves_wall(walls, ["curve", "rl-eval"], skip=("sft",)) == pytest.approx(95.0)
    # ... and max(251, (251 + 0 + 120) / 2) = 251
    assert script.waves_wall(walls, ["zeroshot-json", "null", "sft-eval", "rl-eval", "curve"]) == pytest.approx(251.0)
    shipped, started = script.reference_phases()
    assert shipped and started                # docs/real-model.json names the run its phase times come from


def test_over_budget_stops_before_sft_and_over_budget_flag_goes_on(script, tmp_path, monkeypatch):
    monkeypatch.setattr(script, "reference_phases", lambda: ({"sft-eval": 600.0, "null": 1.0}, "2026-11-28 17:57"))
    monkeypatch.setattr(script, "run_logged", fake_time_check(tmp_path, 150 * 60.0))
    assert script.budget_check(arguments(tmp_path), {}) == 3
    verdict = json.loads((tmp_path / "budget.json").read_text())
    assert verdict["over_budget"] and verdict["total_projected_s"] == pytest.approx(9601.0)      # 150 min + sft-eval and null in one lane
    assert "another run's measurement" in verdict["rest_source"]
    assert script.budget_check(arguments(tmp_path, over_budget=True), {}) == 0
    assert script.budget_check(arguments(tmp_path, budget_min=161.0), {}) == 0
    assert not json.loads((tmp_path / "budget.json").read_text())["over_budget"]


def test_the_sft_and_its_time_check_train_as_prompt_grad_says(script, tmp_path):
    for mode in ("full", "none"):
        command = script.sft_command(arguments(tmp_path, sft_prompt_grad=mode))
        assert command[command.index("--prompt-grad") + 1] == mode


def test_a_failed_time_check_stops_the_sequence_and_a_finished_sft_needs_none(script, tmp_path, monkeypatch):
    monkeypatch.setattr(script, "run_logged", lambda *a: 2)
    assert script.budget_check(arguments(tmp_path), {}) == 2
    assert script.budget_check(arguments(tmp_path, time_check=0), {}) == 0
    (tmp_path / "sft" / "checkpoints").mkdir(parents=True)
    (tmp_path / "sft" / "checkpoints" / "model.safetensors").write_bytes(b"")
    assert script.budget_check(arguments(tmp_path), {}) == 0


def test_the_sequence_ends_at_the_budget_with_the_phases_before_it_run(script, tmp_path, monkeypatch):
    ran: list[str] = []
    monkeypatch.setattr(script, "phase_runner", lambda args, env: {p: (lambda p=p: ran.append(p) or 0)
                                                                   for p in script.PHASES})
    monkeypatch.setattr(script, "budget_check", lambda args, env: 3)
    monkeypatch.setattr(script, "write_figures", lambda work, json_path: {})
    assert script.run_waves(arguments(tmp_path)) == 3
    assert ran == ["fetch", "data"]


def test_the_figures_carry_the_budget_check(script, tmp_path, monkeypatch):
    monkeypatch.setattr(script, "reference_phases", lambda: ({}, ""))
    monkeypatch.setattr(script, "run_logged", fake_time_check(tmp_path, 60.0))
    assert script.budget_check(arguments(tmp_path), {}) == 0
    budget = script.collect_figures(tmp_path)["budget"]
    assert budget["total_projected_s"] == 60.0 and budget["rest_source"].startswith("none")


def test_a_failed_phase_ends_its_lane_and_the_sequence_exits_1(script, tmp_path, monkeypatch, capsys):
    ran: list[str] = []

    def runner(phase: str):
        return lambda: ran.append(phase) or (2 if phase == "zeroshot-json" else 0)

    monkeypatch.setattr(script, "phase_runner", lambda args, env: {p: runner(p) for p in script.PHASES})
    monkeypatch.setattr(script, "budget_check", lambda args, env: 0)
    monkeypatch.setattr(script, "write_figures", lambda work, json_path: {})
    phases = ["fetch", "data", "sft", "zeroshot-json", "null", "sft-eval", "rl", "rl-eval", "zeroshot-json-in-env",
              "rl-eval-in-env"]
    assert script.run_waves(arguments(tmp_path, phases=phases)) == 1
    assert not {"null", "sft-eval", "rl-eval"} & set(ran)   # its own lane stops ...
    assert {"zeroshot-json-in-env", "rl", "rl-eval-in-env"} <= set(ran)   # ... the other goes on
    assert "FAILED phases: zeroshot-json (exit 2)" in capsys.readouterr().out


def test_the_in_env_grpo_eval_waits_for_grpo_from_the_other_lane(script, tmp_path, monkeypatch):
    ran: list[str] = []

    def runner(phase: str):
        def run() -> int:
            if phase == "rl":
                time.sleep(0.3)   # the other lane reaches its GRPO eval long before this ends
            ran.append(phase)
            return 0
        return run

    monkeypatch.setattr(script, "phase_runner", lambda args, env: {p: runner(p) for p in script.PHASES})
    monkeypatch.setattr(script, "write_figures", lambda work, json_path: {})
    assert script.run_waves(arguments(tmp_path, phases=["rl", "rl-eval", "null-in-env", "rl-eval-in-env"])) == 0
    assert ran.index("rl") < ran.index("rl-eval-in-env") and ran.index("rl") < ran.index("rl-eval")
    assert script.run_waves(arguments(tmp_path, phases=["null-in-env", "rl-eval-in-env"])) == 0  # rl not asked for


def test_both_lanes_take_the_curves_checkpoints_one_at_a_time_each_once(script, tmp_path, monkeypatch):
    """The learning curve sits in both lanes: each lane that reaches it takes the next checkpoint no lane has
    taken, so the two checkpoints are evaluated side by side, each once; a failed one ends its lane's curve."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "stats.json").write_text(json.dumps({"samples": 10}))
    served: list[tuple[str, float]] = []

    def serve_and_eval(work, phase, model, run_dir, *args, **kwargs):
        assert phase == "curve" and kwargs["log_name"] == model.name.replace("checkpoint", "curve")   # own logs
        served.append((model.name, time.monotonic()))
        time.sleep(0.3)
        return 4 if model.name == "checkpoint-70" and failing else 0

    monkeypatch.setattr(script, "serve_and_eval", serve_and_eval)
    monkeypatch.setattr(script, "write_figures", lambda work, json_path: {})
    monkeypatch.setattr(script, "logged_options", lambda data: [])
    failing = False
    args = arguments(tmp_path, phases=["curve"], sft_epochs=10.0)
    assert script.run_waves(args) == 0
    assert sorted(name for name, _ in served) == ["checkpoint-30", "checkpoint-70"]   # a third, two thirds; once
    assert abs(served[0][1] - served[1][1]) < 0.25   # side by side, not one after the other
    served.clear()
    failing = True
    assert script.run_waves(args) == 1
    assert sorted(name for name, _ in served) == ["checkpoint-30", "checkpoint-70"]


def test_a_shared_phases_part_logs_to_its_own_file_and_is_recorded_under_the_phase(script, tmp_path):
    code = script.run_logged(tmp_path, "curve", [sys.executable, "-c", "print('part 30')"], {}, "curve-30")
    assert code == 0 and (tmp_path / "curve-30.log").read_text() == "part 30\n"
    assert not (tmp_path / "curve.log").exists()
    assert [r["phase"] for r in script.recorded_commands(tmp_path)] == ["curve"]


@pytest.mark.parametrize("order, trained", [("op-first", "json-schema"), ("path-first", "json-schema-path-first"),
                                            (None, "json-schema")])
def test_trained_rows_decode_in_the_key_order_of_their_sft_data(script, tmp_path, monkeypatch, order, trained):
    """A model trained on path-first targets is served under the path-first schema (GRPO's samples, its evals and
    the learning curve); the zero-shot rows keep ``json-schema``. No stats.json (data not written): op-first."""
    data = tmp_path / "data"
    data.mkdir()
    if order:
        (data / "stats.json").write_text(json.dumps({"patch_key_order": order, "samples": 9}))
    (data / "in_env.records.jsonl").write_text("")
    for folder in ("sft/checkpoints", "model"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "model.safetensors").write_bytes(b"")
    served: dict[str, str] = {}
    trained_rows: dict[str, bool] = {}
    monkeypatch.setattr(script, "serve_and_eval", lambda work, phase, model, run_dir, kind, *rest, trained=False:
                        served.__setitem__(phase, kind) or trained_rows.__setitem__(phase, trained) or 0)
    commands: dict[str, list[str]] = {}
    monkeypatch.setattr(script, "run_logged",
                        lambda work, phase, command, env, log_name=None: commands.__setitem__(phase, command) or 0)
    runner = script.phase_runner(arguments(tmp_path, max_tokens=64, rl_generations=4, rl_steps=1, rl_lr=1e-5,
                                           quantize="f16", wheel=None), {})
    for phase in ("zeroshot-json", "zeroshot-json-in-env", "sft-eval", "sft-eval-in-env", "rl"):
        assert runner[phase]() == 0
    assert served == {"zeroshot-json": "json-schema", "zeroshot-json-in-env": "json-schema",
                      "sft-eval": trained, "sft-eval-in-env": trained}
    assert trained_rows == {"zeroshot-json": False, "zeroshot-json-in-env": False, "sft-eval": True,
                            "sft-eval-in-env": True}
    rl = commands["rl"]
    assert rl[rl.index("--response-format") + 1] == trained
    assert script.trained_format(data) == trained


def test_the_data_phase_records_its_recipe_and_a_work_keeps_to_one(script, tmp_path, monkeypatch):
    """``--recipe`` takes a recipe file (the in-env one with tested replaces here); the figures say which recipe
    and target form the rows come from, and a WORK written from one recipe refuses another."""
    from envsim.training.data import load_recipe

    variant = tmp_path / "in-env-tests.json"
    variant.write_text(json.dumps({**load_recipe("in-env"), "replace_tests": "shown"}))
    commands: list[list[str]] = []

    def fake_data(work, phase, command, _env):
        commands.append(command)
        (work / "data").mkdir(parents=True)
        (work / "data" / "stats.json").write_text(json.dumps({"samples": 3, "replace_tests": "shown"}))
        return 0

    monkeypatch.setattr(script, "run_logged", fake_data)
    work = tmp_path / "run"
    assert script.phase_runner(arguments(work, recipe=str(variant)), {})["data"]() == 0
    assert commands[0][commands[0].index("--recipe") + 1] == str(variant)
    facts = script.heldout_facts(work)
    assert facts["recipe"] == str(variant) and facts["replace_tests"] == "shown"
    assert script.phase_runner(arguments(work, recipe=str(variant)), {})["data"]() == 0      # kept, not rewritten
    assert script.phase_runner(arguments(work, recipe="in-env"), {})["data"]() == 2
    assert len(commands) == 1


def test_a_work_from_before_recipes_were_recorded_counts_as_the_shipped_in_env(script, tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "stats.json").write_text(json.dumps({"samples": 3}))
    monkeypatch.setattr(script, "run_logged", lambda *a: pytest.fail("the kept data is rewritten"))
    assert script.phase_runner(arguments(tmp_path, recipe="in-env"), {})["data"]() == 0
    assert script.heldout_facts(tmp_path)["recipe"] == "in-env"
    assert script.heldout_facts(tmp_path)["replace_tests"] == "none"
    assert script.heldout_facts(tmp_path)["patch_op_order"] == "stored"


@pytest.mark.parametrize("content, message", [(None, "No such file"), ("{not json", "Expecting"),
                                              ('{"name": "x", "cells": []}', "no heldout block")])
def test_an_unreadable_recipe_is_refused_before_any_phase(content, message, tmp_path):
    recipe = tmp_path / "recipe.json"
    if content is not None:
        recipe.write_text(content)
    result = subprocess.run([sys.executable, str(SCRIPT), "--work", str(tmp_path / "w"), "--recipe", str(recipe)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and message in result.stderr, result.stderr[-2000:]
    assert not (tmp_path / "w").exists()


def test_a_recipe_that_lists_logged_calls_has_its_trained_models_asked_with_them(script, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    assert script.logged_options(data) == []  # no stats.json yet
    (data / "stats.json").write_text(json.dumps({"logged_examples": 0}))
    assert script.logged_options(data) == []
    (data / "stats.json").write_text(json.dumps({"logged_examples": 3}))
    assert script.logged_options(data) == ["--logged-calls", str(data), "--logged-k", "3"]
    args = arguments(tmp_path, eval_limit=100, max_tokens=384, eval_extra="")
    command = script.eval_command("m", tmp_path / "run", "json-schema", args, "http://127.0.0.1:1/v1",
                                  data / "heldout.jsonl", script.logged_options(data))
    at = command.index("--logged-calls")
    assert command[at:at + 4] == ["--logged-calls", str(data), "--logged-k", "3"]
    assert "--logged-calls" not in script.eval_command("null", tmp_path / "n", "free", args)


@pytest.mark.parametrize("flag", [False, True])
def test_trained_models_are_served_copying_tested_values_when_asked_and_a_run_is_not_resumed_the_other_way(
        script, tmp_path, monkeypatch, flag):
    """``--copy-tested-values`` serves the trained models (not the zero-shot ones) with ``envsim serve
    --copy-tested-values``; the figures say how each row was served; a begun eval resumed the other way is refused."""
    started: list[list[str]] = []

    class Server:
        pid, stdout = 0, ["converting ...\n", "serving m at http://127.0.0.1:1/v1\n"]

    monkeypatch.setattr(script.subprocess, "Popen", lambda command, **kw: started.append(command) or Server())
    monkeypatch.setattr(script.os, "killpg", lambda pid, sig: None)
    monkeypatch.setattr(script, "wait_measured", lambda process: (0, 0.5))
    monkeypatch.setattr(script, "run_logged", lambda work, phase, command, env, log_name=None: 0)
    args = arguments(tmp_path, eval_limit=100, max_tokens=384, eval_extra="", quantize="f16",
                     copy_tested_values=flag)
    for phase, trained in (("zeroshot-json", False), ("sft-eval", True)):
        assert script.serve_and_eval(tmp_path, phase, Path("m"), tmp_path / phase, "json-schema", args, {},
                                     trained=trained) == 0
    assert ["--copy-tested-values" in c for c in started] == [False, flag]
    assert script.served_copying(tmp_path, "sft-eval") == {flag} and script.served_copying(tmp_path, "rl-eval") == set()
    (tmp_path / "sft-eval").mkdir()
    (tmp_path / "sft-eval" / "results.jsonl").write_text('{"id": "a"}\n')
    other = arguments(tmp_path, eval_limit=100, max_tokens=384, eval_extra="", quantize="f16",
                      copy_tested_values=not flag)
    assert script.serve_and_eval(tmp_path, "sft-eval", Path("m"), tmp_path / "sft-eval", "json-schema", other, {},
                                 trained=True) == 2
    assert len(started) == 2  # refused before a server started

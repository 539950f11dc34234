"""RL rewards come from the evaluator's scorer; RL settings, config files and the CLI dry run."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.construction.pipeline import build_pool, write_jsonl
from envsim.construction.splits import read_test_envs, training_envs
from envsim.envs.registry import list_envs
from envsim.evaluation.prompting.prompts import target_answer
from envsim.training.rewards import (COMPONENTS, RewardWeights, completion_text, reward_function, reward_functions,
                                     score_completion, total_reward)
from envsim.training.rl import RLSettings, grpo_arguments, launch_command, read_records, rl_rows, write_rl_files

NULL_ANSWER = json.dumps({"observation": {"success": True}, "patch": []})


def test_gold_answer_earns_every_component(small_records):
    weights = RewardWeights(cm=1.0, fm=0.5, format=0.25, partial=0.5)
    for record in small_records:
        assert total_reward(record, target_answer(record), weights) == pytest.approx(2.25)
        assert total_reward(json.dumps(record), [{"role": "assistant", "content": target_answer(record)}],
                            weights) == pytest.approx(2.25)


def test_null_answer_earns_cm_only_where_nothing_changes(small_records):
    for record in small_records:
        score = score_completion(record, NULL_ANSWER)
        assert score.parsed
        assert score.cm == (record["stratum"] in ("failure", "no_change"))
        assert score.partial == (1.0 if score.cm and score.fm else score.partial)
        expected = 0.2 + float(score.cm) + float(score.fm) + score.partial
        assert total_reward(record, NULL_ANSWER, RewardWeights()) == pytest.approx(expected)


@pytest.mark.parametrize("completion", ["", "no json here", "{" * 5000, None, 17, [{"content": None}],
                                        '{"observation": 1, "patch": [{"op": "explode"}]}',
                                        json.dumps({"observation": 1, "patch": [{"op": "copy", "from": "", "path": "/x"}] * 60})])
def test_hostile_completions_score_zero_without_raising(small_records, completion):
    record = small_records[0]
    score = score_completion(record, completion)
    assert not score.cm and not score.fm
    assert total_reward(record, completion, RewardWeights(format=0.0)) == 0.0


def test_completion_text_forms():
    assert completion_text("a") == "a"
    assert completion_text([{"role": "assistant", "content": "x"}, {"content": "y"}]) == "xy"
    assert completion_text({"content": "z"}) == "z"
    assert completion_text(3) == ""


def test_trl_reward_functions_match_the_scorer_and_log(tmp_path, small_records):
    log = tmp_path / "completions.jsonl"
    functions = reward_functions(log)
    assert [f.__name__ for f in functions] == [f"envsim_{c}" for c in COMPONENTS]
    records = [json.dumps(r, sort_keys=True) for r in small_records]
    completions = [target_answer(r) if i % 2 else NULL_ANSWER for i, r in enumerate(small_records)]

    class State:
        global_step = 7

    values = {f.__name__: f(completions=completions, record=records, prompts=None, trainer_state=State())
              for f in functions}
    for i, record in enumerate(small_records):
        score = score_completion(record, completions[i])
        assert values["envsim_cm"][i] == float(score.cm) and values["envsim_fm"][i] == float(score.fm)
        assert values["envsim_format"][i] == 1.0
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == len(small_records)                  # only the first function logs
    assert {r["step"] for r in rows} == {7}
    assert [r["cm"] for r in rows] == values["envsim_cm"]
    assert rows[1]["record_id"] == small_records[1]["id"] and rows[1]["text"] == completions[1]
    with pytest.raises(ValueError, match="unknown reward component"):
        reward_function("style")


def _training_records(tmp_path):
    env = training_envs([e.id for e in list_envs() if e.builtin])[0]
    path = tmp_path / "prompts.jsonl"
    write_jsonl(build_pool([env], seed=1, episodes=1, steps=12, split="train"), path)
    return path


def test_settings_checks_and_grpo_arguments(tmp_path):
    settings = RLSettings(model="/m", records=tmp_path / "r.jsonl", output_dir=tmp_path / "out",
                          weights=RewardWeights(cm=2.0, fm=1.0, format=0.1), num_generations=4, per_device_batch=8)
    settings.check()
    args = grpo_arguments(settings)
    assert args["reward_weights"] == [0.1, 1.0, 2.0, 1.0] and args["num_generations"] == 4
    assert args["max_prompt_length"] is None and args["bf16"] and not args["use_vllm"]
    assert RLSettings.from_json(json.loads(json.dumps(settings.to_json()))) == settings
    for bad, message in [({"num_generations": 1}, "at least 2"), ({"per_device_batch": 6}, "multiple"),
                         ({"weights": RewardWeights(0, 0, 0, 0)}, "zero"), ({"prompt_mode": "x"}, "prompt mode")]:
        with pytest.raises(ValueError, match=message):
            RLSettings(**{**settings.__dict__, **bad}).check()
    vllm = grpo_arguments(RLSettings(**{**settings.__dict__, "use_vllm": True}))
    assert vllm["use_vllm"] and vllm["vllm_mode"] == "colocate"
    config, ds = write_rl_files(RLSettings(**{**settings.__dict__, "gpus": 4}), tmp_path / "run")
    assert json.loads(ds.read_text())["zero_optimization"]["stage"] == 3
    command = launch_command(config, 4, ds)
    assert command[1:4] == ["launch", "--num_processes", "4"] and "--deepspeed_config_file" in command
    assert command[-3:] == ["-m", "envsim.training.rl", str(config)]


def test_rows_hold_the_evaluation_prompt_and_the_record(tmp_path):
    records = read_records(_training_records(tmp_path))
    rows = rl_rows(records, "mdp")
    assert rows[0]["prompt"][0]["role"] == "system" and rows[0]["prompt"][1]["role"] == "user"
    assert json.loads(rows[0]["record"]) == records[0]


def test_rl_prompts_follow_the_sft_data_prompt_version(tmp_path):
    from envsim.evaluation.prompting.prompts import build_messages

    records = read_records(_training_records(tmp_path))
    assert rl_rows(records, "mdp")[0]["prompt"] == build_messages(records[0], "mdp", version="2")
    assert rl_rows(records, "mdp", "1")[0]["prompt"] == build_messages(records[0], "mdp", version="1")
    assert rl_rows(records, "mdp", "1")[0]["prompt"] != rl_rows(records, "mdp", "2")[0]["prompt"]
    dry = CliRunner().invoke(main, ["train", "rl", "--model", "/m", "--records", str(_training_records(tmp_path)),
                                    "--out", str(tmp_path / "run"), "--prompt-version", "1", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert json.loads((tmp_path / "run" / "rl_config.json").read_text())["settings"]["prompt_version"] == "1"


def test_rl_refuses_held_out_environments_and_bad_files(tmp_path):
    from envsim.benchmark import benchmark_path

    leak = CliRunner().invoke(main, ["train", "rl", "--model", "/m", "--records", str(benchmark_path("v1")),
                                     "--out", str(tmp_path / "run"), "--dry-run"])
    assert leak.exit_code != 0 and "held-out test environments in training data" in leak.output
    assert not (tmp_path / "run" / "rl_config.json").exists()
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    result = CliRunner().invoke(main, ["train", "rl", "--model", "/m", "--records", str(empty), "--out",
                                       str(tmp_path / "run"), "--dry-run"])
    assert result.exit_code != 0 and "no records" in result.output
    sft_file = tmp_path / "sft.jsonl"
    sft_file.write_text(json.dumps({"messages": []}) + "\n")
    result = CliRunner().invoke(main, ["train", "rl", "--model", "/m", "--records", str(sft_file), "--out",
                                       str(tmp_path / "run"), "--dry-run"])
    assert result.exit_code != 0 and "not a benchmark-format record file" in result.output


def test_rl_dry_run_writes_config_and_command(tmp_path):
    records = _training_records(tmp_path)
    result = CliRunner().invoke(main, ["train", "rl", "--model", "/models/sft", "--records", str(records),
                                       "--out", str(tmp_path / "run"), "--cm-weight", "2", "--num-generations", "4",
                                       "--dry-run"])
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "run" / "rl_config.json").read_text())
    assert config["settings"]["weights"] == {"cm": 2.0, "fm": 1.0, "format": 0.2, "partial": 1.0}
    assert config["grpo"]["reward_weights"] == [0.2, 1.0, 2.0, 1.0]
    assert config["settings"]["output_dir"] == str((tmp_path / "run" / "policy").resolve())
    assert result.output.rstrip().endswith(f"-m envsim.training.rl {tmp_path / 'run' / 'rl_config.json'}")
    bad = CliRunner().invoke(main, ["train", "rl", "--model", "/m", "--records", str(records), "--out",
                                    str(tmp_path / "r2"), "--num-generations", "3", "--dry-run"])
    assert bad.exit_code != 0 and "multiple of --num-generations" in bad.output


def test_rl_without_trl_says_which_extra_is_missing(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "trl" else real(name, *a))
    result = CliRunner().invoke(main, ["train", "rl", "--model", "/m", "--records", str(_training_records(tmp_path)),
                                       "--out", str(tmp_path / "run"), "--device", "cpu"])
    assert result.exit_code != 0 and "needs the [train] extra (missing: trl" in result.output
    assert 'pip install -e ".[train]"' in result.output

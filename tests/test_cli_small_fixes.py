"""``envsim train sft|rl`` take back the config files of a failed launch; ``envsim envs list`` marks held-out
environments. Launchers are stand-in shell scripts on PATH; no [train] extra needed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.construction.pipeline import build_pool, write_jsonl
from envsim.construction.splits import read_test_envs, training_envs
from envsim.envs.registry import EnvEntry, list_envs


@pytest.fixture(autouse=True)
def no_outer_slurm(monkeypatch):
    """A runner inside a Slurm job must not turn these runs into multi-node ones."""
    for name in ["SLURM_NNODES", "SLURM_NODEID", "SLURM_JOB_NODELIST", "SLURM_GPUS_ON_NODE", "SLURM_JOB_NUM_NODES",
                 "MASTER_ADDR", "MASTER_PORT"]:
        monkeypatch.delenv(name, raising=False)


def _fake_launcher(tmp_path: Path, monkeypatch, name: str, body: str) -> None:
    """Put a ``name`` shell script first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / name
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def _sft_data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "dataset_info.json").write_text(json.dumps({"tiny": {"file_name": "tiny.jsonl"}}))
    return data


def _sft(tmp_path: Path, run: Path, *extra: str):
    return CliRunner().invoke(main, ["train", "sft", "--model", "/m", "--data", str(tmp_path / "data"),
                                     "--out", str(run), *extra])


# ---------------------------------------------------------------- train sft

def test_sft_without_llamafactory_writes_nothing(tmp_path, monkeypatch):
    _sft_data(tmp_path)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    run = tmp_path / "run"
    result = _sft(tmp_path, run)
    assert result.exit_code != 0 and "llamafactory-cli not found" in result.output
    assert 'pip install -e ".[train]"' in result.output  # says what to install
    assert not run.exists()
    assert _sft(tmp_path, run, "--dry-run").exit_code == 0       # a dry run needs no launcher and writes the YAML
    assert (run / "sft.yaml").exists()


def test_sft_launch_failure_removes_the_files_and_new_directories(tmp_path, monkeypatch):
    _sft_data(tmp_path)
    _fake_launcher(tmp_path, monkeypatch, "llamafactory-cli", "exit 3")
    run = tmp_path / "runs" / "sft"
    result = _sft(tmp_path, run, "--gpus", "2")
    assert result.exit_code == 3, result.output                  # the launcher's code
    assert "llamafactory-cli exited with 3" in result.output
    assert f"removed {run / 'sft.yaml'}, {run / 'ds_z3.json'} written by this command" in result.output
    assert "--dry-run" in result.output
    assert not (tmp_path / "runs").exists()                      # run dir and its new parent, both empty


def test_sft_launch_failure_keeps_files_from_an_earlier_run(tmp_path, monkeypatch):
    _sft_data(tmp_path)
    run = tmp_path / "run"
    assert _sft(tmp_path, run, "--dry-run").exit_code == 0
    (run / "notes.txt").write_text("mine\n")
    _fake_launcher(tmp_path, monkeypatch, "llamafactory-cli", "exit 1")
    result = _sft(tmp_path, run, "--gpus", "2")
    assert result.exit_code == 1
    assert (run / "sft.yaml").exists() and (run / "notes.txt").exists()
    assert not (run / "ds_z3.json").exists()                     # new with --gpus 2: this command's
    assert f"kept {run / 'sft.yaml'} (there before this command)" in result.output


def test_sft_launch_failure_after_checkpoints_keeps_the_yaml(tmp_path, monkeypatch):
    _sft_data(tmp_path)
    # a partial run: the launcher writes a checkpoint next to its config ($2), then fails
    _fake_launcher(tmp_path, monkeypatch, "llamafactory-cli",
                   '[ -n "$2" ] && mkdir -p "$(dirname "$2")/checkpoints/checkpoint-5" && exit 1')
    run = tmp_path / "run"
    result = _sft(tmp_path, run)
    assert result.exit_code == 1
    assert (run / "sft.yaml").exists() and (run / "checkpoints" / "checkpoint-5").is_dir()
    assert f"kept {run / 'sft.yaml'}: {run / 'checkpoints'} has content" in result.output


def test_sft_launch_success_keeps_the_yaml(tmp_path, monkeypatch):
    _sft_data(tmp_path)
    _fake_launcher(tmp_path, monkeypatch, "llamafactory-cli", '[ "$1" = train ] && [ -f "$2" ]')
    run = tmp_path / "run"
    result = _sft(tmp_path, run)
    assert result.exit_code == 0, result.output
    assert (run / "sft.yaml").exists()


def test_sft_success_marks_every_checkpoint_with_the_datas_prompt_settings(tmp_path, monkeypatch):
    """LLaMA-Factory's checkpoints say how they must be prompted, as the CPU loop's do: ``serve`` reads it."""
    from envsim.cli.serve_commands import training_settings

    _sft_data(tmp_path)
    (tmp_path / "data" / "stats.json").write_text(json.dumps({"prompt_mode": "mdp-view", "prompt_version": "3"}))
    # the stand-in trainer writes weights' config.json into the output folder and one intermediate save
    _fake_launcher(tmp_path, monkeypatch, "llamafactory-cli",
                   'out="$(dirname "$2")/checkpoints"; mkdir -p "$out/checkpoint-5" "$out/checkpoint-6"; '
                   'echo {} > "$out/config.json"; echo {} > "$out/checkpoint-5/config.json"')
    run = tmp_path / "run"
    result = _sft(tmp_path, run)
    assert result.exit_code == 0, result.output
    assert "written to 2 checkpoint folder(s)" in result.output
    for folder in (run / "checkpoints", run / "checkpoints" / "checkpoint-5"):
        meta = json.loads((folder / "envsim_training.json").read_text())
        assert meta["prompt_mode"] == "mdp-view" and meta["prompt_version"] == "3" and meta["trainer"] == "llamafactory"
        settings = training_settings(str(folder))
        assert (settings.prompt_mode, settings.prompt_version, settings.notes) == ("mdp-view", "3", [])
    assert not (run / "checkpoints" / "checkpoint-6" / "envsim_training.json").exists()   # no weights there


# ---------------------------------------------------------------- train rl

def _rl(tmp_path: Path, run: Path, *extra: str):
    records = tmp_path / "prompts.jsonl"
    if not records.exists():
        env = training_envs([e.id for e in list_envs() if e.builtin])[0]
        write_jsonl(build_pool([env], seed=1, episodes=1, steps=6, split="train"), records)
    return CliRunner().invoke(main, ["train", "rl", "--model", "/m", "--records", str(records), "--out", str(run),
                                     "--device", "cpu", "--gpus", "2", *extra])


def test_rl_without_the_train_extra_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr("envsim.cli.train_rl_cmd.missing_train_extras", lambda multi_gpu: ["trl"])
    run = tmp_path / "rl"
    result = _rl(tmp_path, run)
    assert result.exit_code != 0 and "missing: trl" in result.output
    assert not run.exists()


def test_rl_launch_failure_removes_the_files(tmp_path, monkeypatch):
    monkeypatch.setattr("envsim.cli.train_rl_cmd.missing_train_extras", lambda multi_gpu: [])
    _fake_launcher(tmp_path, monkeypatch, "accelerate", "exit 2")     # 2 GPUs: accelerate launch
    run = tmp_path / "rl"
    result = _rl(tmp_path, run)
    assert result.exit_code == 2, result.output
    assert "GRPO run exited with 2" in result.output
    assert f"removed {run / 'rl_config.json'}, {run / 'ds_z3.json'} written by this command" in result.output
    assert not run.exists()


def test_rl_launch_failure_keeps_the_config_of_an_existing_policy(tmp_path, monkeypatch):
    monkeypatch.setattr("envsim.cli.train_rl_cmd.missing_train_extras", lambda multi_gpu: [])
    _fake_launcher(tmp_path, monkeypatch, "accelerate", "exit 1")
    run = tmp_path / "rl"
    (run / "policy" / "checkpoint-1").mkdir(parents=True)
    result = _rl(tmp_path, run)
    assert result.exit_code == 1
    assert (run / "rl_config.json").exists() and (run / "ds_z3.json").exists()
    assert f"{run / 'policy'} has content, and they document how it was made" in result.output


# ---------------------------------------------------------------- envs list

def _rows(result) -> dict[str, str]:
    """id -> 'held out' cell of the table (the lines between the header and the blank line)."""
    table = result.output.split("\n\n")[0].splitlines()[1:]
    return {line.split()[0]: line.split()[-1] for line in table}


def test_envs_list_marks_held_out_environments():
    held, trainable = read_test_envs("v1")[0], training_envs([e.id for e in list_envs() if e.builtin], "v1")[0]
    result = CliRunner().invoke(main, ["envs", "list"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].rstrip().endswith("held out")
    rows = _rows(result)
    assert rows[held] == "v1,v2" and rows[trainable] == "-"
    n1, n2 = len(read_test_envs("v1")), len(read_test_envs("v2"))
    assert f"{n1} held out in v1, {n2} in v2; the others may be used for training" in result.output


def test_envs_list_json_has_held_out_versions():
    held, trainable = read_test_envs("v1")[0], training_envs([e.id for e in list_envs() if e.builtin], "v1")[0]
    result = CliRunner().invoke(main, ["envs", "list", "--json"])
    rows = {r["id"]: r for r in map(json.loads, result.output.splitlines())}
    assert rows[held]["held_out"] == ["v1", "v2"] and rows[trainable]["held_out"] == []


def test_envs_list_split_filter_matches_training_data():
    runner = CliRunner()
    training = runner.invoke(main, ["envs", "list", "--split", "training", "--version", "v1", "--json"])
    ids = {json.loads(line)["id"] for line in training.output.splitlines()}
    assert ids == set(training_envs([e.id for e in list_envs() if e.builtin], "v1"))   # what 'train data' uses
    held = runner.invoke(main, ["envs", "list", "--split", "held-out", "--json"])
    ids = {json.loads(line)["id"] for line in held.output.splitlines()}
    assert ids == set(read_test_envs("v1")) | set(read_test_envs("v2"))
    unknown = runner.invoke(main, ["envs", "list", "--version", "v0"])
    assert unknown.exit_code == 2 and "v1, v2" in unknown.output


def test_envs_list_marks_foreign_environments_held_out(monkeypatch):
    import envsim.envs.registry as registry

    builtin = list_envs()[0]
    foreign = EnvEntry("acme/plugin-v1", builtin.domain, builtin.cls, builtin=False)
    monkeypatch.setattr(registry, "list_envs", lambda domain=None: [builtin, foreign])
    runner = CliRunner()
    table = runner.invoke(main, ["envs", "list"])
    assert _rows(table)["acme/plugin-v1"] == "foreign"
    assert "(1 of them foreign: always held out)" in table.output
    rows = {r["id"]: r for r in map(json.loads, runner.invoke(main, ["envs", "list", "--json"]).output.splitlines())}
    assert rows["acme/plugin-v1"]["held_out"] == ["v1", "v2"] and rows["acme/plugin-v1"]["builtin"] is False
    training = runner.invoke(main, ["envs", "list", "--split", "training", "--json"])
    assert "acme/plugin-v1" not in training.output

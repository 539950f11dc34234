"""``envsim serve`` prints eval and simulate commands that carry the served model's prompt settings (from its
``envsim_training.json``), or the defaults with a note that they must match the training data (issue 55, item 3)."""

from __future__ import annotations

import json
import shlex
from types import SimpleNamespace

import click
import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.cli.serve_cmd import _serve_until_stopped
from envsim.cli.serve_commands import TRAINING_FILE, usage_lines

URL = "http://127.0.0.1:8000/v1"


def _commands(lines: list[str]) -> tuple[list[str], list[str]]:
    evaluate = next(line for line in lines if line.startswith("evaluate with: "))
    simulate = next(line for line in lines if line.startswith("simulate with: "))
    return shlex.split(evaluate.split(": ", 1)[1]), shlex.split(simulate.split(": ", 1)[1])


def test_a_checkpoint_with_training_metadata_gets_its_settings_in_both_commands(tmp_path):
    model = tmp_path / "sft out"
    model.mkdir()
    (model / TRAINING_FILE).write_text(json.dumps({"prompt_mode": "mdp-view", "prompt_version": "3",
                                                   "response_format": "json-schema"}))
    lines = usage_lines(str(model), URL)
    assert not [line for line in lines if line.startswith("note:")]
    for command, name in zip(_commands(lines), ("--model", "--simulator")):
        assert command[command.index(name) + 1] == str(model)     # quoted: the path holds a space
        assert command[command.index("--base-url") + 1] == URL
        assert " ".join(command).count("--prompt-mode mdp-view --prompt-version 3 --response-format json-schema") == 1
    gguf = model / "model-f16.gguf"                                  # a .gguf file: the metadata beside it
    assert "--prompt-mode mdp-view" in " ".join(_commands(usage_lines(str(gguf), URL))[0])


@pytest.mark.parametrize("content", [None, "not json", json.dumps({"prompt_mode": "bogus"})])
def test_without_usable_metadata_the_defaults_come_with_a_note(tmp_path, content):
    if content is not None:
        (tmp_path / TRAINING_FILE).write_text(content)
    lines = usage_lines(str(tmp_path), URL)
    evaluate, _ = _commands(lines)
    assert "--prompt-mode" not in evaluate and any("must match the model's training data" in line for line in lines)


@pytest.mark.parametrize("order, printed", [("path-first", "--response-format json-schema-path-first"),
                                            ("op-first", None)])
def test_a_checkpoint_of_path_first_data_is_evaluated_under_the_path_first_schema(tmp_path, order, printed):
    from envsim.training.checkpoint_meta import data_prompt_settings, write_training_file

    data = tmp_path / "data"
    data.mkdir()
    (data / "stats.json").write_text(json.dumps({"prompt_mode": "mdp-view", "prompt_version": "3",
                                                 "patch_key_order": order}))
    write_training_file(tmp_path, data_prompt_settings(data), trainer="cpu-sft")
    evaluate, simulate = _commands(usage_lines(str(tmp_path), URL))
    for command in (evaluate, simulate):
        text = " ".join(command)
        assert "--prompt-mode mdp-view --prompt-version 3" in text
        assert (printed in text) if printed else "--response-format" not in text
    for command in (evaluate, simulate):                             # the printed value is one eval accepts
        main.get_command(click.Context(main), command[1]).make_context(command[1], command[2:])


def test_printed_commands_parse_with_the_real_eval_and_simulate(tmp_path):
    (tmp_path / TRAINING_FILE).write_text(json.dumps({"prompt_mode": "mdp-view", "prompt_version": "3",
                                                      "response_format": "json-schema"}))
    for command in _commands(usage_lines(str(tmp_path), URL)):
        sub = main.get_command(click.Context(main), command[1])
        sub.make_context(command[1], command[2:])                   # every option known, every value valid


def test_serve_prints_the_commands_after_the_serving_line(tmp_path):
    process = SimpleNamespace(poll=lambda: 1, returncode=1)
    server = SimpleNamespace(base_url=URL, process=process, stop=lambda: None)
    (tmp_path / TRAINING_FILE).write_text(json.dumps({"prompt_mode": "mdp-view", "prompt_version": "3"}))

    @click.command()
    def serve() -> None:
        _serve_until_stopped(lambda *args: server, str(tmp_path), "auto", "127.0.0.1", 8000, 1.0, None)

    result = CliRunner().invoke(serve)
    lines = result.output.splitlines()
    assert lines[0] == f"serving {tmp_path} at {URL}"
    assert lines[1] == f"evaluate with: envsim eval --model {tmp_path} --base-url {URL} --prompt-mode mdp-view " \
                       "--prompt-version 3"
    assert lines[2].startswith(f"simulate with: envsim simulate --simulator {tmp_path} --base-url {URL} "
                               "--prompt-mode mdp-view --prompt-version 3 --env ")

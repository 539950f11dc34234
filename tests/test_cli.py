"""The click CLI: every command has --help; envs list/show."""

from __future__ import annotations

import json

from click.testing import CliRunner

from envsim.cli import main


def _commands(group, prefix=()):
    for name, cmd in group.commands.items():
        yield prefix + (name,)
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, prefix + (name,))


def test_every_command_has_help():
    runner = CliRunner()
    for path in [()] + list(_commands(main)):
        result = runner.invoke(main, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.output


def test_envs_list_json_has_id_domain_tools():
    result = CliRunner().invoke(main, ["envs", "list", "--json"])
    assert result.exit_code == 0
    rows = [json.loads(line) for line in result.output.splitlines()]
    store = next(r for r in rows if r["id"] == "online_store-v1")
    assert store["domain"] == "commerce" and "cancel_order" in store["tools"] and "cancel_order" in store["write_tools"]


def test_envs_show_and_unknown_id():
    runner = CliRunner()
    shown = runner.invoke(main, ["envs", "show", "online_store-v1", "--json"])
    info = json.loads(shown.output)
    assert info["id"] == "online_store-v1" and info["sample_state"]["products"]
    missing = runner.invoke(main, ["envs", "show", "online_stor"])
    assert missing.exit_code != 0 and "did you mean online_store-v1" in missing.output


def test_envs_show_cuts_the_state_between_whole_entries_and_says_what_is_left_out():
    runner = CliRunner()
    state = json.loads(runner.invoke(main, ["envs", "show", "loan_servicing-v1", "--json"]).output)["sample_state"]
    assert len(json.dumps(state, indent=2)) > 6000          # too long to print whole
    shown = runner.invoke(main, ["envs", "show", "loan_servicing-v1"])
    assert shown.exit_code == 0, shown.output
    tail = shown.output.split("Sampled state (seed 0):\n", 1)[1].splitlines()
    note = tail[-1]
    preview = json.loads("\n".join(tail[:-1]))              # still valid JSON: whole top-level entries
    assert preview and all(state[key] == value for key, value in preview.items())
    left_out = [key for key in state if key not in preview]
    assert left_out and note.startswith(f"… {len(left_out)} more ") and all(key in note for key in left_out)
    assert "more characters (use --full)" in note
    full = runner.invoke(main, ["envs", "show", "loan_servicing-v1", "--full"])
    assert json.loads(full.output.split("Sampled state (seed 0):\n", 1)[1]) == state

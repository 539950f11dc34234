"""Replay and LLM-agent rollout sources, through envsim construct."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.construction.splits import read_test_envs
from envsim.envs.registry import get_env
from envsim.evaluation.baselines.fake_server import FakeOpenAIServer


def test_replay_labels_a_logged_episode(tmp_path):
    cls = get_env("online_store-v1")
    state = cls.sample_state(0)
    order_id = next(o for o, v in state["orders"].items() if v["status"] in ("placed", "paid"))
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"env": "online_store-v1", "state": state, "actions": [
        {"name": "cancel_order", "arguments": {"order_id": order_id, "reason": "dup"}},
        {"name": "cancel_order", "arguments": {"order_id": order_id, "reason": "again"}},
        {"name": "list_categories", "arguments": {}}]}) + "\n")
    out = tmp_path / "replayed.jsonl"
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--policy", "replay", "--replay-log", str(log),
                                       "--pool", "10", "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = [json.loads(l) for l in out.read_text().splitlines()]
    assert [r["outcome"] for r in records] == ["change", "failure", "no_change"]
    assert records[1]["state"] == records[0]["next_state"]          # actions act on the evolving state


def test_replay_into_training_refuses_held_out_envs(tmp_path):
    held_out = read_test_envs("v1")[0]
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"env": held_out, "seed": 0, "actions": []}) + "\n"
                   + json.dumps({"env": held_out, "seed": 1, "actions": [{"name": "nope", "arguments": {}}]}) + "\n")
    result = CliRunner().invoke(main, ["construct", "--split", "train", "--policy", "replay", "--replay-log", str(log),
                                       "--pool", "10", "--out", str(tmp_path / "x.jsonl")])
    assert result.exit_code != 0 and "held-out test environments" in result.output


@pytest.mark.slow
def test_llm_agent_policy_against_local_server(tmp_path):
    out = tmp_path / "agent.jsonl"
    with FakeOpenAIServer([]) as server:
        result = CliRunner().invoke(main, ["construct", "--split", "test", "--policy", "llm", "--agent-model", "agent",
                                           "--agent-base-url", server.base_url, "--episodes", "1", "--steps", "5",
                                           "--pool", "1000", "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = [json.loads(l) for l in out.read_text().splitlines()]
    assert records and all(r["arg_count"] == 0 for r in records)
    assert len({r["env"] for r in records}) == len(read_test_envs("v1"))

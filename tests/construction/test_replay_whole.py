"""Replaying one's own logged calls (issue 43): every call labelled and written, a bad log refused before any call
runs, a sampling shortfall written with what is missing said, per-tool outcomes, same-kind arguments distinct."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from envsim.benchmark import load
from envsim.cli import main
from envsim.construction.cow_labelling import EpisodeLabeller
from envsim.construction.labelling import sample_id
from envsim.construction.state_explorer import StateExplorer
from envsim.envs.registry import get_env
from envsim.envs.sandbox import trust_module

SMALL_SHOP = "tests.fixtures.shopdb.small:SmallShopEnv"
DESK = "tests.fixtures.ticket_desk:TicketDesk"


def _log(path, tasks: int, calls: int) -> list[list[dict]]:
    """Explorer calls of ``tasks`` tasks from the small shop's initial state; the last task repeats the first's
    first call (same state, same call: one record)."""
    trust_module("tests.fixtures.shopdb.small")
    shop = get_env(SMALL_SHOP)
    logged = []
    for task in range(tasks):
        labeller, policy, actions = EpisodeLabeller(shop, shop.sample_state(0)), StateExplorer(50 + task), []
        for _ in range(calls):
            action = policy.next_action(shop, labeller.state)
            labeller.label(action)
            actions.append(action.to_json())
        logged.append(actions)
    logged.append(logged[0][:1])
    path.write_text("".join(json.dumps({"env": SMALL_SHOP, "actions": a}) + "\n" for a in logged))
    return logged


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_replayed_log_is_labelled_whole(tmp_path):
    log, out = tmp_path / "log.jsonl", tmp_path / "replayed.jsonl"
    logged = _log(log, 3, 12)
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--policy", "replay",
                                                       "--replay-log", str(log), "--env-module", "tests.fixtures.shopdb.small", "--out",
                                                       str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    rows = load(str(out))                                        # states stored once (a 1 MB pool inline), resolved
    assert all("state_ref" in r for r in _rows(out))
    assert len(rows) == 3 * 12                                   # every logged call, the repeated one once
    assert "37 logged calls, 36 records (1 repeat an earlier call on the same state" in result.stderr
    assert [r["action"] for r in rows] == [a for actions in logged[:3] for a in actions]
    shop = get_env(SMALL_SHOP)
    for task in range(3):
        chain = rows[task * 12:(task + 1) * 12]
        assert chain[0]["state"] == shop.sample_state(0)
        assert all(b["state"] == a["next_state"] for a, b in zip(chain, chain[1:]))   # each on the state left
        assert all(r["id"] == sample_id(r["env"], r["state"], r["action"]) for r in chain)
    stats = json.loads(out.with_suffix(".stats.json").read_text())
    assert stats["samples"] == 36 and "shortfall" not in stats


def test_a_bad_log_line_stops_the_replay_before_any_call_is_labelled(tmp_path, monkeypatch):
    import envsim.construction.cow_labelling as cow

    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"env": SMALL_SHOP, "actions": [{"name": "get_user_details",
                                                               "arguments": {"user_id": "x"}}]}) + "\n"
                   + json.dumps({"env": SMALL_SHOP, "actions": "not a list"}) + "\n")
    labelled = []
    real = cow.EpisodeLabeller.label
    monkeypatch.setattr(cow.EpisodeLabeller, "label", lambda self, a: labelled.append(a) or real(self, a))
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--policy", "replay", "--replay-log", str(log),
                                       "--env-module", "tests.fixtures.shopdb.small", "--out", str(tmp_path / "x.jsonl"), "--no-progress"])
    assert result.exit_code != 0 and f"{log}:2:" in result.output and "'actions' must be a list" in result.output
    assert labelled == [] and not (tmp_path / "x.jsonl").exists()


def test_a_sampling_shortfall_writes_what_it_has_and_says_what_is_missing(tmp_path):
    out = tmp_path / "desk.jsonl"
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--env", DESK, "--episodes",
                                                       "2", "--steps", "20", "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    rows, stats = _rows(out), json.loads(out.with_suffix(".stats.json").read_text())
    assert rows and len(rows) == stats["samples"] < 400
    missing = {s["cell"]: s for s in stats["shortfall"]}
    assert missing["no_change args=0"] == {"cell": "no_change args=0", "needed": 40, "got": 0, "missing": 40}
    assert f"warning: wrote {len(rows)} of the 400 records the spec asks for (at most 8 per environment)" \
        in result.stderr and "no_change args=0 0 of 40" in result.stderr and "try more --episodes/--steps" \
        in result.stderr
    # per-tool outcomes over the labelled pool; the tool that never succeeds is named
    tools = stats["tool_outcomes"]["ticket_desk-v1"]
    assert tools["escalate_to_vendor"]["calls"] > 0 and tools["escalate_to_vendor"]["succeeded"] == 0
    assert tools["merge_tickets"]["success_rate"] > 0.5
    assert sum(t["calls"] for t in tools.values()) == int(re.search(r"\(pool (\d+)\)", result.output).group(1))
    assert "ticket_desk-v1: 1 of 3 tools never succeeded: escalate_to_vendor (0 of" in result.stderr
    assert "| escalate_to_vendor |" in out.with_suffix(".stats.md").read_text()


def test_same_kind_parameters_get_distinct_values_unless_the_schema_allows_the_same():
    trust_module("tests.fixtures.ticket_desk")
    desk = get_env(DESK)
    explorer, state = StateExplorer(0), desk.sample_state(0)
    merges, links = [], []
    for _ in range(300):
        action = explorer.next_action(desk, state)
        if action.name == "merge_tickets":
            merges.append(action.arguments["source_ticket_id"] == action.arguments["target_ticket_id"])
        elif action.name == "link_tickets":   # "may be the same ticket": not kept apart
            links.append(action.arguments["from_ticket_id"] == action.arguments["to_ticket_id"])
    assert len(merges) > 50 and not any(merges)
    assert len(links) > 50 and any(links)


@pytest.mark.slow
def test_a_60_record_pool_of_the_160k_character_shop_takes_under_2_mb(tmp_path):
    out = tmp_path / "mid.jsonl"
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--env", "tests.fixtures.shopdb.sized:MidShopEnv",
                                       "--pool", "60", "--episodes", "4", "--steps", "20", "--out", str(out),
                                       "--no-progress"])
    assert result.exit_code == 0, result.output
    rows = _rows(out)
    assert len(rows) == 60 and all("state_ref" in r for r in rows)
    blobs = tmp_path / "mid_states"
    written = out.stat().st_size + sum(p.stat().st_size for p in blobs.iterdir())
    from envsim.construction.stored_states import materialise

    records = materialise(load(str(out)))
    assert 150_000 < len(json.dumps(records[0]["state"], separators=(",", ":"))) < 262_144
    inline = sum(len(json.dumps(r)) for r in records)
    assert written <= 2_000_000 and inline > 10 * written

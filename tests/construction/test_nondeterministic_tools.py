"""A tool that is not deterministic (an id from uuid4) is left out of a test split, named (issue 53, item 6)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.construction.determinism import nondeterministic_tools

HOLDS = "tests.fixtures.flights.holds:HoldingAirlineEnv"


@pytest.mark.slow
def test_records_of_a_tool_that_answers_differently_twice_are_left_out_of_a_test_split(tmp_path):
    out = tmp_path / "holds.jsonl"
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--env", HOLDS, "--pool", "30", "--episodes",
                                       "3", "--steps", "16", "--no-progress", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "left out of the test split, not deterministic: hold_seat (" in result.output
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    assert records and not any(r["tool"] == "hold_seat" for r in records)
    stats = json.loads(out.with_suffix(".stats.json").read_text())
    assert stats["nondeterministic_tools"]["hold_seat"]["not_reproduced"] >= 1
    assert "hold_seat" not in json.dumps(stats["tool_outcomes"])


def test_only_records_not_reproduced_on_the_whole_state_name_a_tool():
    records = [{"tool": "a", "view": {"widening": None, "verified": True}},
               {"tool": "b", "view": {"widening": "state", "verified": False}}, {"tool": "b"}]
    assert nondeterministic_tools(records) == {"b": {"records": 2, "not_reproduced": 1}}


def test_a_replayed_log_leaves_them_out_of_a_test_split_too(tmp_path):
    """Replay is construct too: logged calls of a tool that answers differently when run again are left out of a
    test split and named, as the explorer's are; a train split keeps the log whole."""
    log = tmp_path / "log.jsonl"
    hold = {"name": "hold_seat", "arguments": {"user_id": "chen_dubois_0", "flight_number": "EA100",
                                                "date": "2026-12-01"}}
    lookup = {"name": "get_user_details", "arguments": {"user_id": "dalia_costa_1"}}
    log.write_text(json.dumps({"env": HOLDS, "seed": 0, "actions": [hold, lookup]}) + "\n")
    outputs = {}
    for split in ("test", "train"):
        out = tmp_path / f"{split}.jsonl"
        result = CliRunner().invoke(main, ["construct", "--split", split, "--policy", "replay", "--replay-log",
                                           str(log), "--env-module", "tests.fixtures.flights.holds", "--no-progress",
                                           "--out", str(out)])
        assert result.exit_code == 0, result.output
        outputs[split] = ([json.loads(line)["tool"] for line in out.read_text().splitlines() if line.strip()],
                          result.output)
    assert outputs["test"][0] == ["get_user_details"]
    assert "left out of the test split, not deterministic: hold_seat (" in outputs["test"][1]
    assert sorted(outputs["train"][0]) == ["get_user_details", "hold_seat"]

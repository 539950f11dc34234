"""A tool that is not deterministic (an id from uuid4) is left out of a test split, named (issue 53, item 6)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from envsim.cli import main
from envsim.construction.determinism import nondeterministic_tools

HOLDS = "tests.fixtures.flights.holds:HoldingAirlineEnv"


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

"""The generic explorer on list-shaped collections, paired lists and nested-model parameters (issue 53, item 5)."""

from __future__ import annotations

import pytest

from envsim.construction.state_explorer import StateExplorer, model_fields
from envsim.envs.arguments import argument_error
from envsim.envs.registry import get_env
from envsim.envs.sandbox import trust_target

TELECOM = "tests.fixtures.telecom.wrapper:TelecomEnv"
AIRLINE = "tests.fixtures.flights.wrapper:AirlineEnv"


@pytest.fixture(scope="module")
def telecom():
    trust_target(TELECOM)
    return get_env(TELECOM)


@pytest.fixture(scope="module")
def airline():
    trust_target(AIRLINE)
    return get_env(AIRLINE)


def test_a_customers_own_lines_and_bills_are_drawn_from_list_shaped_collections(telecom):
    state = telecom.sample_state(0)
    customers = {c["customer_id"]: c for c in state["customers"]}
    explorer = StateExplorer(seed=3, miss_rate=0.0)
    specs = telecom.tool_specs()
    for _ in range(30):
        for name in ("get_line", "suspend_line", "change_plan", "refuel_data"):
            args = explorer.arguments_for(telecom, specs[name], state)
            assert args["line_id"] in {line["line_id"] for line in customers[args["customer_id"]]["lines"]}, args
        args = explorer.arguments_for(telecom, specs["pay_bill"], state)
        assert args["bill_id"] in {b["bill_id"] for b in customers[args["customer_id"]]["bills"]}, args


def test_paired_lists_have_equal_lengths(telecom):
    state = telecom.sample_state(0)
    explorer = StateExplorer(seed=5, miss_rate=0.0)
    spec = telecom.tool_specs()["move_lines_to_plans"]
    lengths = set()
    for _ in range(40):
        args = explorer.arguments_for(telecom, spec, state)
        assert len(args["line_ids"]) == len(args["plan_ids"]), args
        lengths.add(len(args["line_ids"]))
    assert len(lengths) > 1


def test_nested_model_items_are_built_field_by_field_from_the_state(airline):
    from tests.fixtures.flights.models import Passenger

    assert set(model_fields(Passenger)) == {"first_name", "last_name", "dob"}
    state = airline.sample_state(0)
    explorer = StateExplorer(seed=11, miss_rate=0.0)
    specs = airline.tool_specs()
    first_names = {p["first_name"] for u in state["users"].values() for p in u["saved_passengers"]}
    for _ in range(30):
        args = explorer.arguments_for(airline, specs["book_flight"], state)
        assert argument_error(specs["book_flight"], args) is None, args
        assert args["passengers"] and all(set(p) == {"first_name", "last_name", "dob"} for p in args["passengers"])
        assert {p["first_name"] for p in args["passengers"]} <= first_names | {
            p["first_name"] for r in state["reservations"].values() for p in r["passengers"]}
        flights = [f for f in state["flights"] if f["flight_number"] == args["flight_number"]]
        assert any(f["date"] == args["date"] for f in flights), args  # flight number and date of one flight
        update = explorer.arguments_for(airline, specs["update_passengers"], state)
        booked = state["reservations"][update["reservation_id"]]["passengers"]
        assert len(update["passengers"]) == len(booked)  # a replacement keeps the number of travellers


def test_a_search_draws_its_fields_from_one_record_of_a_list_without_ids(airline):
    state = airline.sample_state(0)
    explorer = StateExplorer(seed=2, miss_rate=0.0)
    spec = airline.tool_specs()["search_flights"]
    for _ in range(20):
        args = explorer.arguments_for(airline, spec, state)
        assert any(f["origin"] == args["origin"] and f["destination"] == args["destination"]
                   and f["date"] == args["date"] for f in state["flights"]), args


def test_a_pool_short_of_pool_says_why(tmp_path):
    import json

    from click.testing import CliRunner

    from envsim.cli import main

    out = tmp_path / "short.jsonl"
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--env", TELECOM, "--pool", "60", "--episodes",
                                       "1", "--steps", "12", "--no-progress", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "records --pool asks for: 12 calls labelled (--episodes 1 x --steps 12)" in result.output
    stats = json.loads(out.with_suffix(".stats.json").read_text())
    assert stats["pool_shortfall"]["asked"] == 60 and stats["pool_shortfall"]["labelled_calls"] == 12

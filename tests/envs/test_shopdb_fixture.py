"""The production-style fixture domain (issue 31): a deterministic ≥ 1 MB object-model database, a toolkit
with ≥ 10 decorated tools, and the user's wrapper working through EnvSim's generic ``module:Class`` path."""

from __future__ import annotations

import json

from envsim.envs.sandbox import execute
from envsim.envs.registry import get_env
from envsim.envs.sandbox import trust_module
from tests.fixtures.shopdb.data import make_db
from tests.fixtures.shopdb.models import ShopDB
from tests.fixtures.shopdb.toolkit import TOOL_REGISTRY

SMALL = "tests.fixtures.shopdb.small:SmallShopEnv"


def test_make_db_is_deterministic_large_and_round_trips() -> None:
    db = make_db(0)
    dump = db.model_dump(mode="json")
    assert make_db(0) == db and make_db(1) != db
    assert len(json.dumps(dump)) >= 1_000_000
    assert all(len(dump[name]) >= 100 for name in ("users", "products", "orders"))
    assert ShopDB.model_validate(dump).model_dump(mode="json") == dump


def test_toolkit_registers_reads_and_writes() -> None:
    assert len(TOOL_REGISTRY) >= 10
    assert {"read", "write"} == set(TOOL_REGISTRY.values())


def test_wrapper_runs_reads_writes_and_failures_through_the_generic_path() -> None:
    trust_module("tests.fixtures.shopdb")
    cls = get_env(SMALL)
    assert set(cls.tool_specs()) == set(TOOL_REGISTRY)
    state = cls.sample_state(0)
    assert sorted(state) == ["orders", "products", "reviews", "users"]
    pending = next(o for o in state["orders"].values() if o["status"] == "pending")
    read = execute(cls, state, {"name": "get_order_details", "arguments": {"order_id": pending["order_id"]}})
    assert read.outcome == "no_change" and read.observation == pending
    missing = execute(cls, state, {"name": "get_order_details", "arguments": {"order_id": "#nope"}})
    assert missing.outcome == "failure" and "Order not found" in json.dumps(missing.observation)
    cancel = execute(cls, state, {"name": "cancel_pending_order",
                                  "arguments": {"order_id": pending["order_id"], "reason": "no longer needed"}})
    assert cancel.outcome == "change"
    assert cancel.next_state["orders"][pending["order_id"]]["status"] == "cancelled"

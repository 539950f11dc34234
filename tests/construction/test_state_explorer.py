"""The generic explorer of user environments (construction.state_explorer) on the fixture shop."""

from __future__ import annotations

from collections import Counter

import pytest

from envsim.construction.explorer import ExplorerPolicy
from envsim.construction.rollout import seeded_rollouts
from envsim.construction.state_explorer import StateExplorer, explorer_for
from envsim.envs.registry import get_env
from envsim.envs.sandbox import trust_target

SMALL_SHOP = "tests.fixtures.shopdb.small:SmallShopEnv"


@pytest.fixture(scope="module")
def shop():
    trust_target(SMALL_SHOP)
    return get_env(SMALL_SHOP)


def test_builtins_keep_their_explorer_and_user_classes_get_the_generic_one(shop):
    assert type(explorer_for(get_env("online_store-v1"), 3)) is ExplorerPolicy
    assert type(explorer_for(shop, 3)) is StateExplorer


def test_arguments_of_a_call_come_from_the_same_records(shop):
    state = shop.sample_state(0)
    explorer = StateExplorer(seed=7, miss_rate=0.0)
    specs = shop.tool_specs()
    checked = Counter()
    for _ in range(40):
        for name in ("modify_pending_order_items", "exchange_delivered_order_items", "return_delivered_order_items"):
            args = explorer.arguments_for(shop, specs[name], state)
            order = state["orders"][args["order_id"]]                    # an order that exists
            order_items = [i["item_id"] for i in order["items"]]
            assert set(args["item_ids"]) <= set(order_items)             # items of THAT order
            methods = state["users"][order["user_id"]]["payment_methods"]
            if args["payment_method_id"] in methods:                     # a method of THAT order's user ...
                checked["payment"] += 1
            for old, new in zip(args.get("item_ids", []), args.get("new_item_ids", [])):
                product = next(i["product_id"] for i in order["items"] if i["item_id"] == old)
                assert new in state["products"][product]["variants"]     # a variant of the same product
                checked["pairs"] += 1
    assert checked["payment"] >= 100 and checked["pairs"] >= 40          # ... nearly always (the rest: the order's own)


def test_misses_are_deliberate_and_rare(shop):
    state = shop.sample_state(0)
    explorer = StateExplorer(seed=1)
    spec = shop.tool_specs()["get_order_details"]
    ids = [explorer.arguments_for(shop, spec, state)["order_id"] for _ in range(200)]
    missing = [i for i in ids if i not in state["orders"]]
    assert 5 <= len(missing) <= 40 and all(i.startswith("#O") for i in missing)


def test_same_seed_same_calls(shop):
    first = [t.action.to_json() for t in seeded_rollouts(shop, 4, 1, 12)]
    again = [t.action.to_json() for t in seeded_rollouts(shop, 4, 1, 12)]
    assert first == again and len({str(a) for a in first}) > 6


def test_most_calls_change_the_state_and_every_stratum_up_to_difficult_is_reached(shop):
    transitions = list(seeded_rollouts(shop, 0, 3, 20))
    strata = Counter(t.stratum for t in transitions)
    assert sum(t.delta_size > 0 for t in transitions) / len(transitions) >= 0.4
    assert all(strata[s] for s in ("failure", "no_change", "simple", "medium", "difficult")), strata

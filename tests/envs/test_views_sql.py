"""Views of a SQLite-backed service (issue 53, item 3): the rows the call's SQL reads, traced at the database
(trace callback and authorizer), stored on the record, verified by running the call on them alone, and answered by
the executor baseline from the prompt alone."""

from __future__ import annotations

import json

import pytest

from envsim.construction.labelling import to_record
from envsim.construction.rollout import seeded_rollouts
from envsim.envs.registry import get_env
from envsim.envs.sandbox import trust_target
from envsim.envs.views.sql_reads import _conditions, uses_sqlite
from envsim.envs.views.verify import record_rows, stored_view
from envsim.evaluation.baselines.executor_baseline import run_shown
from envsim.evaluation.prompting.prompts import build_messages
from envsim.evaluation.prompting.shown_prompt import read_prompt

SQLSHOP = "tests.fixtures.sqlshop.wrapper:SqlShopEnv"


def test_equalities_of_where_and_on_are_read_per_table():
    reads = {("orders", "id"), ("orders", "customer_id"), ("customers", "id"), ("customers", "email")}
    sql = ("SELECT o.id FROM orders o JOIN customers c ON o.customer_id = c.id "
           "WHERE c.email = 'it''s@x.org' AND o.id IN (3, 4)")
    assert sorted(_conditions(sql, reads)) == [("customers", "email", ["it's@x.org"]), ("orders", "id", [3, 4])]
    assert _conditions("SELECT * FROM orders ORDER BY id", reads) == []


@pytest.mark.slow
def test_sql_views_hold_the_rows_read_and_reproduce_every_record():
    trust_target(SQLSHOP)
    cls = get_env(SQLSHOP)
    assert uses_sqlite(cls)
    records = [to_record(t, cls, "test") for t in seeded_rollouts(cls, seed=2, episodes=1, steps=14)]
    state_chars = len(json.dumps(records[0]["state"]))
    assert state_chars > 200_000 and sum(len(v) for v in records[0]["state"].values()) >= 2_000
    for record in records:
        assert record["view"]["verified"] and record["view"]["widening"] is None, record["action"]
        rows = record_rows(record)
        assert rows is not None and sum(len(v) for v in rows.values()) < 20, (record["action"], rows)
        assert len(stored_view(record).render()) < state_chars / 50
        answer = run_shown(read_prompt(build_messages(record, "mdp-view", version="4")))
        assert (answer.observation, answer.patch) == (record["observation"], record["patch"]), record["action"]
    assert any(r["patch"] for r in records)

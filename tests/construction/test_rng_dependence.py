"""BFCL labels that depend on the environment's random draw are detected exactly and dropped (issue 24 item 6)."""

from __future__ import annotations

from typing import Any

import pytest

from envsim.envs.adapters.bfcl import INSTALL_HINT  # noqa: E402

pytest.importorskip("mpmath", reason=f"needs the [bfcl] extra ({INSTALL_HINT})")
pytest.importorskip("bfcl_eval", reason=f"needs the [bfcl] extra ({INSTALL_HINT})")

from envsim.benchmark import load  # noqa: E402
from envsim.construction.labelling import to_record  # noqa: E402
from envsim.construction.rng_dependence import (  # noqa: E402
    draw_count, draw_dependent, draw_dependent_ids, label_changes_with_seed, recorded_draws, split_draw_dependent)
from envsim.envs.adapters.bfcl import bfcl_env  # noqa: E402
from envsim.envs.sandbox import execute  # noqa: E402

AUTH = {"client_id": "c", "client_secret": "s", "refresh_token": "r", "grant_type": "read_write",
        "user_first_name": "Ada", "user_last_name": "Lovelace"}


def record(class_name: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A labelled record of one call on the class's first shipped initial state (``sample_state(0)``)."""
    cls = bfcl_env(class_name)
    return to_record(execute(cls, cls.sample_state(0), {"name": tool, "arguments": arguments}), cls, "test")


def test_a_call_that_draws_is_draw_dependent_and_instrumentation_keeps_the_label():
    auth = record("TravelAPI", "authenticate_travel", AUTH)
    assert draw_count(auth) == 1 and draw_dependent(auth)            # one randint for the access token
    with recorded_draws() as counter:                                  # counting does not change the stream
        again = execute(bfcl_env("TravelAPI"), auth["state"], auth["action"])
    assert counter.draws == 1 and again.observation == auth["observation"] and again.next_state == auth["next_state"]
    assert label_changes_with_seed(auth)                               # another seed: another token


def test_a_draw_that_coincides_under_another_seed_is_still_caught():
    """The old rule (compare the label under one other seed) misses a coincident draw; the count does not."""
    auth = record("TravelAPI", "authenticate_travel", AUTH)
    assert not label_changes_with_seed(auth, salt=0)                   # salt 0: the very same draw
    assert draw_dependent(auth)


def test_the_tool_name_is_not_the_rule_a_failing_call_draws_nothing():
    """book_flight with a wrong token fails before drawing: its label follows from the prompt (27 vs 22)."""
    failed = record("TravelAPI", "book_flight", {"access_token": "nope", "card_id": "x", "travel_date": "2024-12-01",
                                                 "travel_from": "SFO", "travel_to": "LAX", "travel_class": "economy"})
    assert failed["outcome"] == "failure" and draw_count(failed) == 0 and not draw_dependent(failed)
    assert draw_count(record("GorillaFileSystem", "pwd", {})) == 0   # a class without a generator


def test_no_shipped_bfcl_sample_depends_on_the_generator():
    records = load("v2", "bfcl")
    assert len(records) == 185 and draw_dependent_ids(records) == []


@pytest.mark.slow
def test_track_build_drops_draw_dependent_calls_before_sampling():
    from envsim.construction.bfcl import DRAW_DEPENDENT, build_track, pool_summary

    track, pool = build_track(seed=3, episodes=1, steps=6)
    dropped = [r for r in pool if r.get(DRAW_DEPENDENT)]
    assert {r["tool"] for r in dropped} >= {"book_flight", "send_message", "authenticate_travel"}
    assert all(draw_dependent(r) for r in dropped[:10]) and not any(DRAW_DEPENDENT in r for r in track)
    assert draw_dependent_ids(track) == [] and not {r["id"] for r in track} & {r["id"] for r in dropped}
    assert sum(row.get(DRAW_DEPENDENT, 0) for row in pool_summary(pool).values()) == len(dropped)
    sample = pool[:40] + dropped[:3]                                   # the split agrees with the marks, in order
    kept, out = split_draw_dependent(sample)
    assert kept == [r for r in sample if not r.get(DRAW_DEPENDENT)] and out == [r for r in sample if r.get(DRAW_DEPENDENT)]


def test_deterministic_environments_are_never_draw_dependent():
    records = load("v1", "test")[:20]
    assert not any(draw_dependent(r) for r in records) and all(draw_count(r) == 0 for r in records)

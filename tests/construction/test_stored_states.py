"""States stored once (construction.stored_states): exact patches, per-environment bases, small states inline."""

from __future__ import annotations

import copy
import json

import jsonpatch
from hypothesis import given, settings
from hypothesis import strategies as st

from envsim.benchmark.state_store import has_refs, resolve, state_folder
from envsim.construction.stored_states import materialise, state_patch, store_large_states

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=4),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                     max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(_json, _json)
def test_state_patch_takes_base_to_state(base, state):
    assert jsonpatch.apply_patch(copy.deepcopy(base), state_patch(base, state)) == state


def test_state_patch_touches_only_changed_records():
    base = {"orders": {f"#{i}": {"status": "pending", "items": [1, 2]} for i in range(50)}, "meta": 1}
    state = copy.deepcopy(base)
    state["orders"]["#7"]["status"] = "cancelled"
    state["orders"]["#new"] = {"status": "pending", "items": []}
    del state["orders"]["#3"]
    patch = state_patch(base, state)
    assert sorted(op["path"] for op in patch) == ["/orders/#3", "/orders/#7/status", "/orders/#new"]


def _records(env: str, states: list[dict], tools: list) -> list[dict]:
    rows = []
    for i, (before, after) in enumerate(zip(states, states[1:])):
        patch = state_patch(before, after)
        rows.append({"id": f"{env}-{i}", "env": env, "state": before, "next_state": after, "patch": patch,
                     "tools": tools, "stratum": "simple", "action": {"name": "t", "arguments": {}}})
    return rows


def _episode(size: int, steps: int, salt: str = "") -> list[dict]:
    state = {"orders": {f"#{i}": {"status": "pending", "note": salt + "x" * 40} for i in range(size)}}
    states = [state]
    for step in range(steps):
        state = copy.deepcopy(state)
        state["orders"][f"#{step}"]["status"] = "delivered"
        states.append(state)
    return states


def test_large_states_are_stored_once_and_resolve_exactly(tmp_path):
    big = _records("big:Env", _episode(2000, 6), [{"type": "function"}])
    big += _records("big:Env", _episode(2000, 3, salt="other episode "), [{"type": "function"}])
    small = _records("small-v1", _episode(3, 3), [])
    out = tmp_path / "pool.jsonl"
    rows = store_large_states(big + small, state_folder(out), min_chars=50_000)
    assert [has_refs(r) for r in rows] == [True] * len(big) + [False] * len(small)
    assert rows[len(big):] == small                                 # small states pass unchanged
    blobs = sorted(state_folder(out).iterdir())
    assert len(blobs) == 3                                          # two episode bases and one tool list
    for row, original in zip(rows, big):
        stored = resolve(json.loads(json.dumps(row)), state_folder(out))
        assert stored["state"] == original["state"] and stored["next_state"] == original["next_state"]
        assert stored["tools"] == original["tools"]
        assert materialise([stored])[0]["state"] == original["state"]
    written = sum(len(json.dumps(r)) for r in rows[:len(big)]) + sum(p.stat().st_size for p in blobs)
    assert written < sum(len(json.dumps(r)) for r in big) / 10


def test_export_writes_whole_states_to_the_original_layout_and_copies_blobs_for_jsonl(tmp_path):
    from click.testing import CliRunner

    from envsim.benchmark import load
    from envsim.cli import main
    from envsim.construction.construct_outputs import write_with_stats
    from envsim.construction.labelling import to_record
    from envsim.construction.rollout import seeded_rollouts
    from envsim.envs.registry import get_env

    env = get_env("online_store-v1")
    records = [to_record(t, env, "test") for t in seeded_rollouts(env, 0, 1, 4)]
    out = tmp_path / "pool.jsonl"
    write_with_stats(records, out, {"by_stratum": {}}, "", kind="records", pool=None, lines=())
    assert not (tmp_path / "pool_states").exists()          # small states: inline, as before
    rows = store_large_states(records, state_folder(out), min_chars=10)   # as a production-size state would be
    from envsim.construction.pipeline import write_jsonl

    write_jsonl(rows, out)
    assert all(has_refs(r) for r in rows)
    original = tmp_path / "export" / "original.json"
    result = CliRunner().invoke(main, ["export", "--benchmark", str(out), "--format", "envsimbench",
                                       "--out", str(original)])
    assert result.exit_code == 0, result.output
    exported = json.loads(original.read_text())
    assert [s["step_detail"]["config_before"] for s in exported] == [r["state"] for r in records]
    assert "state_ref" not in original.read_text()
    copy = tmp_path / "export" / "copy.jsonl"
    result = CliRunner().invoke(main, ["export", "--benchmark", str(out), "--format", "envsim", "--out", str(copy)])
    assert result.exit_code == 0, result.output
    assert [r["next_state"] for r in load(str(copy))] == [r["next_state"] for r in records]


def _mid_pool(env: str, records: int = 60) -> list[dict]:
    """``records`` one-call records of an episode on a ~160,000-character state (orders changing one by one)."""
    state = {"orders": {f"#{i}": {"status": "pending", "note": f"order {i} " + "x" * 300} for i in range(480)}}
    states = [state]
    for step in range(records):
        state = {"orders": dict(state["orders"])}
        state["orders"][f"#{step}"] = dict(state["orders"][f"#{step}"], status="delivered")
        states.append(state)
    return _records(env, states, [{"type": "function", "function": {"name": "t"}}])


def test_an_own_environments_pool_is_stored_once_when_inline_it_would_weigh_a_megabyte(tmp_path):
    from envsim.construction.stored_states import POOL_STATE_MIN_CHARS, state_chars

    pool = _mid_pool("mine.shop:Desk")
    assert 150_000 < state_chars(pool[0]["state"]) < 262_144       # under the per-state threshold
    out = tmp_path / "pool.jsonl"
    rows = store_large_states(pool, state_folder(out))
    assert all(has_refs(r) for r in rows)
    from envsim.construction.pipeline import write_jsonl

    write_jsonl(rows, out)
    written = out.stat().st_size + sum(p.stat().st_size for p in state_folder(out).iterdir())
    inline = sum(len(json.dumps(r)) for r in pool)
    assert written <= 2_000_000 < inline                            # 60 records of a 160k state: under 2 MB
    for row, original in zip(rows, pool):
        assert resolve(json.loads(json.dumps(row)), state_folder(out))["next_state"] == original["next_state"]
    # a pool that would weigh little inline, or states too small to be worth a blob, stay inline
    few = _mid_pool("mine.shop:Desk", records=2)
    assert store_large_states(few, tmp_path / "few") == few
    small = _records("mine.tiny:Desk", _episode(150, 60), [])
    assert state_chars(small[0]["state"]) < POOL_STATE_MIN_CHARS                  # 11,500 characters
    assert sum(len(json.dumps(r["state"])) * 2 for r in small) > 1_048_576        # a heavy pool all the same
    assert store_large_states(small, tmp_path / "s") == small


def test_built_in_and_track_records_keep_the_per_state_rule_so_shipped_files_stay_byte_identical(tmp_path):
    from envsim.construction.stored_states import pool_rule_applies

    assert not pool_rule_applies("online_store-v1") and not pool_rule_applies("bfcl/GorillaFileSystem")
    assert pool_rule_applies("mine.shop:Desk") and pool_rule_applies("my_plugin-v1")
    for env in ("online_store-v1", "tau/retail"):
        pool = _mid_pool(env)
        assert store_large_states(pool, tmp_path / env.replace("/", "_")) == pool     # inline, as before

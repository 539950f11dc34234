"""Construction and scoring of the v2 tiers: scaled long states, chained episodes, chained scoring, tier plans."""

from __future__ import annotations

import asyncio
import json

import pytest

from envsim.construction.chained import (candidate_episodes, eligible, replay_states, sample_episodes, step_records,
                                         trim)
from envsim.construction.long_state import env_candidates, prompt_tokens, scaled_sampling, scaled_state
from envsim.delta import same_json
from envsim.envs.sandbox import execute
from envsim.envs.registry import get_env
from envsim.envs.sampling import Sampler
from envsim.evaluation.scoring.chained import chained_summary, run_chained
from envsim.evaluation.endpoints.providers import Generation, NullProvider, OracleProvider
from envsim.evaluation.running.runner import RetryPolicy

ENV = "gradebook-v1"


def test_scaled_sampling_scales_collections_and_restores_the_sampler():
    original = Sampler.ids
    with scaled_sampling(3):
        assert Sampler(0).ids("A", 2) == ["A-001", "A-002", "A-003", "A-004", "A-005", "A-006"]
    assert Sampler.ids is original and Sampler(0).ids("A", 2) == ["A-001", "A-002"]
    small, big = get_env("online_store-v1").sample_state(4), scaled_state("online_store-v1", 4, 4)
    assert len(big["products"]) == 4 * len(small["products"]) and len(big["customers"]) >= 4 * 6
    assert scaled_state("online_store-v1", 4, 4) == big  # deterministic
    referenced = {o["customer_id"] for o in big["orders"].values()}
    assert referenced <= set(big["customers"])  # the generator's own cross-references hold


def test_long_state_candidates_are_in_the_token_band_and_re_execute():
    records = env_candidates("court_fines-v1", 2, scales=(8,), history=5, steps=3, min_tokens=8192,
                             max_tokens=32768)
    assert records, "a scale of 8 gives court_fines states over 8k tokens"
    cls = get_env("court_fines-v1")
    for record in records:
        assert 8192 <= record["long_state"]["prompt_tokens"] <= 32768
        assert record["long_state"]["prompt_tokens"] == prompt_tokens(record)
        t = execute(cls, record["state"], record["action"])
        assert same_json(t.next_state, record["next_state"]) and same_json(t.observation, record["observation"])
    assert not env_candidates("court_fines-v1", 2, scales=(8,), history=5, steps=3, min_tokens=10**6,
                              max_tokens=2 * 10**6)


def test_chained_candidates_trim_and_replay():
    candidates = candidate_episodes(ENV, 2, 2, max_length=6)
    assert candidates == candidate_episodes(ENV, 2, 2, max_length=6)
    episode = trim(candidates[0], 4)
    assert episode["length"] == len(episode["steps"]) == 4
    states = replay_states(episode)
    assert same_json(states[-1], episode["final_state"])
    cls, state = get_env(ENV), episode["state"]
    for step, expected in zip(episode["steps"], states):
        t = execute(cls, state, step["action"])
        assert same_json(t.next_state, expected) and same_json(t.observation, step["observation"])
        state = t.next_state
    assert [r["state"] for r in step_records(episode)][1:] == states[:-1]
    assert trim(candidates[0], 3)["id"] != episode["id"]


def test_eligibility_and_sampling_spread():
    fake = [{"env": f"e{i % 3}", "env_version": "x", "state": {"i": i}, "tools": [],
             "steps": [{"action": {"name": "t", "arguments": {}}, "delta_size": d, "next_state": {}}
                       for d in (1, 0, 2, 0)]} for i in range(9)]
    assert eligible(fake[0], 2) and eligible(fake[0], 3) and not eligible(fake[0], 5)
    assert not eligible({**fake[0], "steps": [{**s, "delta_size": 0} for s in fake[0]["steps"]]}, 2)
    for c in fake:
        for s in c["steps"]:
            s.update(tool="t", code="", observation={}, patch=[], outcome="change", stratum="simple", arg_count=0)
    picked = sample_episodes(fake, [2, 4], 3, seed=0, per_env_cap=2)
    assert [e["length"] for e in picked] == [2, 2, 2, 4, 4, 4]
    assert max(sum(e["env"] == env for e in picked) for env in ("e0", "e1", "e2")) == 2
    assert len({e["state"]["i"] for e in picked}) == 6  # each candidate used once
    with pytest.raises(ValueError, match="length 4"):
        sample_episodes(fake, [4], 7, seed=0, per_env_cap=2)


def _episodes():
    return [trim(c, 5) for c in candidate_episodes(ENV, 2, 3, max_length=5)]


def _rows(run_dir):
    return {r["id"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())}


def test_oracle_is_exact_and_null_diverges_at_the_first_change(tmp_path):
    episodes = _episodes()
    oracle = asyncio.run(run_chained(episodes, OracleProvider(), tmp_path / "oracle"))
    assert oracle["episode_cm"]["rate"] == 1.0 and oracle["step_fm"]["rate"] == 1.0
    assert all(g["rate"] == 1.0 for g in oracle["cm_at_k"].values())
    null = asyncio.run(run_chained(episodes, NullProvider(), tmp_path / "null"))
    rows = _rows(tmp_path / "null")
    for episode in episodes:
        first_change = next((s["index"] for s in episode["steps"] if s["delta_size"] > 0), None)
        assert rows[episode["id"]]["first_divergence"] == first_change
    assert null["episode_cm"]["rate"] < 1.0
    assert (tmp_path / "null" / "report.md").read_text().startswith("# Chained tier")
    # over the episodes whose state had changed by call k, "no change" never scores; the oracle always does
    changed = [g for g in null["cm_at_k_changed"].values() if g["n"]]
    assert changed and all(g["rate"] == 0.0 for g in changed)
    assert all(g["rate"] == 1.0 for g in oracle["cm_at_k_changed"].values() if g["n"])
    assert null["cm_at_k_changed"]["1"]["n"] == sum(e["steps"][0]["delta_size"] > 0 for e in episodes)


class _Broken:
    name = "broken"

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, messages, record) -> Generation:
        self.calls += 1
        raise ConnectionError("endpoint down")

    def should_retry(self, exc: BaseException) -> bool:
        return True


class _Garbage:
    name = "garbage"

    async def generate(self, messages, record) -> Generation:
        return Generation("I think the state changes a bit.")

    def should_retry(self, exc: BaseException) -> bool:
        return False


def test_infra_failures_are_kept_apart_and_retried_on_resume(tmp_path):
    episodes = _episodes()[:2]
    broken = _Broken()
    summary = asyncio.run(run_chained(episodes, broken, tmp_path, policy=RetryPolicy(max_retries=1, backoff_base=0.0)))
    assert summary["scored"] == 0 and summary["infra_failures"] == 2 and broken.calls == 4
    summary = asyncio.run(run_chained(episodes, OracleProvider(), tmp_path))
    assert summary["scored"] == 2 and summary["infra_failures"] == 0


def test_unparseable_answers_are_scored_failures_not_crashes(tmp_path):
    episodes = [e for e in _episodes() if any(s["delta_size"] for s in e["steps"])][:1]
    summary = asyncio.run(run_chained(episodes, _Garbage(), tmp_path))
    assert summary["scored"] == 1 and summary["invalid_answers"] == 5 and summary["episode_cm"]["rate"] == 0.0


def test_cm_at_k_counts_only_episodes_long_enough():
    rows = [{"status": "scored", "length": 2, "first_divergence": None, "steps_before_divergence": 2,
             "steps": [{"fm": True, "cm": True, "fallback": False}] * 2},
            {"status": "scored", "length": 4, "first_divergence": 2, "steps_before_divergence": 2,
             "steps": [{"fm": True, "cm": True, "fallback": False}] * 2 + [{"fm": False, "cm": False, "fallback": False}] * 2}]
    summary = chained_summary(rows)
    assert {k: (g["n"], g["rate"]) for k, g in summary["cm_at_k"].items()} == {
        "1": (2, 1.0), "2": (2, 1.0), "3": (1, 0.0), "4": (1, 0.0)}
    assert summary["episode_cm"]["rate"] == 0.5 and summary["mean_fraction_before_divergence"] == 0.75


def test_tier_plan():
    from envsim.evaluation.errors import InvalidOption
    from envsim.evaluation.running.tiers import SINGLE_SPLIT, tier_plan

    assert tier_plan("v1", None, False) is None
    assert tier_plan("v2", SINGLE_SPLIT, False) is None
    assert tier_plan("v2", None, True, "extreme") is None  # an explicit --split runs that split only
    assert list(tier_plan("v2", None, True, "chained")) == ["chained"]  # ... with the episode runner
    plan = tier_plan("v2", None, False)
    assert plan is not None and {"core", "extreme", "long_state", "chained"} <= set(plan)
    assert list(tier_plan("v2", "chained", False)) == ["chained"]
    with pytest.raises(InvalidOption, match="unknown tier"):
        tier_plan("v2", "nope", False)
    with pytest.raises(InvalidOption, match="no tiers"):
        tier_plan("v1", "all", False)

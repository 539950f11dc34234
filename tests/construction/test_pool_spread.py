"""``construct --pool N`` spreads the pool over domains and environments, seeded, and its statistics show
the spread (issue 24 item 4)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.construction.pipeline import spread_sample

# two training environments from each of three domains, listed so that alphabetical order would put
# every record of a small pool in the first domain
ENVS = ["farmers_market_stalls-v1", "grain_elevator-v1", "auction_house-v1", "online_store-v1",
        "ci_pipeline_runs-v1", "dns_zone_records-v1"]
DOMAIN = {"farmers_market_stalls-v1": "agriculture", "grain_elevator-v1": "agriculture",
          "auction_house-v1": "commerce", "online_store-v1": "commerce",
          "ci_pipeline_runs-v1": "devops", "dns_zone_records-v1": "devops"}


def _construct(out, *extra):
    args = ["construct", "--split", "train", "--episodes", "1", "--steps", "6", "--out", str(out), *extra]
    return CliRunner().invoke(main, args)


def test_pool_takes_every_domain_and_environment_before_repeating(tmp_path):
    out = tmp_path / "pool.jsonl"
    env_args = [a for e in ENVS for a in ("--env", e)]
    result = _construct(out, "--pool", "6", *env_args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert Counter(r["env"] for r in rows) == Counter(ENVS)                  # one record from each environment
    stats = json.loads(out.with_suffix(".stats.json").read_text())
    assert stats["environments"] == 6 and stats["domains"] == 3
    assert stats["by_domain"] == {"agriculture": 2, "commerce": 2, "devops": 2}
    assert "6 samples from 6 environments in 3 domains." in out.with_suffix(".stats.md").read_text()
    again = tmp_path / "again.jsonl"
    assert _construct(again, "--pool", "6", *env_args).exit_code == 0
    assert again.read_text() == out.read_text()                              # seeded: the same pool


def test_spread_sample_balances_domains_then_environments_and_depends_on_the_seed():
    pool = [{"env": env, "id": f"{env}#{i}"} for env in ENVS for i in range(10 if env == ENVS[0] else 3)]
    picked = spread_sample(pool, 9, seed=1, domains=DOMAIN)
    by_domain = Counter(DOMAIN[r["env"]] for r in picked)
    assert sorted(by_domain.values()) == [3, 3, 3]
    assert max(Counter(r["env"] for r in picked).values()) - min(Counter(r["env"] for r in picked).values()) <= 1
    assert [r["id"] for r in picked] == sorted((r["id"] for r in picked), key=[p["id"] for p in pool].index)
    assert spread_sample(pool, 9, seed=2, domains=DOMAIN) != picked
    assert len(spread_sample(pool, 1000, seed=1, domains=DOMAIN)) == len(pool)


@pytest.mark.slow
def test_a_training_pool_reaches_every_domain(tmp_path):
    out = tmp_path / "pool.jsonl"
    result = _construct(out, "--pool", "48", "--steps", "4")
    assert result.exit_code == 0, result.output
    stats = json.loads(out.with_suffix(".stats.json").read_text())
    assert stats["domains"] == 24 and stats["environments"] == 48 and set(stats["by_domain"].values()) == {2}

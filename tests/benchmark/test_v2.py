"""The shipped v2 benchmark: tier compositions, held-out environments, re-execution of every sample and
episode, byte-for-byte rebuilds, baselines per tier through the CLI, and the data card."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from click.testing import CliRunner

from envsim.benchmark import BENCHMARK_DIR, benchmark_path, load
from envsim.cli import main
from envsim.construction.chained import candidate_episodes, eligible, load_episodes, replay_states, trim
from envsim.construction.composition import load_spec
from envsim.construction.long_state import env_candidates, prompt_tokens
from envsim.construction.splits import LeakError, assert_no_test_envs, read_test_envs, training_envs
from envsim.delta import apply_patch, canonical_json, same_json
from envsim.envs.sandbox import execute
from envsim.envs.registry import get_env, list_envs
from envsim.envs.shown import env_version, tool_code

V2 = BENCHMARK_DIR / "v2"
BUILD = json.loads((V2 / "build.json").read_text())
CORE, EXTREME, LONG = (load("v2", s) for s in ("test", "extreme", "long_state"))
CHAINED = load_episodes("v2", "chained")
HELD_OUT = set(read_test_envs("v2"))


def _args(tier: str) -> dict[str, list[str]]:
    """The build arguments of a tier as ``{"--option": [values...]}``."""
    args = BUILD["builds"][tier]["args"]
    out: dict[str, list[str]] = {}
    for key, value in zip(args[::2], args[1::2]):
        out.setdefault(key, []).append(value)
    return out


def _line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def test_core_has_the_v1_composition_on_fresh_samples():
    assert len(CORE) == load_spec("default").total == 400
    assert Counter(r["stratum"] for r in CORE) == {"failure": 20, "no_change": 80, "simple": 50, "medium": 200,
                                                   "difficult": 50}
    assert Counter(r["arg_count"] for r in CORE if r["stratum"] == "no_change") == {0: 40, 1: 40}
    assert Counter(r["delta_size"] for r in CORE if r["stratum"] in ("simple", "medium")) == {
        1: 25, 2: 25, 3: 50, 4: 50, 5: 50, 6: 50}
    assert {r["delta_size"] for r in CORE if r["stratum"] == "difficult"} == set(range(7, 13))
    published = {r["id"] for split in ("test", "dev") for r in load("v1", split)}
    assert not published & {r["id"] for r in CORE + EXTREME + LONG}
    assert max(Counter(r["env"] for r in CORE).values()) <= 8


def test_extreme_tier_is_real_cascades():
    spec = load_spec(str(V2 / "extreme_spec.json"))
    assert len(EXTREME) == spec.total == 100
    assert all(r["stratum"] == "extreme" and r["delta_size"] >= 13 for r in EXTREME)
    for cell in spec.cells:
        assert sum(cell.matches(r) for r in EXTREME) == cell.n, cell.label()
    assert max(Counter(r["env"] for r in EXTREME).values()) <= spec.per_env_cap
    assert len({r["env"] for r in EXTREME}) >= 25


def test_long_state_tier_prompts_are_8k_to_32k_counted_tokens():
    spec = load_spec(str(V2 / "long_state_spec.json"))
    assert len(LONG) == spec.total
    for cell in spec.cells:
        assert sum(cell.matches(r) for r in LONG) == cell.n, cell.label()
    for record in LONG:
        tokens = record["long_state"]["prompt_tokens"]
        assert 8192 <= tokens <= 32768 and tokens == prompt_tokens(record), record["id"]
    assert max(Counter(r["env"] for r in LONG).values()) <= spec.per_env_cap


def test_chained_tier_composition():
    assert Counter(e["length"] for e in CHAINED) == {n: 16 for n in range(2, 9)}
    assert max(Counter(e["env"] for e in CHAINED).values()) <= 2
    assert len({e["id"] for e in CHAINED}) == len(CHAINED)
    for episode in CHAINED:
        assert len(episode["steps"]) == episode["length"]
        assert eligible({**episode, "steps": episode["steps"]}, episode["length"])


def test_held_out_environments_never_reach_training():
    assert HELD_OUT == set(read_test_envs("v1")), "v2 keeps v1's held-out list (see the data card)"
    used = {r["env"] for r in CORE + EXTREME + LONG} | {e["env"] for e in CHAINED}
    assert used <= HELD_OUT
    registered = [e.id for e in list_envs()]
    for version in ("v1", "v2"):
        assert not set(training_envs(registered, version)) & HELD_OUT
        with pytest.raises(LeakError):
            assert_no_test_envs(sorted(used)[:1], version)
    builtin = {e.id for e in list_envs() if e.builtin}
    if (V2 / "bfcl.jsonl").is_file():  # foreign BFCL classes: never builtin, so never in a training split
        bfcl_envs = {r["env"] for r in load("v2", "bfcl")}
        assert not bfcl_envs & builtin
        assert not bfcl_envs & set(training_envs(builtin, "v2"))


@pytest.mark.parametrize("split", [pytest.param("test", marks=pytest.mark.slow), "extreme", "long_state"])
def test_every_sample_re_executes_exactly(split):
    for record in load("v2", split):
        cls = get_env(record["env"])
        assert record["env_version"] == env_version(cls), f"{record['env']} changed since v2 was built"
        t = execute(cls, record["state"], record["action"])
        assert same_json(t.observation, record["observation"]), record["id"]
        assert same_json(t.next_state, record["next_state"]), record["id"]
        assert same_json(apply_patch(record["state"], record["patch"]), record["next_state"]), record["id"]
        assert t.delta_size == record["delta_size"] and t.stratum == record["stratum"]
        assert record["code"] == tool_code(cls, record["tool"]) or record["tool"] not in cls.tool_specs()
        assert record["tools"] == cls.tool_schemas()


def test_every_chained_episode_re_executes_step_by_step():
    for episode in CHAINED:
        cls = get_env(episode["env"])
        assert episode["env_version"] == env_version(cls) and episode["tools"] == cls.tool_schemas()
        state, states = episode["state"], replay_states(episode)
        for step, expected in zip(episode["steps"], states):
            t = execute(cls, state, step["action"])
            assert same_json(t.observation, step["observation"]), (episode["id"], step["index"])
            assert same_json(t.next_state, expected), (episode["id"], step["index"])
            assert (t.delta_size, t.stratum) == (step["delta_size"], step["stratum"])
            state = t.next_state
        assert same_json(state, episode["final_state"])


def test_chained_episodes_rebuild_byte_for_byte_for_sample_environments():
    """A real partial rebuild (fast): the candidates of three environments, regenerated with the recorded
    build arguments, contain every shipped episode of those environments, byte for byte."""
    args = _args("chained")
    seed, per_env = int(args["--seed"][0]), int(args["--episodes"][0])
    high = int(args["--lengths"][0].split("-")[1])
    envs = sorted({e["env"] for e in CHAINED})[:3]
    for env in envs:
        candidates = candidate_episodes(env, seed, per_env, high)
        shipped = [_line(e) for e in CHAINED if e["env"] == env]
        rebuilt = {_line(trim(c, n, "test")) for c in candidates for n in range(2, high + 1)}
        assert shipped and set(shipped) <= rebuilt, env


def test_long_state_records_rebuild_byte_for_byte_for_sample_environments():
    args = _args("long_state")
    options = dict(scales=tuple(int(x) for x in args["--scales"][0].split(",")), history=int(args["--history"][0]),
                   steps=int(args["--steps"][0]), min_tokens=int(args["--min-tokens"][0]),
                   max_tokens=int(args["--max-tokens"][0]))
    counts = Counter(r["env"] for r in LONG)
    small = sorted(counts, key=lambda e: (sum(len(canonical_json(r["state"])) for r in LONG if r["env"] == e), e))[:2]
    for env in small:
        rebuilt = {_line(r) for r in env_candidates(env, int(args["--seed"][0]), **options)}
        assert {_line(r) for r in LONG if r["env"] == env} <= rebuilt, env


@pytest.mark.slow
@pytest.mark.parametrize("tier", ["chained", "long_state", "test", "extreme"])
def test_full_rebuild_is_byte_identical(tier, tmp_path):
    out = tmp_path / f"{tier}.jsonl"
    result = CliRunner().invoke(main, ["construct", *BUILD["builds"][tier]["args"], "--workers", "2", "--out", str(out)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == benchmark_path("v2", tier).read_bytes()


def _tiers(model: str, tmp_path, limit: int) -> dict:
    run_dir = tmp_path / model
    result = CliRunner().invoke(main, ["eval", "--model", model, "--benchmark", "v2", "--limit", str(limit),
                                       "--run-dir", str(run_dir)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "by tier" in result.output
    return json.loads((run_dir / "tiers.json").read_text())


@pytest.mark.slow
def test_oracle_is_perfect_on_every_tier(tmp_path):
    table = _tiers("oracle", tmp_path, 14)
    assert {"core", "extreme", "long_state", "chained"} <= set(table)
    for name in ("core", "extreme", "long_state", "chained"):  # (bfcl, when shipped, needs the [bfcl] extra)
        row = table[name]
        assert row["infra_failures"] == 0 and row["n"] == 14, name
        assert (row["fm"], row["cm"]) == (1.0, 1.0), name
        if row["kind"] == "chained":
            assert row["episode_cm"] == 1.0 and set(row["cm_at_k"].values()) == {1.0}


@pytest.mark.slow
def test_null_baseline_per_tier(tmp_path):
    table = _tiers("null", tmp_path, 14)
    assert table["extreme"]["cm"] == 0.0  # every extreme sample changes the state
    core = table["core"]["by_stratum"]
    assert all(core[s]["cm"] == 1.0 for s in ("failure", "no_change") if s in core)
    assert all(core[s]["cm"] == 0.0 for s in ("simple", "medium", "difficult") if s in core)
    chained = table["chained"]
    assert chained["episode_cm"] == 0.0 and chained["cm_at_k"]["1"] < 1.0  # every episode changes the state


def test_data_card_and_size():
    card = (V2 / "README.md").read_text()
    for name, count in (("test.jsonl", len(CORE)), ("extreme.jsonl", len(EXTREME)),
                        ("long_state.jsonl", len(LONG)), ("chained.jsonl", len(CHAINED))):
        assert name in card and f"| {count} " in card, name
    for word in ("null", "oracle", "CM@k", "BFCL", "tokens"):
        assert word in card
    total = sum(p.stat().st_size for p in V2.glob("*.jsonl"))
    assert total < 30 * 2**20, f"v2 ships {total / 2**20:.1f} MiB"

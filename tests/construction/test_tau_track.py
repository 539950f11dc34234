"""The shipped τ-bench track: rebuilt byte for byte, every sample re-executes to its label, states resolve
from content-addressed blobs, and no test task's call reaches a training file."""

from __future__ import annotations

import json

import jsonpatch
import pytest

from envsim.benchmark import BENCHMARK_DIR, load
from envsim.benchmark.state_store import StateRefError, resolve
from envsim.construction.chained import load_episodes
from envsim.construction.tau_track import test_call_keys as held_out_call_keys
from envsim.construction.tau_track import training_pool, write_track
from envsim.construction.traced_labelling import label_traced
from envsim.delta import canonical_json
from envsim.envs.registry import get_env

V2 = BENCHMARK_DIR / "v2"


def test_track_on_disk_is_under_30_mb():
    files = [V2 / "tau.jsonl", V2 / "tau_chained.jsonl", *(V2 / "tau_states").iterdir()]
    assert sum(f.stat().st_size for f in files) <= 30 * 1024 * 1024


def test_a_missing_blob_is_a_clear_error(tmp_path):
    record = resolve({"id": "x", "state_ref": {"base": "sha256:" + "0" * 64, "patch": []}}, tmp_path)
    with pytest.raises(StateRefError, match="cannot read state blob"):
        record["state"]


@pytest.mark.slow
@pytest.mark.tau
def test_track_rebuilds_byte_for_byte(tmp_path):
    build = json.loads((V2 / "build.json").read_text())["builds"]["tau"]["args"]
    seed = int(build[build.index("--seed") + 1])
    write_track(tmp_path / "tau.jsonl", seed=seed)
    for name in ("tau.jsonl", "tau_chained.jsonl", "tau.stats.json"):
        assert (tmp_path / name).read_bytes() == (V2 / name).read_bytes(), name
    rebuilt = sorted(p.name for p in (tmp_path / "tau_states").iterdir())
    assert rebuilt == sorted(p.name for p in (V2 / "tau_states").iterdir())
    for name in rebuilt:
        assert (tmp_path / "tau_states" / name).read_bytes() == (V2 / "tau_states" / name).read_bytes()


@pytest.mark.slow
@pytest.mark.tau
def test_every_sample_reexecutes_to_its_label():
    records = load("v2", "tau")
    assert {r["env"] for r in records} == {"tau/retail", "tau/airline"}
    assert sum(r["source"].startswith("task:test") for r in records) == 582 + 158
    for record in records:
        state = record["state"]
        transition, _ = label_traced(get_env(record["env"]), state, record["action"], check_determinism=False)
        assert transition.observation == record["observation"], record["id"]
        assert (transition.delta_size, transition.outcome) == (record["delta_size"], record["outcome"]), record["id"]
        assert canonical_json(transition.next_state) == canonical_json(record["next_state"]), record["id"]
        assert canonical_json(jsonpatch.apply_patch(state, record["patch"])) == canonical_json(record["next_state"])


@pytest.mark.slow
@pytest.mark.tau
def test_chained_episodes_replay_to_their_final_state():
    episodes = load_episodes("v2", "tau_chained")
    assert sum(e["length"] for e in episodes) == 582 + 158
    for episode in episodes[::15]:
        state = episode["state"]
        for step in episode["steps"]:
            transition, _ = label_traced(get_env(episode["env"]), state, step["action"], check_determinism=False)
            assert transition.patch == step["patch"]
            state = transition.next_state
        assert canonical_json(state) == canonical_json(episode["final_state"])


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    """The τ-bench training pool (retail's train tasks replayed), built once for this module."""
    return training_pool(tmp_path_factory.mktemp("tau_pool"))


@pytest.mark.slow
@pytest.mark.tau
def test_no_test_task_call_appears_in_any_training_file(pool):
    held_out = held_out_call_keys()
    assert len(pool) > 700  # retail's 768 train calls less the 12 that repeat a test call
    shipped_training = [p for p in BENCHMARK_DIR.rglob("*.jsonl") if "train" in p.name]
    rows = pool + [json.loads(line) for p in shipped_training for line in p.read_text().splitlines() if line.strip()]
    leaked = [r["id"] for r in rows if canonical_json([r.get("env"), r.get("action")]) in held_out]
    assert not leaked


RETAIL_WRITE_TOOLS = {"cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
                      "modify_pending_order_items", "modify_pending_order_payment", "return_delivered_order_items"}


@pytest.mark.slow
@pytest.mark.tau
def test_the_training_pool_has_no_read_calls_because_train_tasks_list_none(pool):
    """Why ``train data --track tau`` has no no-change sample: τ-bench annotates its retail train (and dev) tasks
    with the state-changing calls only (test tasks list every call, reads included), so there is no read call to
    replay. Nothing is filtered by stratum or outcome, and a read call is labelled no-change when replayed."""
    from envsim.envs.adapters.tau import task_actions, tau_env

    train_calls = [a for task in task_actions("retail", "train") for a in task]
    assert {a.name for a in train_calls} == RETAIL_WRITE_TOOLS
    assert {a.name for t in task_actions("retail", "dev") for a in t} <= RETAIL_WRITE_TOOLS
    assert {a.name for t in task_actions("retail", "test") for a in t} > RETAIL_WRITE_TOOLS  # reads: test only
    held_out = held_out_call_keys()
    env_id = tau_env("retail").env_id()
    kept = [a.to_json() for a in train_calls if canonical_json([env_id, a.to_json()]) not in held_out]
    assert [r["action"] for r in pool] == kept and len(pool) == 756  # every train call but the 12 test repeats
    assert {r["stratum"] for r in pool} <= {"failure", "simple", "medium", "difficult", "extreme"}
    assert all(r["delta_size"] > 0 for r in pool if r["outcome"] != "failure")
    env_class = tau_env("retail")
    state = env_class.sample_state(0)
    order = pool[0]["action"]["arguments"]["order_id"]
    read, _ = label_traced(env_class, state, {"name": "get_order_details", "arguments": {"order_id": order}})
    assert (read.stratum, read.delta_size, read.outcome) == ("no_change", 0, "no_change")


@pytest.mark.slow
@pytest.mark.tau
def test_train_data_tau_track_writes_view_samples_without_any_test_task_call(tmp_path):
    from click.testing import CliRunner

    from envsim.cli import main
    from envsim.evaluation.prompting.prompts import action_text
    from envsim.envs.adapters.tau import DOMAINS, task_actions

    result = CliRunner().invoke(main, ["train", "data", "--track", "tau", "--out", str(tmp_path), "--no-progress"])
    assert result.exit_code == 0, result.output
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert (stats["prompt_mode"], stats["prompt_version"]) == ("mdp-view", "3") and stats["samples"] > 700
    samples = [json.loads(line) for line in (tmp_path / "tau_sft.jsonl").read_text().splitlines()]
    records = load(str(tmp_path / "tau_sft.records.jsonl"))  # states resolve from tmp_path/tau_states
    assert [s["id"] for s in samples] == [r["id"] for r in records] and len(samples) == stats["samples"]
    held_out = held_out_call_keys()
    assert not [r["id"] for r in records if canonical_json([r["env"], r["action"]]) in held_out]
    # the same check on the text the model trains on: no test task's call line appears in any prompt
    calls = {"Call:\n" + action_text(a.to_json(), "3") for d in DOMAINS for t in task_actions(d, "test") for a in t}
    call_lines = [s["messages"][1]["content"].rsplit("\n\n", 1)[-1] for s in samples]
    assert not [line for line in call_lines if line in calls]
    train = {"Call:\n" + action_text(a.to_json(), "3") for t in task_actions("retail", "train") for a in t}
    from_tasks = [line for line, r in zip(call_lines, records) if r["source"].startswith("task:")]
    assert len(from_tasks) == 756 and all(line in train for line in from_tasks)  # the check reads the lines it means to
    # the explorer's calls on the train tasks' states: reads and failures, none changes the state
    explored = [r for r in records if r["source"].startswith("explorer:train:")]
    assert explored and all(r["outcome"] != "change" for r in explored)
    outcomes = stats["by_outcome"]  # close to the τ test track's mix (64 failure, 527 no-change, 252 change of 843)
    assert outcomes["no_change"] / stats["samples"] > 0.5 and 0.03 < outcomes["failure"] / stats["samples"] < 0.12
    assert all("State view" in s["messages"][1]["content"] for s in samples)
    first = records[0]
    assert canonical_json(jsonpatch.apply_patch(first["state"], first["patch"])) == canonical_json(first["next_state"])


def test_train_data_tau_track_needs_a_view_prompt_version(tmp_path):
    import envsim
    from envsim.training.errors import TrainDataStopped

    with pytest.raises(TrainDataStopped, match="prompt version 3"):
        envsim.train_data(tmp_path / "out", track="tau", prompt_version="2")
    assert not (tmp_path / "out").exists()

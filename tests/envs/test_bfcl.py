"""The BFCL track: BFCL's multi-turn classes from ``bfcl-eval`` adapted without edits (needs the [bfcl] extra)."""

from __future__ import annotations

import datetime as dt
import json

import jsonpatch
import pytest

from envsim.envs.adapters.bfcl import INSTALL_HINT  # noqa: E402

pytest.importorskip("mpmath", reason=f"needs the [bfcl] extra ({INSTALL_HINT})")
pytest.importorskip("bfcl_eval", reason=f"needs the [bfcl] extra ({INSTALL_HINT})")

from envsim.construction import bfcl as track  # noqa: E402
from envsim.delta import canonical_json  # noqa: E402
from envsim.envs.adapters import bfcl  # noqa: E402
from envsim.envs.sandbox import call_tool  # noqa: E402
from envsim.envs.sandbox import execute  # noqa: E402
from envsim.envs.registry import get_env  # noqa: E402

CLASSES = list(bfcl.CLASSES)
TOOLS = {"GorillaFileSystem": 18, "MathAPI": 17, "MessageAPI": 10, "TwitterAPI": 14, "TicketAPI": 9,
         "TradingBot": 20, "TravelAPI": 18, "VehicleControlAPI": 22}


@pytest.fixture(scope="module")
def ground_truth():
    return track.ground_truth_records()


def test_eight_classes_with_schemas_that_match_bfcl_docs():
    assert CLASSES == list(TOOLS)
    for name in CLASSES:
        env = get_env(f"bfcl/{name}")
        assert env.env_id() == f"bfcl/{name}" and env.origin().endswith(f":{name}")
        assert len(env.tool_schemas()) == TOOLS[name] == len(bfcl.function_docs(name))
        assert bfcl.schema_differences(name) == []      # names, required and types agree (BFCL type names mapped)


@pytest.mark.parametrize("name", CLASSES)
def test_a_sample_of_every_class_re_executes_to_its_label(name, ground_truth):
    records = [r for r in ground_truth if r["env"] == f"bfcl/{name}"]
    assert records, name
    changed = [r for r in records if r["delta_size"] > 0] or records
    for record in (records[0], changed[0], records[-1]):
        env = get_env(record["env"])
        t = execute(env, record["state"], record["action"], check_determinism=True)
        assert canonical_json(t.observation) == canonical_json(record["observation"])
        assert canonical_json(t.next_state) == canonical_json(record["next_state"])
        assert jsonpatch.apply_patch(record["state"], record["patch"]) == record["next_state"]
        assert record["origin"] == env.origin() and record["source"] == "ground_truth"


def test_initial_states_are_normalised_so_reads_change_nothing():
    for name in CLASSES:
        env = bfcl.bfcl_env(name)
        state = env.sample_state(0)
        assert env.normalise(state) == state
    travel = bfcl.bfcl_env("TravelAPI")
    state = travel.sample_state(0)
    t = execute(travel, state, {"name": "retrieve_invoice", "arguments": {"access_token": "nope"}})
    assert t.outcome == "failure" and t.delta_size == 0    # was |Δ| = 16 when the raw scenario was the state


def test_file_system_state_is_the_scenario_json_with_the_current_directory():
    fs = bfcl.bfcl_env("GorillaFileSystem")
    state = fs.sample_state(0)
    root = next(iter(state["root"]))
    assert state["current_dir"] == [root] and state["root"][root]["type"] == "directory"
    folder = next(k for k, v in state["root"][root]["contents"].items() if v["type"] == "directory")
    moved = execute(fs, state, {"name": "cd", "arguments": {"folder": folder}})
    assert moved.next_state["current_dir"] == [root, folder] and moved.delta_size == 1
    made = execute(fs, moved.next_state, {"name": "touch", "arguments": {"file_name": "new.txt"}})
    assert made.next_state["root"][root]["contents"][folder]["contents"]["new.txt"] == {"type": "file", "content": ""}
    assert execute(fs, made.next_state, {"name": "pwd", "arguments": {}}).observation == {
        "current_working_directory": f"/{root}/{folder}"}


def test_sets_int_keys_and_hidden_forces_survive_between_calls():
    messages = bfcl.bfcl_env("MessageAPI")
    state = messages.sample_state(0)
    user = state["current_user"] or "USR001"
    state = execute(messages, state, {"name": "message_login", "arguments": {"user_id": user}}).next_state
    receiver = next(iter(state["user_map"].values()))
    sent = execute(messages, state, {"name": "send_message", "arguments": {"receiver_id": receiver, "message": "hi"}})
    new_id = sent.observation["message_id"]["new_id"]
    assert new_id in sent.next_state["generated_ids"] and sent.next_state["generated_ids"] == sorted(
        sent.next_state["generated_ids"])
    again = execute(messages, sent.next_state, {"name": "send_message",
                                                "arguments": {"receiver_id": receiver, "message": "hi"}})
    assert again.observation["message_id"]["new_id"] != new_id      # a different draw on a different state

    twitter = bfcl.bfcl_env("TwitterAPI")
    state = twitter.sample_state(0)
    tweet_id = int(next(iter(state["tweets"])))
    got = execute(twitter, state, {"name": "get_tweet", "arguments": {"tweet_id": tweet_id}})
    assert got.outcome == "no_change" and got.observation["id"] == tweet_id   # int keys restored on load

    car = bfcl.bfcl_env("VehicleControlAPI")
    state = car.sample_state(0)
    assert {"parkingBrakeForce", "slopeAngle", "brakePedalForce"} <= set(state)
    pressed = execute(car, state, {"name": "pressBrakePedal", "arguments": {"pedalPosition": 1.0}})
    assert pressed.next_state["brakePedalForce"] == 1000.0
    started = execute(car, pressed.next_state, {"name": "startEngine", "arguments": {"ignitionMode": "START"}})
    assert started.next_state["engine_state"] == "running", started.observation


def test_math_precision_settings_are_restored_and_numbers_are_json():
    import decimal

    import mpmath

    math_env = bfcl.bfcl_env("MathAPI")
    before = (mpmath.mp.dps, decimal.getcontext().prec)
    log = execute(math_env, {}, {"name": "logarithm", "arguments": {"value": 36.0, "base": 6.0, "precision": 4}})
    root = execute(math_env, {}, {"name": "square_root", "arguments": {"number": 2.0, "precision": 3}})
    assert log.observation == {"result": 2.0} and isinstance(root.observation["result"], float)
    assert (mpmath.mp.dps, decimal.getcontext().prec) == before
    assert bfcl.FROZEN_NOW == dt.datetime(2024, 9, 1, 10, 30)


def test_verify_traveler_age_uses_bfcl_current_time():
    travel = bfcl.bfcl_env("TravelAPI")
    state = travel.sample_state(0)
    names = {"first_name": state["user_first_name"], "last_name": state["user_last_name"], "passport_number": "US1"}
    minor = execute(travel, state, {"name": "verify_traveler_information",
                                    "arguments": {**names, "date_of_birth": "2006-09-02"}})
    adult = execute(travel, state, {"name": "verify_traveler_information",
                                    "arguments": {**names, "date_of_birth": "2006-09-01"}})
    assert minor.observation["verification_status"] is False      # 17 on 2024-09-01, whatever today is
    assert adult.observation["verification_status"] is True


def test_ground_truth_calls_are_parsed_never_evaluated():
    assert track.parse_call("sort('final_report.pdf')") == ("sort", ["final_report.pdf"], {})
    assert track.parse_call("mean(numbers=[1, -2.5])") == ("mean", [], {"numbers": [1, -2.5]})
    fs = bfcl.bfcl_env("GorillaFileSystem")
    assert track.to_action("sort('a.txt')", fs).arguments == {"file_name": "a.txt"}
    for bad in ("cd(folder=__import__('os').system('touch /tmp/x'))", "os.system('x')", "cd(**kw)", "1 +"):
        with pytest.raises(track.CallParseError):
            track.parse_call(bad)


def test_per_call_states_agree_with_a_persistent_bfcl_instance():
    """Each ground-truth call runs on a reloaded state; BFCL keeps one instance per episode. Both must end in the
    same state wherever no random draw is involved (file system, posting, tickets, math, vehicle)."""
    deterministic = {"GorillaFileSystem", "TwitterAPI", "TicketAPI", "MathAPI", "VehicleControlAPI"}
    compared = 0
    for entry in bfcl.multi_turn_entries("base"):
        involved = [c for c in entry["involved_classes"]]
        if not set(involved) <= deterministic:
            continue
        owner = track.owners(involved)
        live = {c: bfcl.bfcl_env(c).from_state(bfcl.bfcl_env(c).normalise(entry["initial_config"].get(c, {})))
                for c in involved}
        ours = {c: live[c].get_state() for c in involved}
        for turn in entry["ground_truth"]:
            for text in turn:
                name = track.parse_call(text)[0]
                if name not in owner:
                    continue
                cls = bfcl.bfcl_env(owner[name])
                action = track.to_action(text, cls)
                call_tool(live[owner[name]], action)
                ours[owner[name]] = execute(cls, ours[owner[name]], action).next_state
        for c in involved:
            assert canonical_json(live[c].get_state()) == canonical_json(ours[c]), (entry["id"], c)
            compared += 1
    assert compared > 50


@pytest.mark.slow
def test_track_build_is_deterministic_and_held_out():
    first, pool = track.build_track(seed=3, episodes=1, steps=6)
    second, _ = track.build_track(seed=3, episodes=1, steps=6)
    assert canonical_json(first) == canonical_json(second) and len(first) > 50
    assert {r["split"] for r in first} == {"test"} and {r["source"] for r in pool} == {"ground_truth", "explorer"}
    assert {r["env"] for r in first} == {f"bfcl/{c}" for c in CLASSES}
    with pytest.raises(ValueError, match="held out"):
        track.build_track(split="train")


@pytest.mark.slow
def test_construct_track_bfcl_cli(tmp_path):
    from click.testing import CliRunner

    from envsim.cli import main

    out = tmp_path / "bfcl.jsonl"
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--track", "bfcl", "--episodes", "1",
                                       "--steps", "4", "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    stats = json.loads(out.with_suffix(".stats.json").read_text())
    assert len(rows) == stats["samples"] > 50 and stats["environments"] == 8
    assert all(r["env"].startswith("bfcl/") and r["origin"] and r["source"] for r in rows)
    assert sum(stats["by_stratum"].values()) == len(rows) and set(stats["pool"]) == {f"bfcl/{c}" for c in CLASSES}
    refused = CliRunner().invoke(main, ["construct", "--split", "train", "--track", "bfcl", "--out", str(out)])
    assert refused.exit_code != 0 and "held out from training" in refused.output


@pytest.mark.slow
def test_shipped_v2_bfcl_track_rebuilds_byte_for_byte_and_re_executes(tmp_path):
    """benchmark/v2/bfcl.jsonl is what `envsim construct --track bfcl` builds, and every sample re-executes."""
    from click.testing import CliRunner

    from envsim.benchmark import benchmark_path, load
    from envsim.cli import main

    out = tmp_path / "bfcl.jsonl"
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--track", "bfcl", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == benchmark_path("v2", "bfcl").read_bytes()
    for record in load("v2", "bfcl"):
        t = execute(get_env(record["env"]), record["state"], record["action"])
        assert canonical_json(t.observation) == canonical_json(record["observation"]), record["id"]
        assert canonical_json(t.next_state) == canonical_json(record["next_state"]), record["id"]
        assert jsonpatch.apply_patch(record["state"], record["patch"]) == record["next_state"], record["id"]
        assert (t.delta_size, t.stratum) == (record["delta_size"], record["stratum"]), record["id"]

"""Foreign environments: module:Class, BFCL-style and EnvScaler-style string classes (incl. hostile ones)."""

from __future__ import annotations

import os
import time
import uuid

import pytest

from envsim.envs.adapters import from_envscaler, wrap_bfcl, wrap_target
from envsim.envs.sandbox import Limits, SandboxError, execute
from envsim.envs.shown import tool_code
from tests.fixtures.foreign_envs import (HOSTILE_SOURCE, LIBRARY_CONFIG, LIBRARY_SOURCE, TICKET_SCENARIO,
                                         TicketDesk)


def test_bfcl_class_loads_scenario_and_executes():
    env = wrap_bfcl(TicketDesk, TICKET_SCENARIO)
    state = env.sample_state(0)
    assert state == TICKET_SCENARIO
    t = execute(env, state, {"name": "create_ticket", "arguments": {"title": "Printer", "priority": 2}})
    assert t.observation == {"id": "2"}
    assert t.next_state["tickets"]["2"] == {"title": "Printer", "priority": 2, "status": "open"}
    assert t.delta_size == 2 and t.outcome == "change"          # new ticket + counter
    failed = execute(env, state, {"name": "close_ticket", "arguments": {"ticket_id": "7"}})
    assert failed.outcome == "failure"                            # BFCL error dicts count as failures
    assert "_long_context" not in t.next_state                    # private attributes are not state


def test_bfcl_schemas_come_from_the_foreign_code():
    env = wrap_bfcl(TicketDesk, TICKET_SCENARIO)
    names = [s["function"]["name"] for s in env.tool_schemas()]
    assert names == ["create_ticket", "close_ticket", "get_ticket"]
    create = env.tool_schemas()[0]["function"]["parameters"]
    assert create["required"] == ["title"] and create["properties"]["priority"]["default"] == 3
    assert "def create_ticket(self, title: str" in tool_code(env, "create_ticket")


def test_module_class_target_is_wrapped_with_scenario_loader():
    env = wrap_target("tests.fixtures.foreign_envs:TicketDesk", initial_states=[TICKET_SCENARIO])
    t = execute(env, env.sample_state(0), {"name": "get_ticket", "arguments": {"ticket_id": "1"}})
    assert t.observation["title"] == "VPN down" and t.outcome == "no_change"


def test_envscaler_string_class_runs_in_sandbox():
    env = from_envscaler({"env_class_code": LIBRARY_SOURCE, "init_config": LIBRARY_CONFIG})
    assert [s["function"]["name"] for s in env.tool_schemas()] == ["list_available", "borrow"]
    t = execute(env, env.sample_state(0), {"name": "borrow", "arguments": {"book_id": "B1", "member": "ann"}})
    assert t.observation == {"success": True}
    assert t.patch[0] == {"op": "replace", "path": "/books/B1/copies", "value": 0}
    assert t.delta_size == 2
    no_copies = execute(env, env.sample_state(0), {"name": "borrow", "arguments": {"book_id": "B2", "member": "x"}})
    assert no_copies.outcome == "failure"
    bad_args = execute(env, env.sample_state(0), {"name": "borrow", "arguments": {"book_id": 1, "member": "x"}})
    assert "expected string" in bad_args.observation["error"]
    assert "def _book(self, book_id)" in tool_code(env, "borrow")


SHOP_SOURCE = '''
class Shop:
    """A shop whose constructor fills defaults the config leaves out."""

    def __init__(self, config):
        self.items = config.get("items", {})
        self.orders = config.get("orders", [])
        self.next_order_id = config.get("next_order_id", 1)

    def list_items(self) -> dict:
        """List the items."""
        return {"success": True, "items": sorted(self.items)}

    def order(self, item: str) -> dict:
        """Order one unit of an item.

        Args:
            item: Item name.
        """
        self.items[item] -= 1
        self.orders.append({"id": self.next_order_id, "item": item})
        self.next_order_id += 1
        return {"success": True, "order_id": self.next_order_id - 1}
'''


def test_envscaler_initial_states_are_the_sandboxed_load_save_form():
    env = from_envscaler({"env_class_code": SHOP_SOURCE, "init_config": {"items": {"apple": 3}}})
    state = env.sample_state(0)
    assert state == {"items": {"apple": 3}, "orders": [], "next_order_id": 1}   # the constructor's defaults
    read = execute(env, state, {"name": "list_items", "arguments": {}})
    assert read.delta_size == 0 and read.outcome == "no_change"                   # was |Δ| = 2 on the raw config
    order = execute(env, state, {"name": "order", "arguments": {"item": "apple"}})
    assert order.delta_size == 3 and sorted(op["path"] for op in order.patch) == [
        "/items/apple", "/next_order_id", "/orders/0"]


def test_envscaler_config_the_constructor_rejects_is_a_clear_error():
    source = SHOP_SOURCE.replace('config.get("items", {})', 'config["items"]')
    env = from_envscaler({"env_class_code": source, "init_config": {"stock": {}}})
    with pytest.raises(SandboxError, match="untrusted environment failed: KeyError: 'items'"):
        env.sample_state(0)


def test_hostile_source_is_never_executed_in_process():
    marker = f"/tmp/envsim-hostile-{uuid.uuid4().hex}"
    source = f"open({marker!r}, 'w').write('x')\n\nclass Evil:\n    def ping(self) -> dict:\n        return {{}}\n"
    env = from_envscaler({"env_class_code": source, "init_config": {}})
    assert not os.path.exists(marker)                             # building schemas ran nothing
    with pytest.raises(SandboxError, match="forbidden operation: file access"):
        execute(env, {}, {"name": "ping", "arguments": {}})
    assert not os.path.exists(marker)


@pytest.fixture(scope="module")
def hostile():
    return from_envscaler({"env_class_code": HOSTILE_SOURCE, "init_config": {}},
                          limits=Limits(cpu_seconds=2, wall_seconds=6, memory_bytes=512 << 20))


def test_infinite_loop_hits_cpu_limit():
    # The wall limit stands far above the CPU limit, so that on a loaded machine (where 2 s of CPU
    # can take many seconds of wall time) it is still the CPU limit that ends the loop.
    spinner = from_envscaler({"env_class_code": HOSTILE_SOURCE, "init_config": {}},
                             limits=Limits(cpu_seconds=1, wall_seconds=120, memory_bytes=512 << 20))
    with pytest.raises(SandboxError, match="CPU-time limit"):
        execute(spinner, {}, {"name": "spin", "arguments": {}})


def test_wall_time_limit_catches_sleepers():
    source = "class Sleepy:\n    def nap(self) -> dict:\n        import time\n        time.sleep(30)\n        return {}\n"
    env = from_envscaler({"env_class_code": source, "init_config": {}},
                         limits=Limits(cpu_seconds=5, wall_seconds=1.5))
    start = time.monotonic()
    with pytest.raises(SandboxError, match="wall-time limit"):
        execute(env, {}, {"name": "nap", "arguments": {}})
    assert time.monotonic() - start < 25, "the sleeper was not stopped before its 30 s sleep ended"


def test_huge_allocation_hits_memory_limit(hostile):
    with pytest.raises(SandboxError, match="memory limit"):
        execute(hostile, {}, {"name": "hog", "arguments": {}})


@pytest.mark.parametrize("tool_name", ["scribble", "sneaky"])
def test_file_writes_are_blocked_even_when_swallowed(hostile, tool_name):
    target = f"/tmp/envsim-hostile-{uuid.uuid4().hex}"
    with pytest.raises(SandboxError, match="forbidden operation: file access"):
        execute(hostile, {}, {"name": tool_name, "arguments": {"path": target}})
    assert not os.path.exists(target)


def test_subprocess_is_blocked(hostile):
    with pytest.raises(SandboxError, match="forbidden operation: subprocess"):
        execute(hostile, {}, {"name": "shell", "arguments": {}})


# --- codec hooks, normalised initial states, inherited tools, ids (issue 15; base environment, no bfcl-eval) ---

import json  # noqa: E402

from click.testing import CliRunner  # noqa: E402

from envsim.construction.explorer import ExplorerPolicy  # noqa: E402
from envsim.construction.labelling import to_record  # noqa: E402
from envsim.envs import Environment  # noqa: E402
from envsim.envs.adapters.codec import StateCodec  # noqa: E402
from envsim.envs.adapters.foreign import NoToolsError, wrap_class  # noqa: E402
from envsim.envs.sandbox import StateError  # noqa: E402
from tests.fixtures import stateful_foreign as sf  # noqa: E402


def test_sets_and_int_keys_round_trip_through_json_states():
    env = wrap_class(sf.Inbox, load="scenario", initial_states=[sf.INBOX_SCENARIO], codec=StateCodec(sets=["used_ids"]))
    state = env.sample_state(0)
    assert state["used_ids"] == [3] and state["messages"] == {"3": "hello"}          # JSON forms
    sent = execute(env, state, {"name": "send", "arguments": {"text": "hi"}})
    assert sent.observation == {"id": 10}
    assert sent.next_state["used_ids"] == [3, 10] and sent.next_state["messages"]["10"] == "hi"
    again = execute(env, sent.next_state, {"name": "read", "arguments": {"message_id": 10}})
    assert again.observation == {"text": "hi"}                                        # int keys restored on load
    reused = execute(env, sent.next_state, {"name": "send", "arguments": {"text": "x"}})
    assert reused.observation == {"id": 11}                                          # the set came back as a set


def test_initial_states_are_the_normalised_load_save_form():
    env = wrap_class(sf.Inbox, load="scenario", initial_states=[sf.INBOX_SCENARIO], codec=StateCodec(sets=["used_ids"]))
    state = env.sample_state(0)
    assert state["owner"] == "ann" and state["counter"] == 10                          # defaults the loader added
    read = execute(env, state, {"name": "read", "arguments": {"message_id": 3}})
    assert read.delta_size == 0 and read.outcome == "no_change"                       # no change that no tool made


def test_default_codec_detects_sets_without_being_told():
    env = wrap_class(sf.Inbox, load="scenario", initial_states=[{}])
    state = env.sample_state(0)
    assert state["used_ids"] == [7]
    sent = execute(env, state, {"name": "send", "arguments": {"text": "a"}})   # .add() needs the set back
    assert sent.observation == {"id": 10} and sent.next_state["used_ids"] == [7, 10]


def test_object_state_raises_state_error_that_names_the_hook():
    env = wrap_class(sf.Tree, load="scenario", initial_states=[{"children": ["a"]}])
    with pytest.raises(StateError, match=r"/root: Node is not a JSON value; give the adapter an encode/decode hook"):
        env.sample_state(0)


class _TreeCodec(StateCodec):
    def encode(self, instance):
        return {"children": sorted(instance.root.children)}


def test_custom_codec_writes_an_object_tree_as_the_scenario_json():
    env = wrap_class(sf.Tree, load="scenario", initial_states=[{"children": ["b", "a"]}], codec=_TreeCodec())
    state = env.sample_state(0)
    assert state == {"children": ["a", "b"]}
    t = execute(env, state, {"name": "add", "arguments": {"name": "c"}})
    assert t.next_state == {"children": ["a", "b", "c"]} and t.delta_size == 1


class _LossyCodec(StateCodec):
    def encode(self, instance):
        return {"children": sorted(instance.root.children) + ["x"]}


def test_a_codec_that_does_not_round_trip_is_refused():
    env = wrap_class(sf.Tree, load="scenario", initial_states=[{}], codec=_LossyCodec())
    with pytest.raises(StateError, match="does not survive load->save->load"):
        env.sample_state(0)


def test_hidden_private_state_is_carried_between_calls():
    env = wrap_class(sf.Brake, load="scenario", initial_states=[{}], codec=StateCodec(hidden={"_force": "force"}))
    state = env.sample_state(0)
    assert state == {"engine": "stopped", "force": 0.0}
    pressed = execute(env, state, {"name": "press", "arguments": {"force": 1000.0}})
    started = execute(env, pressed.next_state, {"name": "start", "arguments": {}})
    assert started.observation == {"engine": "running"}
    plain = wrap_class(sf.Brake, load="scenario", initial_states=[{}])               # without the hook: lost
    lost = execute(plain, execute(plain, plain.sample_state(0), {"name": "press", "arguments": {"force": 1000.0}})
                   .next_state, {"name": "start", "arguments": {}})
    assert lost.outcome == "failure"


def test_non_json_observations_are_encoded_leniently():
    env = wrap_class(sf.Calculator, initial_states=[{}])
    t = execute(env, {}, {"name": "half", "arguments": {"value": 3}})
    assert t.observation == {"result": 1.5} and t.outcome == "no_change"


def test_subclass_of_a_wrapped_class_keeps_its_tools_and_overrides():
    base = wrap_bfcl(TicketDesk, TICKET_SCENARIO)

    class Custom(base):
        def get_ticket(self, ticket_id: str) -> dict:
            """Read a ticket, upper-cased title.

            Args:
                ticket_id: Ticket to read.
            """
            return {"title": self._inner.tickets[ticket_id]["title"].upper()}

    assert list(Custom.tool_specs()) == ["create_ticket", "close_ticket", "get_ticket"]
    t = execute(Custom, Custom.sample_state(0), {"name": "get_ticket", "arguments": {"ticket_id": "1"}})
    assert t.observation == {"title": "VPN DOWN"}
    action = ExplorerPolicy(seed=1).next_action(Custom, Custom.sample_state(0))
    assert action.name in Custom.tool_specs()


def test_no_tools_is_a_clear_error():
    with pytest.raises(NoToolsError, match="no public methods"):
        wrap_class(sf.Empty)

    class Toolless(Environment):
        name = "toolless"

    with pytest.raises(ValueError, match="has no tools to call"):
        ExplorerPolicy(seed=0).next_action(Toolless, {})


def test_module_class_ids_resolve_once_and_records_carry_the_origin():
    from envsim.envs.registry import get_env
    from envsim.envs.sandbox import trust_module

    target = "tests.fixtures.foreign_envs:TicketDesk"
    trust_module("tests.fixtures")  # module:Class ids resolve only for modules the user trusts
    env = get_env(target)
    assert get_env(target) is env and env.env_id() == target
    t = execute(env, env.sample_state(0), {"name": "get_ticket", "arguments": {"ticket_id": "1"}})
    record = to_record(t, env, "test")
    assert record["env"] == target and record["origin"] == target
    assert get_env(record["env"]).run_call(record["state"], t.action)[0] == record["observation"]


def _construct(args, tmp_path):
    from envsim.cli import main

    out = tmp_path / "out.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    result = CliRunner().invoke(main, ["construct", *args, "--out", str(out)])
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return result, rows


def test_construct_explorer_accepts_foreign_env_ids(tmp_path):
    target = "tests.fixtures.foreign_envs:TicketDesk"
    result, rows = _construct(["--split", "test", "--env", target, "--pool", "15", "--episodes", "2",
                               "--steps", "8"], tmp_path)
    assert result.exit_code == 0, result.output
    assert rows and {r["env"] for r in rows} == {target} and {r["origin"] for r in rows} == {target}
    # naming one's own class for a train split is asking for it (construction.own_env): episodes disjoint from test
    train, train_rows = _construct(["--split", "train", "--env", target, "--pool", "15", "--episodes", "2",
                                    "--steps", "8"], tmp_path / "train")
    assert train.exit_code == 0, train.output
    assert train_rows and {r["split"] for r in train_rows} == {"train"}
    assert not {r["id"] for r in train_rows} & {r["id"] for r in rows}


def test_construct_uses_entry_point_plugins(tmp_path, monkeypatch):
    from importlib.metadata import EntryPoint

    from envsim.envs import registry as reg

    ep = EntryPoint(name="inbox-v1", value="tests.fixtures.stateful_foreign:InboxEnv", group=reg.ENTRY_POINT_GROUP)
    monkeypatch.setattr(reg, "entry_points", lambda group: [ep] if group == reg.ENTRY_POINT_GROUP else [])
    reg.registry.cache_clear()
    try:
        listed = CliRunner().invoke(__import__("envsim.cli", fromlist=["main"]).main, ["envs", "list", "--json"])
        assert "inbox-v1" in listed.output
        result, rows = _construct(["--split", "test", "--env", "inbox-v1", "--pool", "6", "--episodes", "1",
                                   "--steps", "6"], tmp_path)
    finally:
        reg.registry.cache_clear()
    assert result.exit_code == 0, result.output
    assert 0 < len(rows) <= 6 and {r["env"] for r in rows} == {"inbox-v1"}
    assert {r["origin"] for r in rows} == {"tests.fixtures.stateful_foreign:Inbox"}


def test_construct_rejects_unknown_env(tmp_path):
    result, _ = _construct(["--split", "test", "--env", "no_such_env-v1", "--pool", "5"], tmp_path)
    assert result.exit_code != 0 and "--env no_such_env-v1" in result.output


def test_bfcl_track_without_bfcl_eval_says_how_to_install(monkeypatch, tmp_path):
    import importlib

    from envsim.envs.adapters import bfcl

    real = importlib.import_module

    def without_bfcl(name, *args, **kwargs):
        if name.split(".")[0] == "bfcl_eval":
            raise ImportError("No module named 'bfcl_eval'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(bfcl.importlib, "import_module", without_bfcl)
    bfcl.multi_turn_entries.cache_clear()
    bfcl.bfcl_env.cache_clear()
    with pytest.raises(ImportError, match=r'pip install --no-deps "bfcl-eval=='):
        bfcl.bfcl_env("TicketAPI")
    result, rows = _construct(["--split", "test", "--track", "bfcl"], tmp_path)
    assert result.exit_code != 0 and "bfcl-eval" in result.output and not rows
    bfcl.multi_turn_entries.cache_clear()
    bfcl.bfcl_env.cache_clear()


def test_replayed_foreign_logs_start_from_normalised_states_and_stay_out_of_training(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"env": "tests.fixtures.stateful_foreign:InboxEnv", "state": sf.INBOX_SCENARIO,
                               "actions": [{"name": "read", "arguments": {"message_id": 3}}]}) + "\n")
    result, rows = _construct(["--split", "test", "--policy", "replay", "--replay-log", str(log), "--pool", "5",
                               "--env-module", "tests.fixtures.stateful_foreign"], tmp_path)
    assert result.exit_code == 0, result.output
    assert rows[0]["state"]["owner"] == "ann" and rows[0]["delta_size"] == 0   # defaults loaded before step one
    refused, _ = _construct(["--split", "train", "--policy", "replay", "--replay-log", str(log), "--pool", "5"],
                            tmp_path)
    assert refused.exit_code != 0 and "held out from training" in refused.output


class _Opaque:
    def __str__(self) -> str:  # never called: the adapter does not stringify unknown objects
        raise AssertionError("str() of a foreign object")


class _ReturnsObject:
    def _load_scenario(self, scenario: dict) -> None:
        self.calls = scenario.get("calls", 0)

    def make(self) -> dict:
        """Count a call and return an object."""
        self.calls += 1
        return {"thing": _Opaque()}


def test_unknown_objects_in_observations_fail_the_call_without_being_stringified():
    env = wrap_class(_ReturnsObject, load="scenario", initial_states=[{}])
    t = execute(env, env.sample_state(0), {"name": "make", "arguments": {}})
    # a return value with no JSON form is a labelled failure on the given state, never a change (issue 53, item 4)
    assert t.outcome == "failure" and t.next_state == {"calls": 0}
    assert t.observation["error"].startswith("ReturnValueError: ")
    assert "non-JSON value at /thing (_Opaque)" in t.observation["error"]

"""The sandbox still runs ordinary tools: warm workers per class, no state between calls, clear refusals."""

from __future__ import annotations

import os
import warnings

import pytest

from envsim.envs.sandbox import runner as sandbox
from envsim.envs.adapters import from_envscaler
from envsim.envs.sandbox import Limits, SandboxError, confinement_report, execute, run_request
from tests.fixtures.foreign_envs import LIBRARY_CONFIG, LIBRARY_SOURCE

LAYERS = confinement_report()
confined_here = pytest.mark.skipif(bool(sandbox.uncovered_layers(LAYERS)),
                                   reason=f"confinement layers unavailable here: {LAYERS}")

COUNTER_SOURCE = '''
import builtins
CALLS = []

class Counter:
    seen = []

    def __init__(self, config):
        self.n = config["n"]

    def bump(self, by: int) -> dict:
        """Add to the counter and report what survived from earlier calls.

        Args:
            by: Amount to add.
        """
        CALLS.append(by)
        Counter.seen.append(by)
        leaked = getattr(builtins, "envsim_leak", None)
        builtins.envsim_leak = by
        self.n += by
        return {"success": True, "n": self.n, "module_calls": len(CALLS), "class_calls": len(Counter.seen),
                "leaked": leaked}
'''


def _request(source: str, class_name: str, state: dict, action: dict, load: str = "init") -> dict:
    return {"source": source, "class_name": class_name, "load": load, "tools": [action["name"]],
            "state": state, "action": action}


def _worker_pids() -> set[int]:
    return {w.proc.pid for w in sandbox._POOL._workers.values()}


def test_confinement_report_names_every_layer():
    assert set(LAYERS) == {"session", "rlimits", "uid", "landlock", "landlock-scope", "seccomp", "tripwire"}
    assert all(v is None or isinstance(v, str) for v in LAYERS.values())


@confined_here
def test_all_layers_are_active_on_this_machine():
    active = dict.fromkeys(LAYERS)
    if os.getuid() != 0:  # an ordinary user has no private uid: the report says so
        assert "not started as root" in LAYERS["uid"]
        active["uid"] = LAYERS["uid"]
    assert LAYERS == active


@confined_here
def test_ordinary_tool_state_in_observation_and_next_state_out():
    env = from_envscaler({"env_class_code": LIBRARY_SOURCE, "init_config": LIBRARY_CONFIG})
    t = execute(env, env.sample_state(0), {"name": "borrow", "arguments": {"book_id": "B1", "member": "ann"}},
                check_determinism=True)
    assert t.observation == {"success": True}
    assert t.next_state["books"]["B1"]["copies"] == 0
    assert t.next_state["loans"] == [{"book_id": "B1", "member": "ann"}]
    listing = execute(env, env.sample_state(0), {"name": "list_available", "arguments": {}})
    assert listing.observation == {"success": True, "books": ["B1"]} and listing.outcome == "no_change"


@confined_here
def test_warm_worker_is_reused_and_keeps_nothing_between_calls():
    action = {"name": "bump", "arguments": {"by": 2}}
    first = run_request(_request(COUNTER_SOURCE, "Counter", {"n": 1}, action))
    pids = _worker_pids()
    second = run_request(_request(COUNTER_SOURCE, "Counter", {"n": 1}, action))
    third = run_request(_request(COUNTER_SOURCE, "Counter", {"n": 10}, action))
    expected = {"success": True, "n": 3, "module_calls": 1, "class_calls": 1, "leaked": None}
    assert first["observation"] == second["observation"] == expected   # fresh module, class and builtins
    assert first["next_state"] == {"n": 3}
    assert third["observation"]["n"] == 12 and third["next_state"] == {"n": 12}
    assert _worker_pids() == pids                                      # the same warm worker served them


@confined_here
def test_workers_are_never_shared_between_classes_or_limits():
    action = {"name": "bump", "arguments": {"by": 1}}
    run_request(_request(COUNTER_SOURCE, "Counter", {"n": 0}, action))
    before = _worker_pids()
    other = COUNTER_SOURCE.replace("class Counter", "class Other").replace("Counter.seen", "Other.seen")
    run_request(_request(other, "Other", {"n": 0}, action))
    run_request(_request(COUNTER_SOURCE, "Counter", {"n": 0}, action), Limits(cpu_seconds=3))
    assert len(_worker_pids() - before) == 2


@confined_here
def test_a_timed_out_call_leaves_a_working_worker():
    source = ("class Nap:\n    def nap(self, seconds: float) -> dict:\n        import time\n"
              "        time.sleep(seconds)\n        return {'slept': seconds}\n")
    limits = Limits(cpu_seconds=2, wall_seconds=1)
    with pytest.raises(SandboxError, match="wall-time limit"):
        run_request(_request(source, "Nap", {}, {"name": "nap", "arguments": {"seconds": 30}}, "attrs"), limits)
    answer = run_request(_request(source, "Nap", {}, {"name": "nap", "arguments": {"seconds": 0}}, "attrs"), limits)
    assert answer["observation"] == {"slept": 0}


@confined_here
def test_fresh_worker_path_gives_the_same_answer():
    action = {"name": "bump", "arguments": {"by": 5}}
    warm = run_request(_request(COUNTER_SOURCE, "Counter", {"n": 1}, action))
    cold = run_request(_request(COUNTER_SOURCE, "Counter", {"n": 1}, action), fresh=True)
    assert warm == cold


class _FakeWorker:
    def __init__(self, layers: dict) -> None:
        self.layers, self.closed = layers, False

    def close(self) -> None:
        self.closed = True


def test_missing_layer_is_refused_with_one_warning(monkeypatch):
    monkeypatch.delenv(sandbox.OPT_OUT_VARIABLE, raising=False)
    monkeypatch.setattr(sandbox, "_WARNED", set())
    layers = dict.fromkeys(sandbox.sandbox_confine.LAYERS)
    layers["landlock"] = "Landlock is not available"
    with pytest.warns(RuntimeWarning, match="landlock: Landlock is not available"):
        with pytest.raises(SandboxError, match="refused.*allow_unconfined=True"):
            sandbox._check_layers(_FakeWorker(layers), allow_unconfined=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                      # said once, not on every call
        worker = _FakeWorker(layers)
        with pytest.raises(SandboxError):
            sandbox._check_layers(worker, allow_unconfined=False)
        assert worker.closed


def test_explicit_opt_out_runs_with_the_remaining_layers(monkeypatch):
    monkeypatch.setattr(sandbox, "_WARNED", set())
    layers = dict.fromkeys(sandbox.sandbox_confine.LAYERS)
    layers["seccomp"] = "seccomp unavailable"
    with pytest.warns(RuntimeWarning, match="opted out"):
        sandbox._check_layers(_FakeWorker(layers), allow_unconfined=True)
    monkeypatch.setenv(sandbox.OPT_OUT_VARIABLE, "1")
    worker = _FakeWorker(layers)
    sandbox._check_layers(worker, allow_unconfined=False)
    assert not worker.closed


STDLIB_SOURCE = '''
import json, re, math, copy, uuid, random, hashlib, decimal, logging
from typing import List, NamedTuple, TypeVar
from collections import Counter, namedtuple
from dataclasses import dataclass, field, asdict
from datetime import datetime, timedelta
from enum import Enum

T = TypeVar("T")
Point = namedtuple("Point", "x y")
Sized = namedtuple("Sized", "w h", defaults=(1,))   # sets __new__.__defaults__: ordinary code, no violation
log = logging.getLogger(__name__)

class Color(Enum):
    RED = 1

@dataclass
class Item:
    name: str
    tags: List[str] = field(default_factory=list)

class Shop:
    def __init__(self, config):
        self.day = config["day"]

    def report(self) -> dict:
        """Use the standard library the way generated environments do."""
        log.warning("report requested")
        day = datetime.strptime(self.day, "%Y-%m-%d") + timedelta(days=1)
        self.day = day.strftime("%Y-%m-%d")
        return {"success": True, "day": self.day, "point": Point(1, 2)._asdict(), "color": Color.RED.name,
                "item": asdict(Item("a")), "sqrt": math.sqrt(16), "sized": Sized(2)._asdict(), "sum": str(decimal.Decimal("1.1") + 2),
                "digits": re.findall(r"[0-9]+", "a1b22"), "count": dict(Counter("aab")),
                "hash": hashlib.sha256(b"x").hexdigest()[:8], "uuid_len": len(str(uuid.uuid4())),
                "pick": random.Random(3).randint(1, 9), "copy": copy.deepcopy(json.loads('{"a": [1]}'))}
'''


@confined_here
def test_common_standard_library_use_is_not_a_violation():
    answer = run_request(_request(STDLIB_SOURCE, "Shop", {"day": "2024-02-28"}, {"name": "report", "arguments": {}}))
    observation = answer["observation"]
    assert answer["next_state"] == {"day": "2024-02-29"}
    assert observation["point"] == {"x": 1, "y": 2} and observation["item"] == {"name": "a", "tags": []}
    assert observation["sized"] == {"w": 2, "h": 1}
    assert observation["sum"] == "3.1" and observation["digits"] == ["1", "22"] and observation["uuid_len"] == 36
    assert observation["copy"] == {"a": [1]} and observation["pick"] == __import__("random").Random(3).randint(1, 9)


@confined_here
def test_a_module_the_sandbox_lacks_is_named():
    source = "import yaml\n\nclass Cfg:\n    def read(self) -> dict:\n        return {}\n"
    with pytest.raises(SandboxError, match="module 'yaml' is not available in the sandbox"):
        run_request(_request(source, "Cfg", {}, {"name": "read", "arguments": {}}, "attrs"))

"""BFCL's state mapping shown as code (``envs.adapters.bfcl_shown``, issue 44): run as the executor runs it, it
sets up the same object as EnvSim's adapter and gives back the same state, and the executor baseline answers the
BFCL samples v2 could not derive from their prompts."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from envsim.envs.adapters.bfcl import INSTALL_HINT

pytest.importorskip("bfcl_eval", reason=f"needs the [bfcl] extra ({INSTALL_HINT})")
pytest.importorskip("mpmath", reason=f"needs the [bfcl] extra ({INSTALL_HINT})")

from envsim.benchmark import BENCHMARK_DIR, load  # noqa: E402
from envsim.construction.point_release import released_code  # noqa: E402
from envsim.delta import canonical_json  # noqa: E402
from envsim.envs.adapters import bfcl  # noqa: E402
from envsim.envs.adapters.bfcl_shown import HEADER, state_mapping_code, with_state_mapping  # noqa: E402
from envsim.envs.registry import get_env  # noqa: E402
from envsim.evaluation.baselines.executor_baseline import build_module, execute_prompt  # noqa: E402
from envsim.evaluation.prompting.prompts import build_messages  # noqa: E402

MAPPED = ["GorillaFileSystem", "MessageAPI", "TwitterAPI", "TradingBot", "TravelAPI", "VehicleControlAPI"]


def _first_tool_code(name: str) -> tuple[str, str]:
    """A v2 BFCL record's tool and code for class ``name``, carried into v2.1 (imports and the mapping)."""
    record = next(r for r in load("v2", "bfcl") if r["env"] == f"bfcl/{name}")
    return record["tool"], released_code(get_env(record["env"]), record["code"])


def _shown_class(name: str) -> type:
    """The class the executor builds from a v2.1 tool code of ``name``, executed in this process (BFCL's own
    code: trusted)."""
    tool, code = _first_tool_code(name)
    module = build_module(code, tool)
    namespace: dict[str, Any] = {"__name__": f"shown_{name}"}
    exec(compile(module.source, f"<shown {name}>", "exec"), namespace)  # noqa: S102 - BFCL's code, trusted here
    return namespace[module.class_name]


@pytest.mark.parametrize("name", MAPPED)
def test_the_shown_mapping_sets_up_the_adapter_s_object_and_gives_its_state_back(name: str) -> None:
    env_class = get_env(f"bfcl/{name}")
    shown = _shown_class(name)
    for config in bfcl.initial_configs(name):
        state = env_class.normalise(config)
        adapter = env_class.from_state(state)._inner
        mapped = shown.__new__(shown)
        mapped.state_from_json(json.loads(json.dumps(state)))
        assert canonical_json(mapped.state_to_json()) == canonical_json(state)
        if name == "GorillaFileSystem":
            assert type(mapped.root).__name__ == "Directory" and mapped.root.name == adapter.root.name
            assert canonical_json(mapped.state_to_json()) == canonical_json(env_class._state_codec().encode(adapter))
            assert mapped._current_dir.name == adapter._current_dir.name
            continue
        public = {k: v for k, v in vars(adapter).items() if not k.startswith("_")}
        assert {k: v for k, v in vars(mapped).items() if not k.startswith("_")} == public
        for key, value in public.items():  # type-exact: int keys stay int, sets stay sets
            assert type(getattr(mapped, key)) is type(value)
            if isinstance(value, dict):
                assert [type(k) for k in getattr(mapped, key)] == [type(k) for k in value]
        for attribute in bfcl.codec_for(name).hidden:
            assert getattr(mapped, attribute) == getattr(adapter, attribute)
        if isinstance(getattr(adapter, "_random", None), random.Random):
            assert mapped._random.getstate() == adapter._random.getstate()


def test_classes_whose_state_is_their_attributes_get_no_mapping() -> None:
    for name in ("MathAPI", "TicketAPI"):
        tool, code = _first_tool_code(name)
        assert HEADER not in code and state_mapping_code(get_env(f"bfcl/{name}"), code) == ""


def test_the_mapping_is_added_once_and_the_file_system_shows_its_classes() -> None:
    env_class = get_env("bfcl/GorillaFileSystem")
    tool, code = _first_tool_code("GorillaFileSystem")
    assert with_state_mapping(env_class, code) == code  # already mapped: not twice
    assert code.count(HEADER) == 1 and "class File:" in code and "class Directory:" in code
    assert code.startswith("import datetime\n")  # File's clock, from the import lines of the release


def test_travel_s_clock_is_shown_frozen_where_a_tool_reads_it() -> None:
    env_class = get_env("bfcl/TravelAPI")
    record = next(r for r in load("v2", "bfcl") if r["env"] == "bfcl/TravelAPI")
    code = released_code(env_class, record["code"])
    reads_clock = "datetime.today()" in record["code"] or "datetime.now(" in record["code"]
    assert ("class datetime(datetime):" in code) == reads_clock
    clocked = "def verify_traveler_information(self):\n    today = datetime.today()\n    return today.year\n"
    shown = state_mapping_code(env_class, clocked)  # the mapping comes before the import lines are added
    assert "class datetime(datetime):" in shown and "2024, 9, 1, 10, 30" in shown


def _v2_misses() -> list[str]:
    card = json.loads((BENCHMARK_DIR / "v2" / "executor_misses.json").read_text())
    return [m["id"] for m in card["tracks"]["bfcl"]["misses"]]


def test_the_executor_answers_what_it_missed_on_v2() -> None:
    """v2's card lists 42 BFCL misses (41 object state, 1 import): the first of each class, and of the file
    system's tools that move the current directory or the tree, run here; the slow tier's guard runs all 185."""
    records = {r["id"]: r for r in load("v2.1", "bfcl")}
    chosen: dict[tuple[str, str], dict[str, Any]] = {}
    for sample_id in _v2_misses():
        record = records[sample_id]
        key = (record["env"], record["tool"] if record["tool"] in ("cd", "mv", "touch") else "")
        chosen.setdefault(key, record)
    assert {env for env, _ in chosen} == {"bfcl/GorillaFileSystem", "bfcl/TradingBot", "bfcl/TwitterAPI",
                                          "bfcl/VehicleControlAPI", "bfcl/MathAPI"}
    for (env, _), record in sorted(chosen.items()):
        execution = execute_prompt(build_messages(record, "mdp", version="2"))
        assert execution.status == "ran", (env, record["tool"], execution.detail)
        assert canonical_json(execution.observation) == canonical_json(record["observation"]), (env, record["tool"])
        assert canonical_json(execution.next_state) == canonical_json(record["next_state"]), (env, record["tool"])

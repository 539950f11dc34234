"""Shown code is what the call runs (issue 53, item 1): a wrapper that looks the tool up by name when it is called
(``getattr(toolkit, name)``, ``name`` bound in ``_make``'s closure) shows the tool's own method; helpers, members
and imports the call cannot reach are left out (a CSV export, a model's ``to_row``, a base class's ``load``/``dump``
with their ``toml``/``yaml`` imports); and the executor answers from the shown code alone."""

from __future__ import annotations

import json

import pytest

from envsim.construction.labelling import to_record
from envsim.envs.adapters.foreign import wrap_target
from envsim.envs.sandbox import execute
from envsim.envs.shown import shown_tool_code
from envsim.evaluation.baselines.executor_baseline import execute_prompt
from envsim.evaluation.prompting.prompts import build_messages
from envsim.evaluation.scoring.parsing import parse_answer
from envsim.evaluation.scoring.scoring import score_prediction

LEDGER = "tests.fixtures.ledger.wrapper:LedgerEnv"
REGISTRY = "tests.fixtures.ledger.registry:RegistryLedgerEnv"
BOXES = "tests.fixtures.boxes:BoxEnv"
HOTEL = "tests.fixtures.hotel.wrapper:HotelEnv"
LEDGER_TOOLS = ("calculate", "get_balance", "convert", "deposit", "transfer", "freeze_account", "open_account")


@pytest.mark.parametrize("tool", LEDGER_TOOLS)
def test_a_tool_looked_up_by_name_shows_its_own_method_and_nothing_unreachable(tool):
    code = shown_tool_code(wrap_target(LEDGER), tool)
    assert f"    def {tool}(self" in code and f"LedgerEnv.{tool} = _make('{tool}')" in code
    assert "cannot show" not in code
    others = [t for t in LEDGER_TOOLS if t != tool]
    assert not any(f"def {other}(" in code for other in others)
    for unreachable in ("export_csv", "import csv", "import io", "import_rates", "TOOL_NAMES"):
        assert unreachable not in code, unreachable


def test_a_tool_found_in_a_registry_by_name_shows_its_entry_and_how_it_was_registered():
    env = wrap_target(REGISTRY)
    code = shown_tool_code(env, "pay_in")
    assert '@register("pay_in")\ndef pay_in(self' in code and "def register(name" in code
    assert "    def deposit(self" in code and "    def _tools(self)" in code  # the toolkit method; the base class's
    for unreachable in ("def balance(", "def split_bill(", "audit_log", "def transfer(", "export_csv"):
        assert unreachable not in code, unreachable


def test_a_data_class_shows_fields_validators_and_reached_methods_only():
    env = wrap_target(HOTEL)
    code = shown_tool_code(env, "add_extras")
    assert "def add_extras(self" in code and "def _positive(cls" in code and "class Extra(BaseModel)" in code
    for unreachable in ("def load(", "def dump(", "load_file", "dump_file", "toml", "yaml", "def save(",
                        "def reload(", "def to_row(", "def tool_names(", "nights_overlap"):
        assert unreachable not in code, unreachable
    scan = shown_tool_code(env, "find_free_rooms")
    assert "def nights_overlap(self" in scan and "def to_row(" not in scan


@pytest.fixture
def trusted_modules():
    """The fixtures' modules trusted as ``--env-module`` trusts them (the sandbox loads what they import)."""
    from envsim.envs.sandbox import forget_trusted, trust_module

    trust_module("tests.fixtures.ledger.wrapper")
    trust_module("tests.fixtures.hotel.wrapper")
    yield
    forget_trusted()


def _record(target: str, tool: str, arguments: dict) -> dict:
    env = wrap_target(target)
    return to_record(execute(env, env.sample_state(0), {"name": tool, "arguments": arguments}), env, "test")


def test_members_a_library_calls_by_itself_are_kept_and_library_made_ones_noted_nowhere():
    code = shown_tool_code(wrap_target(BOXES), "add_box")
    assert "def _missing_(cls" in code and "def model_post_init(self" in code and "def label(self)" in code
    assert "volume_hint" not in code and "cannot show" not in code


@pytest.mark.parametrize(("target", "tool", "arguments"), [
    (LEDGER, "transfer", {"from_account": "A001", "to_account": "A002", "amount": 12.5}),
    (LEDGER, "calculate", {"a": 2, "b": 3, "operation": "divide"}),
    (REGISTRY, "pay_in", {"account_id": "A003", "amount": 40}),
    (REGISTRY, "split_bill", {"total": 100, "people": 3}),
    (HOTEL, "add_extras", {"reservation_id": "R0001", "extras": [{"code": "crib"}, {"code": "parking"}]}),
    (HOTEL, "check_in", {"reservation_id": "R0002"}),
    (HOTEL, "get_guest", {"guest_id": "G001"}),
    (BOXES, "add_box", {"box_id": "b2", "size": "xl"}),
])
def test_the_executor_answers_from_the_shown_code(target, tool, arguments, trusted_modules):
    record = _record(target, tool, arguments)
    execution = execute_prompt(build_messages(record, "mdp-view", version="4"))
    assert execution.status == "ran", execution.detail
    score = score_prediction(record, parse_answer(json.dumps(execution.answer())))
    assert score.fm and score.cm, (record["observation"], execution.observation)


def test_a_package_the_sandbox_does_not_load_is_the_sandboxs_miss(monkeypatch):
    """With the user's packages refused, the logger import fails in the sandbox: classed ``sandbox_import``."""
    from envsim.evaluation.baselines.executor_misses import classify

    monkeypatch.setenv("ENVSIM_SANDBOX_PACKAGES", "none")
    record = _record(HOTEL, "check_in", {"reservation_id": "R0002"})
    execution = execute_prompt(build_messages(record, "mdp-view", version="4"))
    assert execution.status == "sandbox" and "loguru" in execution.detail
    assert classify(record, execution)[0] == "sandbox_import"

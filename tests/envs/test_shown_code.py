"""``shown_tool_code``: the shown code is everything the call needs (issue 43, item 1). Each kind of name a tool's
code uses is followed and shown as source: imports, constants, decorators, pydantic models and dataclasses,
Enums, exception classes, helpers (transitively, within a bound); what cannot be shown is one line naming the
tool and the name; the result runs as the environment does, and reads the same whatever the hash seed."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envsim.envs.adapters.foreign import wrap_target
from envsim.envs.shown import ENTRY_LINE, shown_tool_code

KINDS = "tests.fixtures.shown_kinds.kit:KindsEnv"
HELPDESK = "tests.fixtures.helpdesk.wrapper:HelpdeskEnv"
ROOT = Path(__file__).resolve().parents[2]


def _code(target: str, tool: str) -> str:
    code = shown_tool_code(wrap_target(target), tool)
    ast.parse(code)
    return code


def _top_level(code: str) -> dict[str, str]:
    """Name -> the source of the top-level statement that binds it."""
    tree = ast.parse(code)
    found = {}
    for node in tree.body:
        names = [node.name] if isinstance(node, (ast.ClassDef, ast.FunctionDef)) else [
            a.asname or a.name for a in getattr(node, "names", [])] or [
            t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        for name in names:
            found[name] = ast.get_source_segment(code, node)
    return found


def test_imports_are_shown_as_import_statements_of_the_names_used():
    code = _code(KINDS, "tally")
    assert "import datetime as _dt" in code.splitlines() and "import json" in code.splitlines()
    assert "from dataclasses import dataclass, field" in code
    added = _code(KINDS, "add_note")
    assert "from copy import deepcopy" in added.splitlines()
    assert "datetime" not in added and "import json" not in added  # not used by add_note
    assert "records_module" not in _top_level(added)


def test_constants_are_their_source_text_with_the_enum_they_use():
    code = _code(KINDS, "routes")
    names = _top_level(code)
    assert names["LEVELS"] == "LEVELS = (Level.LOW, Level.HIGH)"
    assert names["CHANNELS"] == 'CHANNELS = {"email", "phone", "chat", "web", "sms", "post"}'
    assert names["FROZEN"] == 'FROZEN = frozenset({"b", "a", "c"})'
    assert names["ROUTES"] == 'ROUTES = {Level.LOW: {"queue", "later"}, Level.HIGH: {"page", "now"}}'
    assert "class Level(enum.Enum):" in code and code.index("class Level") < code.index("LEVELS =")
    assert "UNUSED_CONSTANT" not in code
    tally = _top_level(_code(KINDS, "tally"))
    assert tally["START"] == "START = _dt.date(2024, 1, 31)"


def test_a_value_bound_without_a_statement_is_written_as_python():
    assert "DYNAMIC = ('made', 'at', 'import')" in _code(KINDS, "odd")


def test_a_module_of_ones_own_imported_as_a_module_is_a_namespace_of_the_names_used():
    code = _code(KINDS, "odd")
    assert ("records_module = types.SimpleNamespace(UNUSED_CONSTANT=UNUSED_CONSTANT)  # module "
            "tests.fixtures.shown_kinds.records: the names the code uses") in code.splitlines()
    assert "UNUSED_CONSTANT = 99" in code.splitlines() and "import types" in code.splitlines()


def test_decorators_are_followed_with_what_they_use():
    code = _code(KINDS, "add_note")
    names = _top_level(code)
    assert "@functools.wraps(method)" in names["trimmed"] and "import functools" in code.splitlines()
    assert "@trimmed\n    def add_note(" in code
    assert code.index("def trimmed(") < code.index("class Kit")  # a decorator runs when the class is defined


def test_models_are_shown_whole_with_fields_and_defaults():
    code = _code(KINDS, "add_note")
    names = _top_level(code)
    assert "level: Level = Level.LOW" in names["Note"] and "tags: list[str] = Field(default_factory=list)" in names["Note"]
    assert names["NoteModel"] == "NoteModel = Note"  # imported under another name
    assert "from pydantic import BaseModel, Field" in code
    tally = _code(KINDS, "tally")
    assert "@dataclass\nclass Tally:" in tally and "count: int = 0" in _top_level(tally)["Tally"]
    helpdesk = _code(HELPDESK, "create_ticket")
    for model in ("class Ticket(BaseModel):", "class Comment(BaseModel):", "class HelpdeskDB(BaseModel):",
                  "class Customer(BaseModel):", "class SlaPolicy:"):
        assert model in helpdesk
    assert "status: TicketStatus = TicketStatus.NEW" in helpdesk and "comments: list[Comment]" in helpdesk


def test_enums_and_exception_classes_are_shown_with_their_bases():
    code = _code(KINDS, "add_note")
    names = _top_level(code)
    assert names["Missing"].startswith("class Missing(KindsError):")
    assert names["KindsError"].startswith("class KindsError(Exception):")
    assert code.index("class KindsError") < code.index("class Missing")
    helpdesk = _top_level(_code(HELPDESK, "merge_tickets"))
    assert "class InvalidTransition(HelpdeskError):" in helpdesk["InvalidTransition"]
    assert "CLOSED = \"closed\"" in helpdesk["TicketStatus"]
    assert helpdesk["DONE_STATUSES"] == "DONE_STATUSES = frozenset({TicketStatus.RESOLVED, TicketStatus.CLOSED})"


def test_helpers_are_followed_transitively_within_a_bound(monkeypatch):
    code = _code(KINDS, "deep")
    assert all(f"def chain_{i}(" in code for i in range(4))
    import envsim.envs.shown.code as shown

    monkeypatch.setattr(shown, "MAX_DEFINITIONS", 4)  # the state class, Kit, chain_0, chain_1
    shown.shown_tool_code.cache_clear()
    try:
        bounded = shown.shown_tool_code(wrap_target(KINDS), "deep")
    finally:
        shown.shown_tool_code.cache_clear()
    ast.parse(bounded)
    notes = [line for line in bounded.splitlines() if line.startswith("# deep: not shown (over 4 definitions)")]
    assert len(notes) == 1 and "chain_2" in notes[0] and "def chain_1(" in bounded and "def chain_2(" not in bounded


def test_what_cannot_be_shown_is_one_line_naming_the_tool_and_the_name():
    code = _code(KINDS, "odd")
    lines = [line for line in code.splitlines() if "cannot show" in line]
    assert lines == ["# odd: cannot show MADE: no statement of module tests.fixtures.shown_kinds.kit binds it",
                     "# odd: cannot show tests.fixtures.shown_kinds.records.describe: the name describe is taken "
                     "(tests.fixtures.shown_kinds.kit.describe is shown)"]
    assert code.rstrip().endswith(ENTRY_LINE.format("KindsEnv", "odd"))


def test_a_tool_without_source_is_one_line_naming_it():
    from envsim.envs.adapters.foreign import wrap_class
    from envsim.envs.shown import ToolSourceNotFound

    namespace: dict = {}
    exec("class Blind:\n    def ping(self) -> int:\n        '''Ping.'''\n        return 1\n", namespace)  # noqa: S102
    env = wrap_class(namespace["Blind"], source="class Blind: ...")
    with pytest.raises(ToolSourceNotFound) as caught:
        shown_tool_code(env, "ping")
    assert "'ping'" in str(caught.value) and "\n" not in str(caught.value)


def test_shown_code_runs_as_the_environment_does():
    """Every helpdesk tool's shown code, run on the state like the environment does, gives the environment's answer."""
    from envsim.envs.sandbox import execute

    env = wrap_target(HELPDESK)
    state = env.sample_state(0)
    calls = {"get_ticket": {"ticket_id": "T1003"}, "list_customer_tickets": {"customer_id": "C0002"},
             "get_agent_workload": {"agent_id": "A01"},
             "create_ticket": {"customer_id": "C0004", "subject": " Printer on fire ", "channel": "phone",
                               "priority": "urgent", "tags": ["outage"]},
             "assign_ticket": {"ticket_id": "T1001", "agent_id": "A02"},
             "add_comment": {"ticket_id": "T1002", "author_id": "A01", "body": "On it"},
             "update_status": {"ticket_id": "T1004", "status": "resolved"},
             "set_priority": {"ticket_id": "T1005", "priority": "high"},
             "merge_tickets": {"source_ticket_id": "T1006", "target_ticket_id": "T1007"}}
    assert set(calls) == set(env.tool_specs())
    for tool, arguments in calls.items():
        code = shown_tool_code(env, tool)
        namespace = _module(code)
        holder = namespace["HelpdeskEnv"].__new__(namespace["HelpdeskEnv"])
        for key, value in json.loads(json.dumps(state)).items():
            setattr(holder, key, value)
        try:
            observation = getattr(holder, tool)(**arguments)
        except Exception as exc:  # noqa: BLE001 - the environment's rule for a raised exception
            observation = {"success": False, "error": f"{type(exc).__name__}: {exc}"}
        truth = execute(env, state, {"name": tool, "arguments": arguments})
        assert json.loads(json.dumps(observation)) == truth.observation, tool
        assert {k: v for k, v in vars(holder).items() if not k.startswith("_")} == truth.next_state, tool


def _module(code: str) -> dict:
    import types

    module = types.ModuleType("shown_module_under_test")
    sys.modules[module.__name__] = module  # pydantic resolves annotations through the class's module
    try:
        exec(compile("from __future__ import annotations\n" + code, "<shown>", "exec"), module.__dict__)  # noqa: S102
    finally:
        del sys.modules[module.__name__]
    return module.__dict__


def test_constants_with_enum_members_and_sets_build_byte_identically_under_two_hash_seeds():
    script = ("import hashlib\n"
              "from envsim.envs.adapters.foreign import wrap_target\n"
              "from envsim.envs.shown.code import shown_tool_code\n"
              "digest = hashlib.sha256()\n"
              "for target in ('tests.fixtures.shown_kinds.kit:KindsEnv', 'tests.fixtures.helpdesk.wrapper:HelpdeskEnv'):\n"
              "    env = wrap_target(target)\n"
              "    for tool in env.tool_specs():\n"
              "        digest.update(shown_tool_code(env, tool).encode())\n"
              "print(digest.hexdigest())\n")
    digests = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip() for seed in ("1", "2")}
    assert len(digests) == 1 and "" not in digests, digests


def test_built_in_and_tau_tools_get_the_imports_their_code_uses():
    """The renderer works for the built-in library (the date helpers' ``import datetime as _dt``) and τ-bench
    (airline's ``from copy import deepcopy``); records of v1/v2 keep ``tool_code`` (construction never calls it
    for them)."""
    from envsim.benchmark import load
    from envsim.construction.labelling import record_code
    from envsim.envs.registry import get_env

    record = next(r for r in load("v1", "test") if "_dt." in r["code"])
    env = get_env(record["env"])
    code = shown_tool_code(env, record["tool"])
    assert "import datetime as _dt" in code.splitlines() and "def add_days(" in code
    assert code.rstrip().endswith(ENTRY_LINE.format(env.__name__, record["tool"]))
    assert "from envsim" not in code and "class ToolError" not in code  # the runner's names: the prompt's rules
    assert record_code(env, record["tool"]) == record["code"]


@pytest.mark.tau
def test_tau_airline_shows_deepcopy():
    from envsim.envs.adapters.tau import tau_env

    code = shown_tool_code(tau_env("airline"), "book_reservation")
    assert "from copy import deepcopy" in code.splitlines() and "class BookReservation(Tool):" in code
    assert "class Tool(abc.ABC):" in code and "import abc" in code.splitlines()

"""Module constants in code(a_t) are Python a reader can parse (issue 43, item 1): Enum members as
``Class.NAME`` with the Enum's class statement shown, set constants in one order whatever the hash seed."""

from __future__ import annotations

import ast
import enum
import os
import subprocess
import sys
from pathlib import Path

from envsim.envs.adapters.foreign import wrap_class
from envsim.envs.shown import constant_source, tool_code


class Status(str, enum.Enum):
    """A ticket's status."""

    NEW = "new"
    OPEN = "open"
    CLOSED = "closed"


class Priority(enum.Enum):
    LOW = 1
    HIGH = 2


ACTIVE_STATUSES = (Status.NEW, Status.OPEN)
CHANNELS = {"email", "phone", "chat", "web"}
DEFAULT_STATUS = Status.NEW


class Desk:
    """A helpdesk whose code reads Enum constants, an Enum class and a set."""

    def __init__(self) -> None:
        self.tickets: dict = {}

    def open_ticket(self, ticket_id: str, urgent: bool = False) -> dict:
        """Open a ticket.

        Args:
            ticket_id: The ticket's id.
            urgent: Whether it is urgent.
        """
        priority = Priority.HIGH if urgent else Priority.LOW
        self.tickets[ticket_id] = {"status": DEFAULT_STATUS.value, "priority": priority.value}
        return {"ok": True}

    def count_active(self) -> int:
        """Count the active tickets."""
        return sum(t["status"] in [s.value for s in ACTIVE_STATUSES] for t in self.tickets.values())

    def channels(self) -> list:
        """The support channels."""
        return sorted(CHANNELS)


def test_enum_constants_and_classes_are_shown_as_python():
    env = wrap_class(Desk)
    code = tool_code(env, "count_active")
    ast.parse(code)
    assert "class Status(str, enum.Enum):" in code and 'NEW = "new"' in code
    assert "ACTIVE_STATUSES = (Status.NEW, Status.OPEN)" in code
    opened = tool_code(env, "open_ticket")
    ast.parse(opened)
    assert "class Priority(enum.Enum):" in opened and "class Status(str, enum.Enum):" in opened
    assert "DEFAULT_STATUS = Status.NEW" in opened
    assert opened.index("class Priority") < opened.index("class Status") < opened.index("DEFAULT_STATUS =")


def test_set_constants_have_one_order_whatever_the_hash_seed():
    assert "CHANNELS = {'chat', 'email', 'phone', 'web'}" in tool_code(wrap_class(Desk), "channels")
    script = ("from envsim.envs.adapters.foreign import wrap_class; from envsim.envs.shown.source import tool_code; "
              "from tests.envs.test_source_enum_constants import Desk; print(tool_code(wrap_class(Desk), 'channels'))")
    root = Path(__file__).resolve().parents[2]
    shown = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root, check=True,
                            env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(shown) == 1


def test_constant_source_is_repr_for_plain_values_and_parses_for_the_rest():
    for plain in ([1, "a", None, 2.5, True], (1,), (), {"k": [1, {"n": (2, 3)}]}, {}, "text", 7):
        assert constant_source(plain) == repr(plain)
    assert constant_source({"b", "a"}) == "{'a', 'b'}"
    assert constant_source(frozenset({2, 1})) == "frozenset({1, 2})"
    assert constant_source(set()) == "set()" and constant_source(frozenset()) == "frozenset()"
    assert constant_source({Status.OPEN: [Priority.LOW]}) == "{Status.OPEN: [Priority.LOW]}"
    for value in ({"x", "y"}, frozenset({1}), {Status.NEW}, (Status.CLOSED,)):
        ast.parse(constant_source(value))

"""code(a_t) is the source of what actually runs (issue 31, item 1): tools attached after the class statement
with ``functools.wraps``, inherited tools, tools delegating to a toolkit object or to another class; a tool
without source stops construction, naming the tool."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from envsim.construction.errors import ToolCodeMissing
from envsim.construction.labelling import record_code, to_record
from envsim.envs.adapters.foreign import wrap_class
from envsim.envs.sandbox import execute
from envsim.envs.registry import get_env
from envsim.envs.shown import ToolSourceNotFound, tool_code
from envsim.envs.sandbox import trust_module
from tests.envs.fake_env import Counter


class Kit:
    """A toolkit object the environment hands its calls to."""

    def __init__(self, shelf: dict) -> None:
        self.shelf = shelf

    def _find(self, key: str) -> Any:
        if key not in self.shelf:
            raise ValueError("Not on the shelf")
        return self.shelf[key]

    def lookup(self, key: str) -> Any:
        return self._find(key)


class Delegating:
    """Calls go to a ``Kit`` held in a private attribute."""

    def __init__(self) -> None:
        self.shelf = {"a": 1}
        self._kit = Kit(self.shelf)

    def lookup(self, key: str) -> Any:
        """Look a key up.

        Args:
            key: The key.
        """
        return self._kit.lookup(key)


class Base:
    """Holds the tool that subclasses inherit."""

    def __init__(self) -> None:
        self.items = {"x": 1}

    def _check(self, key: str) -> None:
        if key not in self.items:
            raise KeyError(key)

    def drop(self, key: str) -> dict:
        """Drop an item.

        Args:
            key: The item.
        """
        self._check(key)
        del self.items[key]
        return {"dropped": key}


class Child(Base):
    """Defines no tool of its own."""


def test_tools_attached_with_functools_wraps_show_the_toolkit_method_and_its_helpers() -> None:
    trust_module("tests.fixtures.shopdb")
    cls = get_env("tests.fixtures.shopdb.small:SmallShopEnv")
    for name in cls.tool_specs():
        assert f"def {name}(" in tool_code(cls, name)
    code = tool_code(cls, "cancel_pending_order")
    assert code.startswith('@shop_tool("write")\ndef cancel_pending_order(self')
    assert "def _get_order(self, order_id: str)" in code and "does not exist" not in code
    assert "def get_user_details" not in code  # only what the tool reaches


def test_inherited_tools_are_found_along_the_mro() -> None:
    code = tool_code(wrap_class(Child), "drop")
    assert code.startswith("def drop(self, key: str)") and "def _check(self, key: str)" in code


def test_tools_delegating_to_a_toolkit_object_show_the_toolkit_method() -> None:
    code = tool_code(wrap_class(Delegating), "lookup")
    assert "return self._kit.lookup(key)" in code
    assert "# in class Kit" in code and "def _find(self, key: str)" in code


def test_a_tool_without_source_stops_construction_naming_it() -> None:
    namespace: dict[str, Any] = {}
    exec("class Hidden:\n    def peek(self) -> dict:\n        'Peek.'\n        return {}\n", namespace)
    cls = wrap_class(namespace["Hidden"], initial_states=[{}], source="class Hidden: ...\n")
    with pytest.raises(ToolSourceNotFound, match="peek"):
        tool_code(cls, "peek")
    transition = execute(cls, {}, {"name": "peek", "arguments": {}})
    with pytest.raises(ToolCodeMissing, match="peek"):
        to_record(transition, cls, "test")


def test_only_an_unknown_tool_gets_a_comment_instead_of_code() -> None:
    assert record_code(Counter, "no_such_tool").startswith("# tool 'no_such_tool' does not exist")
    assert "def bump(" in record_code(Counter, "bump")


@pytest.mark.skipif(importlib.util.find_spec("tau_bench") is None and not __import__("os").environ.get(
    "ENVSIM_TAU_BENCH"), reason="τ-bench not available")
def test_generic_tau_wrapper_code_holds_the_tool_and_the_tau_function_it_calls() -> None:
    trust_module("tests.fixtures.tau_generic")
    cls = get_env("tests.fixtures.tau_generic:TauRetail")
    for name in cls.tool_specs():
        code = tool_code(cls, name)
        assert f"def {name}(" in code and "def invoke(" in code and "# in class " in code

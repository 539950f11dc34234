"""code(a_t): the tool plus the helpers it calls, transitively; full-class source."""

from __future__ import annotations

from envsim.envs.shown import class_source, env_version, tool_code
from tests.envs.fake_env import Counter


def test_tool_code_follows_private_helpers_and_module_functions():
    code = tool_code(Counter, "bump")
    assert code.startswith("@tool(write=True)\ndef bump(self")
    assert "def _counter(self, key: str)" in code          # private method helper
    assert "def _double(value: int)" in code               # module-level helper function
    assert "RATE = 2" in code                              # constant read by the helper
    assert "def read(" not in code and "def total(" not in code


def test_tool_code_of_a_tool_without_helpers_is_just_the_tool():
    code = tool_code(Counter, "total")
    assert "def total(self)" in code and "_counter" not in code


def test_full_class_source_and_version():
    source = class_source(Counter)
    assert source.startswith("class Counter(Environment):") and "def tag(" in source
    assert env_version(Counter) == env_version(Counter) and len(env_version(Counter)) == 16

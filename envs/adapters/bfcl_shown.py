"""How a BFCL class's JSON state becomes the object its tools run on, written as code a reader can run.

BFCL's classes keep state in forms JSON does not have: ``GorillaFileSystem`` a tree of ``Directory`` / ``File``
objects with a current-directory pointer, ``TwitterAPI`` and ``TradingBot`` dicts keyed by ``int``,
``MessageAPI`` a set, ``VehicleControlAPI`` private brake and slope forces; several draw ids from
``self._random``, which EnvSim's adapter re-seeds from the state before each call (``envs.adapters.bfcl``).
The benchmark shows the adapter's JSON form of that state. Shown with the tool's methods alone, the code reads
``self.orders[order_id]`` (an ``int`` key) where the JSON holds ``"12345"``, and ``self._current_dir`` that the
JSON does not hold at all: no reader can run it, and the executor baseline missed 41 of v2's 185 BFCL samples.

``with_state_mapping(env_class, code)`` appends to a BFCL tool's code the mapping the adapter applies, as two
methods of the same class:

* ``state_from_json(self, state)``: sets up the object the call runs on from the JSON state (the file system's
  tree built as BFCL's ``_load_scenario`` builds it, integer keys and sets restored, private attributes filled,
  ``_random`` seeded from the state);
* ``state_to_json(self)``: the JSON state of the object after the call (the next state);

plus what they need (``File`` and ``Directory``, import lines) and, where the tool reads the clock, the frozen
``datetime`` the adapter runs it with. A comment says how the call runs. Everything is derived from the
adapter's codec of the class (``ForeignEnvironment._state_codec``: which attributes hold int keys, sets,
hidden values) and from an instance loaded from the class's first initial state (which private attributes
exist), so the text follows the adapter; ``tests/envs/test_bfcl_shown.py`` checks that the shown mapping and the
adapter give the same object state and the same next state.
"""

from __future__ import annotations

import functools
import inspect
import random
import re
import sys
from typing import Any

from envsim.envs.shown import free_names

__all__ = ["LOAD_METHOD", "DUMP_METHOD", "state_mapping_code", "with_state_mapping"]

#: The method that sets up the object from the JSON state, and the one that gives the next state.
LOAD_METHOD = "state_from_json"
DUMP_METHOD = "state_to_json"
#: Marks the start of the mapping in shown code (a code that holds it is not given a second one).
HEADER = "# -- How the JSON state maps to the object (EnvSim's BFCL adapter) --"
_SKIPPED_PRIVATE = {"_api_description", "_random", "_current_dir"}

_FILE_SYSTEM_LOAD = '''def state_from_json(self, state):
    """The object the call runs on: BFCL's _load_scenario(state) builds this tree (long_context off), then the
    current directory is found by its names from the root."""
    (root_name, root), = state["root"].items()
    self.root = _tree_from_json(Directory(root_name, None), root["contents"])
    self.long_context = state["long_context"]
    self._current_dir = self.root
    for name in state["current_dir"][1:]:
        self._current_dir = self._current_dir.contents[name]


def _tree_from_json(directory, contents):
    for name, item in contents.items():
        if item["type"] == "directory":
            directory.contents[name] = _tree_from_json(Directory(name, directory), item["contents"])
        else:
            directory.contents[name] = File(name, item["content"])
    return directory


def state_to_json(self):
    """The next state: the tree as JSON, the names from the root to the current directory."""
    return {"root": {self.root.name: _tree_to_json(self.root)},
            "current_dir": _names_to(self.root, self._current_dir, [self.root.name]),
            "long_context": bool(self.long_context)}


def _tree_to_json(directory):
    return {"type": "directory", "contents": {
        str(name): _tree_to_json(item) if hasattr(item, "contents") else {"type": "file", "content": item.content}
        for name, item in directory.contents.items()}}


def _names_to(node, target, names):
    if node is target:
        return names
    for name, item in node.contents.items():
        if hasattr(item, "contents"):
            found = _names_to(item, target, [*names, str(name)])
            if found is not None:
                return found
    return None
'''

_CLOCK = '''class datetime(datetime):
    """Every call runs at BFCL's CURRENT_TIME, {at:%Y-%m-%d %H:%M} (EnvSim's adapter freezes the clock)."""

    @classmethod
    def now(cls, tz=None):
        return cls({at.year}, {at.month}, {at.day}, {at.hour}, {at.minute}, tzinfo=tz)

    @classmethod
    def today(cls):
        return cls.now()
'''


def _foreign(env_class: type) -> type:
    return env_class.__dict__.get("_foreign") or getattr(env_class, "_foreign")


def _seed_line(class_name: str) -> str:
    return (f'    self._random = random.Random(int(hashlib.sha256(({class_name!r} + json.dumps(\n'
            f'        state, sort_keys=True, separators=(",", ":"), ensure_ascii=False)).encode()).hexdigest()[:16], 16))')


@functools.lru_cache(maxsize=None)
def _loaded(env_class: type) -> Any:
    """The foreign instance the adapter builds from the class's first initial state."""
    env = env_class.from_state(env_class.sample_state(0))
    return env._inner


def _read_private(code: str) -> set[str]:
    """Private attributes ``code`` reads or writes as ``self._name`` (not method calls)."""
    return set(re.findall(r"self\.(_\w+)\b(?!\s*\()", code))


def _attribute_lines(env_class: type, code: str) -> tuple[list[str], list[str], bool]:
    """The load and dump lines of a class whose state is its public attributes, with the codec's conversions."""
    codec = env_class._state_codec()
    instance = _loaded(env_class)
    hidden = dict(sorted(codec.hidden.items()))
    load = ["def state_from_json(self, state):",
            '    """The object the call runs on: the state\'s keys are its attributes, as converted here."""']
    if hidden:
        keys = ", ".join(repr(key) for key in hidden.values())
        load += ["    for key, value in state.items():", f"        if key not in ({keys},):",
                 "            setattr(self, key, value)"]
    else:
        load += ["    for key, value in state.items():", "        setattr(self, key, value)"]
    for name in sorted(codec.int_keys):
        load.append(f'    self.{name} = {{int(k) if re.fullmatch(r"-?\\d+", k) else k: v '
                    f'for k, v in state[{name!r}].items()}}  # int keys')
    for name in sorted(codec.sets):
        load.append(f"    self.{name} = set(state[{name!r}])")
    for attribute, key in hidden.items():
        load.append(f"    self.{attribute} = state[{key!r}]")
    for name in sorted(_read_private(code) - _SKIPPED_PRIVATE - set(hidden)):
        value = vars(instance).get(name)
        if value is not None and isinstance(value, (dict, list, str, int, float, bool)):
            load.append(f"    self.{name} = {value!r}")
    seeded = isinstance(getattr(instance, "_random", None), random.Random)
    if seeded:
        load.append(_seed_line(_foreign(env_class).__name__))
    dump = ["def state_to_json(self):", '    """The next state: the public attributes, converted back to JSON."""',
            '    state = {key: value for key, value in vars(self).items() if not key.startswith("_")}']
    for name in sorted(codec.int_keys):
        dump.append(f"    state[{name!r}] = {{str(k): v for k, v in self.{name}.items()}}")
    for name in sorted(codec.sets):
        dump.append(f"    state[{name!r}] = sorted(self.{name})")
    for attribute, key in hidden.items():
        dump.append(f"    state[{key!r}] = self.{attribute}")
    dump.append("    return state")
    return load, dump, seeded


def _needs_mapping(env_class: type, code: str) -> bool:
    """Whether the class's state is anything but its public attributes as they are, for this tool."""
    from envsim.envs.adapters.bfcl import STATELESS, FileSystemCodec

    foreign = _foreign(env_class)
    if foreign.__name__ in STATELESS:
        return False
    codec = env_class._state_codec()
    if isinstance(codec, FileSystemCodec) or codec.int_keys or codec.sets or codec.hidden:
        return True
    instance = _loaded(env_class)
    return isinstance(getattr(instance, "_random", None), random.Random) or bool(
        _read_private(code) - _SKIPPED_PRIVATE)


def _clock_frozen(env_class: type, code: str) -> bool:
    import datetime as _dt

    module = sys.modules.get(_foreign(env_class).__module__)
    return (getattr(module, "datetime", None) is _dt.datetime and "datetime" in free_names(code)
            and bool(re.search(r"\bdatetime\.(now|today)\(", code)))


def state_mapping_code(env_class: type, code: str) -> str:
    """The mapping section for ``code`` (a tool of the wrapped BFCL class ``env_class``); ``""`` when the class's
    state is its public attributes as they are (and nothing private or random is read)."""
    from envsim.envs.adapters.bfcl import FileSystemCodec

    if HEADER in code or not _needs_mapping(env_class, code):
        return ""
    name = _foreign(env_class).__name__
    parts = [HEADER,
             f"# The state is not {name}'s public attributes as they are: the call runs on an object set up by "
             f"{LOAD_METHOD}(state),",
             f"# then calls the tool; the next state is {DUMP_METHOD}() of that object (also when the tool raises)."]
    imports: set[str] = set()  # File's own `datetime` comes with the code's import lines (released_code)
    if isinstance(env_class._state_codec(), FileSystemCodec):
        module = sys.modules[_foreign(env_class).__module__]
        body = [inspect.getsource(getattr(module, cls)).rstrip() for cls in ("File", "Directory")
                if f"class {cls}" not in code]
        body.append(_FILE_SYSTEM_LOAD.rstrip())
    else:
        load, dump, seeded = _attribute_lines(env_class, code)
        body = ["\n".join(load), "\n".join(dump)]
        if seeded:
            imports |= {"import hashlib", "import json", "import random"}
        if any("re.fullmatch" in line for line in load):
            imports.add("import re")
    if _clock_frozen(env_class, code):
        from envsim.envs.adapters.bfcl import FROZEN_NOW

        body.append(_CLOCK.format(at=FROZEN_NOW).rstrip())
    lines = [*parts, *sorted(imports)] if imports else parts
    return "\n".join(lines) + "\n\n\n" + "\n\n\n".join(body) + "\n"


def with_state_mapping(env_class: type, code: str) -> str:
    """``code`` followed by its class's state mapping (unchanged when the class needs none)."""
    section = state_mapping_code(env_class, code)
    return code.rstrip("\n") + "\n\n\n" + section if section else code

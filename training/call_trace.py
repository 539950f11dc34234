"""What a call reads from its state by key and where it writes, in order: the tests an SFT target can start with
and the order its patch can follow.

A tool's effect often depends on values it looks up on the way: ``update_registration(voter_id, ...)`` reads the
voter's current precinct and party, then decrements the tally at ``/precincts/<that precinct>/tally/<that party>``.
A small model asked for the patch at once must find the voter, read two fields and use them as keys in one step;
the 2026-11-30 misses name a tally of the wrong party or precinct (docs/real-model.md). A target that first tests
the values the call read (``{"op": "test", "path": "/voters/V-10007/party", "value": "DEM"}``) has the model copy
them into its own answer before it writes the paths that depend on them: a scratchpad that every RFC 6902
implementation applies and that changes nothing (a wrong copied value makes the patch fail, as it should).

``call_reads`` runs the call on a copy of the state whose dicts and lists log each key lookup (``d[k]``,
``d.get(k)``, ``l[i]``, each scalar item of a loop over a list) and each write. A value counts as read by key when
every step from the state's top to it was a lookup by key or index (a scan of a dict with ``.values()``,
``.items()`` or a loop over its keys reads many records and names none); it is a scalar (not an object or list)
that nothing in the call had written before the read; and it equals the value the state holds at that path
(checked after the call). ``keys_only`` keeps the reads whose value a later lookup used as its key (the hops: the
voter's precinct and party above), the rest are the values a tool computes with (a counter before ``+= 1``) or
checks (a status). Only in-process ``Environment`` classes are traced; an environment whose calls run elsewhere
(a sandboxed adapter) yields no reads.

``call_writes`` gives the pointers the call wrote, in the order it first wrote each. Construction sorts a patch by
path (``compute_delta``), so the two tallies ``update_registration`` changes come in the order of their precinct
ids: the old precinct's decrement first for one voter and the new one's increment first for the next. A target in
the call's own write order (``patch_op_order: "writes"``, ``training/patch_form.py``) is one procedure for every
call of a tool: the old tally, the voter, the new tally.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

from envsim.delta import pointer


class _Log:
    """What one call read and wrote, in order."""

    def __init__(self) -> None:
        self.reads: list[tuple[int, str, Any]] = []   # (sequence number, pointer, value)
        self.keys: list[tuple[int, Any]] = []         # (sequence number, key used in a lookup)
        self.written: list[str] = []
        self.seq = 0

    def read(self, container: "_Tracked", key: Any, value: Any) -> None:
        """Log a lookup of ``key`` in ``container`` that returned ``value``."""
        self.seq += 1
        if isinstance(key, (str, int)) and not isinstance(key, bool):
            self.keys.append((self.seq, key))
        if not container._keyed:
            return
        if isinstance(value, _Tracked):
            value._keyed = True
        elif not self._covered(container._path + pointer([key])):
            self.reads.append((self.seq, container._path + pointer([key]), value))

    def write(self, path: str) -> None:
        """Log a write at ``path`` (or of the whole container there)."""
        self.written.append(path)

    def _covered(self, path: str) -> bool:
        return any(path == w or path.startswith(w + "/") for w in self.written)


class _Tracked:
    """Mixin of the logging containers: the pointer of the container and whether it was reached by key."""

    _path: str
    _keyed: bool
    _log: _Log


class _TrackedDict(_Tracked, dict):
    def __getitem__(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        self._log.read(self, key, value)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if dict.__contains__(self, key) else default

    def __setitem__(self, key: Any, value: Any) -> None:
        self._log.write(self._path + pointer([key]))
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        self._log.write(self._path + pointer([key]))
        dict.__delitem__(self, key)

    def pop(self, key: Any, *default: Any) -> Any:
        self._log.write(self._path + pointer([key]))
        return dict.pop(self, key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if not dict.__contains__(self, key):
            self._log.write(self._path + pointer([key]))
        return dict.setdefault(self, key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key in dict(*args, **kwargs):
            self._log.write(self._path + pointer([key]))
        dict.update(self, *args, **kwargs)

    def popitem(self) -> Any:
        self._log.write(self._path)
        return dict.popitem(self)

    def clear(self) -> None:
        self._log.write(self._path)
        dict.clear(self)

    def __ior__(self, other: Any) -> Any:
        self.update(other)
        return self


def _list_writer(name: str) -> Any:
    method = getattr(list, name)

    def written(self: "_TrackedList", *args: Any, **kwargs: Any) -> Any:
        self._log.write(self._path)
        return method(self, *args, **kwargs)

    written.__name__ = name
    return written


class _TrackedList(_Tracked, list):
    def __getitem__(self, index: Any) -> Any:
        value = list.__getitem__(self, index)
        if isinstance(index, int):
            self._log.read(self, index + len(self) if index < 0 else index, value)
        return value

    def __iter__(self) -> Any:
        """A loop over a list reached by key reads each scalar item (``for b in issue["blocks"]``); an object or
        list item is not reached by key (a loop over rows of a grid names no row)."""
        for index in range(len(self)):
            value = list.__getitem__(self, index)
            if not isinstance(value, _Tracked):
                self._log.read(self, index, value)
            yield value

    for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend", "insert", "pop",
                  "remove", "sort", "reverse", "clear"):
        locals()[_name] = _list_writer(_name)
    del _name


def _tracked(value: Any, path: str, log: _Log) -> Any:
    """``value`` with each dict and list replaced by a logging one that knows its pointer (not yet reached)."""
    if isinstance(value, dict):
        out: Any = _TrackedDict({k: _tracked(v, path + pointer([k]), log) for k, v in value.items()})
    elif isinstance(value, list):
        out = _TrackedList(_tracked(v, f"{path}/{i}", log) for i, v in enumerate(value))
    else:
        return value
    out._path, out._keyed, out._log = path, False, log
    return out


@lru_cache(maxsize=None)
def _traced_class(env_class: type) -> type:
    """A subclass of ``env_class`` whose instance attributes (the state's top-level keys) log reads and writes."""

    def __getattribute__(self: Any, name: str) -> Any:
        value = object.__getattribute__(self, name)
        log = object.__getattribute__(self, "_read_log")
        if not name.startswith("_") and name in object.__getattribute__(self, "__dict__"):
            log.seq += 1
            if isinstance(value, _Tracked):
                value._keyed = True
            elif not log._covered(pointer([name])):
                log.reads.append((log.seq, pointer([name]), value))
        return value

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if not name.startswith("_"):
            object.__getattribute__(self, "_read_log").write(pointer([name]))
        object.__setattr__(self, name, value)

    return type(env_class.__name__, (env_class,), {"__getattribute__": __getattribute__,
                                                    "__setattr__": __setattr__, "__module__": env_class.__module__})


def _resolve(doc: Any, path: str) -> tuple[bool, Any]:
    """``(True, value)`` at JSON pointer ``path`` of ``doc``; ``(False, None)`` where it does not resolve."""
    import jsonpointer

    try:
        return True, jsonpointer.JsonPointer(path).resolve(doc)
    except (jsonpointer.JsonPointerException, KeyError, IndexError, TypeError):
        return False, None


def trace_call(env_class: type, state: dict[str, Any], action: Any) -> "_Log | None":
    """Run ``action`` on a traced copy of ``state``: what it read and wrote, in order. None for a class whose calls
    do not run in this process (``run_call`` overridden) or a call that does not run."""
    from envsim.envs.base import Environment
    from envsim.envs.sandbox.calling import call_tool
    from envsim.records import Action

    if not (isinstance(env_class, type) and issubclass(env_class, Environment)) \
            or env_class.run_call.__func__ is not Environment.run_call.__func__:
        return None
    log = _Log()
    try:
        traced = _traced_class(env_class)
        env = traced.__new__(traced)
        object.__setattr__(env, "_read_log", log)
        for key, value in copy.deepcopy(state).items():
            object.__setattr__(env, key, _tracked(value, pointer([key]), log))
        call_tool(env, Action.from_json(action))
    except Exception:  # noqa: BLE001 - a class that cannot be traced or a call that does not run: nothing to vouch for
        return None
    return log


def call_reads(env_class: type, state: dict[str, Any], action: Any, keys_only: bool = False) -> list[tuple[str, Any]]:
    """``(pointer, value)`` of each scalar the call ``action`` reads by key from ``state``, first reads first, each
    pointer once; with ``keys_only``, the reads whose value a later lookup used as its key. Empty where
    ``trace_call`` gives None."""
    log = trace_call(env_class, state, action)
    if log is None:
        return []
    seen: set[str] = set()
    reads = []
    for seq, path, value in log.reads:
        if path in seen or isinstance(value, (dict, list)):
            continue
        if keys_only and not any(later > seq and key == value and type(key) is type(value) for later, key in log.keys):
            continue
        found, original = _resolve(state, path)
        if found and not isinstance(original, (dict, list)) and original == value and type(original) is type(value):
            seen.add(path)
            reads.append((path, value))
    return reads


def call_writes(env_class: type, state: dict[str, Any], action: Any) -> list[str]:
    """The pointers the call ``action`` writes in ``state`` (a key set or deleted, a list changed: the list's
    pointer), in the order it first writes each; empty where ``trace_call`` gives None."""
    log = trace_call(env_class, state, action)
    return list(dict.fromkeys(log.written)) if log is not None else []

"""State codecs: how a foreign instance's state becomes a JSON object and back (the adapter's encode/decode hook).

Foreign classes keep state in whatever Python values suit them. EnvSim's state is a JSON object,
so an adapter encodes the instance after every call and decodes the JSON before the next one.
``StateCodec`` is the default hook:

* **encode**: the public attributes (plus any ``hidden`` private attributes, under their own state
  keys), with integer dict keys written as strings, sets and frozensets as sorted lists and tuples
  as lists. Any other object raises ``StateError`` naming the path and the hook to write.
* **decode** (after the adapter's loader built the instance): public attributes are set again from
  the state, restoring what JSON lost: attributes named in ``int_keys`` (or found holding integer
  keys after loading) get their digit keys back as ``int``; attributes named in ``sets`` (or found
  holding a set) become sets again; tuples come back as tuples. "Found" means in the instance the
  loader just built, or in the class's defaults (``learn``: BFCL-style classes are probed once with
  ``_load_scenario({})``). An attribute that holds an object
  tree (not JSON-like) after loading is left as the loader built it: object trees need a codec that
  writes them in the class's own scenario JSON (``bfcl.FileSystemCodec`` does, for BFCL's file system).

Conversions are applied to top-level attributes on decode; nested sets or integer keys need a codec of
their own. ``to_json_value(value, strict=False)`` is also used for observations, where it is lenient:
numbers of other types (``mpmath.mpf``, ``Decimal``, ``Fraction``, numpy scalars) become floats; pydantic models,
dataclasses, Enums and dates become JSON by the rule of ``envsim.envs.returns``; any other object fails the call
with ``ReturnValueError`` (its ``str`` is never called: the code may be untrusted).
"""

from __future__ import annotations

import copy
import json
import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any, Iterable, Mapping

from envsim.envs.base import StateError
from envsim.envs.returns import ReturnValueError, json_form


HOOK_HINT = ("give the adapter an encode/decode hook for this class "
             "(wrap_class(..., codec=StateCodec(int_keys=..., sets=..., hidden=...)) or a StateCodec subclass)")
_INT_KEY = re.compile(r"^-?\d+$")
_MISSING = object()
_NUMBER_MODULES = {"mpmath", "numpy", "gmpy2"}   # their scalar types become floats in observations


def _sort_key(item: Any) -> tuple[int, Any]:
    if isinstance(item, bool):
        return (0, int(item))
    if isinstance(item, (int, float)):
        return (1, item)
    if isinstance(item, str):
        return (2, item)
    return (3, json.dumps(item, sort_keys=True, default=str))


def to_json_value(value: Any, path: str = "", *, strict: bool = True) -> Any:
    """``value`` as a JSON value (int keys -> strings, sets -> sorted lists, tuples -> lists).

    ``strict`` (states) raises ``StateError`` for anything else; lenient mode (observations) turns
    known number types into floats and bool/float/None keys into their JSON text, and raises
    ``TypeError`` for any other object (the tool call then fails).
    """
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        if strict:
            raise StateError(f"state is not JSON at {path or '/'}: non-finite number {value!r}")
        return str(value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, bool) or not isinstance(key, (str, int)):
                if strict:
                    raise StateError(f"state is not JSON at {path or '/'}: key {key!r} is not a string; {HOOK_HINT}")
                if not isinstance(key, (bool, float, type(None))):
                    raise TypeError(f"tool returned a non-JSON key at {path or '/'} ({type(key).__name__})")
                key = json.dumps(key)
            name = str(key)
            if name in out:
                if strict:
                    raise StateError(f"state is not JSON at {path or '/'}: keys {key!r} and {name!r} collide as "
                                     f"JSON strings; {HOOK_HINT}")
                continue
            out[name] = to_json_value(item, f"{path}/{name}", strict=strict)
        return out
    if isinstance(value, (list, tuple)):
        return [to_json_value(item, f"{path}/{i}", strict=strict) for i, item in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        items = [to_json_value(item, f"{path}/*", strict=strict) for item in value]
        return sorted(items, key=_sort_key)
    if strict:
        raise StateError(f"state is not JSON at {path or '/'}: {type(value).__name__} is not a JSON value; {HOOK_HINT}")
    if isinstance(value, (Decimal, Fraction)) or type(value).__module__.split(".")[0] in _NUMBER_MODULES:
        number = float(value)
        return number if math.isfinite(number) else str(number)
    converted, plain = json_form(value, path)  # models, dataclasses, Enums, dates (envs/returns.py)
    if converted:
        return to_json_value(plain, path, strict=False)
    # No str()/repr() of unknown objects: their code may be untrusted. The tool call fails instead.
    raise ReturnValueError(f"tool returned a non-JSON value at {path or '/'} ({type(value).__name__})")


def _json_like(value: Any) -> bool:
    """Whether a loaded attribute value is made of JSON-like containers (so the state can overwrite it)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    if isinstance(value, Mapping):
        return all(_json_like(v) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(_json_like(v) for v in value)
    return False


class StateCodec:
    """The default encode/decode hook (see the module docstring).

    Args:
        int_keys: attributes whose dict keys are integers in the class (JSON stores them as strings).
        sets: attributes that hold sets in the class (JSON stores sorted lists).
        hidden: private attribute -> state key, for state a class keeps in private attributes.
        exclude: public attributes that are not state.
    """

    def __init__(self, *, int_keys: Iterable[str] = (), sets: Iterable[str] = (),
                 hidden: Mapping[str, str] | None = None, exclude: Iterable[str] = ()) -> None:
        self.int_keys = frozenset(int_keys)
        self.sets = frozenset(sets)
        self.hidden = dict(hidden or {})
        self.exclude = frozenset(exclude)

    def learn(self, instance: Any) -> "StateCodec":
        """A copy that also knows the sets and int-keyed dicts a freshly loaded default ``instance`` holds."""
        sets, int_keys = set(self.sets), set(self.int_keys)
        for name, value in vars(instance).items():
            if name.startswith("_"):
                continue
            if isinstance(value, (set, frozenset)):
                sets.add(name)
            elif isinstance(value, Mapping) and any(isinstance(k, int) and not isinstance(k, bool) for k in value):
                int_keys.add(name)
        clone = copy.copy(self)
        clone.sets, clone.int_keys = frozenset(sets), frozenset(int_keys)
        return clone

    def encode(self, instance: Any) -> dict[str, Any]:
        """The instance's state as a JSON object."""
        state: dict[str, Any] = {}
        for name, value in vars(instance).items():
            if name.startswith("_") or name in self.exclude:
                continue
            state[name] = to_json_value(value, f"/{name}")
        for attribute, key in self.hidden.items():
            if hasattr(instance, attribute):
                state[key] = to_json_value(getattr(instance, attribute), f"/{key}")
        return state

    def decode(self, instance: Any, state: Mapping[str, Any]) -> None:
        """Finish an instance the adapter's loader built from ``state``: restore attributes JSON changed."""
        hidden_keys = {key: attribute for attribute, key in self.hidden.items()}
        for key, value in state.items():
            if key in hidden_keys:
                setattr(instance, hidden_keys[key], json.loads(json.dumps(value)))
                continue
            if key.startswith("_") or key in self.exclude:
                continue
            current = getattr(instance, key, _MISSING)
            if current is not _MISSING and not _json_like(current):
                continue  # an object tree the loader built: only a codec of its own can restore it
            setattr(instance, key, self.restore(key, json.loads(json.dumps(value)), current))

    def restore(self, name: str, value: Any, current: Any = _MISSING) -> Any:
        """One attribute's Python value from its JSON form (``current``: what the loader made of it)."""
        if isinstance(value, list) and (name in self.sets or isinstance(current, (set, frozenset))):
            return frozenset(value) if isinstance(current, frozenset) else set(value)
        if isinstance(value, list) and isinstance(current, tuple):
            return tuple(value)
        if isinstance(value, dict) and (name in self.int_keys or (
                isinstance(current, Mapping) and any(isinstance(k, int) and not isinstance(k, bool) for k in current))):
            return {int(k) if _INT_KEY.match(k) else k: v for k, v in value.items()}
        return value

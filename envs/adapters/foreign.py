"""Wrap a trusted foreign class (importable code) as an ``Environment`` without rewriting it.

The wrapper holds one instance of the foreign class. Its state is the foreign instance's public
attributes; its tools are the foreign public methods (or the ones named). State is loaded in one
of three ways, chosen by ``load``:

* ``"attrs"``    - set the attributes on an instance made without calling ``__init__``;
* ``"scenario"`` - BFCL style: ``instance = Class(); instance._load_scenario(state)``;
* ``"init"``     - ``Class(state)``: the constructor takes the whole configuration dict.

State that is not plain JSON (sets, integer dict keys, object trees, private attributes) goes
through the adapter's codec (``envsim.envs.adapters.codec``); random generators, clocks and other
process-wide settings are handled by a ``guard`` around each call, never by editing the class.
Records of wrapped classes carry the class's ``module:Class`` (``origin``).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import importlib
import inspect
from typing import Any, Callable, ContextManager, Literal, Sequence

from envsim.envs.adapters.codec import HOOK_HINT, StateCodec, to_json_value
from envsim.envs.base import Environment, StateError, ToolSpec
from envsim.envs.shown import SOURCE_ATTRIBUTE
from envsim.envs.tool import tool_marker

Loader = Literal["attrs", "scenario", "init"]


def public_methods(foreign: type) -> list[str]:
    """Public methods defined by a class and its non-builtin bases, in definition order."""
    names: list[str] = []
    for klass in reversed(foreign.__mro__):
        if klass is object:
            continue
        for name, value in vars(klass).items():
            if not name.startswith("_") and inspect.isfunction(value) and name not in names:
                names.append(name)
    return names


def _proxy(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: "ForeignEnvironment", **kwargs: Any) -> Any:
        with self._guard():
            result = getattr(self._inner, name)(**kwargs)
        return to_json_value(result, strict=False)  # mpmath/Decimal numbers -> float, sets -> sorted lists

    return call


class NoToolsError(TypeError):
    """An environment class with no tools: nothing can be called, explored or labelled."""


class ForeignEnvironment(Environment):
    """Base of adapter classes: delegates state and tools to a wrapped foreign instance.

    The state is ``codec.encode(instance)``; ``load_state`` builds the instance with the loader and
    then ``codec.decode``. Initial states are always the normalised load->save form of the given
    configurations (a raw scenario is never a sample's ``state``: loading may add defaults or drop
    keys, and those are not changes any tool made).
    """

    _foreign: type = object
    _loader: Loader = "attrs"
    _initial_states: Sequence[dict[str, Any]] = ()
    _codec: StateCodec = StateCodec()
    _origin: str = ""
    _id: str = ""
    _inner: Any

    @staticmethod
    def _guard() -> ContextManager[Any]:
        """Context every foreign call runs in (adapters freeze clocks or save global settings here)."""
        return contextlib.nullcontext()

    @classmethod
    def env_id(cls) -> str:
        """The id given at wrapping (e.g. ``module:Class`` or ``bfcl/GorillaFileSystem``), else ``name-vN``."""
        return cls.__dict__.get("_id") or super().env_id()

    @classmethod
    def origin(cls) -> str:
        """``module:Class`` of the wrapped foreign class."""
        return cls._origin

    @classmethod
    def _add_class_tools(cls, klass: type, specs: dict[str, ToolSpec]) -> None:
        """The wrapped class's tools (declared at wrapping), inherited by subclasses, whose overrides and
        ``@tool`` methods count."""
        specs.update(vars(klass).get("_envsim_foreign_specs", {}))
        super()._add_class_tools(klass, specs)
        for attr, value in vars(klass).items():
            if (tool_marker(value) is None and attr in specs and inspect.isfunction(value)
                    and value is not specs[attr].method):
                specs[attr] = dataclasses.replace(specs[attr], method=value)

    @classmethod
    def sample_state(cls, seed: int) -> dict[str, Any]:
        """One of the initial states given to the adapter (cycled by seed), normalised by load->save."""
        raw = cls._initial_states
        if not raw:
            raw = cls.__dict__.get("_envsim_default_states") or (cls._default_state(),)
            setattr(cls, "_envsim_default_states", raw)
        return cls.normalise(raw[seed % len(raw)])

    @classmethod
    def _default_state(cls) -> dict[str, Any]:
        """The class's own defaults: ``_load_scenario({})`` or a no-argument instance."""
        try:
            if cls._loader == "scenario":
                return cls.from_state({}).get_state()
            if cls._loader == "attrs":
                inner = cls._foreign()
                return cls._state_codec().encode(inner)
        except Exception as exc:  # noqa: BLE001 - foreign constructors fail in their own ways
            raise NotImplementedError(f"{cls.env_id()} was wrapped without initial states and its class has no "
                                      f"usable defaults ({type(exc).__name__}: {exc})") from exc
        raise NotImplementedError(f"{cls.env_id()} was wrapped without initial states")

    @classmethod
    def normalise(cls, state: dict[str, Any]) -> dict[str, Any]:
        """The load->save form of a configuration; raises ``StateError`` when a second load->save changes it."""
        return load_save_fixed_point(cls.env_id(), lambda given: cls.from_state(given).get_state(), state)

    def load_state(self, state: dict[str, Any]) -> None:
        """Build the foreign instance from ``state`` with the adapter's loader, then ``codec.decode``."""
        foreign = type(self)._foreign
        given = copy.deepcopy(state)
        with self._guard():  # loaders may read clocks or random generators too
            if self._loader == "scenario":
                inner = foreign()
                inner._load_scenario(copy.deepcopy(given))
            elif self._loader == "init":
                inner = foreign(copy.deepcopy(given))
            else:
                inner = foreign.__new__(foreign)
                for key, value in copy.deepcopy(given).items():
                    setattr(inner, key, value)
            type(self)._state_codec().decode(inner, given)
        self._inner = inner

    def get_state(self) -> dict[str, Any]:
        """The foreign instance's state as JSON (``codec.encode``)."""
        return type(self)._state_codec().encode(self._inner)

    @classmethod
    def _state_codec(cls) -> StateCodec:
        """The codec, taught once which attributes hold sets or int-keyed dicts in the class's defaults."""
        learned = cls.__dict__.get("_envsim_codec")
        if learned is None:
            learned = cls._codec
            if cls._loader == "scenario":
                try:
                    with cls._guard():
                        probe = cls._foreign()
                        probe._load_scenario({})
                    learned = learned.learn(probe)
                except Exception:  # noqa: BLE001 - a class without usable defaults: the codec as given
                    pass
            setattr(cls, "_envsim_codec", learned)
        return learned


_GONE = object()


def load_save_fixed_point(env_id: str, load_save: Callable[[dict[str, Any]], dict[str, Any]],
                          state: dict[str, Any]) -> dict[str, Any]:
    """``load_save(state)``, checked to be a fixed point: a second load->save must not change it.

    A state that moves on every load would show changes no tool made, so it raises ``StateError``
    naming the keys that moved.
    """
    from envsim.delta import canonical_json  # imported on use: sandbox workers never normalise

    first = load_save(state)
    second = load_save(first)
    if canonical_json(first) != canonical_json(second):
        changed = sorted(k for k in set(first) | set(second) if first.get(k, _GONE) != second.get(k, _GONE))
        raise StateError(f"{env_id}: state does not survive load->save->load (changed: "
                         f"{', '.join(changed[:8])}); {HOOK_HINT}")
    return first


def wrap_class(foreign: type, *, load: Loader = "attrs", tools: Sequence[str] | None = None,
               write_tools: Sequence[str] | None = None, name: str | None = None, domain: str = "foreign",
               initial_states: Sequence[dict[str, Any]] = (), source: str | None = None,
               codec: StateCodec | None = None, env_id: str | None = None,
               guard: Callable[[], ContextManager[Any]] | None = None) -> type[Environment]:
    """Make an ``Environment`` subclass that runs ``foreign``'s methods as tools.

    ``write_tools`` names the tools that may change state (unknown for foreign code: by default
    every tool is treated as possibly writing, which is what labelling needs to be safe).
    ``codec`` is the encode/decode hook for state that is not plain JSON (see ``codec.StateCodec``);
    ``env_id`` the id records carry (default ``name-v1``); ``guard`` a context every call runs in.
    """
    tool_names = list(tools) if tools is not None else public_methods(foreign)
    if not tool_names:
        raise NoToolsError(f"{foreign.__name__} has no public methods to wrap as tools")
    writes = set(tool_names if write_tools is None else write_tools)
    namespace: dict[str, Any] = {
        "__module__": foreign.__module__,
        "__doc__": foreign.__doc__,
        "__qualname__": foreign.__qualname__,
        "name": name or foreign.__name__.lower(),
        "domain": domain,
        "_foreign": foreign,
        "_loader": load,
        "_initial_states": tuple(copy.deepcopy(list(initial_states))),
        "_origin": f"{foreign.__module__}:{foreign.__qualname__}",
    }
    if codec is not None:
        namespace["_codec"] = codec
    if env_id:
        namespace["_id"] = env_id
    if guard is not None:
        namespace["_guard"] = staticmethod(guard)
    for tool_name in tool_names:
        method = getattr(foreign, tool_name, None)
        if not callable(method):
            raise AttributeError(f"{foreign.__name__} has no method {tool_name!r}")
        namespace[tool_name] = _proxy(tool_name, method)
    try:
        namespace[SOURCE_ATTRIBUTE] = source or inspect.getsource(foreign)
    except (OSError, TypeError):
        namespace[SOURCE_ATTRIBUTE] = source or f"class {foreign.__name__}: ...  # source unavailable\n"
    namespace["_envsim_foreign_specs"] = {
        n: ToolSpec(name=n, method=namespace[n], write=n in writes, strict=False) for n in tool_names
    }
    return type(foreign.__name__, (ForeignEnvironment,), namespace)


def wrap_bfcl(foreign: type, scenario: dict[str, Any], **kwargs: Any) -> type[Environment]:
    """Wrap a BFCL-style class (state loaded through ``_load_scenario(dict)``) with one scenario."""
    if not callable(getattr(foreign, "_load_scenario", None)):
        raise TypeError(f"{foreign.__name__} has no _load_scenario method")
    return wrap_class(foreign, load="scenario", initial_states=[scenario], **kwargs)


def wrap_target(target: str, **kwargs: Any) -> type[Environment]:
    """Import ``"module:Class"`` and wrap it (an ``Environment`` subclass is returned as is)."""
    module_name, _, attr = target.partition(":")
    if not attr:
        raise ValueError(f"expected 'module:Class', got {target!r}")
    obj = getattr(importlib.import_module(module_name), attr)
    if inspect.isclass(obj) and issubclass(obj, Environment):
        return obj
    if not inspect.isclass(obj):
        raise TypeError(f"{target!r} is not a class")
    if "load" not in kwargs and callable(getattr(obj, "_load_scenario", None)):
        kwargs["load"] = "scenario"
    kwargs.setdefault("env_id", target)
    return wrap_class(obj, **kwargs)

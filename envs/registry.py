"""Registry of environments: built-ins discovered under ``envsim.envs.library``, plugins via entry points.

Ids look like ``online_store-v1``. Built-in modules are imported on first use; third-party
packages register ``"id" = "module:Class"`` under the ``envsim.envs`` entry-point group. Modules the
user trusts (``--env-module``, ``envsim.envs.sandbox.trust``) add their ``Environment`` subclasses under their ids.
``get_env`` resolves ``module:Class`` only for trusted modules: an id read from a file never imports code.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import pkgutil
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points
from pathlib import Path

from envsim.envs.base import Environment
from envsim.envs.sandbox import env_refusal, user_trusted_modules

BUILTIN_PACKAGE = "envsim.envs.library"
ENTRY_POINT_GROUP = "envsim.envs"
#: Namespaced ids resolved on use (``bfcl/GorillaFileSystem``): prefix -> ``"module:function(name)"``.
NAMESPACES = {"bfcl": "envsim.envs.adapters.bfcl:bfcl_env", "tau": "envsim.envs.adapters.tau:tau_env"}
#: A foreign track registers itself with one entry above (or, from another package, under ``envsim.namespaces``).
NAMESPACE_ENTRY_POINT_GROUP = "envsim.namespaces"


class UnknownEnvironment(KeyError):
    """No environment is registered under the requested id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown environment"


class UntrustedEnvironment(UnknownEnvironment):
    """An id that would import code nobody trusted (``urllib.request:URLopener`` in a benchmark file)."""


def namespaces() -> dict[str, str]:
    """Namespace prefix -> ``"module:function"`` of every foreign track: EnvSim's own, then entry-point plugins."""
    found = dict(NAMESPACES)
    for name, value in _plugin_namespaces():
        found.setdefault(name, value)
    return found


@lru_cache(maxsize=1)
def _plugin_namespaces() -> tuple[tuple[str, str], ...]:
    """``envsim.namespaces`` entry points, read once per process (reading metadata costs ~17 ms a call)."""
    return tuple((ep.name, ep.value) for ep in entry_points(group=NAMESPACE_ENTRY_POINT_GROUP))


def refusal(env_id: str) -> str | None:
    """Why ``env_id`` may not be resolved (it would import untrusted code), or ``None``; imports nothing."""
    return env_refusal(env_id)


@dataclass(frozen=True)
class EnvEntry:
    """A registered environment: its id, domain and class."""

    id: str
    domain: str
    cls: type[Environment]
    builtin: bool = True


def load_class(target: str) -> type[Environment]:
    """Import ``"package.module:Class"`` and check that it is an ``Environment`` subclass."""
    module_name, _, attr = target.partition(":")
    if not attr:
        raise ValueError(f"expected 'module:Class', got {target!r}")
    obj = getattr(importlib.import_module(module_name), attr)
    if not (inspect.isclass(obj) and issubclass(obj, Environment)):
        raise TypeError(f"{target!r} is not an Environment subclass (wrap foreign classes with an adapter)")
    return obj


def _builtin_classes() -> list[type[Environment]]:
    package = importlib.import_module(BUILTIN_PACKAGE)
    classes: list[type[Environment]] = []
    for info in pkgutil.walk_packages(package.__path__, prefix=BUILTIN_PACKAGE + "."):
        leaf = info.name.rsplit(".", 1)[-1]
        if info.ispkg or leaf.startswith("_"):
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, Environment) and obj.__module__ == module.__name__ and obj.tool_specs():
                classes.append(obj)
    return classes


def _module_classes(module_name: str) -> list[type[Environment]]:
    """``Environment`` subclasses with tools defined in a trusted module (imported here: the user's own code)."""
    module = importlib.import_module(module_name)
    return [obj for _, obj in inspect.getmembers(module, inspect.isclass)
            if issubclass(obj, Environment) and obj.__module__ == module.__name__ and obj.tool_specs()]


def registry() -> dict[str, EnvEntry]:
    """All environments by id: built-ins, entry-point plugins, then classes of trusted modules (duplicates are
    an error)."""
    return _registry(user_trusted_modules())


@lru_cache(maxsize=4)
def _registry(trusted: tuple[str, ...]) -> dict[str, EnvEntry]:
    entries: dict[str, EnvEntry] = {}
    for cls in _builtin_classes():
        env_id = cls.env_id()
        if env_id in entries:
            raise RuntimeError(f"duplicate environment id {env_id!r}")
        entries[env_id] = EnvEntry(env_id, cls.env_domain(), cls)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        cls = load_class(ep.value)
        if ep.name in entries:
            raise RuntimeError(f"plugin environment {ep.name!r} clashes with an existing id")
        entries[ep.name] = EnvEntry(ep.name, cls.env_domain(), cls, builtin=False)
    for module_name in trusted:
        for cls in _module_classes(module_name):
            known = entries.get(cls.env_id())
            if known is not None and known.cls is not cls:
                raise RuntimeError(f"environment {cls.env_id()!r} of trusted module {module_name!r} clashes with "
                                   f"{known.cls.__module__}:{known.cls.__qualname__} (give it another 'name')")
            entries[cls.env_id()] = EnvEntry(cls.env_id(), cls.env_domain(), cls, builtin=False)
    return dict(sorted(entries.items()))


def _clear_registry_caches() -> None:
    _registry.cache_clear()
    _plugin_envs.cache_clear()


registry.cache_clear = _clear_registry_caches  # type: ignore[attr-defined]


def domain_of(env_id: str) -> str | None:
    """The domain of the environment registered under ``env_id`` (``None``: not registered), as ``registry()``
    gives it. A built-in id is looked up in its own module only (``<domain>/<name>.py`` of the library) when no
    plugin or trusted module could register it too: the whole registry imports all built-in modules (~0.4 s)."""
    entry = None if _plugin_envs() or user_trusted_modules() else _builtin_entry(env_id)
    if entry is None:
        entry = registry().get(env_id)
    return entry.domain if entry else None


@lru_cache(maxsize=1)
def _plugin_envs() -> tuple[str, ...]:
    """Names of the ``envsim.envs`` entry points (read once per process)."""
    return tuple(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


@lru_cache(maxsize=None)
def _builtin_entry(env_id: str) -> EnvEntry | None:
    """The built-in entry of ``env_id`` found in the library module named by the id (``online_store-v1``:
    ``<domain>/online_store.py``) with the same checks as ``_builtin_classes``; ``None`` when there is none."""
    name, dash, _ = env_id.rpartition("-v")
    if not dash or not name.isidentifier() or name.startswith("_"):
        return None
    package = importlib.import_module(BUILTIN_PACKAGE)
    for folder in package.__path__:
        for path in sorted(Path(folder).glob(f"*/{name}.py")):
            if not path.parent.name.isidentifier() or path.parent.name.startswith("_"):
                continue
            module = importlib.import_module(f"{BUILTIN_PACKAGE}.{path.parent.name}.{name}")
            for _, obj in inspect.getmembers(module, inspect.isclass):
                if issubclass(obj, Environment) and obj.__module__ == module.__name__ and obj.tool_specs() \
                        and obj.env_id() == env_id:
                    return EnvEntry(env_id, obj.env_domain(), obj)
    return None


def list_envs(domain: str | None = None) -> list[EnvEntry]:
    """Registered environments, optionally of one domain, sorted by id."""
    return [e for e in registry().values() if domain is None or e.domain == domain]


def resolve_target(target: str) -> type[Environment]:
    """``module:Class``: an ``Environment`` subclass as is, any other class wrapped by the foreign adapter."""
    from envsim.envs.adapters.foreign import wrap_target

    return wrap_target(target)


@lru_cache(maxsize=None)
def _resolved(env_id: str) -> type[Environment]:
    """Namespaced ids and ``module:Class`` targets, wrapped once per process (one class per id)."""
    prefix, _, rest = env_id.partition("/")
    known = namespaces()
    if prefix in known and rest:
        module_name, _, function = known[prefix].partition(":")
        return getattr(importlib.import_module(module_name), function)(rest)
    return resolve_target(env_id)


def get_env(env_id: str) -> type[Environment]:
    """The class registered under ``env_id``; also accepts ``module:Class`` of a trusted module (foreign classes
    are wrapped) and namespaced ids such as ``bfcl/GorillaFileSystem``. Suggests close ids on a miss.

    Raises ``UntrustedEnvironment`` (an ``UnknownEnvironment``) before importing anything when the id names a
    module nobody trusted (see ``envsim.envs.sandbox.trust``)."""
    problem = refusal(env_id)
    if problem:
        raise UntrustedEnvironment(problem)
    prefix, slash, _ = env_id.partition("/")
    if slash and ":" not in env_id and prefix not in namespaces():
        known = ", ".join(f"{n}/..." for n in sorted(namespaces()))
        raise UnknownEnvironment(f"unknown environment {env_id!r}: no namespace {prefix!r} (known: {known})")
    if ":" in env_id or slash:
        return _resolved(env_id)
    entries = registry()
    if env_id in entries:
        return entries[env_id].cls
    close = difflib.get_close_matches(env_id, list(entries), n=3, cutoff=0.5)
    hint = (f"; did you mean {', '.join(close)}?" if close else "") + (
        " (an environment of your own needs --env-module MODULE, the module that defines it)")
    raise UnknownEnvironment(f"unknown environment {env_id!r}{hint}")

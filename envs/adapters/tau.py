"""τ-bench's airline and retail domains as EnvSim environments (``tau/retail``, ``tau/airline``).

τ-bench is found, never copied: an installed ``tau_bench`` package, else a folder holding ``tau_bench/``
given by ``locate_tau_bench(path)`` (``--tau-path``) or the ``ENVSIM_TAU_BENCH`` environment variable
(tests and CI point it at ``../shared/third_party/tau-bench``).

* **State** is τ-bench's data dict: the public attributes are the database's top-level keys
  (retail: ``orders``, ``products``, ``users``; airline: ``flights``, ``reservations``, ``users``).
* **Tools** proxy to each τ-bench tool's ``invoke(data, **kwargs)``; schemas are τ-bench's own
  ``get_info()``; a tool's code is its τ-bench class source.
* **Failures**: τ-bench returns errors as strings (``"Error: order not found"``); the adapter-level rule
  ``ERROR_PREFIX`` makes such observations outcome ``failure`` (see ``envsim.records``).
* **Tasks**: ``task_actions(domain, split)`` returns the ground-truth call sequences of τ-bench's tasks
  (test: retail 115 tasks / 582 calls, airline 50 / 158; train/dev: retail only).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from envsim.envs.base import Environment, ToolSpec, json_copy
from envsim.envs.shown import SOURCE_ATTRIBUTE
from envsim.records import Action

ENV_VAR = "ENVSIM_TAU_BENCH"
DOMAINS = ("retail", "airline")
#: Observations that are strings starting with this are failures (τ-bench reports errors so).
ERROR_PREFIX = "Error:"
#: Task lists per domain and split: (module under ``tau_bench.envs.<domain>``, attribute).
TASK_SOURCES: dict[str, dict[str, tuple[str, str]]] = {
    "retail": {"test": ("tasks_test", "TASKS_TEST"), "train": ("tasks_train", "TASKS_TRAIN"),
               "dev": ("tasks_dev", "TASKS_DEV")},
    "airline": {"test": ("tasks_test", "TASKS")},
}
TOOL_SOURCES_ATTRIBUTE = "_envsim_tool_sources"


class TauBenchNotFound(ImportError):
    """τ-bench is neither installed nor found at the given path / ``ENVSIM_TAU_BENCH``."""


def _importable() -> bool:
    try:
        importlib.import_module("tau_bench.envs.tool")
        return True
    except ImportError:
        return False


def locate_tau_bench(path: str | os.PathLike[str] | None = None) -> Path | None:
    """Make ``tau_bench`` importable: an explicit ``path`` first, then an installed package, then ``$ENVSIM_TAU_BENCH``.

    Returns the folder put on ``sys.path`` (``None`` when the installed package is used); raises
    ``TauBenchNotFound`` with what was tried.
    """
    candidates = [Path(path)] if path else []
    if not candidates and _importable():
        return None
    if not path and os.environ.get(ENV_VAR):
        candidates.append(Path(os.environ[ENV_VAR]))
    for folder in candidates:
        folder = folder.expanduser().resolve()
        if (folder / "tau_bench" / "envs" / "tool.py").is_file():
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
            importlib.invalidate_caches()
            if _importable():
                return folder
    tried = ", ".join(str(c) for c in candidates) or "nothing"
    raise TauBenchNotFound(f"τ-bench not found: no installed tau_bench package and no tau_bench/ folder at {tried}; "
                           f"install it from github.com/sierra-research/tau-bench or set {ENV_VAR} / --tau-path "
                           f"to the folder holding tau_bench/")


def _check_domain(domain: str) -> str:
    if domain not in DOMAINS:
        raise KeyError(f"unknown τ-bench domain {domain!r}; known: {', '.join(DOMAINS)}")
    return domain


def _module(domain: str, name: str) -> Any:
    locate_tau_bench()
    return importlib.import_module(f"tau_bench.envs.{_check_domain(domain)}.{name}")


def tool_classes(domain: str) -> list[type]:
    """τ-bench's tool classes of a domain (``ALL_TOOLS``), in its order."""
    return list(_module(domain, "tools").ALL_TOOLS)


@functools.lru_cache(maxsize=2)
def _database_text(domain: str) -> str:
    from envsim.delta import canonical_json

    return canonical_json(_module(domain, "data").load_data())


def initial_database(domain: str) -> dict[str, Any]:
    """A fresh copy of the domain's initial database (τ-bench's ``load_data()``) in canonical key order.

    Keys are sorted as in every EnvSim state (the executor canonicalises states), so observations that dump
    records (``json.dumps(order)``) read the same whether a call is labelled, re-executed or replayed.
    """
    return json.loads(_database_text(domain))


def task_actions(domain: str, split: str = "test") -> list[list[Action]]:
    """Ground-truth call sequences of the domain's tasks of one split (``test``, ``train``, ``dev``).

    A split τ-bench does not ship for the domain (airline has test tasks only) is an empty list.
    """
    source = TASK_SOURCES[_check_domain(domain)].get(split)
    if source is None:
        if split not in ("test", "train", "dev"):
            raise KeyError(f"unknown τ-bench task split {split!r}")
        return []
    module_name, attribute = source
    tasks = getattr(_module(domain, module_name), attribute)
    from envsim.delta import canonical_json

    # arguments in canonical key order, as stored records hold them: tools that dump their arguments
    # (book_reservation's flights) then answer the same when a stored record is re-executed
    return [[Action(name=a.name, arguments=json.loads(canonical_json(dict(a.kwargs)))) for a in task.actions]
            for task in tasks]


def is_error_string(observation: Any) -> bool:
    """τ-bench's error convention: a string observation starting with ``Error:``."""
    return isinstance(observation, str) and observation.startswith(ERROR_PREFIX)


@dataclass(frozen=True)
class DeclaredToolSpec(ToolSpec):
    """A tool whose schema is declared by the foreign code (τ-bench's ``get_info()``), not derived."""

    declared: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def schema(self) -> dict[str, Any]:  # type: ignore[override]
        """The declared OpenAI-style function schema."""
        return self.declared


def _tool_method(tool: type, name: str) -> Callable[..., Any]:
    """A method ``(self, **kwargs)`` running ``tool.invoke(data, **kwargs)`` on the environment's public attributes."""
    invoke = tool.invoke
    signature = inspect.signature(invoke)
    params = [p for n, p in signature.parameters.items() if n != "data"]
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)

    def call(self: "TauEnvironment", **kwargs: Any) -> Any:
        data = {k: v for k, v in vars(self).items() if not k.startswith("_")}
        try:
            return invoke(data, **kwargs)
        finally:
            for key in [k for k in vars(self) if not k.startswith("_")]:
                if key not in data:
                    delattr(self, key)
            for key, value in data.items():  # top-level keys the tool added or replaced
                setattr(self, key, value)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = tool.get_info()["function"].get("description", "")
    call.__signature__ = signature.replace(parameters=[self_param, *params])  # type: ignore[attr-defined]
    call.__annotations__ = {k: v for k, v in getattr(invoke, "__annotations__", {}).items() if k != "data"}
    call.__module__ = tool.__module__
    return call


class TauEnvironment(Environment):
    """Base of the τ-bench domain classes: one fixed initial database, τ-bench's tools and schemas."""

    version = 1
    domain = "tau"
    _tau_domain: str = ""

    @classmethod
    def env_id(cls) -> str:
        """``tau/<domain>``."""
        return f"tau/{cls._tau_domain}"

    @classmethod
    def sample_state(cls, seed: int) -> dict[str, Any]:
        """τ-bench's initial database (one per domain: every seed gives the same state)."""
        return initial_database(cls._tau_domain)

    @classmethod
    def _add_class_tools(cls, klass: type, specs: dict[str, ToolSpec]) -> None:
        """The τ-bench tools declared on the generated class."""
        specs.update(vars(klass).get("_envsim_tau_specs", {}))
        super()._add_class_tools(klass, specs)


def _tool_source(tool: type) -> str:
    try:
        return textwrap.dedent(inspect.getsource(tool)).rstrip() + "\n"
    except (OSError, TypeError):
        return f"class {tool.__name__}:  # source unavailable\n    ...\n"


@functools.lru_cache(maxsize=None)
def tau_env(domain: str) -> type[Environment]:
    """The EnvSim environment class of a τ-bench domain (``retail`` or ``airline``); the registry's ``tau/`` namespace."""
    tools = tool_classes(domain)
    namespace: dict[str, Any] = {"__module__": __name__, "__qualname__": f"Tau{domain.title()}",
                                 "__doc__": f"τ-bench {domain} domain (tools and database from tau_bench).",
                                 "name": f"tau_{domain}", "_tau_domain": domain, "domain": domain}
    specs: dict[str, ToolSpec] = {}
    sources: dict[str, str] = {}
    for tool in tools:
        info = tool.get_info()
        name = info["function"]["name"]
        method = _tool_method(tool, name)
        namespace[name] = method
        writes = name.startswith(("modify_", "cancel_", "exchange_", "return_", "update_", "book_", "send_"))
        specs[name] = DeclaredToolSpec(name=name, method=method, write=writes, strict=False, declared=info)
        sources[name] = _tool_source(tool)
    namespace["_envsim_tau_specs"] = specs
    namespace[TOOL_SOURCES_ATTRIBUTE] = sources
    namespace[SOURCE_ATTRIBUTE] = "\n\n".join(sources.values())
    return type(f"Tau{domain.title()}", (TauEnvironment,), namespace)


def is_tau(env_class: type) -> bool:
    """Whether an environment class is a wrapped τ-bench domain."""
    return isinstance(env_class, type) and issubclass(env_class, TauEnvironment)

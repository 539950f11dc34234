"""The ``Environment`` base class: state is the public instance attributes, tools are ``@tool`` methods."""

from __future__ import annotations

import copy
import inspect
import json
import typing
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, ClassVar

from envsim.envs.schema import JSONSchema, function_schema
from envsim.envs.tool import tool_marker


def json_copy(value: Any) -> Any:
    """Deep copy of a JSON value through the C JSON codec (falls back to ``copy.deepcopy`` for non-JSON)."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return copy.deepcopy(value)


class StateError(ValueError):
    """A state that is not a JSON object of JSON values (foreign classes: see the adapter's codec hook)."""


class ToolError(Exception):
    """An error the calling agent should see: the executor turns it into ``{"success": false, "error": msg}``."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool of an environment: its method, whether it writes, and its derived schema."""

    name: str
    method: Callable[..., Any]
    write: bool
    strict: bool = True

    @cached_property
    def schema(self) -> JSONSchema:
        """OpenAI-style function schema derived from the method's hints and docstring."""
        return function_schema(self.method, strict=self.strict)

    @cached_property
    def signature(self) -> inspect.Signature:
        """The method's signature without ``self``."""
        sig = inspect.signature(self.method)
        return sig.replace(parameters=[p for n, p in sig.parameters.items() if n != "self"])

    @cached_property
    def hints(self) -> dict[str, Any]:
        """Resolved type hints of the arguments."""
        try:
            hints = typing.get_type_hints(self.method)
        except Exception:  # noqa: BLE001 - unresolvable hints in foreign code: no type checks
            if self.strict:
                raise
            hints = {}
        hints.pop("return", None)
        return hints

    @property
    def arity(self) -> int:
        """Number of declared arguments."""
        return len(self.signature.parameters)


class Environment:
    """A deterministic tool environment.

    Subclasses keep all state in public, JSON-serialisable instance attributes, mark tools with
    ``@tool`` / ``@tool(write=True)``, and implement ``sample_state(seed)``. Tools take no clock,
    randomness, I/O or network: time and id counters live in the state.
    """

    #: Short name; defaults to the module name. The registry id is ``f"{name}-v{version}"``.
    name: ClassVar[str] = ""
    #: Version of the environment's behaviour; bump when tool semantics change.
    version: ClassVar[int] = 1
    #: Domain; defaults to the name of the package folder holding the module.
    domain: ClassVar[str] = ""

    @classmethod
    def env_name(cls) -> str:
        """The environment's short name (class attribute ``name`` or its module's name)."""
        return cls.name or cls.__module__.rsplit(".", 1)[-1]

    @classmethod
    def env_id(cls) -> str:
        """Registry id, e.g. ``online_store-v1``."""
        return f"{cls.env_name()}-v{cls.version}"

    @classmethod
    def env_domain(cls) -> str:
        """The domain (class attribute ``domain`` or the package folder name)."""
        if cls.domain:
            return cls.domain
        parts = cls.__module__.split(".")
        return parts[-2] if len(parts) >= 2 else "misc"

    @classmethod
    def description(cls) -> str:
        """First paragraph of the class docstring."""
        doc = inspect.cleandoc(cls.__doc__ or "")
        return " ".join(doc.split("\n\n", 1)[0].split())

    @classmethod
    def tool_specs(cls) -> dict[str, ToolSpec]:
        """All tools of the class, in definition order (inherited tools first)."""
        cached = cls.__dict__.get("_envsim_tool_specs")
        if cached is not None:
            return cached
        specs: dict[str, ToolSpec] = {}
        for klass in reversed(cls.__mro__):
            cls._add_class_tools(klass, specs)
        setattr(cls, "_envsim_tool_specs", specs)
        return specs

    @classmethod
    def _add_class_tools(cls, klass: type, specs: dict[str, ToolSpec]) -> None:
        """Add the ``@tool`` methods defined on ``klass`` itself to ``specs`` (one step of the MRO walk)."""
        for attr, value in vars(klass).items():
            marker = tool_marker(value)
            if marker is not None:
                specs[attr] = ToolSpec(name=attr, method=value, write=marker.write)

    @classmethod
    def tool_schemas(cls) -> list[JSONSchema]:
        """OpenAI-style function schemas of every tool."""
        return [spec.schema for spec in cls.tool_specs().values()]

    @classmethod
    def sample_state(cls, seed: int) -> dict[str, Any]:
        """A varied, realistic initial state drawn with a private ``random.Random(seed)``."""
        raise NotImplementedError(f"{cls.__name__} does not implement sample_state")

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "Environment":
        """An instance whose public attributes are a deep copy of ``state``."""
        env = cls.__new__(cls)
        env.load_state(state)
        return env

    @classmethod
    def run_call(cls, state: dict[str, Any], action: Any) -> tuple[Any, dict[str, Any]]:
        """Execute one call on ``state``; returns ``(observation, next_state)``. Sandboxed adapters override this."""
        from envsim.envs.sandbox import call_in_process

        return call_in_process(cls, state, action)

    def load_state(self, state: dict[str, Any]) -> None:
        """Replace the instance's state with a deep copy of ``state``."""
        for key in [k for k in vars(self) if not k.startswith("_")]:
            delattr(self, key)
        for key, value in json_copy(state).items():
            if key.startswith("_"):
                raise ValueError(f"state key {key!r} starts with '_' and would not count as state")
            setattr(self, key, value)

    def get_state(self) -> dict[str, Any]:
        """The state: a deep copy of the public instance attributes."""
        return json_copy({k: v for k, v in vars(self).items() if not k.startswith("_")})

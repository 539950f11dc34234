"""Shared record types: actions and labelled transitions (the benchmark's line format)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Outcome = Literal["failure", "no_change", "change"]
STRATA = ("failure", "no_change", "simple", "medium", "difficult", "extreme")


@dataclass(frozen=True)
class Action:
    """A tool call: tool name and JSON arguments."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> "Action":
        """Build from ``{"name": ..., "arguments": {...}}`` (arguments may be a JSON string)."""
        import json

        if isinstance(value, Action):
            return value
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            raise ValueError(f"an action needs a string 'name', got {value!r:.200}")
        arguments = value.get("arguments", {})
        if isinstance(arguments, str):
            arguments = json.loads(arguments) if arguments.strip() else {}
        return cls(name=value["name"], arguments=arguments)

    def to_json(self) -> dict[str, Any]:
        """``{"name": ..., "arguments": {...}}``."""
        return {"name": self.name, "arguments": self.arguments}


#: Adapter-level rules for foreign envs that report errors as strings: env-id prefix -> error-string prefix
#: (τ-bench returns ``"Error: order not found"``; see ``envsim.envs.adapters.tau``).
STRING_ERROR_PREFIXES: dict[str, str] = {"tau/": "Error:"}


def is_failure_observation(observation: Any, env: str = "") -> bool:
    """An error observation: ``{"success": false, ...}``, for foreign envs ``{"error": ...}`` without success,
    and for envs with a string-error rule (``STRING_ERROR_PREFIXES``) a string starting with their prefix."""
    if isinstance(observation, str):
        return any(env.startswith(scope) and observation.startswith(prefix)
                   for scope, prefix in STRING_ERROR_PREFIXES.items())
    if not isinstance(observation, dict):
        return False
    if "success" in observation:
        return observation["success"] is False
    return "error" in observation


def outcome_of(observation: Any, delta_size: int, env: str = "") -> Outcome:
    """``change`` when |Δ| > 0, else ``failure`` for an error observation (of environment ``env``), else ``no_change``."""
    if delta_size > 0:
        return "change"
    return "failure" if is_failure_observation(observation, env) else "no_change"


def stratum_of(outcome: Outcome, delta_size: int) -> str:
    """Stratum of a transition: failure, no_change, simple (1-2), medium (3-6), difficult (7-12), extreme (13+)."""
    if outcome != "change":
        return outcome
    if delta_size <= 2:
        return "simple"
    if delta_size <= 6:
        return "medium"
    if delta_size <= 12:
        return "difficult"
    return "extreme"


@dataclass
class Transition:
    """One executed call: ``(state, action) -> (observation, next_state)`` with its Δ labels."""

    env: str
    env_version: str
    action: Action
    state: dict[str, Any]
    observation: Any
    next_state: dict[str, Any]
    patch: list[dict[str, Any]]
    delta_size: int
    changed_paths: list[str]
    arg_count: int

    @property
    def tool(self) -> str:
        """Name of the called tool."""
        return self.action.name

    @property
    def outcome(self) -> Outcome:
        """failure / no_change / change."""
        return outcome_of(self.observation, self.delta_size, self.env)

    @property
    def stratum(self) -> str:
        """Stratum label from outcome and |Δ|."""
        return stratum_of(self.outcome, self.delta_size)

    def to_json(self) -> dict[str, Any]:
        """The transition's labelled fields as JSON (construction adds id, code, split, tools)."""
        data = asdict(self)
        data["action"] = self.action.to_json()
        data.update(tool=self.tool, outcome=self.outcome, stratum=self.stratum)
        return data

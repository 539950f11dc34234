"""Execute one tool call on a known state and label the transition (observation, next state, Δ)."""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

from envsim.delta import DeltaTooLarge, canonical_json, compute_delta
from envsim.envs.base import Environment, StateError
from envsim.envs.shown.source import env_version
from envsim.jsonsafe import count_values
from envsim.records import Action, Transition


#: JSON values a state, next state or observation may hold (a τ-bench airline database holds 162,000; a
#: 15.7 MiB answer of ``{}`` holds 4 million): larger ones are refused before any copy or diff is made.
MAX_STATE_VALUES = 2_000_000


def check_size(value: Any, what: str, text: str | None = None) -> None:
    """Raise ``StateError`` when ``value`` holds more than ``MAX_STATE_VALUES`` JSON values.

    Values are counted only when ``text`` (the value's canonical JSON, computed here if not given) is long
    enough to hold that many: every value but the root takes at least two characters (itself and a comma)."""
    text = canonical_json(value) if text is None else text
    if len(text) > 2 * MAX_STATE_VALUES and count_values(value, MAX_STATE_VALUES) > MAX_STATE_VALUES:
        raise StateError(f"{what} holds more than {MAX_STATE_VALUES:,} JSON values (envsim.envs.sandbox.executor."
                         "MAX_STATE_VALUES): too large to label")


def _check_observation_size(observation: Any) -> None:
    """``check_size`` of an observation that is JSON (one that is not is reported where it is written)."""
    try:
        text = canonical_json(observation)
    except (TypeError, ValueError, RecursionError):
        return
    check_size(observation, "observation", text)


class NondeterminismError(RuntimeError):
    """Two executions of the same call on the same state disagreed."""


def _json_problem(value: Any, path: str = "") -> str | None:
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path or '/'}: non-finite number {value!r}"
    if isinstance(value, list):
        for i, item in enumerate(value):
            problem = _json_problem(item, f"{path}/{i}")
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path or '/'}: key {key!r} is not a string"
            problem = _json_problem(item, f"{path}/{key}")
            if problem:
                return problem
        return None
    return f"{path or '/'}: {type(value).__name__} is not a JSON value"


def check_json_state(state: Any, what: str = "state") -> None:
    """Raise ``StateError`` naming the first path whose value is not JSON (sets, tuples, objects, NaN...)."""
    if not isinstance(state, dict):
        raise StateError(f"{what} must be a JSON object, got {type(state).__name__}")
    problem = _json_problem(state)
    if problem:
        raise StateError(f"{what} is not JSON-serialisable at {problem}")


def execute(env_class: type[Environment], state: Mapping[str, Any], action: Action | Mapping[str, Any],
            *, check_determinism: bool = False) -> Transition:
    """Run ``action`` on a copy of ``state``; return the labelled transition.

    Unknown tools and bad arguments answer an error observation (state unchanged); a tool that
    raises answers an error observation with whatever it mutated before raising kept.
    """
    action = Action.from_json(action)
    check_json_state(state)
    text = canonical_json(state)
    check_size(state, "state", text)
    state = json.loads(text)
    observation, next_state = env_class.run_call(state, action)
    check_json_state(next_state, "next state")
    text = canonical_json(next_state)
    check_size(next_state, "next state", text)
    _check_observation_size(observation)
    next_state = json.loads(text)
    if check_determinism:
        second, again = env_class.run_call(state, action)
        if canonical_json(second) != canonical_json(observation) or canonical_json(again) != canonical_json(next_state):
            raise NondeterminismError(f"{env_class.env_id()}.{action.name} is not deterministic on this state")
    try:
        delta = compute_delta(state, next_state)
    except DeltaTooLarge as exc:
        raise StateError(f"{env_class.env_id()}.{action.name}: {exc}") from None
    return Transition(
        env=env_class.env_id(),
        env_version=env_version(env_class),
        action=action,
        state=state,
        observation=observation,
        next_state=next_state,
        patch=delta.patch,
        delta_size=delta.size,
        changed_paths=list(delta.paths),
        arg_count=len(action.arguments) if isinstance(action.arguments, dict) else 0,
    )

"""Call one tool in-process the way a real tool layer does: unknown tools, bad arguments and
exceptions become error observations; state mutated before an exception stays mutated.

A return value is made JSON by the rule of ``envsim.envs.returns`` (pydantic models, dataclasses, Enums, dates);
one with no JSON form is a failed call (``ReturnValueError: ...``) on the state it was given."""

from __future__ import annotations

import json
from typing import Any

from envsim.envs.adapters.codec import to_json_value
from envsim.envs.arguments import argument_error
from envsim.envs.base import Environment, ToolError, json_copy
from envsim.envs.returns import RETURN_ERROR, ReturnValueError
from envsim.records import Action


def error_observation(message: str) -> dict[str, Any]:
    """The failed observation built-in environments return: ``{"success": false, "error": message}``."""
    return {"success": False, "error": message}


def call_tool(env: Environment, action: Action) -> Any:
    """Run ``action`` on ``env`` (mutating it) and return the JSON observation."""
    specs = type(env).tool_specs()
    spec = specs.get(action.name)
    if spec is None:
        return error_observation(f"Unknown tool '{action.name}'. Available tools: {', '.join(specs)}")
    problem = argument_error(spec, action.arguments)
    if problem:
        return error_observation(problem)
    try:
        observation = spec.method(env, **action.arguments)
    except ToolError as exc:
        return error_observation(str(exc))
    except ReturnValueError as exc:  # the tool ran; its answer has no JSON form (a foreign class's proxy)
        return error_observation(f"{RETURN_ERROR}: {exc}")
    except MemoryError:
        raise  # a resource limit, not tool behaviour: the sandbox reports it
    except RecursionError:
        return error_observation("RecursionError: maximum recursion depth exceeded")
    except Exception as exc:  # the true behaviour of a crashing tool: a failed call, state as left
        return error_observation(f"{type(exc).__name__}: {exc}")
    try:
        return json.loads(json.dumps(observation, allow_nan=False))
    except TypeError:  # a model, dataclass, Enum or date somewhere in it: the documented rule
        pass
    except ValueError as exc:
        return error_observation(f"ObservationError: tool returned a non-JSON value ({exc})")
    try:
        return json.loads(json.dumps(to_json_value(observation, strict=False), allow_nan=False))
    except ReturnValueError as exc:
        return error_observation(f"{RETURN_ERROR}: {exc}")
    except (TypeError, ValueError) as exc:
        return error_observation(f"ObservationError: tool returned a non-JSON value ({exc})")


def is_return_error(observation: Any) -> bool:
    """Whether ``observation`` is the failure of a call whose return value has no JSON form."""
    return (isinstance(observation, dict) and observation.get("success") is False
            and str(observation.get("error", "")).startswith(f"{RETURN_ERROR}:"))


def call_in_process(env_class: type[Environment], state: dict[str, Any], action: Action) -> tuple[Any, dict[str, Any]]:
    """Load ``state`` into a fresh instance, run the call, return ``(observation, next_state)``."""
    env = env_class.from_state(state)
    observation = call_tool(env, action)
    if is_return_error(observation):  # a labelled failure: never a state change answered by an error
        return observation, json_copy(state)
    return observation, env.get_state()

"""Execution-trace rationales: a short, faithful account of what the tool's code did, recorded with
Python's tracing hook while the call is re-executed, rendered before the answer JSON in SFT targets.

It lists the source lines the tool and its helpers executed, in order (repeats in loops folded into
``(xN)``), the error the call ended with, if any, and the leaves that changed with their new values.
No model writes it, so it cannot contradict the answer.
"""

from __future__ import annotations

import json
import linecache
import sys
from typing import Any

from envsim.envs.sandbox import call_tool
from envsim.envs.registry import get_env
from envsim.records import Action

MAX_LINES = 30
MAX_CHANGES = 15


def traced_lines(env_id: str, state: dict[str, Any], action: dict[str, Any]) -> tuple[list[tuple[str, int, str]], Any]:
    """Run the call under ``sys.settrace``; return executed ``(function, line, source)`` and the observation."""
    env_class = get_env(env_id)
    module = sys.modules[env_class.__module__]
    files = {getattr(module, "__file__", None)} | {getattr(sys.modules.get(m), "__file__", None)
                                                  for m in ("envsim.envs.validation", "envsim.envs.sampling")}
    files.discard(None)
    executed: list[tuple[str, int, str]] = []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename not in files:
            return None
        if event == "line":
            text = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            if text and not text.startswith(("#", '"""')):
                executed.append((frame.f_code.co_name, frame.f_lineno, text))
        return tracer

    env = env_class.from_state(state)
    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        observation = call_tool(env, Action.from_json(action))
    finally:
        sys.settrace(previous)
    return executed, observation


def _fold(executed: list[tuple[str, int, str]]) -> list[str]:
    counts: dict[tuple[str, int], int] = {}
    order: list[tuple[str, int, str]] = []
    for function, line, text in executed:
        key = (function, line)
        if key not in counts:
            order.append((function, line, text))
        counts[key] = counts.get(key, 0) + 1
    rendered = []
    for function, line, text in order[:MAX_LINES]:
        times = counts[(function, line)]
        rendered.append(f"- [{function}] {text}" + (f"  (x{times})" if times > 1 else ""))
    if len(order) > MAX_LINES:
        rendered.append(f"- ... {len(order) - MAX_LINES} more lines")
    return rendered


def execution_rationale(record: dict[str, Any]) -> str:
    """The rationale text for a benchmark/training record (re-executes its call)."""
    executed, observation = traced_lines(record["env"], record["state"], record["action"])
    call = f"{record['action']['name']}({json.dumps(record['action'].get('arguments', {}), sort_keys=True)})"
    lines = [f"Execution of {call}:"]
    if not executed:
        lines.append(f"- rejected before the code runs: {observation.get('error') if isinstance(observation, dict) else observation}")
    else:
        lines += _fold(executed)
    if isinstance(observation, dict) and observation.get("success") is False and executed:
        lines.append(f"- ends with the error: {observation.get('error')}")
    changes = [op for op in record["patch"]]
    if changes:
        lines.append(f"State changes ({record['delta_size']} leaves):")
        for op in changes[:MAX_CHANGES]:
            value = "" if op["op"] == "remove" else " = " + json.dumps(op.get("value"), sort_keys=True)[:80]
            lines.append(f"- {op['op']} {op['path']}{value}")
        if len(changes) > MAX_CHANGES:
            lines.append(f"- ... {len(changes) - MAX_CHANGES} more operations")
    else:
        lines.append("State changes: none.")
    return "\n".join(lines)

"""Turn executed transitions into benchmark records (DESIGN.md, "Transition record")."""

from __future__ import annotations

import hashlib
from typing import Any, Iterable, Iterator

from envsim.delta import canonical_json
from envsim.envs.base import Environment
from envsim.construction.errors import ToolCodeMissing
from envsim.envs.shown import ToolSourceNotFound, shown_tool_code, tool_code
from envsim.records import Transition

RECORD_FIELDS = ("id", "env", "env_version", "tool", "action", "state", "code", "observation", "next_state",
                 "patch", "delta_size", "outcome", "arg_count", "stratum", "split", "tools")


def sample_id(env_id: str, state: dict[str, Any], action: dict[str, Any]) -> str:
    """Identity of an (environment, state, action) triple: sha256 of their canonical JSON, shortened (a lone
    surrogate, which untrusted states can hold, is hashed as its code point; other text as UTF-8, as always)."""
    text = canonical_json([env_id, state, action])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def record_code(env_class: type[Environment], tool: str) -> str:
    """``code(a_t)`` of a record: the source of what ran for ``tool``. The user's own environments (those whose
    views are verified, ``checks_views``) get everything the call needs (``envsim.envs.shown.code``); built-in,
    BFCL and τ-bench records keep ``envsim.envs.shown.source.tool_code``, so shipped files rebuild byte for byte.

    Only a call of a tool the environment does not have (answered "Unknown tool") gets a comment saying so;
    a tool that ran without findable source raises ``ToolCodeMissing``, naming the tool."""
    try:
        if checks_views(env_class):
            return shown_tool_code(env_class, tool)
        return tool_code(env_class, tool)
    except ToolSourceNotFound as exc:
        raise ToolCodeMissing(f"{env_class.env_id()}: {exc}") from exc
    except KeyError:
        if tool in env_class.tool_specs():
            raise
        return f"# tool {tool!r} does not exist in {env_class.__name__}\n"


def to_record(transition: Transition, env_class: type[Environment], split: str, *, record_id: str | None = None,
              code: str | None = None) -> dict[str, Any]:
    """A benchmark record in the public field order, plus ``changed_paths`` (diagnostics) and, for wrapped
    foreign classes, ``origin`` (the ``module:Class`` the environment came from). ``record_id`` and ``code``,
    when given, are the ``sample_id`` and ``record_code`` the caller already has (``cow_labelling``)."""
    action = transition.action.to_json()
    if code is None:
        code = record_code(env_class, transition.tool)
    record = {
        "id": record_id or sample_id(transition.env, transition.state, action),
        "env": transition.env,
        "env_version": transition.env_version,
        "tool": transition.tool,
        "action": action,
        "state": transition.state,
        "code": code,
        "observation": transition.observation,
        "next_state": transition.next_state,
        "patch": transition.patch,
        "delta_size": transition.delta_size,
        "outcome": transition.outcome,
        "arg_count": transition.arg_count,
        "stratum": transition.stratum,
        "split": split,
        "tools": env_class.tool_schemas(),
        "changed_paths": transition.changed_paths,
    }
    origin = getattr(env_class, "_origin", "")
    if origin:  # wrapped foreign classes only (built-in records keep the v1 field set)
        record["origin"] = origin
    if checks_views(env_class):  # the user's own environments: every view verified (field ``view``)
        from envsim.envs.views.verify import verify_record_view

        verify_record_view(env_class, record)
    return record


def checks_views(env_class: type[Environment]) -> bool:
    """Whether construction verifies the views of this environment's records (``envsim.envs.views.verify``):
    every environment but EnvSim's built-in library and its namespaced tracks (``bfcl/``, ``tau/``), whose
    shipped records stay byte-identical (their views are checked by tests instead)."""
    return not env_class.__module__.startswith("envsim.envs.library") and "/" not in env_class.env_id()


def deduplicate(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Drop records whose (environment, state, action) triple was already seen."""
    seen: set[str] = set()
    for record in records:
        if record["id"] not in seen:
            seen.add(record["id"])
            yield record

"""Interop with the original EnvSimBench sample format (export, import, file detection).

What the original evaluation script (``Evaluation/10.eval_model.py``) reads from one sample, and
what ``to_envsimbench`` writes for it:

* ``env_code`` at the **top level** (the prompt's "Environment code"; the script falls back to a
  top-level ``env``, so an export must not carry one) - ours: the record's ``code``;
* ``step_detail.config_before`` / ``config_after`` - ours: ``state`` / ``next_state``;
* ``step_detail.action`` ``{name, arguments}`` (rendered ``Tool call: name(args)``);
* ``step_detail.observation.content``: the true feedback as a **string**, which the script turns back
  into an object - ours: ``json.dumps`` of the observation (the original's data renders it with
  ``str()``, a Python literal; JSON is what its parser tries first, and it round-trips exactly);
* ``step_detail.config_change.change_count`` (the category; without it every category is ``None``) -
  ours: ``delta_size``, so the script's categories are our strata; ``changes`` lists the original's
  own diff (dotted paths, lists whole) for readers;
* ``task_info`` (``env_id``, ``step``) as the original's construction writes it.

Every field of our record that the original layout has no place for is kept under ``envsim``, so
importing an export gives back the identical record. A sample without an ``envsim`` part (theirs,
e.g. the published ``9.choice_final_combined-167env.json``, a JSON list) is labelled from its two
states. ``read_envsimbench`` reads a JSON list, a single sample, or JSON lines; ``is_envsimbench_file``
tells the loader which format a file is in.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, Iterable

from envsim.construction.labelling import RECORD_FIELDS, sample_id
from envsim.delta import compute_delta
from envsim.records import Action, outcome_of, stratum_of

# Fields of our record that the original layout carries itself (everything else goes under "envsim").
_CARRIED = ("id", "env", "state", "next_state", "action", "observation", "code")
_WRAPPER_KEYS = {"type", "content", "role", "name", "tool_call_id"}
MAX_LITERAL_CHARS = 1_000_000


def render_observation(observation: Any) -> str:
    """The observation as the original's ``observation.content`` string (JSON text, decoded exactly)."""
    return json.dumps(observation, ensure_ascii=False)


def decode_content(content: Any) -> Any:
    """An ``observation.content`` back to a JSON value: JSON text, else a Python literal (how the
    original's data renders tool results), else the string itself."""
    if not isinstance(content, str):
        return content
    try:
        return json.loads(content)
    except (ValueError, RecursionError):
        pass
    text = content.strip()
    if text[:1] in ("{", "[") and len(text) <= MAX_LITERAL_CHARS:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return content
        try:
            return json.loads(json.dumps(value))  # tuples become lists; non-JSON values are refused
        except (TypeError, ValueError, RecursionError):
            return content
    return content


def original_diff(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """The original's ``config_change.changes``: dotted path, ``added|removed|modified``, before, after."""
    from envsim.evaluation.scoring.original_rule import dotted, original_changes

    return [{"path": dotted(c["path"]), "type": c["type"], "before": c["before"], "after": c["after"]}
            for c in original_changes(before, after)]


def to_envsimbench(record: dict[str, Any]) -> dict[str, Any]:
    """One record as an original EnvSimBench sample (plus the lossless ``envsim`` extras)."""
    step = {
        "step": 1,
        "action": record["action"],
        "observation": {"type": "tool", "content": render_observation(record["observation"])},
        "config_before": record["state"],
        "config_after": record["next_state"],
        "config_change": {"changes": original_diff(record["state"], record["next_state"]),
                          "change_count": record["delta_size"]},
    }
    extras = {k: v for k, v in record.items() if k not in _CARRIED}
    return {"id": record["id"], "task_info": {"env_id": record["env"], "step": 1}, "env_code": record["code"],
            "step_detail": step, "envsim": extras}


def _observation_of(step: dict[str, Any]) -> Any:
    observation = step.get("observation")
    if isinstance(observation, dict) and "content" in observation and set(observation) <= _WRAPPER_KEYS:
        return decode_content(observation["content"])
    return observation  # an earlier EnvSim export wrote the object itself


def from_envsimbench(sample: dict[str, Any], split: str = "external") -> dict[str, Any]:
    """A record from an original EnvSimBench sample (the exact inverse of ``to_envsimbench`` for our exports)."""
    if not isinstance(sample, dict) or not isinstance(sample.get("step_detail"), dict):
        raise ValueError("an EnvSimBench sample needs a 'step_detail' object")
    step = sample["step_detail"]
    state, next_state = step.get("config_before"), step.get("config_after")
    if not isinstance(state, dict) or not isinstance(next_state, dict):
        raise ValueError("step_detail needs config_before and config_after objects")
    task_info = sample.get("task_info") if isinstance(sample.get("task_info"), dict) else {}
    env_id = str(task_info.get("env_id") or sample.get("env_name") or "external")
    action = Action.from_json(step.get("action")).to_json()
    code = sample.get("env_code") or step.get("env_code") or ""
    observation = _observation_of(step)
    if isinstance(sample.get("envsim"), dict):
        carried = {"id": sample.get("id"), "env": env_id, "state": state, "next_state": next_state,
                   "action": action, "observation": observation, "code": code}
        merged = {**sample["envsim"], **carried}
        order = [*RECORD_FIELDS, *[k for k in merged if k not in RECORD_FIELDS]]
        return {k: merged[k] for k in order if k in merged}
    delta = compute_delta(state, next_state)
    outcome = outcome_of(observation, delta.size)
    return {
        "id": sample.get("id") or sample_id(env_id, state, action),
        "env": env_id, "env_version": sample.get("env_version", ""), "tool": action["name"], "action": action,
        "state": state, "code": code, "observation": observation, "next_state": next_state, "patch": delta.patch,
        "delta_size": delta.size, "outcome": outcome, "arg_count": len(action["arguments"]),
        "stratum": stratum_of(outcome, delta.size), "split": split, "tools": sample.get("tools", []),
        "changed_paths": list(delta.paths),
    }


def _steps(sample: Any) -> list[dict[str, Any]]:
    """One single-step sample per step: a ``trajectory`` sample is split as the original's loader does."""
    if isinstance(sample, dict) and "step_detail" not in sample and isinstance(sample.get("trajectory"), list):
        return [{**{k: v for k, v in sample.items() if k != "trajectory"}, "step_detail": item}
                for item in sample["trajectory"]]
    return [sample]


def _samples(text: str, source: str) -> list[tuple[str, Any]]:
    """``(where, sample)`` pairs from a JSON list, one JSON object, or JSON lines."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"{source}: not a JSON list ({exc})") from None
        return [(f"{source}[{i}]", item) for i, item in enumerate(data)]
    try:
        return [(source, json.loads(text))]
    except (ValueError, RecursionError):
        pass
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                found.append((f"{source}:{number}", json.loads(line)))
            except (ValueError, RecursionError) as exc:
                raise ValueError(f"{source}:{number}: not a JSON line ({exc})") from None
    return found


def read_envsimbench(path: str | Path, split: str = "external") -> list[dict[str, Any]]:
    """Records from a file of original EnvSimBench samples; a bad sample raises ``ValueError`` naming it."""
    path = Path(path)
    records = []
    for where, sample in _samples(path.read_text(encoding="utf-8"), str(path)):
        for step in _steps(sample):
            try:
                records.append(from_envsimbench(step, split=split))
            except (ValueError, TypeError, KeyError) as exc:
                raise ValueError(f"{where}: {exc}") from None
    return records


def is_envsimbench_file(path: str | Path) -> bool:
    """Whether a file holds original EnvSimBench samples (a JSON list, or objects with ``step_detail``)."""
    with Path(path).open(encoding="utf-8") as handle:
        head = handle.read(4096).lstrip()
        if head.startswith("["):
            return True
        first = (head + handle.readline()).split("\n", 1)[0] if head.startswith("{") else ""
    try:
        sample = json.loads(first)
    except (ValueError, RecursionError):
        return '"step_detail"' in head or '"trajectory"' in head
    return isinstance(sample, dict) and ("step_detail" in sample or "trajectory" in sample)


def write_envsimbench(records: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write records as the original's data file: one JSON list, one sample per line; returns the count.
    Records whose states are stored once (``state_ref``) are written with their whole states."""
    from envsim.construction.stored_states import materialise

    rows = [json.dumps(to_envsimbench(r), ensure_ascii=False, sort_keys=True) for r in materialise(records)]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    from envsim.safe_files import write_text

    write_text(path, "[\n" + ",\n".join(rows) + "\n]\n" if rows else "[]\n")
    return len(rows)

"""The BFCL track: samples from BFCL's multi-turn classes, with their shipped initial configurations.

Two sources, both labelled by executing the real classes (``envsim.envs.adapters.bfcl``):

* **ground truth**: every call of every ``multi_turn_base`` ground-truth trajectory, parsed with
  ``ast`` (never evaluated) into a name and JSON arguments (positional arguments are named from the
  method's signature), sent to the involved class that owns the method (BFCL's own rule: the last
  involved class defining a name wins), each on the state the previous call of that class left;
* **explorer**: the seeded explorer policy acting from the same initial configurations.

The pool (ground truth first, then explorer, deduplicated) loses its *draw-dependent* calls (those that
draw from BFCL's per-call random generator, ``construction.rng_dependence``: their labels cannot follow from
the prompt) and the rest is sampled with ``BFCL_SPEC`` into the track: every record keeps ``origin`` (the BFCL ``module:Class``), ``source`` (``ground_truth`` or
``explorer``) and, for ground truth, ``bfcl_entry`` (``<entry id>#<turn>.<call>``). Everything is
seeded, so a rebuild is byte-identical. All BFCL classes are held out from training data.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from typing import Any, Iterator

from envsim import ast_parse
from envsim.construction.composition import Spec, stratified_sample
from envsim.construction.labelling import deduplicate, to_record
from envsim.construction.rollout import rollout, seeded_rollouts
from envsim.envs.base import Environment
from envsim.records import Action

SPLIT = "test"   # the track is test data: BFCL classes never enter training
DRAW_DEPENDENT = "draw_dependent"   # mark of pool records dropped because their call draws from the generator
#: The track's composition: failures, no-change calls by arity, |Δ| 1 and 2 (each cell rotating over the
#: classes), medium |Δ| spread over 3..6, at most 30 samples per class. BFCL's tools change little per call: the pool holds no |Δ| >= 7 (no difficult cell).
BFCL_SPEC: dict[str, Any] = {
    "name": "bfcl-track",
    "per_env_cap": 30,
    "cells": [
        {"stratum": "failure", "n": 40, "spread": "env"},
        {"stratum": "no_change", "arg_count": 0, "n": 25, "spread": "env"},
        {"stratum": "no_change", "arg_count": 1, "n": 25, "spread": "env"},
        {"stratum": "simple", "delta_size": 1, "n": 30, "spread": "env"},
        {"stratum": "simple", "delta_size": 2, "n": 30, "spread": "env"},
        {"stratum": "medium", "delta_range": [3, 6], "n": 40, "spread": "delta_size"},
    ],
}


class CallParseError(ValueError):
    """A ground-truth call string that is not a plain ``name(arg=literal, ...)`` call."""


def parse_call(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """``"cd(folder='x')"`` -> ``("cd", [], {"folder": "x"})``, by ``ast`` only (literals, never evaluated)."""
    try:
        node = ast_parse.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise CallParseError(f"not a call: {text!r} ({exc.msg})") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise CallParseError(f"not a plain function call: {text!r}")
    try:
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    except ValueError:
        raise CallParseError(f"arguments are not literals: {text!r}") from None
    if any(k.arg is None for k in node.keywords):
        raise CallParseError(f"**kwargs in a call: {text!r}")
    return node.func.id, args, kwargs


def to_action(text: str, env_class: type[Environment]) -> Action:
    """A ground-truth call string as an ``Action`` of ``env_class`` (positional arguments named by signature)."""
    name, args, kwargs = parse_call(text)
    spec = env_class.tool_specs().get(name)
    if args:
        if spec is None:
            raise CallParseError(f"positional arguments for unknown tool {name!r}: {text!r}")
        names = list(spec.signature.parameters)
        if len(args) > len(names):
            raise CallParseError(f"too many positional arguments: {text!r}")
        kwargs = {**dict(zip(names, args)), **kwargs}
    return Action(name, kwargs)


def owners(involved: list[str]) -> dict[str, str]:
    """Tool name -> owning class, BFCL's rule (later involved classes win a shared name)."""
    from envsim.envs.adapters.bfcl import bfcl_env

    mapping: dict[str, str] = {}
    for name in involved:
        for tool in bfcl_env(name).tool_specs():
            mapping[tool] = name
    return mapping


def ground_truth_transitions(category: str = "base") -> Iterator[tuple[type[Environment], Any, str]]:
    """``(class, transition, entry tag)`` for every call of every ground-truth trajectory, in data order."""
    from envsim.envs.adapters.bfcl import bfcl_env, multi_turn_entries

    for entry in multi_turn_entries(category):
        involved = [c for c in entry["involved_classes"]]
        owner = owners(involved)
        states = {name: bfcl_env(name).normalise(entry["initial_config"].get(name, {})) for name in involved}
        for turn, calls in enumerate(entry["ground_truth"]):
            for index, text in enumerate(calls):
                try:
                    name = parse_call(text)[0]
                except CallParseError:
                    continue
                if name not in owner:
                    continue
                cls = bfcl_env(owner[name])
                action = to_action(text, cls)
                transition = next(rollout(cls, states[owner[name]], _Once(action), 1))
                states[owner[name]] = transition.next_state
                yield cls, transition, f"{entry['id']}#{turn}.{index}"


class _Once:
    """A policy that answers one fixed action."""

    def __init__(self, action: Action) -> None:
        self.action = action

    def next_action(self, env_class: type[Environment], state: dict[str, Any]) -> Action:
        return self.action


def ground_truth_records(category: str = "base", split: str = SPLIT) -> list[dict[str, Any]]:
    """Labelled records of the ground-truth calls (deduplicated)."""
    records = []
    for cls, transition, tag in ground_truth_transitions(category):
        record = to_record(transition, cls, split)
        record.update(source="ground_truth", bfcl_entry=tag)
        records.append(record)
    return list(deduplicate(records))


def explorer_records(seed: int = 0, episodes: int = 8, steps: int = 20, split: str = SPLIT) -> list[dict[str, Any]]:
    """Labelled records of seeded explorer episodes from the shipped initial configurations (every class)."""
    from envsim.envs.adapters.bfcl import all_envs

    records = []
    for cls in all_envs():
        env_seed = seed * 1_000_003 + sum(cls.env_id().encode())
        for transition in seeded_rollouts(cls, env_seed, episodes, steps):
            record = to_record(transition, cls, split)
            record["source"] = "explorer"
            records.append(record)
    return list(deduplicate(records))


def build_pool(seed: int = 0, episodes: int = 8, steps: int = 20, category: str = "base",
               split: str = SPLIT) -> list[dict[str, Any]]:
    """Ground-truth records, then explorer records, deduplicated (ground truth wins a shared id)."""
    return list(deduplicate([*ground_truth_records(category, split), *explorer_records(seed, episodes, steps, split)]))


def build_track(seed: int = 0, episodes: int = 8, steps: int = 20, spec: Spec | None = None,
                category: str = "base", split: str = SPLIT) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(track records, pool)``: the pool without draw-dependent calls, sampled with ``BFCL_SPEC``.

    Cells the remaining pool cannot fill stay short. The returned pool is the whole pool, the dropped
    records marked ``"draw_dependent": true`` (copies: no track record carries the mark), so that
    ``pool_summary`` can count them.
    """
    from envsim.construction.rng_dependence import split_draw_dependent

    if split == "train":
        raise ValueError("BFCL classes are held out from training data")
    pool = build_pool(seed, episodes, steps, category, split)
    kept, dropped = split_draw_dependent(pool)
    track = stratified_sample(kept, spec or Spec.from_json(BFCL_SPEC), seed=seed, strict=False)
    marked = {id(r) for r in dropped}
    return track, [{**r, DRAW_DEPENDENT: True} if id(r) in marked else r for r in pool]


def pool_summary(records: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Counts per class and stratum (and per source, and ``draw_dependent`` for dropped calls), for reports."""
    table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for record in records:
        table[record["env"]][record["stratum"]] += 1
        table[record["env"]][record.get("source", "?")] += 1
        if record.get(DRAW_DEPENDENT):
            table[record["env"]][DRAW_DEPENDENT] += 1
    return {env: dict(row) for env, row in sorted(table.items())}

"""The τ-bench track: real agent calls on τ-bench's retail and airline databases, stored once.

* **Replay samples**: every ground-truth call of every *test* task, replayed in order from the initial
  database (each call is one sample; the state is the database after the task's earlier calls).
* **Chained episodes**: each test task is one episode (CM@k over a real agent's call sequence).
* **Explorer samples**: calls of the same tools whose id arguments come from the state (ids that exist,
  and with probability ``INVALID_RATE`` one that does not), on the initial database, stratified by
  ``EXPLORER_SPEC`` per domain.
* **Training pools** (``training_pool``) come from τ-bench's *train* tasks only (retail; airline ships
  none), replayed the same way: never a test task's call.

Records carry ``state_ref`` (the initial database, a content-addressed blob, plus the patch that leads
to the state) and ``tools_ref`` instead of ``state`` / ``next_state`` / ``tools`` (``benchmark.state_store``);
labels come from ``traced_labelling``. Everything is deterministic in the seed: rebuilt byte for byte.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any, Callable, Sequence

from envsim.construction.composition import Spec, stratified_sample
from envsim.construction.traced_labelling import StateDigest, label_traced
from envsim.delta import canonical_json, pointer_parts
from envsim.envs.adapters.tau import DOMAINS, task_actions, tau_env
from envsim.envs.base import Environment
from envsim.envs.shown import tool_code
from envsim.records import Action, Transition

INVALID_RATE = 0.25
EXPLORER_CALLS = 400  # candidates per domain, before stratified sampling
EXPLORER_SPEC = Spec.from_json({"name": "tau-explorer", "cells": [
    {"stratum": "failure", "n": 20}, {"stratum": "no_change", "n": 20}, {"stratum": "simple", "n": 10},
    {"stratum": "medium", "n": 10}, {"stratum": "difficult", "n": 5}]})
MISSING_IDS = {"order_id": "#W0000000", "user_id": "no_such_user_0000", "product_id": "0000000000",
               "item_id": "0000000000", "payment_method_id": "credit_card_0000000", "reservation_id": "ZZZZZZ",
               "email": "nobody@example.com", "flight_number": "HAT000"}


def _sample_id(env_id: str, state_key: str, action: Action, salt: str = "") -> str:
    text = canonical_json([env_id, state_key, action.to_json(), salt])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _state_patch(initial: dict[str, Any], state: dict[str, Any], touched: set[tuple[str, str]]) -> list[dict[str, Any]]:
    """The patch from the initial database to ``state``: whole records replaced where earlier calls wrote."""
    patch = []
    for name, key in sorted(touched):
        path = "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in (name, key))
        if key in state[name] and key in initial[name]:
            patch.append({"op": "replace", "path": path, "value": state[name][key]})
        elif key in state[name]:
            patch.append({"op": "add", "path": path, "value": state[name][key]})
        elif key in initial[name]:
            patch.append({"op": "remove", "path": path})
    return patch


def _record(env_class: type[Environment], transition: Transition, base_ref: str, tools_ref: str,
            state_patch: list[dict[str, Any]], sample_id: str, split: str, source: str) -> dict[str, Any]:
    return {
        "id": sample_id, "env": transition.env, "env_version": transition.env_version, "tool": transition.tool,
        "action": transition.action.to_json(), "state_ref": {"base": base_ref, "patch": state_patch},
        "code": tool_code(env_class, transition.tool), "observation": transition.observation,
        "patch": transition.patch, "delta_size": transition.delta_size, "outcome": transition.outcome,
        "arg_count": transition.arg_count, "stratum": transition.stratum, "split": split,
        "tools_ref": tools_ref, "changed_paths": transition.changed_paths, "origin": "tau_bench", "source": source,
    }


#: ``extra(env_class, state, task_index, step, task_actions)``: more calls to label on a replayed state.
ExtraCalls = Callable[..., list[Action]]


def replay_tasks(domain: str, split: str, base_ref: str, tools_ref: str, record_split: str,
                 extra: ExtraCalls | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Samples and chained episodes from replaying the ground-truth calls of a τ-bench task split; ``extra``
    gives more calls labelled on each replayed state (before the task's call), recorded after the task's own
    with source ``explorer:<split>:<task>``."""
    env_class = tau_env(domain)
    initial = env_class.sample_state(0)
    initial_digest = StateDigest.of(initial)
    records: list[dict[str, Any]] = []
    episodes: list[dict[str, Any]] = []
    for task_index, actions in enumerate(task_actions(domain, split)):
        state, digest, touched = initial, initial_digest, set()
        steps = []
        for step, action in enumerate(actions):
            state_patch = _state_patch(initial, state, touched)
            transition, next_digest = label_traced(env_class, state, action, digest=digest)
            sample_id = _sample_id(env_class.env_id(), digest.hexdigest(), action, f"{split}/{task_index}/{step}")
            record = _record(env_class, transition, base_ref, tools_ref, state_patch, sample_id, record_split,
                             f"task:{split}:{task_index}")
            record.update(task=task_index, step=step)
            records.append(record)
            for number, call in enumerate(extra(env_class, state, task_index, step, actions) if extra else []):
                labelled, _ = label_traced(env_class, state, call, digest=digest)
                call_id = _sample_id(env_class.env_id(), digest.hexdigest(), call,
                                     f"{split}/{task_index}/{step}/explorer/{number}")
                explored = _record(env_class, labelled, base_ref, tools_ref, state_patch, call_id, record_split,
                                   f"explorer:{split}:{task_index}")
                explored.update(task=task_index, step=step)
                records.append(explored)
            steps.append({k: record[k] for k in ("action", "arg_count", "code", "delta_size", "observation",
                                                 "outcome", "patch", "stratum", "tool")} | {"index": step})
            touched |= {tuple(pointer_parts(p)[:2]) for p in transition.changed_paths if p.count("/") >= 2}
            state, digest = transition.next_state, next_digest
        if steps:
            episode_state = _state_patch(initial, initial, set())
            episodes.append({
                "id": _sample_id(env_class.env_id(), initial_digest.hexdigest(), Action("episode", {}),
                                 f"{split}/{task_index}"),
                "env": env_class.env_id(), "env_version": records[-1]["env_version"],
                "length": len(steps), "changing_steps": sum(s["delta_size"] > 0 for s in steps),
                "total_delta_size": sum(s["delta_size"] for s in steps), "split": record_split,
                "state_ref": {"base": base_ref, "patch": episode_state}, "steps": steps, "tools_ref": tools_ref,
                "task": task_index, "origin": "tau_bench"})
    return records, episodes


class StateArguments:
    """Argument values drawn from a τ-bench database: ids that exist (coherent: an order, its user, its items)."""

    def __init__(self, state: dict[str, Any], rng: random.Random) -> None:
        self.state, self.rng = state, rng

    def fill(self, action: Action) -> Action:
        """``action`` with its id arguments replaced by values from the state (one missing id at ``INVALID_RATE``)."""
        args = dict(action.arguments)
        pick = self.rng.choice
        state = self.state
        users = state.get("users", {})
        user_id = pick(sorted(users))
        user = users[user_id]
        if "orders" in state:
            order_id = pick(sorted(state["orders"]))
            order = state["orders"][order_id]
            user_id, user = order["user_id"], users.get(order["user_id"], user)
            items = [i["item_id"] for i in order.get("items", [])] or ["0"]
            product_id = pick(sorted(state["products"]))
            variants = sorted(state["products"][product_id].get("variants", {})) or ["0"]
            values = {"order_id": order_id, "user_id": user_id, "product_id": product_id,
                      "item_ids": self.rng.sample(items, min(len(items), max(1, len(args.get("item_ids", [1]))))),
                      "email": user.get("email"), "first_name": user.get("name", {}).get("first_name"),
                      "last_name": user.get("name", {}).get("last_name"), "zip": user.get("address", {}).get("zip")}
            values["new_item_ids"] = [pick(variants) for _ in values["item_ids"]]
        else:
            reservation_id = pick(sorted(user.get("reservations") or state["reservations"]))
            values = {"user_id": user_id, "reservation_id": reservation_id}
        methods = sorted(user.get("payment_methods", {}))
        if methods:
            values["payment_method_id"] = pick(methods)
        for name in list(args):
            if name in values and values[name] is not None:
                args[name] = values[name]
        spoil = [n for n in args if n in MISSING_IDS or n == "item_ids"]
        if spoil and self.rng.random() < INVALID_RATE:
            name = pick(spoil)
            args[name] = [MISSING_IDS["item_id"]] if name == "item_ids" else MISSING_IDS[name]
        return Action(action.name, args)


def explore(domain: str, seed: int, base_ref: str, tools_ref: str, record_split: str,
            calls: int = EXPLORER_CALLS) -> list[dict[str, Any]]:
    """Explorer candidates on the initial database: test-task call shapes with state-drawn argument values."""
    env_class = tau_env(domain)
    initial = env_class.sample_state(0)
    digest = StateDigest.of(initial)
    templates = [a for actions in task_actions(domain, "test") for a in actions]
    rng = random.Random(f"tau-explorer/{domain}/{seed}")
    arguments = StateArguments(initial, rng)
    records, seen = [], set()
    for _ in range(calls):
        action = arguments.fill(rng.choice(templates))
        sample_id = _sample_id(env_class.env_id(), digest.hexdigest(), action, "explorer")
        if sample_id in seen:
            continue
        seen.add(sample_id)
        transition, _ = label_traced(env_class, initial, action, digest=digest)
        records.append(_record(env_class, transition, base_ref, tools_ref, [], sample_id, record_split, "explorer"))
    return records


def build_track(folder: Path, seed: int = 0, domains: Sequence[str] = DOMAINS) -> dict[str, list[dict[str, Any]]]:
    """The track's records: ``{"tau": samples, "tau_chained": episodes}``; blobs written under ``folder``."""
    from envsim.benchmark.state_store import write_blob

    samples: list[dict[str, Any]] = []
    episodes: list[dict[str, Any]] = []
    for domain in domains:
        env_class = tau_env(domain)
        base_ref = write_blob(env_class.sample_state(0), folder)
        tools_ref = write_blob(env_class.tool_schemas(), folder)
        replayed, chains = replay_tasks(domain, "test", base_ref, tools_ref, "test")
        explored = explore(domain, seed, base_ref, tools_ref, "test")
        replay_ids = {r["id"] for r in replayed}
        explored = [r for r in explored if r["id"] not in replay_ids]
        samples += replayed + stratified_sample(explored, EXPLORER_SPEC, seed=seed, strict=False)
        episodes += chains
    return {"tau": samples, "tau_chained": episodes}


def test_call_keys(domains: Sequence[str] = DOMAINS) -> set[str]:
    """Identity (environment, tool, arguments) of every call of τ-bench's test tasks."""
    return {canonical_json([tau_env(d).env_id(), a.to_json()]) for d in domains
            for actions in task_actions(d, "test") for a in actions}


def training_pool(folder: Path, domains: Sequence[str] = DOMAINS, split: str = "train",
                  extra: ExtraCalls | None = None) -> list[dict[str, Any]]:
    """Training samples from τ-bench's train (or dev) tasks (and ``extra`` calls on their states, see
    ``replay_tasks``). A call identical to a test task's call (retail's train tasks repeat 12 of them) is
    dropped: no test task's call reaches a training file."""
    from envsim.benchmark.state_store import write_blob

    held_out = test_call_keys(domains)
    records: list[dict[str, Any]] = []
    for domain in domains:
        env_class = tau_env(domain)
        base_ref = write_blob(env_class.sample_state(0), folder)
        tools_ref = write_blob(env_class.tool_schemas(), folder)
        records += [r for r in replay_tasks(domain, split, base_ref, tools_ref, "train", extra)[0]
                    if canonical_json([r["env"], r["action"]]) not in held_out]
    return records


def track_stats(samples: Sequence[dict[str, Any]], episodes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts of the track per domain, source (task replay / explorer) and stratum, and of its episodes."""
    stats: dict[str, Any] = {"samples": len(samples), "episodes": len(episodes), "by_domain": {}}
    for record in samples:
        domain = stats["by_domain"].setdefault(record["env"], {"samples": 0, "task": {}, "explorer": {}, "episodes": 0})
        domain["samples"] += 1
        source = domain["task" if record["source"].startswith("task") else "explorer"]
        source[record["stratum"]] = source.get(record["stratum"], 0) + 1
    for episode in episodes:
        stats["by_domain"].setdefault(episode["env"], {"samples": 0, "task": {}, "explorer": {}, "episodes": 0})
        stats["by_domain"][episode["env"]]["episodes"] += 1
    return stats


def write_track(out: Path, seed: int = 0) -> dict[str, Any]:
    """Write ``<out>`` (samples), ``<stem>_chained.jsonl`` (episodes), ``tau_states/`` (blobs) and ``<stem>.stats.json``."""
    import json

    from envsim.construction.pipeline import write_jsonl

    folder = out.parent / "tau_states"
    built = build_track(folder, seed=seed)
    write_jsonl(built["tau"], out)
    write_jsonl(built["tau_chained"], out.with_name(f"{out.stem}_chained.jsonl"))
    stats = track_stats(built["tau"], built["tau_chained"])
    stats["seed"] = seed
    from envsim.safe_files import write_json

    write_json(out.with_name(f"{out.stem}.stats.json"), stats, sort_keys=True)
    return stats

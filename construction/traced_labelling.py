"""Labelling at the speed of the call: Δ on the records a call touched, not on the whole database.

A large state is a JSON object of *collections* (``{"orders": {"#W1": {...}, ...}, "users": {...}}``).
The call runs on a copy-on-read view of the state: each collection is a shallow copy whose records are
deep-copied the first time the tool takes one by key (``orders[oid]``, ``orders.get(oid)``), and whose
key-level writes (``reservations[rid] = {...}``, ``del``, ``pop``) are recorded. The untouched records are
shared with the input state, which is never mutated. Δ is ``compute_delta`` on each touched record (paths
prefixed with ``/<collection>/<key>``), so applying the patch to the full state gives the full next state.

Collections the tool iterates (``users.items()``) hand out the original records; afterwards their records
are re-hashed and compared with the digests of the input state, so a write the tracing missed raises
instead of going unlabelled. The determinism check runs the call a second time and compares the
observation and the whole-state digest (``StateDigest``: a hash of per-record sha256s, updated only for
touched records).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from envsim.delta import canonical_json, compute_delta, pointer, strictly_equal
from envsim.envs.base import Environment, json_copy
from envsim.envs.sandbox import NondeterminismError, call_tool, check_json_state
from envsim.envs.shown import env_version
from envsim.records import Action, Transition

_ABSENT = object()


def _sha(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


class TracingError(RuntimeError):
    """A call changed the state in a way the write tracing did not see (the input state was mutated)."""


class RecordingCollection(dict):
    """A shallow copy of one collection: records are deep-copied on first access by key; key writes are recorded."""

    def __init__(self, original: Mapping[str, Any]) -> None:
        super().__init__(original)
        self.touched: set[str] = set()
        self.iterated = False

    def _take(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        if key not in self.touched:
            self.touched.add(key)
            if isinstance(value, (dict, list)):
                value = json_copy(value)
                dict.__setitem__(self, key, value)
        return value

    def __getitem__(self, key: Any) -> Any:
        return self._take(key)

    def get(self, key: Any, default: Any = None) -> Any:
        """``dict.get``, copying the record on first access."""
        return self._take(key) if dict.__contains__(self, key) else default

    def setdefault(self, key: Any, default: Any = None) -> Any:
        """``dict.setdefault``, recorded as a write."""
        if dict.__contains__(self, key):
            return self._take(key)
        self.touched.add(key)
        dict.__setitem__(self, key, default)
        return default

    def __setitem__(self, key: Any, value: Any) -> None:
        self.touched.add(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        self.touched.add(key)
        dict.__delitem__(self, key)

    def pop(self, key: Any, *default: Any) -> Any:
        """``dict.pop``, recorded as a write."""
        self.touched.add(key)
        return dict.pop(self, key, *default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        """``dict.update``, every key recorded as a write."""
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def popitem(self) -> tuple[Any, Any]:
        """``dict.popitem``, recorded as a write."""
        key, value = dict.popitem(self)
        self.touched.add(key)
        return key, value

    def clear(self) -> None:
        """``dict.clear``: every key recorded as a write."""
        self.touched.update(dict.keys(self))
        dict.clear(self)

    def items(self):  # type: ignore[override]
        """Items (original records: the collection is re-hashed after the call)."""
        self.iterated = True
        return dict.items(self)

    def values(self):  # type: ignore[override]
        """Values (original records: the collection is re-hashed after the call)."""
        self.iterated = True
        return dict.values(self)

    def __iter__(self) -> Iterator[Any]:
        self.iterated = True
        return dict.__iter__(self)


@dataclass(frozen=True)
class StateDigest:
    """Per-record sha256s of a state of collections (other top-level values hashed whole) and the whole-state hash."""

    parts: Mapping[str, Any]  # collection -> {key: sha} | top-level key -> sha

    @classmethod
    def of(cls, state: Mapping[str, Any]) -> "StateDigest":
        """Hash every record of ``state`` (once per state; later states are ``updated``)."""
        return cls({name: ({k: _sha(v) for k, v in value.items()} if isinstance(value, dict) else _sha(value))
                    for name, value in state.items()})

    def hexdigest(self) -> str:
        """The whole-state hash: sha256 over (collection, key, record sha) lines in sorted order."""
        h = hashlib.sha256()
        for name in sorted(self.parts):
            part = self.parts[name]
            if isinstance(part, dict):
                h.update(json.dumps(name).encode() + b"{")
                for key in sorted(part):
                    h.update(json.dumps(key).encode() + b":" + part[key].encode() + b",")
                h.update(b"}")
            else:
                h.update(json.dumps(name).encode() + b"=" + part.encode() + b",")
        return h.hexdigest()

    def updated(self, next_state: Mapping[str, Any], touched: Mapping[str, set[str] | None]) -> "StateDigest":
        """The digest of ``next_state``, re-hashing only the touched records (``None``: the whole top-level value)."""
        parts = dict(self.parts)
        for name, keys in touched.items():
            value = next_state.get(name, _ABSENT)
            if value is _ABSENT:
                parts.pop(name, None)
            elif keys is None or not isinstance(parts.get(name), dict) or not isinstance(value, dict):
                parts[name] = ({k: _sha(v) for k, v in value.items()} if isinstance(value, dict) else _sha(value))
            else:
                records = dict(parts[name])
                for key in keys:
                    if key in value:
                        records[key] = _sha(value[key])
                    else:
                        records.pop(key, None)
                parts[name] = records
        return StateDigest(parts)


@dataclass
class TracedCall:
    """One traced execution: observation, next state (sharing untouched records), touched keys, Δ."""

    observation: Any
    next_state: dict[str, Any]
    touched: dict[str, set[str] | None]
    patch: list[dict[str, Any]]
    paths: list[str]
    size: int


def _prefixed(op: dict[str, Any], prefix: str) -> dict[str, Any]:
    op = dict(op)
    for field in ("path", "from"):
        if field in op:
            op[field] = prefix + op[field]
    return op


def run_traced(env_class: type[Environment], state: Mapping[str, Any], action: Action,
               digest: StateDigest | None = None) -> TracedCall:
    """Run ``action`` on a copy-on-read view of ``state`` (never mutated) and compute Δ on the touched records.

    ``digest`` (of ``state``) lets collections the tool iterated be checked for untraced writes.
    """
    env = env_class.__new__(env_class)
    views: dict[str, Any] = {}
    for name, value in state.items():
        views[name] = RecordingCollection(value) if isinstance(value, dict) else json_copy(value)
        setattr(env, name, views[name])
    observation = json_copy(call_tool(env, action))
    after = {k: v for k, v in vars(env).items() if not k.startswith("_")}
    next_state: dict[str, Any] = {}
    touched: dict[str, set[str] | None] = {}
    patch: list[dict[str, Any]] = []
    paths: list[str] = []
    size = 0
    for name in list(state) + [k for k in after if k not in state]:
        old, new = state.get(name, _ABSENT), after.get(name, _ABSENT)
        view = views.get(name)
        if new is not _ABSENT:
            next_state[name] = dict(dict.items(new)) if isinstance(new, RecordingCollection) else new  # no per-key copying
        if isinstance(view, RecordingCollection) and new is view:
            if view.iterated and digest is not None and isinstance(digest.parts.get(name), dict):
                stale = [k for k, sha in digest.parts[name].items() if k not in view.touched and k in old
                         and _sha(dict.__getitem__(old, k)) != sha]
                if stale:
                    raise TracingError(f"{env_class.env_id()}.{action.name} changed {name}/{stale[0]} through iteration")
            changed = set()
            for key in sorted(view.touched, key=str):
                before, now = old.get(key, _ABSENT), dict.get(view, key, _ABSENT)
                if before is _ABSENT and now is _ABSENT:
                    continue
                prefix = pointer([name, key])
                if before is _ABSENT:
                    patch.append({"op": "add", "path": prefix, "value": json_copy(now)})
                    paths.append(prefix)
                    size += 1
                elif now is _ABSENT:
                    patch.append({"op": "remove", "path": prefix})
                    paths.append(prefix)
                    size += 1
                elif not strictly_equal(before, now):
                    delta = compute_delta(before, now)
                    patch += [_prefixed(op, prefix) for op in delta.patch]
                    paths += [prefix + p for p in delta.paths]
                    size += delta.size
                else:
                    continue
                changed.add(key)
            for key in changed:  # changed records in canonical key order, as the executor leaves every state
                if dict.__contains__(view, key):
                    next_state[name][key] = json.loads(canonical_json(dict.__getitem__(view, key)))
            touched[name] = changed
            continue
        if new is _ABSENT or old is _ABSENT or not strictly_equal(old, new):  # a top-level key added/removed/replaced
            touched[name] = None
            if old is _ABSENT:
                patch.append({"op": "add", "path": pointer([name]), "value": json_copy(new)})
                paths.append(pointer([name]))
                size += 1
            elif new is _ABSENT:
                patch.append({"op": "remove", "path": pointer([name])})
                paths.append(pointer([name]))
                size += 1
            else:
                delta = compute_delta(old, json_copy(dict(dict.items(new)) if isinstance(new, dict) else new))
                patch += [_prefixed(op, pointer([name])) for op in delta.patch]
                paths += [pointer([name]) + p for p in delta.paths]
                size += delta.size
    return TracedCall(observation, next_state, touched, patch, paths, size)


def label_traced(env_class: type[Environment], state: Mapping[str, Any], action: Action | Mapping[str, Any], *,
                 check_determinism: bool = True, digest: StateDigest | None = None,
                 check_state: bool = False) -> tuple[Transition, StateDigest]:
    """Label one call on a large state; returns the transition and the digest of its next state.

    ``digest`` is ``StateDigest.of(state)`` when omitted (pass the previous call's to chain calls cheaply).
    With ``check_determinism`` the call runs twice and both runs must agree on the observation and the
    whole-state digest. ``check_state`` validates that ``state`` is plain JSON first (a full walk).
    """
    action = Action.from_json(action)
    if check_state:
        check_json_state(dict(state))
    digest = digest or StateDigest.of(state)
    first = run_traced(env_class, state, action, digest)
    next_digest = digest.updated(first.next_state, first.touched)
    if check_determinism:
        second = run_traced(env_class, state, action, digest)
        again = digest.updated(second.next_state, second.touched)
        if (canonical_json(second.observation) != canonical_json(first.observation)
                or again.hexdigest() != next_digest.hexdigest()):
            raise NondeterminismError(f"{env_class.env_id()}.{action.name} is not deterministic on this state")
    transition = Transition(
        env=env_class.env_id(), env_version=env_version(env_class), action=action, state=dict(state),
        observation=first.observation, next_state=first.next_state, patch=first.patch, delta_size=first.size,
        changed_paths=first.paths, arg_count=len(action.arguments) if isinstance(action.arguments, dict) else 0)
    return transition, next_digest

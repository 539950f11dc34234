"""Labelling a user's environment at the speed of the call: copy-on-write states, no whole-state JSON round trip.

The executor (``envs.sandbox.executor.execute``) labels a call by encoding the whole state to canonical JSON, decoding a
fresh copy, loading it into an instance (a foreign class: deep copies and its codec), encoding and decoding the
next state and diffing the two whole states: about a second per call on a megabyte state before the tool has
done anything. ``EpisodeLabeller`` labels the calls of one episode (explorer rollouts, replayed logs) on an
evolving state instead:

* **copy-on-write run**: the instance gets each top-level dictionary as a ``RecordingCollection``
  (``traced_labelling``): a shallow copy whose records are deep-copied when the tool takes one by key; other
  top-level values are copied. A class wrapped with ``attrs`` loading (``wrap_target``: a class of one's own
  that is not an ``Environment``) gets the same, through its codec;
* **the next state shares every record the call left as it was** with the state before it. Each top-level
  dictionary the instance holds after the call (the same recording copy: the records it took by key, or a new
  one: a wrapper that writes its whole dump back) is compared with the state record by record, exactly (``1``,
  ``1.0`` and ``true`` apart): a record whose ``marshal`` bytes (type-exact, at C speed) are those of a version
  already found equal to the state's record is unchanged; any other is compared as canonical JSON text with
  the state's record's kept text. Only the records that differ are encoded;
* **Δ** is ``compute_delta`` on the differing records alone: the pair ``prune_equal`` reduces the whole states to,
  so patches, paths and |Δ| are the executor's;
* **record ids** are the executor path's (``labelling.sample_id``: sha256 of the canonical JSON of environment,
  state and action), assembled from per-record canonical texts kept across the episode;
* **a guard against writes nobody traced**: the state's records are shared with the instance (a tool may
  reach them by iterating a collection, or at C level: pydantic validating a dump). After each call the
  state is compared with a private copy kept for the episode; a call that changed a shared record has the
  records restored in place and is labelled by the executor instead (counted in ``fallbacks``), as is any call
  the tracing cannot follow (a non-JSON value, a state over the executor's size bound: the executor then says
  why). Classes whose state is not their public attributes (a custom ``load_state``, ``_load_scenario``
  loading, a codec subclass, a sandboxed class) are labelled by the executor throughout.

Nothing is run twice: like the executor's default, no determinism check (``envsim envs check`` does that).
Python's cycle collector is paused while a call is labelled: a wrapper that validates and dumps a whole
object-model database allocates a million objects a call, and each collection they trigger would walk the
episode's states (for the fixture shop this tripled the tool's own time). Cycles made meanwhile (a raised
exception's traceback) are collected once it resumes.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import hashlib
import json
import marshal
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Iterable, Iterator, Mapping

from envsim.construction.traced_labelling import RecordingCollection
from envsim.delta import DeltaTooLarge, canonical_json, compute_delta, strictly_equal
from envsim.envs.base import Environment, StateError, json_copy
from envsim.envs.sandbox import call_tool, is_return_error
from envsim.envs.sandbox.executor import MAX_STATE_VALUES, _check_observation_size, check_json_state, check_size, execute
from envsim.envs.shown import env_version
from envsim.records import Action, Transition

_ABSENT = object()


class _Untraceable(Exception):
    """The traced run cannot label this call exactly: the executor labels it."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def traceable(env_class: type[Environment]) -> bool:
    """Whether ``env_class``'s state is its instances' public attributes, loaded as given (the copy-on-write run
    applies): an ``Environment`` with the base class's loading, or a foreign class wrapped with ``attrs`` loading
    and the default codec."""
    from envsim.envs.adapters.codec import StateCodec
    from envsim.envs.adapters.foreign import ForeignEnvironment

    if issubclass(env_class, ForeignEnvironment):
        base: type = ForeignEnvironment
        if env_class._loader != "attrs" or type(env_class._state_codec()) is not StateCodec:
            return False
    else:
        base = Environment
    return all(_defined(env_class, name) is _defined(base, name) for name in
               ("load_state", "get_state", "run_call", "from_state"))


def _defined(klass: type, name: str) -> Any:
    """The object ``name`` resolves to on ``klass`` (the class dictionary entry, not a bound method)."""
    return next((vars(k)[name] for k in klass.__mro__ if name in vars(k)), None)


def labels_traced(env_class: type[Environment]) -> bool:
    """Whether construction labels ``env_class`` with ``EpisodeLabeller``: the user's own environments (not the
    built-in library nor a namespaced track, whose shipped files come from the executor) whose state is traceable."""
    from envsim.construction.labelling import checks_views

    return checks_views(env_class) and traceable(env_class)


@dataclass
class LabelledCall:
    """One labelled call: the transition (its ``state`` and ``next_state`` share unchanged records) and its id."""

    transition: Transition
    record_id: str
    traced: bool


class _Texts:
    """Canonical JSON text of a state, kept per record: only records that change are encoded again."""

    def __init__(self, state: Mapping[str, Any] | None = None) -> None:
        self.parts: dict[str, dict[str, str] | str] = {}   # name -> {key: record text} | the value's text
        self.keys: dict[str, dict[str, str]] = {}          # name -> {key: the key's JSON text}
        self.joined: dict[str, str] = {}
        self.joined_bytes: dict[str, bytes] = {}
        # sha256 after ``head`` and each leading top-level value: (name, its bytes, the digest so far); a call that
        # changes one value hashes again from that value on
        self._head = b""
        self._chain: list[tuple[str, bytes, Any]] = []
        for name, value in (state or {}).items():
            self.set_value(name, value)

    def copy(self) -> "_Texts":
        """An independent copy (the texts themselves are shared: strings do not change)."""
        clone = _Texts()
        clone.parts = {k: dict(v) if isinstance(v, dict) else v for k, v in self.parts.items()}
        clone.keys = {k: dict(v) for k, v in self.keys.items()}
        clone.joined, clone.joined_bytes = dict(self.joined), dict(self.joined_bytes)
        clone._head, clone._chain = self._head, list(self._chain)  # digests are copied before any update
        return clone

    def set_value(self, name: str, value: Any) -> None:
        """Encode top-level value ``name`` whole."""
        if isinstance(value, dict):
            self.parts[name] = {k: canonical_json(v) for k, v in value.items()}
            self.keys[name] = {k: _dumps(k) for k in value}
        else:
            self.parts[name] = canonical_json(value)
            self.keys.pop(name, None)
        self.joined.pop(name, None)
        self.joined_bytes.pop(name, None)

    def set_record(self, name: str, key: str, value: Any) -> None:
        """Encode record ``key`` of collection ``name`` (``_ABSENT``: removed)."""
        records = self.parts[name]
        assert isinstance(records, dict)
        if value is _ABSENT:
            records.pop(key, None)
            self.keys[name].pop(key, None)
        else:
            records[key] = canonical_json(value)
            self.keys[name][key] = _dumps(key)
        self.joined.pop(name, None)
        self.joined_bytes.pop(name, None)

    def record(self, name: str, key: str | None) -> str | None:
        """The text of record ``key`` of ``name`` (``None``: of the value ``name``), if known."""
        part = self.parts.get(name)
        if key is None:
            return part if isinstance(part, str) else None
        return part.get(key) if isinstance(part, dict) else None

    def drop(self, name: str) -> None:
        """Forget top-level key ``name``."""
        self.parts.pop(name, None)
        self.keys.pop(name, None)
        self.joined.pop(name, None)
        self.joined_bytes.pop(name, None)

    def text(self, name: str) -> str:
        """The canonical text of top-level value ``name``."""
        found = self.joined.get(name)
        if found is None:
            part = self.parts[name]
            if isinstance(part, str):
                found = part
            else:
                keys = self.keys[name]
                found = "{" + ",".join([keys[k] + ":" + part[k] for k in sorted(part)]) + "}"
            self.joined[name] = found
        return found

    def encoded(self, name: str) -> bytes:
        """``text(name)`` as UTF-8 (lone surrogates kept, as ``labelling.sample_id`` encodes them), kept."""
        found = self.joined_bytes.get(name)
        if found is None:
            found = self.text(name).encode("utf-8", "surrogatepass")
            self.joined_bytes[name] = found
        return found

    def digest(self, head: bytes) -> Any:
        """A ``hashlib.sha256`` fed ``head`` then ``canonical_json(state)`` encoded as UTF-8, piece by piece; the
        digests of the leading values unchanged since the last call are reused."""
        names = sorted(self.parts)
        chain = self._chain if self._head == head else []
        kept = 0
        while kept < len(chain) and kept < len(names) and chain[kept][0] == names[kept] and \
                chain[kept][1] is self.encoded(names[kept]):
            kept += 1
        del chain[kept:]
        digest = chain[-1][2].copy() if chain else hashlib.sha256(head + b"{")
        for index in range(kept, len(names)):
            name, encoded = names[index], self.encoded(names[index])
            digest.update((("," if index else "") + _dumps(name) + ":").encode("utf-8", "surrogatepass"))
            digest.update(encoded)
            chain.append((name, encoded, digest.copy()))
        self._head, self._chain = head, chain
        digest.update(b"}")
        return digest


def record_id(env_id: str, texts: _Texts, action: Mapping[str, Any]) -> str:
    """``labelling.sample_id(env_id, state, action)`` from the state's kept canonical texts."""
    digest = texts.digest(f"[{_dumps(env_id)},".encode("utf-8", "surrogatepass"))
    digest.update(f",{canonical_json(action)}]".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:20]


class EpisodeLabeller:
    """Labels the calls of one episode of ``env_class`` from ``state`` (see the module docstring)."""

    def __init__(self, env_class: type[Environment], state: Mapping[str, Any], *, text: str | None = None) -> None:
        check_json_state(dict(state))
        text = canonical_json(state) if text is None else text
        check_size(state, "state", text)
        self.env_class = env_class
        self.env_id = env_class.env_id()
        self.version = env_version(env_class)
        self.tracing = traceable(env_class)
        self.state: dict[str, Any] = json.loads(text)           # canonical, as the executor leaves every state
        # the guard's reference, never handed out: its containers are copies, its strings and numbers the state's
        # own (immutable, and compared by identity first: the comparison after each call walks containers only)
        self._pristine = copy.deepcopy(self.state) if self.tracing else None
        self._texts = _Texts(self.state)
        self._exact: dict[str, dict[Any, bytes]] = {}    # name -> key -> marshal bytes known to equal a record exactly
        self._pending: dict[tuple[str, Any], bytes] = {}   # this call's, kept once it is labelled
        self._produced: dict[str, bytes] = {}              # the bytes of one dumped dictionary's records
        self._base: EpisodeLabeller | None = None          # the labeller this one was forked from (its start)
        # name -> (keys, marshal bytes) of the last dump of that dictionary, exactly the state's records once
        # the call is labelled (compared as two lists at C speed: a dump like the last one changed nothing)
        self._last_dumps: dict[str, tuple[list[str], list[bytes]]] = {}
        self.calls = 0
        self.fallbacks = 0

    # public ------------------------------------------------------------------------------------
    def fork(self) -> "EpisodeLabeller":
        """A labeller at this one's current state, with its own copies of what it knows (episodes from one
        starting state share its decoding, encoding and the guard's copy)."""
        clone = object.__new__(EpisodeLabeller)
        clone.__dict__.update(self.__dict__)
        clone.state = dict(self.state)
        if self._pristine is not None:
            clone._pristine = {k: dict(v) if isinstance(v, dict) else v for k, v in self._pristine.items()}
        clone._texts = self._texts.copy()
        clone._exact, clone._pending, clone._produced = {k: dict(v) for k, v in self._exact.items()}, {}, {}
        clone._base, clone._last_dumps = self, dict(self._last_dumps)
        clone.calls = clone.fallbacks = 0
        return clone

    def label(self, action: Action | Mapping[str, Any]) -> LabelledCall:
        """Label ``action`` on the current state and move the episode to its next state."""
        action = Action.from_json(action)
        state = self.state
        collecting = gc.isenabled()
        gc.disable()  # see the module docstring: no cycle collection walks the state while a call allocates
        try:
            identity = record_id(self.env_id, self._texts, action.to_json())
            self.calls += 1
            traced = False
            if self.tracing:
                try:
                    transition = self._traced(state, action)
                    traced = True
                except _Untraceable:
                    transition = None
            if not traced:
                self.fallbacks += self.tracing
                transition = self._executed(state, action)
        finally:
            if collecting:
                gc.enable()
        assert transition is not None
        self.state = transition.next_state
        return LabelledCall(transition, identity, traced)

    # the traced run ----------------------------------------------------------------------------
    def _traced(self, state: dict[str, Any], action: Action) -> Transition:
        from envsim.envs.adapters.foreign import ForeignEnvironment

        env_class = self.env_class
        foreign = issubclass(env_class, ForeignEnvironment)
        given: dict[str, Any] = {}
        if foreign:
            codec = env_class._state_codec()
            inner = env_class._foreign.__new__(env_class._foreign)
            hidden = {key: attribute for attribute, key in codec.hidden.items()}
            with env_class._guard():
                for name, value in state.items():
                    if name in codec.sets or name in codec.int_keys:
                        given[name] = codec.restore(name, json_copy(value))
                    else:
                        given[name] = RecordingCollection(value) if isinstance(value, dict) else json_copy(value)
                    setattr(inner, name, given[name])
                    if name in hidden:
                        setattr(inner, hidden[name], json_copy(value))
            env = env_class.__new__(env_class)
            env._inner = inner
        else:
            codec = None
            env = env_class.__new__(env_class)
            inner = env
            for name, value in state.items():
                if name.startswith("_"):
                    raise _Untraceable(name)
                given[name] = RecordingCollection(value) if isinstance(value, dict) else json_copy(value)
                setattr(env, name, given[name])
        self._pending = {}
        try:
            observation = call_tool(env, action)
            if is_return_error(observation):  # labelled by the executor: a failure on the given state
                raise _Untraceable("return value has no JSON form")
            after = self._attributes(inner, codec)
            changes = self._changes(state, after)
        except (StateError, TypeError, ValueError, RecursionError) as exc:
            raise _Untraceable(str(exc)) from None
        finally:
            if self._mutated(state):   # a shared record written through a path nobody traced
                self._restore(state)
                raise _Untraceable("shared record written")  # noqa: B012 - the executor labels the call instead
        _check_observation_size(observation)
        next_state, old_part, new_part = self._apply(state, changes)
        base = self._base
        for (name, key), produced in self._pending.items():  # this call's values: exactly the next state's records
            self._exact.setdefault(name, {})[key] = produced
            started, now = (base.state.get(name) if base is not None else None), next_state.get(name)
            if key is not None and isinstance(started, dict) and isinstance(now, dict) and \
                    started.get(key, _ABSENT) is now.get(key):
                assert base is not None
                base._exact.setdefault(name, {})[key] = produced  # the episode's start's record: later forks know it
        try:
            delta = compute_delta(old_part, new_part)
        except DeltaTooLarge as exc:
            raise StateError(f"{self.env_id}.{action.name}: {exc}") from None
        return Transition(env=self.env_id, env_version=self.version, action=action, state=state,
                          observation=observation, next_state=next_state, patch=delta.patch, delta_size=delta.size,
                          changed_paths=list(delta.paths),
                          arg_count=len(action.arguments) if isinstance(action.arguments, dict) else 0)

    @staticmethod
    def _attributes(inner: Any, codec: Any) -> dict[str, Any]:
        """The instance's state after the call, as ``get_state`` / ``codec.encode`` would read it (not encoded)."""
        if codec is None:
            return {k: v for k, v in vars(inner).items() if not k.startswith("_")}
        found = {k: v for k, v in vars(inner).items() if not k.startswith("_") and k not in codec.exclude}
        for attribute, key in codec.hidden.items():
            if hasattr(inner, attribute):
                found[key] = getattr(inner, attribute)
        return found

    def _json(self, value: Any, path: str) -> Any:
        """``value`` as canonical JSON (a foreign class's values through its codec); ``_Untraceable`` if not JSON."""
        from envsim.envs.adapters.codec import to_json_value
        from envsim.envs.adapters.foreign import ForeignEnvironment

        if isinstance(value, RecordingCollection):
            value = dict(dict.items(value))
        if issubclass(self.env_class, ForeignEnvironment):
            value = to_json_value(value, path)
        check_json_state({"value": value})
        return json.loads(canonical_json(value))

    def _same(self, name: str, key: str | None, old: Any, new: Any, produced: bytes | None = None) -> bool:
        """Whether record ``key`` of ``name`` (``None``: the value ``name`` itself) is exactly unchanged (see the
        module docstring); ``produced``: ``new``'s ``marshal`` bytes if already made."""
        if old is new:
            return True
        if produced is None:
            try:
                produced = marshal.dumps(new, 2)
            except ValueError:  # not plain data: compared once encoded
                return False
        if self._exact.get(name, {}).get(key) == produced:
            return True
        self._pending[(name, key)] = produced  # this value's bytes, the next state's record either way
        if type(old) is not type(new) or old != new:
            return False
        known = self._texts.record(name, key)
        return (canonical_json(new) == known) if known is not None else strictly_equal(old, new)

    def _same_text(self, name: str, key: str | None, old: Any, value: Any) -> bool:
        """Whether JSON ``value`` is ``old`` (record ``key`` of ``name``) as canonical text (the kept text of ``old``)."""
        known = self._texts.record(name, key)
        return canonical_json(value) == known if known is not None else strictly_equal(old, value)

    def _changes(self, state: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
        """``{name: {key: new record | _ABSENT}}`` for collections, ``{name: new value | _ABSENT}`` for other values:
        what differs from ``state`` (values encoded as canonical JSON)."""
        changes: dict[str, Any] = {}
        for name in [*state, *(k for k in after if k not in state)]:
            old, new = state.get(name, _ABSENT), after.get(name, _ABSENT)
            if new is _ABSENT:
                changes[name] = _ABSENT
                continue
            if isinstance(old, dict) and isinstance(new, dict):
                if isinstance(new, RecordingCollection):
                    keys: Iterable[str] = [k for k, v in dict.items(new) if dict.get(old, k, _ABSENT) is not v]
                    keys = [*keys, *(k for k in old if not dict.__contains__(new, k))]
                else:  # a dictionary the instance made (a wrapper writing its dump back)
                    keys = self._dumped_keys(name, old, new)
                    if not keys:
                        continue
                records: dict[str, Any] = {}
                produced = self._produced
                for key in keys:
                    before, now = old.get(key, _ABSENT), dict.get(new, key, _ABSENT)
                    if now is _ABSENT:
                        records[key] = _ABSENT
                    elif before is _ABSENT or not self._same(name, key, before, now, produced.get(key)):
                        now = self._json(now, f"/{name}/{key}")
                        if before is _ABSENT or not self._same_text(name, key, before, now):
                            records[key] = now
                if records:
                    changes[name] = records
                continue
            if old is not _ABSENT and self._same(name, None, old, new):
                continue
            value = self._json(new, f"/{name}")
            if old is _ABSENT or not self._same_text(name, None, old, value):
                changes[name] = value
        return changes

    def _dumped_keys(self, name: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
        """The keys of a dictionary the instance made whose records may differ from ``old``'s: those whose ``marshal``
        bytes are not the ones known to equal the state's record (type-exact, at C speed: a wrapper's dump of an
        unchanged record gives the same bytes call after call), and the keys it lost."""
        known = self._exact.setdefault(name, {})
        try:
            data = list(map(marshal.dumps, new.values(), repeat(2)))
        except ValueError:  # a value that is not plain data: every record compared on its own
            self._produced = {}
            keys = list(new)
        else:
            names, last = list(new), self._last_dumps.get(name)
            self._last_dumps[name] = (names, data)
            if last is not None and last[0] == names and last[1] == data:  # the last dump exactly: nothing changed
                self._produced = {}
                return []
            if last is not None:
                known.update(zip(*last))
            keys = [k for k, d in zip(names, data) if known.get(k) != d]
            wanted = set(keys)
            self._produced = {k: d for k, d in zip(new, data) if k in wanted} if keys else {}
        if len(new) != len(old) or any(k not in old for k in keys):
            keys += [k for k in old if k not in new]
        return keys

    def _apply(self, state: dict[str, Any], changes: dict[str, Any]) -> tuple[dict[str, Any], dict, dict]:
        """The next state (sharing unchanged records), and the differing parts of both states for ``compute_delta``."""
        texts = self._texts
        next_state = dict(state)
        old_part: dict[str, Any] = {}
        new_part: dict[str, Any] = {}
        for name in sorted(changes):
            change, old = changes[name], state.get(name, _ABSENT)
            if change is _ABSENT:
                del next_state[name]
                old_part[name] = old
                texts.drop(name)
            elif isinstance(change, dict) and isinstance(old, dict):  # records of a dictionary present before and after
                collection = dict(old)
                before, after = {}, {}
                for key in sorted(change):
                    value = change[key]
                    if key in old:
                        before[key] = old[key]
                    if value is _ABSENT:
                        collection.pop(key, None)
                    else:
                        collection[key] = value
                        after[key] = value
                    texts.set_record(name, key, value)
                    self._exact.get(name, {}).pop(key, None)
                if any(k not in old for k in change):
                    collection = {k: collection[k] for k in sorted(collection)}
                next_state[name] = collection
                old_part[name], new_part[name] = before, after
            else:
                next_state[name] = change
                if old is not _ABSENT:
                    old_part[name] = old
                new_part[name] = change
                texts.set_value(name, change)
                self._exact.get(name, {}).pop(None, None)
        if any(k not in state for k in next_state) or len(next_state) != len(state):
            next_state = {k: next_state[k] for k in sorted(next_state)}
        for name in changes:  # the guard's private copy follows the state
            self._sync_pristine(name, next_state.get(name, _ABSENT), changes[name], state.get(name, _ABSENT))
        if sum(len(texts.text(k)) for k in texts.parts) > 2 * MAX_STATE_VALUES:  # the executor counts values past
            # this length (and may refuse the state): it labels such calls
            raise _Untraceable("large state")
        return next_state, old_part, new_part

    # the guard -------------------------------------------------------------------------------
    def _sync_pristine(self, name: str, value: Any, change: Any, old: Any) -> None:
        pristine = self._pristine
        assert pristine is not None
        if value is _ABSENT:
            pristine.pop(name, None)
        elif isinstance(change, dict) and isinstance(old, dict) and isinstance(pristine.get(name), dict):
            for key, record in change.items():
                if record is _ABSENT:
                    pristine[name].pop(key, None)
                else:
                    pristine[name][key] = json_copy(record)
        else:
            pristine[name] = json_copy(value)

    def _mutated(self, state: dict[str, Any]) -> bool:
        return self._pristine is not None and state != self._pristine

    def _restore(self, state: dict[str, Any]) -> None:
        """Put the shared records of ``state`` back as they were (in place: earlier records share them)."""
        pristine = self._pristine
        assert pristine is not None
        for name, value in state.items():
            reference = pristine.get(name)
            if value == reference:
                continue
            if isinstance(value, dict) and isinstance(reference, dict):
                for key, record in value.items():
                    original = reference.get(key)
                    if record == original:
                        continue
                    if isinstance(record, dict) and isinstance(original, dict):
                        record.clear()
                        record.update(json_copy(original))
                    elif isinstance(record, list) and isinstance(original, list):
                        record[:] = json_copy(original)
            elif isinstance(value, list) and isinstance(reference, list):
                value[:] = json_copy(reference)
        self._texts = _Texts(state)
        self._exact.clear()
        self._last_dumps.clear()

    # the executor ------------------------------------------------------------------------------
    def _executed(self, state: dict[str, Any], action: Action) -> Transition:
        """The executor's label of the call (its ``state`` is this episode's: equal, and sharing its records)."""
        transition = dataclasses.replace(execute(self.env_class, state, action), state=state)
        self._texts = _Texts(transition.next_state)
        self._exact.clear()
        self._last_dumps.clear()
        if self._pristine is not None:
            self._pristine = copy.deepcopy(transition.next_state)
        return transition


#: Starting states whose labellers are kept for forking (``start_labeller``).
KEPT_STARTS = 4


def start_labeller(env_class: type[Environment], state: Mapping[str, Any],
                   starts: dict[Any, Any] | None = None) -> EpisodeLabeller:
    """A labeller for an episode from ``state``; with ``starts`` (a dictionary kept across episodes), episodes
    from the same starting state (equal as canonical JSON) fork one labeller made once."""
    if starts is None:
        return EpisodeLabeller(env_class, state)
    found = starts.get(id(state))
    if found is not None and found[0] is state and found[1].env_class is env_class:
        return found[1].fork()
    text = canonical_json(state)
    key = (env_class, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())
    base = starts.get(key)
    if base is None:
        base = EpisodeLabeller(env_class, state, text=text)
        bases = [k for k in starts if isinstance(k, tuple)]
        for old in bases[:max(len(bases) - KEPT_STARTS + 1, 0)]:
            del starts[old]
        starts[key] = base
    for old in [k for k in starts if not isinstance(k, tuple)][:-KEPT_STARTS]:
        del starts[old]
    starts[id(state)] = (state, base)
    return base.fork()


@contextmanager
def _episode_heap_frozen() -> Iterator[None]:
    """The objects alive when an episode starts (its starting state, the texts, the guard's copy) are kept out of
    the cycle collector's walks (``gc.freeze``) until the episode ends: what runs between its calls (record making,
    a view's verification, a wrapper's objects) triggers collections that would walk them again and again (on the
    fixture shop, about 5 % of a replayed call). Cycles made meanwhile (raised exceptions) are collected once it ends
    (``gc.unfreeze``)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def label_calls(env_class: type[Environment], state: Mapping[str, Any],
                actions: Iterable[Action | Mapping[str, Any]], starts: dict[Any, Any] | None = None
                ) -> Iterator[LabelledCall]:
    """Label ``actions`` in order, each on the state the previous one left (``starts``: see ``start_labeller``)."""
    labeller = start_labeller(env_class, state, starts)
    with _episode_heap_frozen():
        for action in actions:
            yield labeller.label(action)


def label_policy(env_class: type[Environment], state: Mapping[str, Any], policy: Any,
                 steps: int, starts: dict[Any, Any] | None = None) -> Iterator[LabelledCall]:
    """``steps`` calls chosen by ``policy.next_action(env_class, state)``, labelled one after another."""
    labeller = start_labeller(env_class, state, starts)
    with _episode_heap_frozen():
        for _ in range(steps):
            yield labeller.label(policy.next_action(env_class, labeller.state))


class RecordMaker:
    """Benchmark records of labelled calls (``labelling.to_record``) with each tool's shown code read once."""

    def __init__(self, env_class: type[Environment], split: str) -> None:
        self.env_class, self.split = env_class, split
        self._code: dict[str, str] = {}

    def record(self, call: LabelledCall) -> dict[str, Any]:
        """The record of ``call`` (its id from the labeller, its view verified as ``to_record`` does)."""
        from envsim.construction.labelling import record_code, to_record

        tool = call.transition.tool
        if tool not in self._code:
            self._code[tool] = record_code(self.env_class, tool)
        return to_record(call.transition, self.env_class, self.split, record_id=call.record_id, code=self._code[tool])


def traced_rollouts(env_class: type[Environment], seed: int, episodes: int, steps: int) -> Iterator[LabelledCall]:
    """``rollout.seeded_rollouts`` labelled by ``EpisodeLabeller``: the same episodes, states and calls."""
    from envsim.construction.state_explorer import explorer_for

    starts: dict[Any, Any] = {}
    for episode in range(episodes):
        policy = explorer_for(env_class, seed * 100_003 + episode)
        yield from label_policy(env_class, env_class.sample_state(seed + episode), policy, steps, starts)

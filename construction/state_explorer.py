"""An explorer for a domain nobody adapted: argument values drawn from the state through the schema.

The built-in environments keep ``explorer.ExplorerPolicy`` (their shipped files are rebuilt byte for
byte). A user's environment (``module:Class``, a plugin) gets ``StateExplorer``, which reads the state
the way an agent that looked things up would:

* **Collections** are dictionaries whose values are all records (``orders``, ``users``, and nested ones
  such as a user's ``payment_methods`` or a product's ``variants``). A parameter ``order_id`` /
  ``order_ids`` is matched to them by name (``order`` ↔ ``orders``, modifiers such as ``new_`` aside)
  and to record fields of the same name (``item_id`` inside an order's items).
* **A call is coherent**: the records its values came from become its *focus*, and the focus follows
  references (an order's ``user_id`` brings that user), so ``item_ids`` are the items of *that* order and
  ``payment_method_id`` a payment method of *that* order's user; ``email`` / ``zip`` come from the focused
  record (or from one record chosen for the call). ``new_item_ids`` pairs with ``item_ids``: each new id is
  a sibling of the old one (another key of the collection holding it: another variant of that product).
* **An episode is coherent**: the records of earlier calls are revisited (look an order up, then change it).
* **Records the tool talks about**: a record whose status-like values appear in the tool's name or
  description (``cancel_pending_order`` ↔ ``status: "pending"``) is preferred.
* **Tools that change the state** are learnt on the way: each tool's observed change rate weights it.
* **Deliberate misses**: a share of calls get one id that does not exist, for realistic failures.

Everything is drawn from one ``random.Random(seed)``: the same seed and states give the same calls.
"""

from __future__ import annotations

import inspect
import random
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from envsim.construction.explorer import singular
from envsim.construction.state_index import (Collection, StateIndex, deep_fields, id_like, mentioned,
                                                 nested_records, param_stem, reference_fields, says_available)
from envsim.envs.base import Environment, ToolSpec
from envsim.records import Action

READ_VERBS = {"get", "find", "list", "search", "lookup", "look", "calculate", "compute", "think", "check", "view",
              "show", "read", "count", "query", "describe", "fetch", "transfer", "validate", "preview"}
_WORD = re.compile(r"[a-z0-9]+")
_RANGE = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:to|and|-|–)\s*(-?\d+(?:\.\d+)?)")
_QUOTED = re.compile(r"'([^']{1,60})'|\"([^\"]{1,60})\"")


@dataclass
class Param:
    """One parameter as the schema describes it."""

    name: str
    hint: Any
    description: str = ""
    enum: list[Any] = field(default_factory=list)
    required: bool = True


class StateExplorer:
    """Seeded policy for user environments: coherent, state-drawn calls with learnt tool weights (module docstring)."""

    def __init__(self, seed: int, miss_rate: float = 0.1, write_share: float = 0.75, optional_rate: float = 0.5,
                 revisit_rate: float = 0.5, described_rate: float = 0.9) -> None:
        self.rng = random.Random(seed)
        self.miss_rate, self.write_share, self.optional_rate = miss_rate, write_share, optional_rate
        self.revisit_rate, self.described_rate = revisit_rate, described_rate
        self.changes: dict[str, list[int]] = {}          # tool -> [calls, calls that changed the state]
        self.remembered: list[tuple[tuple[str, ...], str]] = []   # (collection path, key) of earlier calls
        self._last: tuple[str, dict[str, Any]] | None = None

    # tool choice -------------------------------------------------------------------------------
    def next_action(self, env_class: type[Environment], state: dict[str, Any]) -> Action:
        """The next call for ``env_class`` in ``state``."""
        specs = list(env_class.tool_specs().values())
        if not specs:
            raise ValueError(f"{env_class.env_id()} has no tools to call")
        if self._last is not None:  # learn whether the previous call changed the state
            tool, before = self._last
            counts = self.changes.setdefault(tool, [0, 0])
            counts[0] += 1
            counts[1] += int(before != state)
        spec = self._choose_tool(specs)
        action = Action(spec.name, self.arguments_for(env_class, spec, state))
        self._last = (spec.name, state)
        return action

    def _choose_tool(self, specs: list[ToolSpec]) -> ToolSpec:
        writes = [s for s in specs if may_write(s)]
        if writes and self.rng.random() < self.write_share:
            weights = [(self.changes.get(s.name, [0, 0])[1] + 1) / (self.changes.get(s.name, [0, 0])[0] + 2)
                       for s in writes]
            return self.rng.choices(writes, weights=weights)[0]
        return self.rng.choice(specs)

    # arguments ---------------------------------------------------------------------------------
    def arguments_for(self, env_class: type[Environment], spec: ToolSpec, state: dict[str, Any]) -> dict[str, Any]:
        """Arguments of one call of ``spec`` drawn from ``state`` (required ones always, optional ones at
        ``optional_rate``), with one id spoiled at ``miss_rate``."""
        return self.arguments_from(env_class, spec, StateIndex.of(state, lists=True))

    def arguments_from(self, env_class: type[Environment], spec: ToolSpec, index: StateIndex) -> dict[str, Any]:
        """``arguments_for`` with an index already made (of this state, or one with the same keys)."""
        params = _params(env_class, spec)
        call = _Call(self, index, spec, params)
        args = call.draw()
        spoilable = [n for n, p in params.items() if n in args and id_like(n)
                     and (isinstance(args[n], str) or (isinstance(args[n], list) and args[n]))]
        if spoilable and self.rng.random() < self.miss_rate:
            name = self.rng.choice(spoilable)
            args[name] = call.spoil(args[name])
        return args


def _params(env_class: type[Environment], spec: ToolSpec) -> dict[str, Param]:
    """The tool's parameters with the schema's descriptions and enums."""
    schema = next((t.get("function", t) for t in env_class.tool_schemas()
                   if t.get("function", t).get("name") == spec.name), {})
    properties = (schema.get("parameters") or {}).get("properties") or {}
    params = {}
    for name, parameter in spec.signature.parameters.items():
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        info = properties.get(name) or {}
        params[name] = Param(name, spec.hints.get(name, Any), str(info.get("description") or ""),
                             list(info.get("enum") or []), parameter.default is inspect.Parameter.empty)
    return params


class _Call:
    """The drawing of one call's arguments: its focus records and the values chosen so far."""

    def __init__(self, explorer: StateExplorer, index: StateIndex, spec: ToolSpec, params: dict[str, Param]) -> None:
        self.explorer, self.rng, self.index, self.spec, self.params = explorer, explorer.rng, index, spec, params
        self.focus: list[Any] = []
        self.words = " ".join(_WORD.findall((spec.name.replace("_", " ") + " " + (spec.method.__doc__ or "")).lower()))
        self.chosen: dict[str, Any] = {}
        self._name = ""          # the id parameter being drawn (a write avoids the value its record holds)
        self._anchored: set[int] = set()  # ids of focused records taken from a list of records without ids

    def draw(self) -> dict[str, Any]:
        names = [n for n, p in self.params.items() if p.required or self.rng.random() < self.explorer.optional_rate]
        ordered = sorted(names, key=lambda n: (not id_like(n), param_stem(n)[1] != "",
                                               not self.index.named(param_stem(n)[0])))
        for name in ordered:
            self.chosen[name] = self.value(self.params[name])
        return {n: self.chosen[n] for n in names}

    # focus -----------------------------------------------------------------------------------
    def _add_focus(self, collection: Collection, key: str) -> None:
        record = collection.records.get(key)
        if record is None or any(r is record for r in self.focus):
            return
        self.focus.append(record)
        owner = self._owner(collection)
        if owner is not None:  # a record of a list inside another record (a customer's line): its owner too
            self._add_focus(*owner)
        memory = self.explorer.remembered
        if (collection.path, key) not in memory:
            memory.append((collection.path, key))
            del memory[:-12]
        for name, value in reference_fields(record):  # follow references: an order's user_id brings its user
            if not isinstance(value, str):
                continue
            for home in self.index.key_home.get(value, []):
                if home.name == singular(name[:-3].lower()) or name[:-3].lower() in home.name:
                    self._add_focus(home, value)
                    break
        for name, value in record.items():  # and lists of keys named after a collection: a user's orders
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value[:20]):
                for home in self.index.named(singular(str(name).lower()))[:1]:
                    for key in value[:20]:
                        if key in home.records:
                            self._add_focus(home, key)

    def _owner(self, collection: Collection) -> tuple[Collection, str] | None:
        """The collection and key of the record holding ``collection`` (``customers``/``C0001`` for the list at
        ``customers/C0001/lines``), when that record is itself in an indexed collection."""
        if len(collection.path) < 3:
            return None
        parent = next((c for c in self.index.collections if c.path == collection.path[:-2]), None)
        key = collection.path[-2]
        return (parent, key) if parent is not None and key in parent.records else None

    def _from_record_lists(self, name: str) -> list[Any]:
        """A value of field ``name`` from one record of a top-level list of records without ids (flights), when
        those records also hold another parameter of the call: the record goes first in the focus, so the call's
        other parameters (``date``) come from the same record."""
        others = set(self.params) - {name} - set(self.chosen)
        for records in self.index.record_lists:
            if name not in records[0]:
                continue
            record = next((r for r in self.focus if id(r) in self._anchored and name in r), None)
            if record is None and others & set(records[0]):
                record = self.rng.choice(records)
                self.focus.insert(0, record)
                self._anchored.add(id(record))
            if record is not None:
                return [record[name]] if not isinstance(record[name], (dict, list)) else []
        return []

    def _from_focus(self, stem: str, names: tuple[str, ...], description: str = "") -> list[Any]:
        """Values for ``stem`` from the focus: keys of a nested collection of that name (those whose records the
        parameter's description mentions first), else same-named fields, the call's first records first."""
        for record in self.focus:
            nested = nested_records(record, stem)
            if nested:
                described = [k for k, r in nested.items() if mentioned(r, description)]
                return described if described and self.rng.random() < self.explorer.described_rate else list(nested)
        for record in self.focus:
            found = deep_fields(record, names)
            if found:
                return found
        return []

    # values -----------------------------------------------------------------------------------
    def value(self, param: Param) -> Any:
        hint = param.hint
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin in (Union, types.UnionType):
            members = [a for a in args if a is not type(None)]
            hint = next((m for m in members if model_fields(m)), members[0] if members else str)
            origin, args = typing.get_origin(hint), typing.get_args(hint)
        if model_fields(hint):
            return self.model_value(hint)
        if param.enum:
            return self.rng.choice(param.enum)
        if origin is Literal:
            return self.rng.choice(list(args))
        if origin in (list, tuple) or hint in (list, tuple):
            return self.list_value(param, args[0] if args else str)
        if hint is bool:
            return self.rng.random() < 0.5
        if hint in (int, float):
            return self.number(param.name, hint is int)
        if origin is dict or hint is dict:
            return self.mapping(param)
        return self.string(param)

    def _taken(self, name: str) -> set[Any]:
        """Values other parameters of the same kind (``param_stem``: ``source_ticket_id`` and ``target_ticket_id``)
        already hold in this call: a call names different records with them unless the schema says they may be the
        same (``may_repeat``)."""
        param = self.params.get(name)
        if param is not None and may_repeat(param.description):
            return set()
        stem = param_stem(name)[0]
        taken: set[Any] = set()
        for other, value in self.chosen.items():
            if other != name and param_stem(other)[0] == stem:
                taken.update(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str))
        return taken

    def _candidates(self, name: str) -> tuple[list[Any], Collection | None]:
        """Values for an id-like parameter: from the focus first, else a matching collection's keys, else
        values of same-named fields (values of the same kind this call already holds left out, ``_taken``); the
        collection is returned when the values are its keys."""
        stem, _ = param_stem(name)
        field_names = (f"{stem}_id", singular(name), name)
        param = self.params.get(name)
        taken = self._taken(name)
        focused = self._from_focus(stem, field_names, (param.description if param else "") + " " + self.words)
        focused = [v for v in focused if v not in taken]
        if focused:
            return focused, None
        collections = sorted(self.index.named(stem), key=lambda c: len(c.path))
        if collections:
            top = [c for c in collections if len(c.path) == len(collections[0].path)]
            collection = self.rng.choice(top)
            keys = [k for k in collection.records if k not in taken]
            if keys:
                return keys, collection
        values = [v for n in field_names for v in self.index.field_values.get(n, []) if isinstance(v, str)
                  and v not in taken]
        return values, None

    def _pick_key(self, keys: list[Any], collection: Collection | None) -> Any:
        """One key: preferably of a record the tool talks about (``described_rate``), a remembered one of those
        at ``revisit_rate``; else any."""
        rng = self.rng
        if collection is not None:
            described = [k for k in keys if mentioned(collection.records.get(k), self.words)]
            pool = described if described and rng.random() < self.explorer.described_rate else keys
            chosen = set(pool)
            remembered = [k for p, k in self.explorer.remembered if p == collection.path and k in chosen]
            if remembered and rng.random() < self.explorer.revisit_rate:
                return rng.choice(remembered)
            return rng.choice(pool)
        if may_write(self.spec) and self.focus:  # a write sets a new value: not the one the record holds
            current = set(deep_fields(self.focus[0], (self._name,)))
            other = [k for k in keys if k not in current]
            if other and rng.random() < 0.6:
                return rng.choice(other)
        return rng.choice(keys)

    def id_value(self, name: str) -> Any:
        self._name = name
        paired = self._paired(name)
        if paired is not None and not isinstance(paired, list):
            sibling = self._sibling(paired)
            if sibling is not None:
                return sibling
        keys, collection = self._candidates(name)
        if not keys:
            return None
        key = self._pick_key(keys, collection)
        if collection is not None:
            self._add_focus(collection, key)
        return key

    def _paired(self, name: str) -> Any:
        """The value already chosen for the parameter ``name`` is a modified version of (``new_item_ids`` ->
        ``item_ids``)."""
        stem, modifier = param_stem(name)
        if not modifier:
            return None
        for other, value in self.chosen.items():
            if param_stem(other) == (stem, "") and value is not None:
                return value
        return None

    def _sibling(self, value: Any) -> Any:
        """Another key of a collection holding ``value`` as a key (a variant of the same product), one that
        says it is available where records say so; ``value`` itself now and then."""
        homes = self.index.key_home.get(value, []) if isinstance(value, str) else []
        if not homes:
            return None
        home = self.rng.choice(homes)
        keys = [k for k in home.records if k != value]
        if not keys or (self.rng.random() < 0.1 and says_available(home.records.get(value))):
            return value
        usable = [k for k in keys if says_available(home.records.get(k))]
        return self.rng.choice(usable or keys)

    def list_value(self, param: Param, item: Any) -> list[Any]:
        name = param.name
        paired = self._paired(name)
        if isinstance(paired, list):
            return [self._sibling(v) or v for v in paired]
        length = self._paired_length(param)
        if id_like(name) or self.index.named(param_stem(name)[0]):
            keys, collection = self._candidates(name)
            if keys:
                unique = list(dict.fromkeys(keys))
                if length is None:
                    chosen = self.rng.sample(unique, min(len(unique), self.rng.randint(1, 3)))
                elif length <= len(unique):
                    chosen = self.rng.sample(unique, length)
                else:  # more items than distinct values: values repeat, the length holds
                    chosen = [self.rng.choice(unique) for _ in range(length)]
                if collection is not None:
                    for key in chosen:
                        self._add_focus(collection, key)
                return chosen
        single = Param(singular(name), item, param.description)
        if model_fields(_model_member(item)):
            count = length if length is not None else self._focus_list_length(_model_member(item))
            return [self.model_value(_model_member(item)) for _ in range(count or self.rng.randint(1, 2))]
        return [self.value(single) for _ in range(length if length is not None else self.rng.randint(1, 2))]

    def _paired_length(self, param: Param) -> int | None:
        """The length of a list already drawn for this call that ``param`` pairs with item by item: the tool's
        docstring or the parameter's description says so (``one plan id per line``, ``in the same order``,
        ``respectively``, ``the i-th``) or names that parameter; ``None`` when there is none."""
        drawn = {n: v for n, v in self.chosen.items() if isinstance(v, list) and n != param.name}
        if not drawn:
            return None
        text = (param.description + " " + self.words).lower()
        for other, value in drawn.items():
            described = self.params[other].description.lower() if other in self.params else ""
            if _PAIRED.search(text) or _PAIRED.search(described) or other.replace("_", " ") in param.description \
                    or other in param.description:
                return len(value)
        return None

    def _focus_list_length(self, model: Any) -> int | None:
        """How many records with ``model``'s fields a focused record holds in one list (a reservation's
        passengers): a list replacing them keeps their number."""
        fields = set(model_fields(model))
        for record in self.focus:
            for value in record.values() if isinstance(record, dict) else ():
                if isinstance(value, list) and value and all(isinstance(v, dict) for v in value) \
                        and fields <= set(value[0]):
                    return len(value)
        return None

    def model_value(self, model: Any) -> dict[str, Any]:
        """An object for a parameter typed as a model (a pydantic model, a dataclass, a ``TypedDict``): built field
        by field, each value from the focus or the state under that field's name, else from its type."""
        out: dict[str, Any] = {}
        for name, (hint, required) in model_fields(model).items():
            if not required and self.rng.random() >= self.explorer.optional_rate:
                continue
            values = [v for v in self._from_focus(name, (name,)) if not isinstance(v, (dict, list))]
            seen = [v for v in self.index.field_values.get(name, []) if not isinstance(v, (dict, list))]
            if seen and (not values or self.rng.random() < 0.5):  # other records' values: a change to write
                values = seen
            if values:
                out[name] = self.rng.choice(values)
            else:
                out[name] = self.value(Param(name, hint, "", [], required))
        return out

    def string(self, param: Param) -> Any:
        name = param.name
        if id_like(name) or self.index.named(param_stem(name)[0]):
            value = self.id_value(name)
            if value is not None:
                return value
        if self.index.record_lists:
            found = self._from_record_lists(name)
            if found:
                return self.rng.choice(found)
        if may_write(self.spec) and self.rng.random() < 0.7:  # a write sets new values: another record's
            seen = [v for v in self.index.field_values.get(name, []) if isinstance(v, str)]
            if seen:
                return self.rng.choice(seen)
        found = self._from_focus(name, (name,))
        if not found and not self.focus:
            self._anchor()
            found = self._from_focus(name, (name,))
        if found:
            return self.rng.choice(found)
        quoted = [a or b for a, b in _QUOTED.findall(param.description)]
        if quoted and not id_like(name):  # the description's own examples ('2 + 2', 'no longer needed')
            return self.rng.choice(quoted)
        seen = [v for v in self.index.field_values.get(name, []) if isinstance(v, str)]
        if seen:
            return self.rng.choice(seen)
        return self.rng.choice(["weekly sync", "urgent", "note", "Main St", "standard", "n/a"])

    def _anchor(self) -> None:
        """Focus one record of the collection whose records hold most of the call's parameter names."""
        names = set(self.params)
        best, score = None, 0
        for collection in self.index.collections:
            if len(collection.path) != 1:
                continue
            sample = next(iter(collection.records.values()))
            found = len({n for n in names if deep_fields(sample, (n,))})
            if found > score:
                best, score = collection, found
        if best is not None:
            self._add_focus(best, self._pick_key(list(best.records), best))

    def number(self, name: str, integer: bool) -> int | float:
        """A number in the range the description gives (``between 1 and 500``, ``1 to 5``), else one the state
        holds under the same field name, else a small round one."""
        param = self.params.get(name)
        bounds = _RANGE.search(param.description) if param else None
        seen = [v for v in self.index.field_values.get(name, []) if isinstance(v, (int, float))
                and not isinstance(v, bool)]
        if bounds and self.rng.random() < 0.85:
            low, high = float(bounds.group(1)), float(bounds.group(2))
            value: float = self.rng.randint(int(low), int(high)) if integer else self.rng.uniform(low, high)
        elif seen and self.rng.random() < 0.7:
            value = self.rng.choice(seen)
        else:
            value = self.rng.choice([1, 2, 3, 5, 10, 20, 50, 100])
        return int(value) if integer else round(float(value), 2)

    def mapping(self, param: Param) -> dict[str, Any]:
        keys, collection = self._candidates(param.name)
        if keys:
            return {str(self._pick_key(keys, collection)): self.rng.randint(1, 3)}
        return {}

    def spoil(self, value: Any) -> Any:
        """A value that is not in the state: one character of an id changed (one item of a list)."""
        if isinstance(value, list):
            spoiled = list(value)
            position = self.rng.randrange(len(spoiled))
            spoiled[position] = self.spoil(spoiled[position])
            return spoiled
        text = str(value)
        for _ in range(8):
            digits = [i for i, c in enumerate(text) if c.isdigit()]
            if digits:
                i = self.rng.choice(digits)
                candidate = text[:i] + str((int(text[i]) + self.rng.randint(1, 9)) % 10) + text[i + 1:]
            else:
                candidate = text + "_x"
            if candidate not in self.index.key_home and candidate not in self.index.field_values.get("", []):
                return candidate
        return text + "_0000"


_PAIRED = re.compile(r"\bsame (?:order|length|number)\b|\brespectively\b|\bcorrespond|\bi-th\b|\bone \w+(?: \w+)? per\b"
                     r"|\bper (?:line|item|entry)\b")


def _model_member(hint: Any) -> Any:
    """The model among a union's members (``Passenger | dict`` -> ``Passenger``), else ``hint``."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        return next((m for m in typing.get_args(hint) if model_fields(m)), hint)
    return hint


def model_fields(hint: Any) -> dict[str, tuple[Any, bool]]:
    """``{field: (type, required)}`` of a pydantic model, a dataclass or a ``TypedDict``; ``{}`` for anything else."""
    import dataclasses

    if not isinstance(hint, type):
        return {}
    fields = getattr(hint, "model_fields", None)
    if isinstance(fields, dict) and fields:
        return {n: (f.annotation, f.is_required()) for n, f in fields.items()}
    if dataclasses.is_dataclass(hint):
        try:
            hints = typing.get_type_hints(hint)
        except Exception:  # noqa: BLE001 - unresolvable annotations: fields typed Any
            hints = {}
        return {f.name: (hints.get(f.name, Any), f.default is dataclasses.MISSING
                         and f.default_factory is dataclasses.MISSING) for f in dataclasses.fields(hint)}
    if issubclass(hint, dict) and hasattr(hint, "__annotations__") and hasattr(hint, "__total__"):
        try:
            hints = typing.get_type_hints(hint)
        except Exception:  # noqa: BLE001
            hints = dict(hint.__annotations__)
        required = getattr(hint, "__required_keys__", set(hints))
        return {n: (h, n in required) for n, h in hints.items()}
    return {}


_MAY_REPEAT = re.compile(r"\b(?:may|can|could|might)\b[^.]{0,60}\b(?:same|equal|identical)\b|\bsame as\b")


def may_repeat(description: str) -> bool:
    """Whether a parameter's description allows the value of another parameter of its kind (``may be the same
    ticket``, ``can equal the source``, ``same as``)."""
    return bool(_MAY_REPEAT.search(description.lower()))


def may_write(spec: ToolSpec) -> bool:
    """Whether a tool may write: declared so and not named with a reading verb (``get_``, ``find_`` ...)."""
    verb = (_WORD.findall(spec.name.lower()) or [""])[0]
    return spec.write and verb not in READ_VERBS


def is_user_environment(env_class: type[Environment]) -> bool:
    """Whether ``env_class`` is explored with ``StateExplorer``: not a built-in and not a namespaced track
    (``bfcl/...``, ``tau/...``, whose shipped files come from ``ExplorerPolicy`` / their own agents)."""
    from envsim.envs.registry import registry

    env_id = env_class.env_id()
    entry = registry().get(env_id)
    return "/" not in env_id and not (entry is not None and entry.builtin)


def explorer_for(env_class: type[Environment], seed: int) -> Any:
    """The explorer of ``env_class``: ``ExplorerPolicy`` for built-ins and tracks, ``StateExplorer`` otherwise."""
    from envsim.construction.explorer import ExplorerPolicy

    return StateExplorer(seed) if is_user_environment(env_class) else ExplorerPolicy(seed=seed)

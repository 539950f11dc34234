"""What a state holds, for drawing argument values (``construction.state_explorer``): its collections (dictionaries
of records, nested ones included), where each key lives, the values of each field name, and helpers that look
inside records (fields, nested collections, references, words a record shares with a tool's description)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from envsim.construction.explorer import singular

MODIFIERS = ("new_", "old_", "original_", "target_", "source_", "current_", "other_", "from_", "to_")
MAX_DEPTH = 8


def param_stem(param: str) -> tuple[str, str]:
    """``new_item_ids`` -> (``item``, ``new_``): the thing a parameter names, and its modifier."""
    name = param.lower()
    modifier = next((m for m in MODIFIERS if name.startswith(m) and len(name) > len(m) + 1), "")
    name = name[len(modifier):]
    return re.sub(r"_?ids?$", "", name) or name, modifier


def id_like(param: str) -> bool:
    lowered = param.lower()
    return bool(re.search(r"(^|_)ids?$", lowered)) or lowered in ("sku", "code", "key", "username", "email")


@dataclass
class Collection:
    """A dictionary of records somewhere in the state (``path`` from the root)."""

    path: tuple[str, ...]
    records: dict[str, Any]

    @property
    def name(self) -> str:
        return singular(self.path[-1].lower()) if self.path else ""


@dataclass
class StateIndex:
    """What a state holds, found in one walk: its collections, where each key lives, values per field name."""

    collections: list[Collection] = field(default_factory=list)
    by_name: dict[str, list[Collection]] = field(default_factory=dict)
    key_home: dict[str, list[Collection]] = field(default_factory=dict)
    field_values: dict[str, list[Any]] = field(default_factory=dict)
    record_lists: list[list[dict[str, Any]]] = field(default_factory=list)  # lists of records without an id field

    @classmethod
    def of(cls, state: dict[str, Any], lists: bool = False) -> "StateIndex":
        """Index ``state`` (collections, key -> collections holding it, scalar values per field name). With ``lists``
        (user environments: ``construction.state_explorer``), a list of records that carry an id
        (``list_collection_id``) at the top level or inside such a record (a customer's ``lines``) is a collection
        keyed by that id, and other top-level lists of records are kept as ``record_lists``."""
        index = cls()

        def add(collection: Collection) -> None:
            index.collections.append(collection)
            index.by_name.setdefault(collection.name, []).append(collection)
            for key in collection.records:
                index.key_home.setdefault(key, []).append(collection)

        def walk(value: Any, path: tuple[str, ...], name: str, depth: int, in_list: bool = False) -> None:
            if depth > MAX_DEPTH:
                return
            if lists and isinstance(value, list) and (len(path) == 1 or in_list) and value \
                    and all(isinstance(v, dict) for v in value):
                id_field = list_collection_id(path[-1], value)
                if id_field is not None:
                    add(Collection(path, {str(v[id_field]): v for v in value}))
                    for record in value:
                        for key, item in record.items():
                            walk(item, (*path, str(record[id_field]), str(key)), str(key), depth + 2, True)
                    return
                if len(path) == 1:
                    index.record_lists.append(value)
            if isinstance(value, dict):
                if value and path and all(isinstance(v, dict) for v in value.values()):
                    add(Collection(path, value))
                for key, item in value.items():
                    walk(item, (*path, str(key)), str(key), depth + 1)
            elif isinstance(value, list):
                for position, item in enumerate(value[:200]):
                    walk(item, (*path, str(position)), name, depth + 1)
            elif name:
                index.field_values.setdefault(name, []).append(value)

        walk(state, (), "", 0)
        return index

    def named(self, stem: str) -> list[Collection]:
        """Collections whose (singular) name is ``stem``; failing that, names containing it or contained in it."""
        exact = self.by_name.get(singular(stem), []) + (self.by_name.get(stem, []) if singular(stem) != stem else [])
        if exact:
            return exact
        return [c for name, found in self.by_name.items() for c in found
                if name and len(stem) > 2 and (stem in name or name in stem)]


def list_collection_id(name: str, records: list[dict[str, Any]]) -> str | None:
    """The field that identifies the records of a list named ``name``: ``<singular>_id`` (``customers`` ->
    ``customer_id``), else ``id``, else the one field ending in ``_id`` that every record has, each with a different
    string value (``None``: the records carry no id)."""
    first = records[0]
    candidates = [f"{singular(str(name).lower())}_id", "id"]
    ending = [k for k in first if isinstance(k, str) and k.endswith("_id")]
    candidates += ending if len(ending) == 1 else []
    for candidate in candidates:
        values = [r.get(candidate) for r in records]
        if all(isinstance(v, str) and v for v in values) and len(set(values)) == len(values):
            return candidate
    return None


def deep_fields(value: Any, names: tuple[str, ...], depth: int = 0) -> list[Any]:
    """Scalar values of fields called one of ``names`` anywhere inside ``value``."""
    found: list[Any] = []
    if depth > MAX_DEPTH:
        return found
    if isinstance(value, dict):
        for key, item in value.items():
            if key in names and not isinstance(item, (dict, list)):
                found.append(item)
            elif isinstance(item, (dict, list)):
                found += deep_fields(item, names, depth + 1)
    elif isinstance(value, list):
        for item in value:
            found += deep_fields(item, names, depth + 1)
    return found


def nested_records(value: Any, stem: str, depth: int = 0) -> dict[str, Any]:
    """Records of collections named ``stem`` nested inside ``value`` (a user's ``payment_methods``)."""
    found: dict[str, Any] = {}
    if depth > 3 or not isinstance(value, dict):
        return found
    for key, item in value.items():
        if isinstance(item, dict) and item and all(isinstance(v, dict) for v in item.values()) \
                and singular(str(key).lower()) == singular(stem):
            found.update(item)
        elif isinstance(item, dict):
            found.update(nested_records(item, stem, depth + 1))
    return found


def reference_fields(record: Any, depth: int = 0) -> list[tuple[str, Any]]:
    """``(name, value)`` of ``*_id`` fields of a record (and its sub-dictionaries, not its collections)."""
    found: list[tuple[str, Any]] = []
    if not isinstance(record, dict) or depth > 2:
        return found
    for key, value in record.items():
        if isinstance(key, str) and key.endswith("_id") and not isinstance(value, (dict, list)):
            found.append((key, value))
        elif isinstance(value, dict) and not all(isinstance(v, dict) for v in value.values()):
            found += reference_fields(value, depth + 1)
    return found


def mentioned(record: Any, words: str) -> bool:
    """Whether a record's top-level text values (``status: "pending"``) appear as words in ``words``."""
    if not isinstance(record, dict):
        return False
    for value in record.values():
        text = value.lower().replace("_", " ") if isinstance(value, str) else ""
        if 3 <= len(text) <= 30 and re.fullmatch(r"[a-z][a-z ]*", text):
            if re.search(rf"\b{re.escape(text)}\b", words.lower()):
                return True
    return False


def says_available(record: Any) -> bool:
    """A record that says it can be used (``available: true`` / ``in_stock: true``)."""
    return isinstance(record, dict) and any(record.get(k) is True for k in ("available", "in_stock", "active"))

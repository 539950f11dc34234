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

    @classmethod
    def of(cls, state: dict[str, Any]) -> "StateIndex":
        """Index ``state`` (collections, key -> collections holding it, scalar values per field name)."""
        index = cls()

        def walk(value: Any, path: tuple[str, ...], name: str, depth: int) -> None:
            if depth > MAX_DEPTH:
                return
            if isinstance(value, dict):
                if value and path and all(isinstance(v, dict) for v in value.values()):
                    collection = Collection(path, value)
                    index.collections.append(collection)
                    index.by_name.setdefault(collection.name, []).append(collection)
                    for key in value:
                        index.key_home.setdefault(key, []).append(collection)
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

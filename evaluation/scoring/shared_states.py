"""Scoring on large states at the speed of the call: patches applied copy-on-write, states compared by identity.

A predicted patch touches a few paths of a state that may hold megabytes (τ-bench: 1.3–3.3 M characters).
Instead of deep-copying the whole state for each prediction, ``CopyOnWrite`` copies only the containers on
the paths an op walks (the rest stays shared with the record's state), and ``same_json_shared`` compares two
states subtree by subtree, skipping subtrees that are the same object. Records whose states are resolved from
one stored blob (``benchmark.state_store``) share every untouched subtree, so their comparison costs what the
touched records cost; states read from a JSON line share nothing and compare exactly as ``same_json`` does.
"""

from __future__ import annotations

from typing import Any, Callable

from envsim.delta import canonical_json, pointer_parts, same_json, strictly_equal


class CopyOnWrite:
    """A document that starts as ``state`` (never modified) and copies containers before they are changed.

    ``unshare(parts)`` copies every container from the root down to the parent of ``parts[-1]`` that is still
    shared with ``state``; an op that then changes those containers in place leaves ``state`` untouched.
    """

    def __init__(self, state: Any) -> None:
        self.document: Any = state.copy() if isinstance(state, (dict, list)) else state
        self._copies: list[Any] = [self.document]  # kept alive: their ids stay unique while in the set
        self._copied: set[int] = {id(self.document)}

    def unshare(self, parts: list[Any]) -> None:
        """Copy the shared containers along ``parts[:-1]`` (dict keys as strings, list indices as ``int()``)."""
        if not isinstance(self.document, (dict, list)) or id(self.document) not in self._copied:
            self._own_root()
        node = self.document
        for part in parts[:-1]:
            try:
                key: Any = int(part) if isinstance(node, list) else str(part)
                child = node[key]
            except (KeyError, IndexError, TypeError, ValueError, OverflowError):
                return  # what is missing is created fresh by the op, or the op fails
            if isinstance(child, (dict, list)) and id(child) not in self._copied:
                child = child.copy()
                node[key] = child
                self._copies.append(child)
                self._copied.add(id(child))
            if not isinstance(child, (dict, list)):
                return
            node = child

    def _own_root(self) -> None:
        """An op replaced the root (``path: ""``): copy the new root, which may be a shared subtree."""
        if isinstance(self.document, (dict, list)):
            self.document = self.document.copy()
            self._copies.append(self.document)
            self._copied.add(id(self.document))


def sort_keys_deep(value: Any) -> None:
    """Put every dictionary of ``value`` (owned, not shared) in sorted key order, in place."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            sort_keys(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def sort_keys(node: dict[Any, Any]) -> None:
    """``node`` in sorted key order, in place (keys re-inserted only when out of order)."""
    keys = list(node)
    try:
        ordered = sorted(keys)
    except TypeError:  # keys no JSON object holds: left as they are
        return
    if keys != ordered:
        for key in ordered:
            node[key] = node.pop(key)


def canonical_order_after(doc: CopyOnWrite, op: dict[str, Any]) -> None:
    """Keep a state in canonical key order (the order ``envs.sandbox.executor`` gives every state) after an applied
    op: a key added to an object is moved to its sorted place, a value written by add/replace/copy is sorted
    through. Only the op's target and the value it wrote are touched (both owned by ``doc``), so a state in
    canonical order stays so, as when the whole state was re-serialised with sorted keys."""
    kind = op.get("op")
    if kind not in ("add", "replace", "copy", "move") or not isinstance(op.get("path"), str):
        return
    parts = pointer_parts(op["path"])
    if not parts:
        if kind != "move":
            sort_keys_deep(doc.document)
        return
    node: Any = doc.document
    for part in parts[:-1]:
        try:
            node = node[int(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, TypeError, ValueError):
            return
    last = parts[-1]
    if isinstance(node, dict):
        sort_keys(node)
        value = node.get(last)
    elif isinstance(node, list) and node:
        try:
            value = node[-1] if last == "-" else node[int(last)]
        except (IndexError, ValueError):
            return
    else:
        return
    if kind != "move":  # a moved value is the state's own (shared): left as it is
        sort_keys_deep(value)


def unshare_op(doc: CopyOnWrite, op: dict[str, Any]) -> None:
    """Unshare what an RFC 6902 op changes in place: the parents of its ``path`` (and of ``from`` for a move)."""
    for field in ("path", "from"):
        value = op.get(field)
        if isinstance(value, str) and (field == "path" or op.get("op") == "move"):
            doc.unshare(pointer_parts(value))


def lazy_length(state: Any) -> Callable[[], int]:
    """``len(canonical_json(state))``, computed on the first call only (growth bounds need it rarely)."""
    cache: list[int] = []

    def length() -> int:
        if not cache:
            cache.append(len(canonical_json(state)))
        return cache[0]

    return length


def _equal_sharing(a: Any, b: Any, leaf_equal: Callable[[Any, Any], bool]) -> bool:
    """``leaf_equal(a, b)`` for a rule defined on canonical JSON, walking dictionaries with the same string keys
    and skipping identical subtrees, so two states that share all but a few records compare at their cost.

    Exact: a dictionary's canonical JSON is its keys' and values' canonical JSON, so two such dictionaries are
    equal exactly when each pair of values is; every other pair is compared by ``leaf_equal``."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if type(x) is dict and type(y) is dict and x.keys() == y.keys() and all(type(k) is str for k in x):
            stack.extend((x[k], y[k]) for k in x)
        elif not leaf_equal(x, y):
            return False
    return True


def equal_sharing(a: Any, b: Any, leaf_equal: Callable[[Any, Any], bool]) -> bool:
    """The shared-subtree walk with any leaf rule that holds for dictionaries exactly when it holds for their values
    (tolerant comparisons: ``evaluation.scoring.failure_classes``)."""
    return _equal_sharing(a, b, leaf_equal)


def same_json_shared(a: Any, b: Any) -> bool:
    """``same_json(a, b)``, skipping the subtrees ``a`` and ``b`` share."""
    return _equal_sharing(a, b, same_json)


def strictly_equal_shared(a: Any, b: Any) -> bool:
    """``strictly_equal(a, b)`` (equal as canonical JSON text), skipping the subtrees ``a`` and ``b`` share."""
    return _equal_sharing(a, b, strictly_equal)

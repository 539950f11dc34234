"""The original EnvSimBench config rule (``Evaluation/10.eval_model.py``), re-implemented from its stated rules.

What the original does, and what this module reproduces:

* **Its diff** walks nested dictionaries only. A key added or removed is one change (its whole value);
  any other value that differs (a list, a scalar, a dict replaced by a non-dict) is one ``modified``
  change **compared whole**: an extra edit inside a list that truly changes fails.
* **Its application** of a predicted change follows a dotted path, **creating missing parents**
  (``{}`` for dictionary keys, padding lists); ``modify``/``add`` on a missing path creates it,
  ``delete`` of a missing path does nothing.
* **Its verdict** checks only the truly changed paths (extra edits elsewhere pass). A truly deleted
  key must read back as ``None`` (a correct deletion fails; keeping the key with ``null`` passes),
  and values compare with Python ``==`` (``True == 1``).

Two rules here: ``original_config_match`` (``cm_original``: the original's verdict, bug for bug) and
``lenient_config_match`` (``cm_lenient``: the same rule with the two deliberate fixes - a truly
deleted key must be absent, values compare as JSON so ``true`` is not ``1``). Both score the same
predicted state, built by ``lenient_prediction``. Work is bounded: list padding and path depth are
capped, copies cannot grow the state without bound; an op beyond the caps is skipped (the original
would hang or raise on it).
"""

from __future__ import annotations

import json
from typing import Any

import jsonpatch
import jsonpointer

from envsim.delta import canonical_json, pointer_parts, same_json
from envsim.evaluation.scoring.shared_states import CopyOnWrite, lazy_length, unshare_op
from envsim.patch_bounds import MAX_GROWTH_CHARS  # the copy-growth bound apply_prediction uses

MAX_PATH_PARTS = 64
MAX_PADDING = 10_000
SET, DELETE = "set", "delete"


class OriginalRuleError(ValueError):
    """The original script would raise here (its worker drops the sample); we score it as a failure."""


def original_changes(before: Any, after: Any, *, python_equality: bool = False,
                     prefix: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The original's diff: ``[{"path": (keys...), "type": added|removed|modified, "before", "after"}]``.

    Recurses into dictionaries only; lists and scalars are compared whole. ``python_equality``
    compares with Python ``==`` as the original does (``True == 1``); otherwise as JSON values.
    """
    changes: list[dict[str, Any]] = []
    before = before if isinstance(before, dict) else {}
    after = after if isinstance(after, dict) else {}
    for key in sorted(set(before) | set(after), key=str):
        path = (*prefix, key)
        if key not in before:
            changes.append({"path": path, "type": "added", "before": None, "after": after[key]})
        elif key not in after:
            changes.append({"path": path, "type": "removed", "before": before[key], "after": None})
        elif before[key] is after[key]:
            continue  # one shared subtree (states resolved from one stored blob): nothing changed in it
        elif isinstance(before[key], dict) and isinstance(after[key], dict):
            changes.extend(original_changes(before[key], after[key], python_equality=python_equality, prefix=path))
        elif (before[key] != after[key]) if python_equality else not _same_value(before[key], after[key]):
            changes.append({"path": path, "type": "modified", "before": before[key], "after": after[key]})
    return changes


_PLAIN_SCALARS = (str, int, bool, type(None))


def _same_value(a: Any, b: Any) -> bool:
    """``same_json(a, b)`` without serialising the common case: two scalars of one plain type (not float:
    NaN is not JSON) compare with ``==``, exactly as their canonical JSON texts would; anything else goes
    to ``same_json``. The diff walks every key of both states, so this saves most ``json.dumps`` calls."""
    kind = type(a)
    if kind is type(b) and kind in _PLAIN_SCALARS:
        return a == b
    return same_json(a, b)


def dotted(path: tuple[Any, ...]) -> str:
    """A path as the original writes it: keys joined with dots."""
    return ".".join(str(p) for p in path)


def _index(part: Any) -> int | None:
    try:
        return int(part)
    except (TypeError, ValueError, OverflowError):
        return None


class _Budget:
    """Caps on padding across one prediction (the original pads without bound)."""

    def __init__(self) -> None:
        self.padding = 0

    def pad(self, items: list[Any], upto: int, filler: Any) -> bool:
        missing = upto + 1 - len(items)
        if missing <= 0:
            return True
        self.padding += missing
        if missing > MAX_PADDING or self.padding > MAX_PADDING:
            return False
        items.extend(json.loads(json.dumps(filler)) for _ in range(missing))
        return True


def apply_original_change(document: dict[str, Any], kind: str, parts: list[Any], value: Any,
                          budget: _Budget | None = None) -> bool:
    """Apply one change the original's way (parents created, lists padded); ``False`` when it does not apply.

    Raises ``OriginalRuleError`` where the original raises (a negative index out of range).
    """
    budget = budget or _Budget()
    if not parts or len(parts) > MAX_PATH_PARTS:
        return False
    current: Any = document
    for part in parts[:-1]:
        if isinstance(current, dict):
            current = current.setdefault(str(part), {})
        elif isinstance(current, list):
            index = _index(part)
            if index is None:
                return False
            if not budget.pad(current, index, {}):
                return False
            try:
                current = current[index]
            except IndexError:
                raise OriginalRuleError("negative list index out of range") from None
        else:
            return False
    last = parts[-1]
    if isinstance(current, dict):
        if kind == DELETE:
            return current.pop(str(last), _MISSING) is not _MISSING
        current[str(last)] = value
        return True
    if isinstance(current, list):
        index = _index(last)
        if index is None:
            return False
        if kind == DELETE:
            if 0 <= index < len(current):
                current.pop(index)
                return True
            return False
        if not budget.pad(current, index, None):
            return False
        try:
            current[index] = value
        except IndexError:
            raise OriginalRuleError("negative list index out of range") from None
        return True
    return False


_MISSING = object()


_LENIENT_DELETES = {"delete", "deleted", "remove", "removed"}


def apply_original_changes(state: dict[str, Any], changes: list[tuple[str, list[Any], Any]], *,
                           original: bool = False) -> dict[str, Any]:
    """The state after ``changes`` (``(type, path parts, value)``) applied the original's way.

    ``original``: types as the original reads them (only ``delete``/``removed`` delete, every other
    type sets, even ``remove``) and its exceptions raised as ``OriginalRuleError``; otherwise the
    deletion aliases our parser accepts delete, and an op the original would raise on is skipped.
    """
    document = json.loads(canonical_json(state))
    budget = _Budget()
    for kind, parts, value in changes:
        if original:
            mode = DELETE if kind in ("delete", "removed") else SET
        else:
            mode = DELETE if str(kind).lower() in _LENIENT_DELETES else SET
        try:
            apply_original_change(document, mode, parts, value, budget)
        except OriginalRuleError:
            if original:
                raise
    return document


def _resolve(document: Any, parts: list[str]) -> tuple[bool, Any]:
    """``(found, value)`` at a pointer's parts (RFC 6902 indices), without building exception messages."""
    current = document
    for part in parts:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and (part == "0" or part[0] != "0") \
                and int(part) < len(current):
            current = current[int(part)]
        else:
            return False, None
    return True, current


def _applies(document: Any, op: dict[str, Any]) -> bool:
    """Whether an RFC 6902 op (not ``test``) finds what it needs: its target, or for add its parent."""
    parts = pointer_parts(op["path"])
    if op["op"] in ("move", "copy") and not _resolve(document, pointer_parts(op.get("from", "")))[0]:
        return False
    if op["op"] in ("replace", "remove"):
        return bool(parts) and _resolve(document, parts)[0]
    if not parts:
        return op["op"] != "move"
    found, parent = _resolve(document, parts[:-1])
    if isinstance(parent, dict):
        return found
    if isinstance(parent, list):
        last = parts[-1]
        return found and (last == "-" or (last.isdigit() and (last == "0" or last[0] != "0")
                                          and int(last) <= len(parent)))
    return False


def apply_patch_leniently(state: dict[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
    """An RFC 6902 patch applied op by op; an ``add``/``replace`` that does not apply creates its path
    the original's way, any other op that does not apply is skipped, ``test`` ops are ignored (they
    change nothing). Raises ``ValueError`` when copies grow the state beyond a bound. ``state`` is never
    modified: only the containers on the paths the ops change are copied (``shared_states.CopyOnWrite``)."""
    doc = CopyOnWrite(state)
    state_chars = lazy_length(state)
    copied = 0
    budget = _Budget()
    for op in patch:
        kind = op.get("op")
        if kind == "test":
            continue
        if not _applies(doc.document, op):
            if kind in ("add", "replace") and isinstance(doc.document, dict):
                try:
                    parts = pointer_parts(op["path"])
                    doc.unshare(parts)
                    apply_original_change(doc.document, SET, parts, op.get("value"), budget)
                except OriginalRuleError:
                    pass
            continue
        if kind == "copy":
            copied += len(canonical_json(_resolve(doc.document, pointer_parts(op.get("from", "")))[1]))
            limit = 2 * state_chars() + MAX_GROWTH_CHARS if copied > MAX_GROWTH_CHARS else None
            if limit is not None and state_chars() + copied > limit:
                raise ValueError(f"patch grows the state beyond {limit} characters")
        try:
            unshare_op(doc, op)
            doc.document = jsonpatch.JsonPatch([op]).apply(doc.document, in_place=True)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, KeyError, IndexError,
                AttributeError, RecursionError, OverflowError):
            continue  # e.g. a move into its own child
    if not isinstance(doc.document, dict):
        raise ValueError("patch replaced the state with a non-object")
    return doc.document


def _walk(document: Any, parts: list[Any]) -> tuple[bool, Any]:
    """The original's read-back: dictionaries only, every key must be present."""
    current = document
    for part in parts:
        if isinstance(current, dict) and part in current:
            current = current[part]
        else:
            return False, None
    return True, current


def lenient_config_match(state: dict[str, Any], next_state: dict[str, Any], predicted: dict[str, Any]) -> bool:
    """CM-lenient: the original's rule (true paths only, lists whole) with deletions and JSON types fixed."""
    for change in original_changes(state, next_state):
        found, value = _walk(predicted, list(change["path"]))
        if change["type"] == "removed":
            if found:
                return False
        elif not found or not _same_value(value, change["after"]):
            return False
    return True


def original_config_match(state: dict[str, Any], next_state: dict[str, Any], predicted: dict[str, Any]) -> bool:
    """The original's verdict: dotted true paths read back from the prediction, Python ``==``, a true
    deletion must read back as ``None``."""
    for change in original_changes(state, next_state, python_equality=True):
        found, value = _walk(predicted, dotted(change["path"]).split("."))
        if not found or value != change["after"]:
            return False
    return True


def strictly_applied_is_lenient(patch: list[dict[str, Any]]) -> bool:
    """Whether ``apply_patch_leniently(state, patch)`` is the state ``scoring.apply_prediction`` gives whenever the
    latter succeeds: every op then found what it needs, so each lenient step is the same jsonpatch step (``test``
    ops passed: no change). The one exception is an op on the whole document (path ``""``): jsonpatch replaces the
    root, the lenient rule skips it. The tests check the equality on random patches."""
    return all(isinstance(op, dict) and op.get("path") != "" for op in patch)


def original_rule_verdicts(record: dict[str, Any], answer: Any, *,
                           strictly_applied: dict[str, Any] | None = None) -> tuple[bool, bool]:
    """``(cm_lenient, cm_original)`` of a parsed answer (``ParsedAnswer``) against a record.

    Original-format answers are applied from their ``changes``, RFC 6902 answers with
    ``apply_patch_leniently``, full next states as given. Where the original script would raise (and
    silently drop the sample) ``cm_original`` is ``False``: EnvSim scores every sample. ``strictly_applied``: the
    state ``apply_prediction`` made of the answer's patch, used instead of applying it again where that is the
    same state (``strictly_applied_is_lenient``).
    """
    state, next_state = record["state"], record["next_state"]
    try:
        if answer.changes is not None:
            lenient_state = apply_original_changes(state, answer.changes)
            try:
                original_state = apply_original_changes(state, answer.changes, original=True)
            except OriginalRuleError:
                original_state = None
        elif answer.patch is not None:
            lenient_state = original_state = (
                strictly_applied if strictly_applied is not None and strictly_applied_is_lenient(answer.patch)
                else apply_patch_leniently(state, answer.patch))
        else:
            lenient_state = original_state = answer.next_state
        if not isinstance(lenient_state, dict):
            return False, False
        lenient = lenient_config_match(state, next_state, lenient_state)
        original = isinstance(original_state, dict) and original_config_match(state, next_state, original_state)
        return lenient, original
    except (ValueError, TypeError, RecursionError):
        return False, False

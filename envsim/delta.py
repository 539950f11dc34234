"""Δ between two JSON states: a deepdiff-derived RFC 6902 patch and the leaf-level size |Δ|.

The |Δ| rule (DESIGN.md, "Δ and its size"), applied to ``DeepDiff(state, next_state)`` with no
"diff deeper" threshold, after lists are aligned item by item (difflib on each item's canonical
JSON: removing the first of ten records is one removal, not nine edits and a removal; lists of
equal length are compared cell by cell when that explains the change with fewer items).

difflib's matcher costs up to n x m steps per block on lists with many equal items (cubic overall on
hostile lists). Its work is counted exactly and capped at ``ALIGN_BUDGET`` steps per list; past the cap
the list is aligned in linear time instead (common prefix and suffix kept, the middle paired in order,
the rest added or removed). Both give an exact patch: applying it to ``state`` yields ``next_state``.
Every list within the cap (every shipped label) aligns as before.

* each changed scalar counts 1 (``values_changed``), and so does a change of JSON type at one
  path (``type_changes``: ``1 -> "1"``, ``{...} -> [...]``, ``None -> {...}``), whatever its size;
* each added or removed dictionary key counts 1, its whole value being one change;
* each added or removed list item counts 1, whatever the item holds;
* a dict or list present on both sides is never counted itself: only what changes inside it.

So appending one order record is |Δ| = 1, while editing three fields of an existing record is 3.
"""

from __future__ import annotations

import copy
import difflib
import itertools
import json
import marshal
from dataclasses import dataclass
from typing import Any, Callable

import jsonpatch

from envsim.jsonsafe import count_values

JSONPatch = list[dict[str, Any]]

_REPORTS = (
    "values_changed",
    "type_changes",
    "dictionary_item_added",
    "dictionary_item_removed",
    "iterable_item_added",
    "iterable_item_removed",
)


@dataclass(frozen=True)
class Delta:
    """The difference between two states: an RFC 6902 patch, its size and the changed paths."""

    patch: JSONPatch
    size: int
    paths: tuple[str, ...]


def pointer(parts: list[Any]) -> str:
    """RFC 6901 JSON pointer for a list of keys and indices."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def pointer_parts(path: str) -> list[str]:
    """The unescaped parts of an RFC 6901 pointer (``""`` is the root: no parts); the inverse of ``pointer``."""
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]] if path else []


def _sort_key(parts: list[Any]) -> list[tuple[int, Any]]:
    return [(0, p) if isinstance(p, int) else (1, str(p)) for p in parts]


def _diff(old: Any, new: Any) -> Any:
    """deepdiff's tree view of ``old`` -> ``new`` (deepdiff imported here: it pulls numpy, pandas and pyarrow when
    installed, ~90 MB and ~0.4 s, which a run that never diffs, such as scoring a no-change answer, does not pay)."""
    from deepdiff import DeepDiff

    return DeepDiff(old, new, view="tree", verbose_level=2, threshold_to_diff_deeper=0,
                    ignore_order=False, ignore_numeric_type_changes=False)


def strictly_equal(a: Any, b: Any) -> bool:
    """Equal as JSON text (so ``1``, ``1.0`` and ``True`` differ, as they do for deepdiff)."""
    if a is b:
        return True
    if a != b:
        return False
    return canonical_json(a) == canonical_json(b)


@dataclass(frozen=True)
class _Slot:
    """A list position seen by deepdiff as a dictionary key: old index, new index (``None`` if absent)."""

    old: int | None
    new: int | None

    def __str__(self) -> str:  # deepdiff renders keys in its paths; keep them recognisable
        return f"<slot {self.old}:{self.new}>"

    def __lt__(self, other: "_Slot") -> bool:
        return (self.old if self.old is not None else -1, self.new or -1) < (
            other.old if other.old is not None else -1, other.new or -1)


#: Values in which two states may differ and still be labelled (the differing parts of either side, containers
#: included, or the changed items of one list): past it ``DeltaTooLarge`` (each changed value
#: costs deepdiff about 3 KB and 0.13 ms; a hostile 1,000,000-item list took 3 GB and 277 s).
MAX_DELTA_VALUES = 50_000


class DeltaTooLarge(ValueError):
    """Two states differ in more than ``MAX_DELTA_VALUES`` values: too large to label."""


def _too_large() -> DeltaTooLarge:
    return DeltaTooLarge(f"the states differ in more than {MAX_DELTA_VALUES:,} values: too large to label "
                         "(envsim.delta.MAX_DELTA_VALUES)")


#: Inner-loop steps difflib may spend aligning one pair of lists (about 0.1 s); beyond it, ``_linear_opcodes``.
ALIGN_BUDGET = 150_000

Opcodes = list[tuple[str, int, int, int, int]]


class _OverBudget(Exception):
    """difflib would take more than ``ALIGN_BUDGET`` steps on this pair of lists."""


class _BoundedMatcher(difflib.SequenceMatcher):
    """``SequenceMatcher(autojunk=False)`` whose work is counted: ``find_longest_match`` on ``a[alo:ahi]``
    visits at most one entry of ``b2j`` per occurrence of each ``a[i]`` in ``b``, a sum known from prefix sums
    before the call; the matcher raises ``_OverBudget`` instead of starting a call that would exceed the budget."""

    def __init__(self, a: list[str], b: list[str], budget: int) -> None:
        super().__init__(None, a, b, autojunk=False)
        self._left = budget
        self._steps = list(itertools.accumulate((len(self.b2j.get(x, ())) + 1 for x in a), initial=0))

    def find_longest_match(self, alo: int = 0, ahi: int | None = None, blo: int = 0,
                           bhi: int | None = None) -> difflib.Match:
        """difflib's, after charging its worst-case cost to the budget."""
        end = len(self.a) if ahi is None else ahi
        self._left -= self._steps[end] - self._steps[alo]
        if self._left < 0:
            raise _OverBudget
        return super().find_longest_match(alo, ahi, blo, bhi)


def _linear_opcodes(left: list[str], right: list[str]) -> Opcodes:
    """Opcodes in linear time: the common prefix and suffix are equal, the middle is one replaced run."""
    prefix = 0
    limit = min(len(left), len(right))
    while prefix < limit and left[prefix] == right[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and left[-1 - suffix] == right[-1 - suffix]:
        suffix += 1
    i2, j2 = len(left) - suffix, len(right) - suffix
    codes: Opcodes = []
    if prefix:
        codes.append(("equal", 0, prefix, 0, prefix))
    if prefix < i2 or prefix < j2:
        tag = "replace" if prefix < i2 and prefix < j2 else ("delete" if prefix < i2 else "insert")
        codes.append((tag, prefix, i2, prefix, j2))
    if suffix:
        codes.append(("equal", i2, len(left), j2, len(right)))
    return codes


def list_opcodes(left: list[str], right: list[str], budget: int | None = None) -> Opcodes:
    """difflib's opcodes for two lists of item keys when they cost at most ``budget`` steps (default
    ``ALIGN_BUDGET``), else ``_linear_opcodes`` (so aligning any pair of lists is bounded)."""
    try:
        return _BoundedMatcher(left, right, ALIGN_BUDGET if budget is None else budget).get_opcodes()
    except _OverBudget:
        return _linear_opcodes(left, right)


def _align_lists(old: list[Any], new: list[Any],
                 equal: Callable[[Any, Any], bool] | None = None) -> tuple[dict[_Slot, Any], dict[_Slot, Any]]:
    """Align two lists item by item (difflib on canonical JSON, as deepdiff does for hashable items).

    Lists of equal length are compared position by position when that needs no more changed
    items than the alignment (grids, fixed slots, records edited in place). Otherwise equal runs
    are dropped; in a replaced run items are paired in order and recursed into; the
    rest are removals (old only) or additions (new only). Each list becomes a dict keyed by
    ``_Slot`` so that deepdiff reports a removed or added item as one key, whatever it holds. ``equal`` is
    passed on to ``prune_equal`` for paired items.
    """
    left = [canonical_json(x) for x in old]
    right = [canonical_json(x) for x in new]
    small_old: dict[_Slot, Any] = {}
    small_new: dict[_Slot, Any] = {}
    opcodes = list_opcodes(left, right)
    if sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in opcodes if tag != "equal") > MAX_DELTA_VALUES and (
            len(left) != len(right) or sum(a != b for a, b in zip(left, right)) > MAX_DELTA_VALUES):
        raise _too_large()  # before a slot is built for each changed item
    if len(left) == len(right):
        positional = [i for i in range(len(left)) if left[i] != right[i]]
        aligned_cost = sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in opcodes if tag != "equal")
        if len(positional) <= aligned_cost:  # grids, fixed slots, in-place edits: cell by cell
            for i in positional:
                slot = _Slot(i, i)
                small_old[slot], small_new[slot] = prune_equal(old[i], new[i], equal)
            return small_old, small_new
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(paired):
            slot = _Slot(i1 + k, j1 + k)
            small_old[slot], small_new[slot] = prune_equal(old[i1 + k], new[j1 + k], equal)
        for i in range(i1 + paired, i2):
            small_old[_Slot(i, None)] = old[i]
        for j in range(j1 + paired, j2):
            small_new[_Slot(None, j)] = new[j]
    return small_old, small_new


def prune_equal(old: Any, new: Any, equal: Callable[[Any, Any], bool] | None = None) -> tuple[Any, Any]:
    """Reduce a pair of states to what differs, keeping every difference at a recoverable path.

    Dictionary keys whose values are equal on both sides are dropped (deepdiff then walks only what
    changed); lists are aligned by ``_align_lists``. Paths of the reduced pair map back to the
    original states through ``_Slot`` keys. ``equal`` decides which values are equal (default
    ``strictly_equal``; ``evaluation.scoring.shared_states.strictly_equal_shared`` gives the same answers faster on
    states that share subtrees).
    """
    equal = equal or strictly_equal
    if isinstance(old, dict) and isinstance(new, dict):
        small_old: dict[Any, Any] = {}
        small_new: dict[Any, Any] = {}
        for key in [*old, *(k for k in new if k not in old)]:  # ordered: no hash-seed dependence
            if key not in new:
                small_old[key] = old[key]
            elif key not in old:
                small_new[key] = new[key]
            elif not equal(old[key], new[key]):
                small_old[key], small_new[key] = prune_equal(old[key], new[key], equal)
        return small_old, small_new
    if isinstance(old, list) and isinstance(new, list) and not equal(old, new):
        return _align_lists(old, new, equal)
    return old, new


def _real_path(parts: list[Any], side: str) -> list[Any]:
    """Replace ``_Slot`` keys by list indices of the old (``side="old"``) or new state."""
    return [(p.old if side == "old" else p.new) if isinstance(p, _Slot) else p for p in parts]


def _pruned_tree(old: Any, new: Any, equal: Callable[[Any, Any], bool] | None = None) -> Any:
    """deepdiff's tree of what differs between ``old`` and ``new`` (``prune_equal`` first); raises ``DeltaTooLarge``."""
    small_old, small_new = prune_equal(old, new, equal)
    if max(count_values(small_old, MAX_DELTA_VALUES), count_values(small_new, MAX_DELTA_VALUES)) > MAX_DELTA_VALUES:
        raise _too_large()
    return _diff(small_old, small_new)


def _reports(tree: Any) -> tuple[list[dict[str, Any]], list[list[Any]], list[tuple[list[Any], Any]], list[str]]:
    """The edits (old indices), list removals, list additions and changed paths of a pruned deepdiff tree."""
    edits: list[dict[str, Any]] = []   # applied on the old structure first (old indices)
    removals: list[list[Any]] = []
    additions: list[tuple[list[Any], Any]] = []
    changed: list[str] = []
    for report in _REPORTS:
        for level in tree.get(report, []):
            parts = level.path(output_format="list")
            last = parts[-1] if parts else None
            if report in ("values_changed", "type_changes"):
                path = _real_path(parts, "old")
                edits.append({"op": "replace", "path": pointer(path), "value": level.t2})
                changed.append(pointer(_real_path(parts, "new")))
            elif report == "dictionary_item_added" and isinstance(last, _Slot):
                path = _real_path(parts, "new")
                additions.append((path, level.t2))
                changed.append(pointer(path))
            elif report == "dictionary_item_removed" and isinstance(last, _Slot):
                path = _real_path(parts, "old")
                removals.append(path)
                changed.append(pointer(path))
            elif report == "dictionary_item_added":
                edits.append({"op": "add", "path": pointer(_real_path(parts, "old")), "value": level.t2})
                changed.append(pointer(_real_path(parts, "new")))
            elif report == "dictionary_item_removed":
                path = _real_path(parts, "old")
                edits.append({"op": "remove", "path": pointer(path)})
                changed.append(pointer(path))
            elif report == "iterable_item_removed":  # not reached: lists are aligned beforehand
                removals.append(_real_path(parts, "old"))
                changed.append(pointer(removals[-1]))
            else:
                additions.append((_real_path(parts, "new"), level.t2))
                changed.append(pointer(additions[-1][0]))
    return edits, removals, additions, changed


def compute_delta(old: Any, new: Any) -> Delta:
    """Diff ``old`` and ``new`` with deepdiff; return the patch (verified to reproduce ``new``) and |Δ|.

    Raises ``DeltaTooLarge`` (a ``ValueError``) when they differ in more than ``MAX_DELTA_VALUES`` values."""
    edits, removals, additions, changed = _reports(_pruned_tree(old, new))
    # Removals last-index first keep the old indices of the others valid; additions in ascending
    # new-index order land each item where the new state has it.
    patch: JSONPatch = edits
    patch += [{"op": "remove", "path": pointer(p)} for p in sorted(removals, key=_sort_key, reverse=True)]
    patch += [{"op": "add", "path": pointer(p), "value": v} for p, v in sorted(additions, key=lambda a: _sort_key(a[0]))]
    patch = copy.deepcopy(patch)
    if not _reproduces(old, patch, new):
        # A safety net that the property tests never reach; kept so a stored patch always applies.
        patch = jsonpatch.make_patch(old, new).patch
    return Delta(patch=patch, size=len(changed), paths=tuple(sorted(set(changed))))


def changed_paths(old: Any, new: Any, equal: Callable[[Any, Any], bool] | None = None) -> tuple[str, ...]:
    """``compute_delta(old, new).paths`` without building and verifying the patch (the verification applies it
    to a deep copy of ``old``: about 1 s on a megabyte state). Same pruning, same deepdiff tree, same paths;
    ``equal`` as in ``prune_equal`` (``strictly_equal_shared`` skips subtrees the two states share).

    Raises ``DeltaTooLarge`` (a ``ValueError``) as ``compute_delta`` does."""
    return tuple(sorted(set(_reports(_pruned_tree(old, new, equal))[3])))


def _reproduces(old: Any, patch: JSONPatch, new: Any) -> bool:
    try:
        return same_json(jsonpatch.apply_patch(old, patch, in_place=False), new)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError, IndexError, TypeError):
        return False


def apply_patch(state: Any, patch: JSONPatch) -> Any:
    """Apply an RFC 6902 patch to a copy of ``state`` (raises ``jsonpatch`` errors on bad patches)."""
    return jsonpatch.apply_patch(state, patch, in_place=False)


def canonical_json(value: Any) -> str:
    """Canonical JSON text (sorted keys, no spaces): the identity used for hashing and equality."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def exactly_equal(a: Any, b: Any) -> bool:
    """Whether two values are exactly equal, found at C speed: equal (``==``, which stops at the first
    difference) and with the same ``marshal`` bytes (version 2: no back-references, so equal values give equal
    bytes; bytes that are equal mean the same types at every level, ``1``, ``1.0`` and ``True`` apart, ``0.0`` and
    ``-0.0`` apart, and the same key order). Exactly equal values are ``strictly_equal`` (equal as JSON text), not
    the other way round: key order differs. Values ``marshal`` refuses (a dict subclass) or nested too deep for
    ``==`` count as not exactly equal."""
    try:
        return a == b and marshal.dumps(a, 2) == marshal.dumps(b, 2)
    except (ValueError, RecursionError):
        return False


def same_json(a: Any, b: Any) -> bool:
    """Equality as JSON values: numbers compare by value (``1 == 1.0``), booleans are not numbers.

    Never raises and never recurses: values of any depth (hostile answers) are compared with an
    explicit stack."""
    if exactly_equal(a, b):  # the common case, without serialising either side
        return True
    try:
        if canonical_json(a) == canonical_json(b):  # fast path, C-speed
            return True
    except (TypeError, ValueError, RecursionError):
        pass
    return _equal(a, b)


def _scalar_key(value: Any) -> Any:
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("num", value)
    return value


def _scalar_equal(x: Any, y: Any) -> bool:
    try:
        return _scalar_key(x) == _scalar_key(y)
    except (TypeError, ValueError, OverflowError):  # values no JSON holds
        return False


def walk_equal(a: Any, b: Any, leaf: Callable[[Any, Any], bool],
               transform: Callable[[Any], Any] | None = None) -> bool:
    """Structural equality without recursion: dict keys compare as strings, tuples as lists, and two leaves
    (anything but a dict, list or tuple) by ``leaf``; ``transform`` is applied to both sides of every pair
    first (e.g. a JSON string read as the value it holds). Values of any depth are compared on a stack."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if transform is not None:
            x, y = transform(x), transform(y)
        if isinstance(x, dict) and isinstance(y, dict):
            left = {str(k): v for k, v in x.items()}
            right = {str(k): v for k, v in y.items()}
            if left.keys() != right.keys():
                return False
            stack.extend((left[k], right[k]) for k in left)
        elif isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif isinstance(x, (dict, list, tuple)) or isinstance(y, (dict, list, tuple)) or not leaf(x, y):
            return False
    return True


def _equal(a: Any, b: Any) -> bool:
    """``_normalise(a) == _normalise(b)`` of old, without recursion: dict keys compare as strings,
    tuples as lists, booleans apart from numbers."""
    return walk_equal(a, b, _scalar_equal)

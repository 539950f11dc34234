"""Why a prediction failed: one failure class for a failed observation (FM) and one for a failed next state
(CM), by deterministic rules over the expected and the predicted answer; and the two tolerant scores that
stand beside the exact ones, FM-json and CM-numeric. Headline figures (FM, CM) stay exact.

Tolerant comparisons (``json_equal``):

* **JSON strings**: a string whose text (after white space) starts with ``{`` or ``[`` and decodes strictly
  (``envsim.jsonsafe``) is compared as the JSON value it holds (τ-bench tools return ``json.dumps(...)``
  strings, so another key order or spacing is a formatting difference, not a wrong observation);
* **numbers**: two numbers (booleans are not numbers) are equal within ``REL_TOL`` = 1e-9 relative
  (``math.isclose`` with no absolute tolerance: ``218.84000000000015`` equals ``218.84``, ``0`` equals only ``0``).

Tolerant scores of a sample (both ``False`` for an unparseable answer):

* ``fm_json``: FM, or the predicted observation equals the true one with JSON strings compared as JSON;
* ``cm_numeric``: CM, or the predicted next state equals the true one with numbers within ``REL_TOL``.

Observation classes (a sample failing FM; the first rule that holds names it):

| class | rule |
|---|---|
| ``unparseable`` | the answer did not parse (or there was no answer to score: the row's ``reason`` says which) |
| ``formatting_only`` | equal with JSON strings compared as JSON values (so FM-json = FM + this class) |
| ``float_rounding_only`` | equal with JSON strings compared as JSON and numbers within ``REL_TOL`` |
| ``success_error_flipped`` | one side is an error observation and the other is not (``records.is_failure_observation``) |
| ``error_text_differs`` | both are error observations |
| ``wrong_shape`` | the shapes differ: object keys, list lengths or kinds of value (null, boolean, number, string; JSON strings decoded) |
| ``right_shape_wrong_values`` | same shape, some value differs |

State classes (a sample failing CM; the first rule that holds names it; P = paths the prediction changes,
T = paths the true call changes, both as ``envsim.delta.changed_paths`` gives them):

| class | rule |
|---|---|
| ``unparseable`` | the answer did not parse (or there was no answer to score) |
| ``patch_does_not_apply`` | the predicted patch fails to apply (or the predicted state cannot be compared) |
| ``formatting_only`` | equal with JSON strings compared as JSON values |
| ``float_rounding_only`` | equal with numbers within ``REL_TOL`` (so CM-numeric = CM + this class) |
| ``predicted_no_change`` | P is empty (the true state changed: else CM would hold) |
| ``right_paths_wrong_values`` | P = T: every changed path right, some value wrong |
| ``missed_changes`` | P ⊊ T: some true changes left out, nothing else changed |
| ``spurious_changes`` | T ⊊ P: every true change made, plus changes the call does not make (T may be empty) |
| ``missed_and_spurious`` | neither contains the other |
| ``carried_divergence`` | multi-step only: the tracked state already differed from the true one before the step |

A row written before failure classes existed counts as ``unclassified``. Every failing sample is counted once
under ``observation`` (FM failed) and once under ``state`` (CM failed), so each side sums to the failures.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from envsim.delta import changed_paths, same_json, walk_equal
from envsim.evaluation.scoring.shared_states import equal_sharing, same_json_shared, strictly_equal_shared
from envsim.jsonsafe import loads as strict_loads
from envsim.records import is_failure_observation

REL_TOL = 1e-9
MAX_JSON_STRING_CHARS = 2_000_000  # a longer string is compared as text (bounded work on hostile answers)
UNCLASSIFIED = "unclassified"

OBSERVATION_CLASSES = {
    "unparseable": "unparseable answer",
    "formatting_only": "formatting only (equal as JSON values)",
    "float_rounding_only": "float rounding only (numbers within 1e-9)",
    "success_error_flipped": "success/error flipped",
    "error_text_differs": "error text differs",
    "wrong_shape": "wrong shape",
    "right_shape_wrong_values": "right shape, wrong values",
}
STATE_CLASSES = {
    "unparseable": "unparseable answer",
    "patch_does_not_apply": "patch does not apply",
    "formatting_only": "formatting only (equal as JSON values)",
    "float_rounding_only": "float rounding only (numbers within 1e-9)",
    "predicted_no_change": "predicted no change where the state changed",
    "right_paths_wrong_values": "right paths, wrong values",
    "missed_changes": "missed some changes",
    "spurious_changes": "spurious changes",
    "missed_and_spurious": "missed some changes and made spurious ones",
    "carried_divergence": "state already diverged at an earlier step",
}
SIDES = ("observation", "state")


def _json_string(value: Any) -> Any:
    """The JSON container a string holds (see module docstring), else the value itself."""
    if isinstance(value, str) and len(value) <= MAX_JSON_STRING_CHARS and value.lstrip()[:1] in ("{", "["):
        try:
            return strict_loads(value)
        except ValueError:
            return value
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _close(a: Any, b: Any) -> bool:
    try:
        return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=0.0)
    except OverflowError:  # an integer too large for a float: exact only
        return a == b


def json_equal(a: Any, b: Any, *, json_strings: bool = False, numeric: bool = False) -> bool:
    """Equality as JSON values (``same_json``), with JSON strings compared as the values they hold
    (``json_strings``) and numbers within ``REL_TOL`` (``numeric``). Never raises, never recurses."""

    def leaf(x: Any, y: Any) -> bool:
        if numeric and _is_number(x) and _is_number(y):
            return _close(x, y)
        return same_json(x, y)

    return walk_equal(a, b, leaf, _json_string if json_strings else None)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if _is_number(value):
        return "number"
    return type(value).__name__


def same_shape(a: Any, b: Any) -> bool:
    """Whether two values have the same shape: the same object keys, list lengths and kinds of leaf value
    (JSON strings decoded first). Never raises, never recurses."""
    stack = [(a, b)]
    while stack:
        x, y = (_json_string(v) for v in stack.pop())
        if isinstance(x, dict) and isinstance(y, dict):
            left = {str(k): v for k, v in x.items()}
            right = {str(k): v for k, v in y.items()}
            if left.keys() != right.keys():
                return False
            stack.extend((left[k], right[k]) for k in left)
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif _kind(x) != _kind(y):
            return False
    return True


def observation_class(expected: Any, predicted: Any, env: str = "") -> str:
    """The class of a failed observation that parsed (rules 2-7 of the observation table)."""
    if json_equal(predicted, expected, json_strings=True):
        return "formatting_only"
    if json_equal(predicted, expected, json_strings=True, numeric=True):
        return "float_rounding_only"
    expected_error = is_failure_observation(_json_string(expected), env) or is_failure_observation(expected, env)
    predicted_error = is_failure_observation(_json_string(predicted), env) or is_failure_observation(predicted, env)
    if expected_error != predicted_error:
        return "success_error_flipped"
    if expected_error:
        return "error_text_differs"
    return "right_shape_wrong_values" if same_shape(expected, predicted) else "wrong_shape"


def state_class(expected: Any, predicted: Any, predicted_paths: Iterable[str], true_paths: Iterable[str],
                equal: Any = json_equal) -> str:
    """The class of a failed next state that was computed (rules 3-9 of the state table); ``equal`` is the
    tolerant comparison to use (``json_equal`` or one that skips shared subtrees, with the same keywords)."""
    if equal(predicted, expected, json_strings=True):
        return "formatting_only"
    if equal(predicted, expected, numeric=True):
        return "float_rounding_only"
    p, t = set(predicted_paths), set(true_paths)
    if not p:
        return "predicted_no_change"
    if p == t:
        return "right_paths_wrong_values"
    if p < t:
        return "missed_changes"
    if t < p:
        return "spurious_changes"
    return "missed_and_spurious"


def shared_json_equal(a: Any, b: Any, **tolerance: bool) -> bool:
    """``json_equal`` with its tolerance, skipping the subtrees two states share (states of megabytes)."""
    return equal_sharing(a, b, lambda x, y: json_equal(x, y, **tolerance))


@dataclass
class Verdicts:
    """The tolerant scores and failure classes of one prediction (``None``: that side did not fail)."""

    fm_json: bool
    cm_numeric: bool
    observation: str | None
    state: str | None

    def to_json(self) -> dict[str, Any]:
        """Fields of a result row or step: ``fm_json``, ``cm_numeric``, ``failure``."""
        return {"fm_json": self.fm_json, "cm_numeric": self.cm_numeric,
                "failure": {"observation": self.observation, "state": self.state}}


def unparsed_verdicts() -> Verdicts:
    """An answer that could not be scored at all: both sides ``unparseable``."""
    return Verdicts(False, False, "unparseable", "unparseable")


def step_verdicts(fm: bool | None, cm: bool | None, fallback_class: str | None, observation: Any,
                  true_observation: Any, before: Any, after: Any, true_before: Any, true_after: Any,
                  env: str = "") -> Verdicts:
    """Verdicts of one simulated step in shadow mode (chained tier, rollout track, ``envsim simulate``): the
    simulator turned ``before`` into ``after`` where the real call turned ``true_before`` into ``true_after``.
    A fallback step (no usable answer: ``fallback_class`` is ``unparseable`` or ``patch_does_not_apply``) fails
    both sides with that class; a step whose tracked state already differed before it is ``carried_divergence``."""
    if fallback_class is not None:
        return Verdicts(False, False, fallback_class, fallback_class)
    obs = None if fm else observation_class(true_observation, observation, env)
    if cm:
        return Verdicts(bool(fm) or obs == "formatting_only", True, obs, None)
    try:
        if not same_json_shared(before, true_before):
            state = "carried_divergence"
        else:
            state = state_class(true_after, after, changed_paths(before, after, strictly_equal_shared),
                                changed_paths(true_before, true_after, strictly_equal_shared), equal=shared_json_equal)
    except (RecursionError, ValueError, TypeError):
        state = "patch_does_not_apply"
    return Verdicts(bool(fm) or obs == "formatting_only", state == "float_rounding_only", obs, state)


def row_class(row: Mapping[str, Any], side: str) -> str:
    """The class a result row (or step) names for ``side``, ``unclassified`` when it names none."""
    failure = row.get("failure")
    name = failure.get(side) if isinstance(failure, Mapping) else None
    return name if isinstance(name, str) else UNCLASSIFIED


class FailureClassCounter:
    """Running counts of failure classes over scored rows (or steps), overall and per group.

    ``add(row, groups)`` counts a row that failed FM under ``observation`` and one that failed CM under
    ``state``; ``groups`` maps a grouping name (``stratum``, ``env``, ``tool``) to this row's value in it."""

    def __init__(self) -> None:
        self.overall: dict[str, Counter[str]] = {side: Counter() for side in SIDES}
        self.groups: dict[str, dict[str, dict[str, Counter[str]]]] = {}

    def add(self, row: Mapping[str, Any], groups: Mapping[str, Any] | None = None) -> None:
        """Count one scored row or step."""
        failed = [side for side, rate in zip(SIDES, ("fm", "cm")) if not row.get(rate)]
        for grouping, value in (groups or {}).items():
            counts = self.groups.setdefault(grouping, {}).setdefault(str(value), {s: Counter() for s in SIDES})
            for side in failed:
                counts[side][row_class(row, side)] += 1
        for side in failed:
            self.overall[side][row_class(row, side)] += 1

    @staticmethod
    def _plain(counts: Mapping[str, Counter[str]]) -> dict[str, dict[str, int]]:
        return {side: dict(sorted(counts[side].items(), key=lambda kv: (-kv[1], kv[0]))) for side in SIDES}

    def to_json(self) -> dict[str, dict[str, int]]:
        """``{"observation": {class: n}, "state": {class: n}}`` overall, most common first."""
        return self._plain(self.overall)

    def grouped(self, grouping: str) -> dict[str, dict[str, dict[str, int]]]:
        """The counts of one grouping: group value -> ``{"observation": ..., "state": ...}``, by value."""
        return {value: self._plain(counts) for value, counts in sorted(self.groups.get(grouping, {}).items())}


def row_groups(row: Mapping[str, Any]) -> dict[str, str]:
    """The groupings of a one-step result row: its stratum, environment and ``env.tool``."""
    env = str(row.get("env"))
    return {"stratum": str(row.get("stratum")), "env": env, "tool": f"{env}.{row.get('tool')}"}


def summary_fields(rows: Iterable[Mapping[str, Any]], groups: Any = row_groups) -> dict[str, Any]:
    """The ``summary.json`` fields over scored rows: ``failure_classes`` and ``failure_classes_by_<grouping>``."""
    counter = FailureClassCounter()
    for row in rows:
        counter.add(row, groups(row))
    return counter_fields(counter)


def counter_fields(counter: FailureClassCounter) -> dict[str, Any]:
    """``summary_fields`` of a counter already filled."""
    fields: dict[str, Any] = {"failure_classes": counter.to_json()}
    for grouping in counter.groups:
        fields[f"failure_classes_by_{grouping}"] = counter.grouped(grouping)
    return fields


def label(side: str, name: str) -> str:
    """The words for a class (the name itself when it is not one of ours)."""
    return (OBSERVATION_CLASSES if side == "observation" else STATE_CLASSES).get(name, name.replace("_", " "))


def markdown(fields: Mapping[str, Any], groupings: Iterable[str] = ("stratum", "env", "tool")) -> str:
    """Failure classes as Markdown: the overall counts per side, then one table per grouping."""
    overall = fields.get("failure_classes") or {}
    lines = ["### Failure classes", "",
             "Each failed sample counted once per side that failed (rules: `envsim.evaluation.scoring.failure_classes`).", ""]
    for side in SIDES:
        counts = overall.get(side) or {}
        total = sum(counts.values())
        lines.append(f"**{side}** ({total} failures): " + ("; ".join(f"{n}× {label(side, c)}" for c, n in
                                                                         counts.items()) or "none"))
        lines.append("")
    for grouping in groupings:
        groups = fields.get(f"failure_classes_by_{grouping}") or {}
        if not groups:
            continue
        lines += [f"#### By {grouping}", "", "| group | observation failures | state failures |", "|---|---|---|"]
        for value, counts in groups.items():
            cells = [", ".join(f"{n}× {c}" for c, n in (counts.get(side) or {}).items()) or "–" for side in SIDES]
            lines.append(f"| {value} | {cells[0]} | {cells[1]} |")
        lines.append("")
    return "\n".join(lines)


def console_lines(fields: Mapping[str, Any], limit: int = 4) -> list[str]:
    """Console lines: the most common classes of each side (none when nothing failed)."""
    overall = fields.get("failure_classes") or {}
    lines = []
    for side in SIDES:
        counts = overall.get(side) or {}
        if counts:
            top = list(counts.items())[:limit]
            more = len(counts) - len(top)
            lines.append(f"{side} failures ({sum(counts.values())}): "
                         + "; ".join(f"{n}× {label(side, c)}" for c, n in top) + (f"; +{more} more" if more else ""))
    return lines

"""Scorers, one concern each: FM (observation), CM (exact next state), CM-lenient and CM-original (the
original benchmark's rule, ``original_rule.py``), and Δ precision/recall/F1 over changed paths.
Bounded and exception-free on hostile predictions."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

import jsonpatch
import jsonpointer

from envsim.delta import canonical_json, changed_paths, same_json
from envsim.evaluation.scoring.failure_classes import (Verdicts, observation_class, shared_json_equal, state_class,
                                               unparsed_verdicts)
from envsim.evaluation.scoring.original_rule import original_rule_verdicts
from envsim.evaluation.scoring.parsing import ParsedAnswer
from envsim.evaluation.scoring.shared_states import (CopyOnWrite, canonical_order_after, same_json_shared,
                                            strictly_equal_shared, unshare_op)
from envsim.patch_bounds import MAX_GROWTH_CHARS, CopyBudget, PatchBoundError, nesting_problem  # noqa: F401 - re-exported


@dataclass
class SampleScore:
    """Scores of one prediction against one benchmark record."""

    parsed: bool
    fm: bool
    cm: bool
    cm_lenient: bool
    delta_precision: float
    delta_recall: float
    delta_f1: float
    reason: str | None = None
    cm_original: bool = False  # the original script's verdict, bug for bug (evaluation/scoring/original_rule.py)
    fm_json: bool | None = None     # tolerant scores and failure classes (evaluation/scoring/failure_classes.py)
    cm_numeric: bool | None = None
    failure: dict[str, str | None] | None = None

    def __post_init__(self) -> None:
        if not self.parsed and self.failure is None:  # nothing could be compared: both sides unparseable
            self.fm_json, self.cm_numeric, self.failure = False, False, unparsed_verdicts().to_json()["failure"]

    def with_verdicts(self, verdicts: Verdicts) -> "SampleScore":
        """This score with the tolerant scores and failure classes of ``verdicts``."""
        self.fm_json, self.cm_numeric = verdicts.fm_json, verdicts.cm_numeric
        self.failure = verdicts.to_json()["failure"]
        return self

    def to_json(self) -> dict[str, Any]:
        """Plain dict for results.jsonl (``dataclasses.asdict``'s result, without its deep copy of every field)."""
        row = {name: getattr(self, name) for name in _SCORE_FIELDS}
        if self.failure is not None:
            row["failure"] = dict(self.failure)
        return row


#: The fields of ``SampleScore``, in order (its rows' keys).
_SCORE_FIELDS = tuple(field.name for field in fields(SampleScore))


def apply_prediction(state: dict[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
    """Apply a predicted patch op by op with a bound on growth (``copy`` bombs); raises ``ValueError``.

    Values written by add/replace come from the answer, whose length the parser bounds; only
    ``copy`` can amplify, so the size a copy would add is checked before the copy is made. ``state`` is
    never modified: containers on the paths the ops change are copied, the rest is shared with it
    (``shared_states.CopyOnWrite``), so a patch on a megabyte state costs what its paths cost. Keys the
    patch adds take their sorted place (``canonical_order_after``): a state in canonical key order, as the
    executor leaves every state, stays in it (τ-bench tools dump records as they are ordered).
    """
    doc = CopyOnWrite(state)
    budget = CopyBudget.for_state(state)  # the growth bound stored patches share (envsim.patch_bounds)
    for i, op in enumerate(patch):
        deep = nesting_problem(op, doc.document)  # paths stack levels: a state past the decoder's depth is refused
        if deep:
            raise ValueError(f"patch op {i} ({str(op.get('op'))[:10]} {str(op.get('path'))[:40]}…) {deep}")
        if op.get("op") == "copy":
            found, value = _value_at(doc.document, op.get("from", ""))
            try:
                if found:
                    budget.charge_value(value)
            except PatchBoundError:
                raise  # "patch grows the state beyond N characters"
            except ValueError:
                raise ValueError(f"patch op {i} copies from an invalid location") from None
        try:
            unshare_op(doc, op)
            doc.document = jsonpatch.JsonPatch([op]).apply(doc.document, in_place=True)
            canonical_order_after(doc, op)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            where = f"patch op {i} ({op.get('op')} {str(op.get('path'))[:60]})"
            raise ValueError(f"{where} does not apply: {str(exc)[:80]}") from None
        except (TypeError, KeyError, IndexError, AttributeError, RecursionError, OverflowError) as exc:
            raise ValueError(f"patch op {i} does not apply: {type(exc).__name__}") from None
    if not isinstance(doc.document, dict):
        raise ValueError("patch replaced the state with a non-object")
    return doc.document


def _value_at(document: Any, path: str) -> tuple[bool, Any]:
    try:
        return True, jsonpointer.resolve_pointer(document, path)
    except (jsonpointer.JsonPointerException, TypeError, KeyError, IndexError):
        return False, None


def _prf(predicted: set[str], truth: set[str]) -> tuple[float, float, float]:
    if not predicted and not truth:
        return 1.0, 1.0, 1.0
    hits = len(predicted & truth)
    precision = hits / len(predicted) if predicted else 0.0
    recall = hits / len(truth) if truth else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def true_changed_paths(record: dict[str, Any]) -> list[str]:
    """Changed paths of a record (from its stored labels, or recomputed from its states: ``compute_delta``'s
    paths, walking only the subtrees the two states do not share)."""
    if "changed_paths" in record:
        return list(record["changed_paths"])
    return list(changed_paths(record["state"], record["next_state"], strictly_equal_shared))


def _observation_verdict(record: dict[str, Any], answer: ParsedAnswer, fm: bool) -> tuple[bool, str | None]:
    """FM-json and the observation's failure class (``None`` when FM holds)."""
    if fm:
        return True, None
    name = observation_class(record["observation"], answer.observation, str(record.get("env", "")))
    return name == "formatting_only", name


def score_prediction(record: dict[str, Any], answer: ParsedAnswer) -> SampleScore:
    """Score a parsed answer against a record; an unparseable answer scores zero with its reason. Every score
    carries FM-json, CM-numeric and the failure classes (``evaluation.scoring.failure_classes``)."""
    if not answer.ok:
        return SampleScore(False, False, False, False, 0.0, 0.0, 0.0, reason=answer.error)
    fm = same_json(answer.observation, record["observation"]) or (
        answer.feedback_text is not None and same_json(answer.feedback_text, record["observation"]))
    fm_json, obs_class = _observation_verdict(record, answer, fm)
    reason = None
    unchanged = answer.patch == []  # "no change": the prediction is the state itself, its Δ has no path
    try:
        predicted = (answer.next_state if answer.patch is None
                     else record["state"] if unchanged else apply_prediction(record["state"], answer.patch))
    except ValueError as exc:
        lenient, original = original_rule_verdicts(record, answer)
        return SampleScore(True, fm, False, lenient, 0.0, 0.0, 0.0, reason=str(exc), cm_original=original
                           ).with_verdicts(Verdicts(fm_json, False, obs_class, "patch_does_not_apply"))
    lenient, original = original_rule_verdicts(
        record, answer, strictly_applied=predicted if answer.patch else None)
    truth = true_changed_paths(record)
    try:
        cm = same_json_shared(predicted, record["next_state"])
        predicted_paths = (set(truth) if cm else set() if unchanged
                           else set(changed_paths(record["state"], predicted, strictly_equal_shared)))
        state = None if cm else state_class(record["next_state"], predicted, predicted_paths, truth,
                                            equal=shared_json_equal)
    except (RecursionError, ValueError, TypeError) as exc:
        return SampleScore(True, fm, False, lenient, 0.0, 0.0, 0.0,
                           reason=f"prediction not comparable: {type(exc).__name__}", cm_original=original
                           ).with_verdicts(Verdicts(fm_json, False, obs_class, "patch_does_not_apply"))
    precision, recall, f1 = _prf(predicted_paths, set(truth))
    if not cm:
        reason = "next state differs" if fm else "observation and next state differ"
    elif not fm:
        reason = "observation differs"
    return SampleScore(True, fm, cm, lenient, precision, recall, f1, reason=reason, cm_original=original
                       ).with_verdicts(Verdicts(fm_json, cm or state == "float_rounding_only", obs_class, state))

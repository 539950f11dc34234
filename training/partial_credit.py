"""Partial credit for a simulator answer: how much of the true patch and observation it got right.

FM and CM are all-or-nothing. For GRPO that is a problem on state-changing calls: a small policy rarely gets a
whole multi-field patch right, so every completion of a group scores 0, the group has no variance and nothing
trains (the 2026-11-27 acceptance run converged on empty patches that way). Partial credit gives such groups a
gradient towards the right answer:

* **patch-op F1**: the predicted patch operations against the record's true patch, each operation compared as a
  whole (op, path, value, from) in canonical JSON, duplicates counted (a multiset). Both sides first write their
  end-of-list appends as ``<list>/-`` (``training.patch_form.dash_appends`` on the record's state), so
  ``/items/3`` and ``/items/-`` on a 3-item list are the same operation, as they are for CM. A predicted ``test``
  that holds is left out (it changes nothing: targets written with ``replace_tests`` have them); one that fails
  counts as a wrong operation. An empty prediction for an empty truth scores 1, an empty prediction for a change
  0. An answer that gives a next state instead of a patch gets the scorer's changed-path F1
  (``SampleScore.delta_f1``).
* **observation F1**: the observation's leaves as (JSON pointer, value) pairs against the true observation's;
  a scalar observation is one leaf at ``""``.

``partial = (patch_op_f1 + observation_f1) / 2``; 0 for an answer that does not parse.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable

from envsim.evaluation.scoring.parsing import ParsedAnswer
from envsim.training.patch_form import dash_appends, without_passing_tests


def canonical(value: Any) -> str:
    """Canonical JSON text of a value (sorted keys, no spaces; ``1`` and ``1.0`` stay apart, as CM keeps them)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def multiset_f1(predicted: Iterable[str], truth: Iterable[str]) -> float:
    """F1 of two multisets of strings (1.0 when both are empty)."""
    p, t = Counter(predicted), Counter(truth)
    if not p and not t:
        return 1.0
    hits = sum((p & t).values())
    if not hits:
        return 0.0
    precision, recall = hits / sum(p.values()), hits / sum(t.values())
    return 2 * precision * recall / (precision + recall)


def patch_op_f1(predicted: list[Any], truth: list[Any]) -> float:
    """F1 of predicted against true patch operations, each compared whole (see the module docstring)."""
    return multiset_f1((canonical(op) for op in predicted), (canonical(op) for op in truth))


def leaves(value: Any, pointer: str = "") -> Iterable[str]:
    """``pointer=value`` texts of every leaf of a JSON value (an empty object or list is a leaf)."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from leaves(item, f"{pointer}/{index}")
    else:
        yield f"{pointer}={canonical(value)}"


def observation_f1(predicted: Any, truth: Any) -> float:
    """F1 of the observation's leaves against the true observation's."""
    return multiset_f1(leaves(predicted), leaves(truth))


def partial_credit(record: dict[str, Any], answer: ParsedAnswer, delta_f1: float = 0.0) -> float:
    """``(patch-op F1 + observation F1) / 2`` of a parsed answer against its record; 0 when it did not parse.
    ``delta_f1``: the scorer's changed-path F1, used for answers that give a next state instead of a patch."""
    if not answer.ok:
        return 0.0
    if answer.patch is None:
        patch = delta_f1
    else:
        predicted, truth = list(answer.patch), list(record.get("patch") or [])
        if "state" in record:
            predicted = dash_appends(record["state"], without_passing_tests(record["state"], predicted))
            truth = dash_appends(record["state"], truth)
        patch = patch_op_f1(predicted, truth)
    return (patch + observation_f1(answer.observation, record["observation"])) / 2

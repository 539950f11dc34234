"""The form of the patch an SFT target (and GRPO's partial credit) writes an append in.

Construction stores each transition's patch with explicit list indices (``compute_delta``): an item appended
to a 3-item list is ``{"op": "add", "path": "/audit_log/3", ...}``. The prompt tells the model to append with
``"/audit_log/-"`` (RFC 6902's end-of-list index), and both forms give the same next state, but the indexed one
asks the model to count the list, which a view may not even show whole. A small model trained on indexed
targets gets the item right and the index wrong (the 2026-11-28 acceptance run's medium misses).

``dash_appends`` rewrites every ``add`` whose index equals the length of its list at that point of the patch as
``<list>/-``. The rewritten patch is checked to give the same next state as the stored one; where it would not
(or the stored patch does not apply), the stored patch is returned unchanged.

The target also fixes the order of each operation's keys (``KEY_ORDERS``). Construction writes ``op`` first, as
RFC 6902's examples do, so a model commits to ``replace`` or ``add`` before it has written where; ``path-first``
writes ``path`` (and ``from``) before ``op``, so the operation follows the location already written (an append
to ``/items/-`` is an ``add``; RFC 6902 allows ``-`` for nothing else). JSON objects are unordered, so both forms
are the same patch to every scorer; what changes is the order a model learns to write them in, and a decoder
under a JSON Schema must ask for the same order (``--response-format json-schema-path-first``).

``replace_tests="shown"`` writes, before each ``replace`` of a scalar the prompt shows, an RFC 6902 ``test`` of
its current value (``{"op": "test", "path": P, "value": <old>}``). Most changes compute the new value from the
old one (a counter, a tally, a status after a check); the test makes the model copy the old value out of the
prompt right before it writes the new one, in the answer's own text. A test changes nothing, so the patch gives
the same next state, and every RFC 6902 implementation applies it (a wrong old value makes the patch fail, as
a wrong new value would fail CM). A value the prompt does not show (outside the view) gets no test: the model
could not copy it.

``replace_tests="shown+read-keys"`` also starts the patch with a test of each value the call looked up and then
used as a key (the voter's precinct and party before the tally at ``/precincts/<precinct>/tally/<party>`` changes;
``training/call_trace.py``), ``"shown+reads"`` with a test of every scalar it read by key; both only where the
prompt shows the value, and a later replace test of a value already tested up front is left out.
``"shown+change-read-keys"`` is ``shown+read-keys`` on calls whose patch is not empty (read-only calls and
failures keep ``[]``).
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer

from envsim.delta import same_json
from envsim.evaluation.prompting.answer_schema import PATH_FIRST_KEYS

#: How an SFT target writes appends: ``index`` as stored (``/items/3``), ``dash`` as ``/items/-``.
APPEND_FORMS: tuple[str, ...] = ("index", "dash")
#: The order of an SFT target operation's keys: ``op-first`` as stored (``op``, ``path``, ...), ``path-first``.
KEY_ORDERS: tuple[str, ...] = ("op-first", "path-first")
#: Whether an SFT target tests the old value of a replaced scalar first: ``none`` (as stored), ``shown``.
#: The order of an SFT target's operations: ``stored`` (sorted by path, as construction stores them) or ``writes``
#: (the order the call first wrote each path, ``training/call_trace.py``).
OP_ORDERS: tuple[str, ...] = ("stored", "writes")
#: ``shown+read-keys`` / ``shown+reads``: ``shown``, after tests of the values the call reads first (its hops / all).
#: ``shown+change-read-keys``: ``shown+read-keys`` on calls that change the state only (a read-only call's target stays
#: ``[]``: a read tool that looks records up by ids it read would otherwise ask for copies that change nothing).
REPLACE_TESTS: tuple[str, ...] = ("none", "shown", "shown+read-keys", "shown+reads", "shown+change-read-keys")

_PATCH_ERRORS = (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, KeyError, IndexError, TypeError,
                 ValueError, AttributeError)


def _append_parent(doc: Any, op: Any) -> str | None:
    """The list pointer of an ``add`` that appends at the end of a list of ``doc``, else None."""
    if not (isinstance(op, dict) and op.get("op") == "add" and isinstance(op.get("path"), str)):
        return None
    parent, _, last = op["path"].rpartition("/")
    if not last.isdigit() or (len(last) > 1 and last.startswith("0")):
        return None
    try:
        target = jsonpointer.JsonPointer(parent).resolve(doc)
    except _PATCH_ERRORS:
        return None
    return parent if isinstance(target, list) and int(last) == len(target) else None


def dash_appends(state: Any, patch: list[Any]) -> list[Any]:
    """``patch`` with each end-of-list ``add`` written as ``<list>/-``; the stored patch where that would change
    the next state or the stored patch does not apply to ``state``."""
    if not any(isinstance(op, dict) and op.get("op") == "add" for op in patch):
        return list(patch)
    return _rewritten(state, patch, lambda doc, op: [op if (parent := _append_parent(doc, op)) is None
                                                     else {**op, "path": f"{parent}/-"}])


def _rewritten(state: Any, patch: list[Any], rewrite: Any) -> list[Any]:
    """``patch`` with each operation replaced by ``rewrite(doc, op)`` (a list of operations; ``doc``: the state as
    the stored patch leaves it just before ``op``); the stored patch where it does not apply to ``state`` or the
    rewritten one would not give the same next state."""
    doc = copy.deepcopy(state)
    rewritten: list[Any] = []
    try:
        for op in patch:
            rewritten += rewrite(doc, op)
            doc = jsonpatch.apply_patch(doc, [op], in_place=True)
        same = same_json(jsonpatch.apply_patch(state, rewritten, in_place=False), doc)
    except _PATCH_ERRORS:
        return list(patch)
    return rewritten if same else list(patch)


def check_append_form(form: Any) -> str:
    """``form`` when it is one of ``APPEND_FORMS``; a ``ValueError`` naming them otherwise."""
    if form not in APPEND_FORMS:
        raise ValueError(f"append_form must be one of {', '.join(APPEND_FORMS)}, not {form!r}")
    return form


def check_key_order(order: Any) -> str:
    """``order`` when it is one of ``KEY_ORDERS``; a ``ValueError`` naming them otherwise."""
    if order not in KEY_ORDERS:
        raise ValueError(f"patch_key_order must be one of {', '.join(KEY_ORDERS)}, not {order!r}")
    return order


def check_op_order(order: Any) -> str:
    """``order`` when it is one of ``OP_ORDERS``; a ``ValueError`` naming them otherwise."""
    if order not in OP_ORDERS:
        raise ValueError(f"patch_op_order must be one of {', '.join(OP_ORDERS)}, not {order!r}")
    return order


def check_replace_tests(choice: Any) -> str:
    """``choice`` when it is one of ``REPLACE_TESTS``; a ``ValueError`` naming them otherwise."""
    if choice not in REPLACE_TESTS:
        raise ValueError(f"replace_tests must be one of {', '.join(REPLACE_TESTS)}, not {choice!r}")
    return choice


def _scalar_at(doc: Any, path: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``path`` resolves in ``doc`` to a JSON scalar (not an object or list)."""
    found = _value_at(doc, path)
    if found is None:
        return False, None
    return not isinstance(found[0], (dict, list)), found[0]


def with_replace_tests(state: Any, shown: Any, patch: list[Any]) -> list[Any]:
    """``patch`` with ``{"op": "test", "path": P, "value": old}`` before each ``replace`` of ``P`` whose value at
    that point of the patch is a scalar that ``shown`` (what the prompt shows of ``state``: the view's partial
    state, or ``state`` itself) holds at ``P`` unchanged. The stored patch where it does not apply to ``state``
    or the tested patch would not give the same next state."""
    if not any(isinstance(op, dict) and op.get("op") == "replace" for op in patch):
        return list(patch)

    def tested(doc: Any, op: Any) -> list[Any]:
        if isinstance(op, dict) and op.get("op") == "replace" and isinstance(op.get("path"), str):
            found, old = _scalar_at(doc, op["path"])
            visible, seen = _scalar_at(shown, op["path"])
            if found and visible and same_json(old, seen):
                return [{"op": "test", "path": op["path"], "value": old}, op]
        return [op]

    return _rewritten(state, patch, tested)


def without_passing_tests(state: Any, patch: list[Any]) -> list[Any]:
    """``patch`` without the ``test`` operations that hold on ``state`` at their point of the patch (they assert,
    they change nothing: GRPO's partial credit compares changes); a failing test stays, as the wrong operation it
    is. The patch unchanged when it does not apply up to a test."""
    if not any(isinstance(op, dict) and op.get("op") == "test" for op in patch):
        return list(patch)
    doc = copy.deepcopy(state)
    kept: list[Any] = []
    try:
        for op in patch:
            if isinstance(op, dict) and op.get("op") == "test":
                found = _value_at(doc, op.get("path"))
                if found is not None and "value" in op and same_json(found[0], op["value"]):
                    continue
                kept.append(op)
                continue
            kept.append(op)
            doc = jsonpatch.apply_patch(doc, [op], in_place=True)
    except _PATCH_ERRORS:
        return list(patch)
    return kept


def _value_at(doc: Any, path: Any) -> tuple[Any] | None:
    """``(value,)`` at ``path`` in ``doc``, or None where it does not resolve."""
    if not isinstance(path, str):
        return None
    try:
        return (jsonpointer.JsonPointer(path).resolve(doc),)
    except _PATCH_ERRORS:
        return None


def order_keys(patch: list[Any], order: str) -> list[Any]:
    """``patch`` with each operation's keys in ``order`` (``op-first``: unchanged); values are not touched."""
    if check_key_order(order) == "op-first":
        return list(patch)
    return [{**{k: op[k] for k in PATH_FIRST_KEYS if k in op},  # keys outside RFC 6902 keep their place after
             **{k: v for k, v in op.items() if k not in PATH_FIRST_KEYS}}
            if isinstance(op, dict) else op for op in patch]


def in_write_order(record: dict[str, Any], patch: list[Any]) -> list[Any]:
    """``patch`` (as stored, list indices explicit) with its operations in the order ``record``'s call first wrote
    each path (an operation under or over a written path takes that write's place; one the trace does not name
    goes last; ties keep their stored order); ``patch`` where the call cannot be traced here or the reordered
    patch would not give the same next state."""
    from envsim.envs.registry import get_env
    from envsim.training.call_trace import call_writes

    if len(patch) < 2:
        return list(patch)
    try:
        writes = call_writes(get_env(record["env"]), record["state"], record["action"])
    except (KeyError, ValueError):
        return list(patch)

    def first_write(op: Any) -> int:
        path = op.get("path") if isinstance(op, dict) else None
        if isinstance(path, str):
            for n, written in enumerate(writes):
                if path == written or path.startswith(written + "/") or written.startswith(path + "/"):
                    return n
        return len(writes)

    ordered = sorted(patch, key=first_write)
    return ordered if ordered == list(patch) else _if_same_next_state(record["state"], ordered, patch)


def target_patch(record: dict[str, Any], form: str = "index", key_order: str = "op-first",
                 replace_tests: str = "none", shown: Any = None, op_order: str = "stored") -> list[Any]:
    """The patch an SFT target gives for ``record``: its operations in ``op_order`` (``stored``: sorted by path;
    ``writes``: the call's write order), appends in ``form`` (``index``: as stored), with a test of each replaced
    scalar ``shown`` holds when ``replace_tests`` is ``shown`` (``shown``: what the prompt shows of the state, the
    whole state when None; ``shown+read-keys`` / ``shown+reads`` also test the values the call reads first), each
    operation's keys in ``key_order`` (``op-first``: as stored)."""
    check_append_form(form)
    patch = list(record.get("patch") or [])
    if check_op_order(op_order) == "writes":
        patch = in_write_order(record, patch)
    patch = patch if form == "index" else dash_appends(record["state"], patch)
    if check_replace_tests(replace_tests) != "none":
        shown = record["state"] if shown is None else shown
        patch = with_replace_tests(record["state"], shown, patch)
        if replace_tests != "shown" and (patch or replace_tests != "shown+change-read-keys"):
            patch = with_read_tests(record, shown, patch, keys_only=replace_tests != "shown+reads")
    return order_keys(patch, key_order)


def with_read_tests(record: dict[str, Any], shown: Any, patch: list[Any], keys_only: bool) -> list[Any]:
    """``patch`` after a ``test`` of each value ``record``'s call reads by key (``keys_only``: the values it used
    as keys) that ``shown`` holds, without the later tests those make redundant; ``patch`` where there is none,
    the environment is unknown here, or the tested patch would not give the same next state."""
    from envsim.envs.registry import get_env
    from envsim.training.call_trace import call_reads

    try:
        env_class = get_env(record["env"])
    except (KeyError, ValueError):
        return list(patch)
    reads = [(path, value) for path, value in call_reads(env_class, record["state"], record["action"], keys_only)
             if (seen := _value_at(shown, path)) is not None and same_json(seen[0], value)]
    if not reads:
        return list(patch)
    tested = without_repeated_tests([{"op": "test", "path": path, "value": value} for path, value in reads]
                                    + list(patch))
    return _if_same_next_state(record["state"], tested, patch)


def _if_same_next_state(state: Any, rewritten: list[Any], patch: list[Any]) -> list[Any]:
    """``rewritten`` when it gives ``state`` the next state ``patch`` gives; ``patch`` otherwise or when either
    does not apply."""
    try:
        same = same_json(jsonpatch.apply_patch(state, rewritten, in_place=False),
                         jsonpatch.apply_patch(state, list(patch), in_place=False))
    except _PATCH_ERRORS:
        return list(patch)
    return rewritten if same else list(patch)


def without_repeated_tests(patch: list[Any]) -> list[Any]:
    """``patch`` without each ``test`` of a path and value already tested with nothing written there since."""
    tested: dict[str, Any] = {}
    kept: list[Any] = []
    for op in patch:
        if not isinstance(op, dict) or not isinstance(op.get("path"), str):
            kept.append(op)
            continue
        if op.get("op") == "test":
            if op["path"] in tested and same_json(tested[op["path"]], op.get("value")):
                continue
            tested[op["path"]] = op.get("value")
        else:
            touched = [p for p in (op["path"], op.get("from")) if isinstance(p, str)]
            tested = {p: v for p, v in tested.items()
                      if not any(p == t or p.startswith(t + "/") or t.startswith(p + "/") for t in touched)}
        kept.append(op)
    return kept

"""Views verified on the record they belong to (construction time only; eval never runs the environment).

The static analysis may miss a read (code it cannot follow, an object model it cannot see through). So
construction checks every view: the real call runs on the view alone and must give the recorded
observation, and its patch (full-state paths) applied to the full state must give the recorded next state
(a dict the call only counts is run with stand-ins for the entries the view leaves out: ``runnable_state``; a list
of records shown in part is run as the list of its shown records and the patch mapped back: ``partial_lists``).
A view that fails is widened step by step - whole records, whole top-level collections, the whole state
(``envsim.envs.views.view.WIDENINGS``) - until it reproduces the record. The widening chosen is stored on the
record (``view``: ``{"widening": null | "records" | "collections" | "state", "verified": bool}``) so that
``eval``'s ``mdp-view`` prompt renders exactly the verified view (``compute_view(..., widening=...)``), with a
note saying it was widened. ``verified`` is false only when not even the whole state reproduced the record
(a tool that is not deterministic): such records are counted, never hidden.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from envsim.delta import canonical_json
from envsim.envs.views.partial_lists import Mapping, compact, full_patch
from envsim.envs.views.view import WIDENINGS, View, compute_view

#: The record field construction writes (see the module docstring).
VIEW_FIELD = "view"


@dataclass(frozen=True)
class ViewCheck:
    """The outcome of verifying one record's view."""

    widening: str | None   # None: the analysed view reproduced the record as it is
    verified: bool         # False: not even the whole state reproduced it
    problem: str = ""      # why the narrowest failing view failed ("" when the analysed view passed)
    rows: dict[str, Any] | None = None  # the table rows the call's SQL read (``sql_reads``), when they did

    def to_json(self) -> dict[str, Any]:
        """The record field ``view`` (``rows`` only when the view is the traced rows)."""
        out: dict[str, Any] = {"widening": self.widening, "verified": self.verified}
        if self.rows is not None:
            out["rows"] = self.rows
        return out


def record_widening(record: dict[str, Any]) -> str | None:
    """The widening construction stored on a record (``None``: none, or a record built before verification)."""
    stored = record.get(VIEW_FIELD)
    widening = stored.get("widening") if isinstance(stored, dict) else None
    return widening if widening in WIDENINGS else None


def record_rows(record: dict[str, Any]) -> dict[str, Any] | None:
    """The traced table rows construction stored on a record (``view.rows``), if any."""
    stored = record.get(VIEW_FIELD)
    rows = stored.get("rows") if isinstance(stored, dict) else None
    return rows if isinstance(rows, dict) else None


def _schema(record: dict[str, Any]) -> dict[str, Any] | None:
    name = record["action"]["name"]
    return next((t for t in record.get("tools") or [] if t.get("function", t).get("name") == name), None)


def view_with(record: dict[str, Any], widening: str | None, rows: dict[str, Any] | None = None) -> View:
    """The view of a record's call (from its state, action, code and schema), widened to ``widening`` (or the
    traced table ``rows``)."""
    action = record["action"]
    return compute_view(record["state"], action["name"], action.get("arguments") or {}, record.get("code") or "",
                        _schema(record), widening=widening, rows=rows)


def stored_view(record: dict[str, Any]) -> View:
    """The view construction verified for a record: the analysed view with the stored widening (or rows)."""
    return view_with(record, record_widening(record), record_rows(record))


def runnable_state(view: View, state: Any) -> Any:
    """The view's state as the call is run on it: a dict whose number of entries the call reads but whose entries
    the view leaves out (``View.sizes``; the notes say how many) gets that many stand-ins, so that ``len`` counts
    as on the full state. Stand-ins have keys no real entry has and are all copies of one left-out entry (an
    object model validates them): a call that reads their keys or contents, which the view does not show, gives
    a result that differs from the record's, and the view fails verification as it should."""
    if not view.sizes:
        return view.state
    import copy

    out = copy.deepcopy(view.state)
    for path, count in view.sizes.items():
        node, full = out, state
        for key in path:
            node, full = node[key], full[key]
        left_out = [k for k in full if k not in node]
        if not left_out:
            continue
        template = full[left_out[0]]
        i = 0
        while len(node) < count:
            key = f"<stand-in {i}>"
            if key not in full:  # never a real key
                node[key] = copy.deepcopy(template)
            i += 1
    return out


def runnable(view: View, state: Any) -> tuple[Any, Mapping]:
    """The view's state as the call runs on it (``runnable_state``, lists shown in part compacted:
    ``partial_lists.compact``) and the mapping that puts the patch it makes in full-state paths."""
    return compact(runnable_state(view, state), view.lists)


def reproduction_problem(env_class: type, record: dict[str, Any], view_state: Any,
                         mapping: Mapping | None = None) -> str | None:
    """Why running the record's call on ``view_state`` alone does not reproduce the record (``None``: it does);
    ``mapping`` puts the patch in full-state paths (lists shown in part, ``partial_lists.full_patch``)."""
    import jsonpatch

    from envsim.envs.sandbox import execute

    try:
        transition = execute(env_class, view_state, record["action"])
        patch = full_patch(transition.patch, mapping or {})
    except Exception as exc:  # noqa: BLE001 - a view the executor rejects is a failed view, with its reason
        return f"the call on the view raised {type(exc).__name__}: {exc}"
    if canonical_json(transition.observation) != canonical_json(record["observation"]):
        return f"observation differs: {canonical_json(transition.observation)[:200]}"
    if canonical_json(patch) == canonical_json(record["patch"]):
        return None
    try:
        after = jsonpatch.apply_patch(record["state"], patch)
    except Exception as exc:  # noqa: BLE001 - a patch that does not apply to the full state
        return f"the view's patch does not apply to the full state ({type(exc).__name__}: {exc})"
    if canonical_json(after) != canonical_json(record["next_state"]):
        return "the view's patch applied to the full state does not give the recorded next state"
    return None


def check_view(env_class: type, record: dict[str, Any]) -> ViewCheck:
    """Verify the record's analysed view and widen it step by step until it reproduces the record. A call of a
    class that reads its state through SQLite is first shown the rows its SQL reads (``sql_reads``)."""
    problem = ""
    last = None
    rows = _sql_rows(env_class, record)
    if rows is not None:
        view = view_with(record, None, rows)
        found = reproduction_problem(env_class, record, *compact(_counted_stand_ins(env_class, view, record),
                                                                 view.lists))
        if found is None:
            return ViewCheck(None, True, "", rows)
        problem = f"traced rows: {found}"
    for widening in (None, *WIDENINGS):
        view = view_with(record, widening)
        text = canonical_json(view.state)
        if text == last:  # widening changed nothing: same verdict
            continue
        last = text
        found = reproduction_problem(env_class, record, *runnable(view, record["state"]))
        if found is None:
            return ViewCheck(widening, True, problem)
        problem = problem or found
    return ViewCheck("state", False, problem)


def _counted_stand_ins(env_class: type, view: View, record: dict[str, Any]) -> Any:
    """A traced-rows view's state with each table the call counts filled up to its number of rows, as the executor
    fills it from the prompt (``evaluation.baselines.executor_stand_ins``): copies of a shown row, else of the row
    the call itself adds when run on the view as shown, under keys no real row has."""
    if not view.sizes:
        return view.state
    from envsim.envs.sandbox.executor import execute

    out = copy.deepcopy(view.state)
    added = None
    for path, count in view.sizes.items():
        node = out[path[0]]
        template = next(iter(node.values()), None)
        if template is None:
            if added is None:
                try:
                    added = execute(env_class, view.state, record["action"]).next_state
                except Exception:  # noqa: BLE001 - no template: the view fails verification as it stands
                    added = {}
            template = next((v for k, v in (added.get(path[0]) or {}).items() if k not in node), None)
        i = 0
        while template is not None and len(node) < count:
            key = f"<stand-in {i}>"
            if key not in record["state"][path[0]]:
                node[key] = copy.deepcopy(template)
            i += 1
    return out


def _sql_rows(env_class: type, record: dict[str, Any]) -> dict[str, Any] | None:
    """The rows the record's call reads through SQLite (``sql_reads.traced_rows``), for classes that use it."""
    from envsim.envs.views.sql_reads import traced_rows, uses_sqlite

    if not isinstance(record.get("state"), dict) or not uses_sqlite(env_class):
        return None
    return traced_rows(env_class, record["state"], record["action"])


def verify_record_view(env_class: type, record: dict[str, Any]) -> ViewCheck:
    """Check the record's view and store the outcome on it (field ``view``)."""
    check = check_view(env_class, record)
    record[VIEW_FIELD] = check.to_json()
    return check

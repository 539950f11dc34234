"""Oracle through views: the real tool run on a call's view alone, answered as a perfect simulator would.

If the view holds everything the call reads, running the tool on the view gives the true observation, and
the patch it makes (in full-state paths) turns the *full* state into the true next state: FM = CM = 100%
when scored against the full truth. A failure here is a view that lacks something the code needs.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from envsim.envs.views.view import View, compute_view

#: ``run(state) -> (observation, next_state)``: executes the record's call on a state it may mutate.
Runner = Callable[[dict[str, Any]], tuple[Any, Any]]


def record_schema(record: dict[str, Any]) -> dict[str, Any] | None:
    """The function schema of the record's tool, from its ``tools``."""
    name = record["action"]["name"]
    return next((t for t in record.get("tools") or [] if t.get("function", t).get("name") == name), None)


def view_of(record: dict[str, Any]) -> View:
    """The view of a record's call (from its state, action, code and schema only)."""
    from envsim.envs.views.verify import record_rows

    action = record["action"]
    return compute_view(record["state"], action["name"], action.get("arguments") or {}, record.get("code") or "",
                        record_schema(record), rows=record_rows(record))


def view_oracle_answer(record: dict[str, Any], run: Runner | None = None) -> dict[str, Any]:
    """``{"observation", "patch"}`` from executing the record's call on its view alone.

    ``run`` executes the call on a state (default: ``envsim.envs.sandbox.executor.execute`` of the record's
    registered environment); the patch is the Δ between the view and the state after the run, so its paths
    are full-state paths.
    """
    from envsim.delta import compute_delta
    from envsim.envs.views.partial_lists import compact, full_patch

    shown = view_of(record)
    view, mapping = compact(shown.state, shown.lists)
    if run is None:
        from envsim.envs.registry import get_env
        from envsim.envs.sandbox.executor import execute

        transition = execute(get_env(record["env"]), view, record["action"])
        return {"observation": transition.observation, "patch": full_patch(transition.patch, mapping)}
    observation, after = run(copy.deepcopy(view))
    return {"observation": observation, "patch": full_patch(compute_delta(view, after).patch, mapping)}

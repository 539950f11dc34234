"""Tools that are not deterministic, left out of test splits of the user's own environments (issue 53, item 6).

A test record is scored against one answer, so a tool whose answer changes from run to run (an id from
``uuid.uuid4()``, the clock) cannot be scored. Construction already runs every call of a user's environment a
second time: verification runs it on its view, widening to the whole state (``envs.views.verify``), and a record
that not even the whole state reproduces (``view.verified`` false) shows a tool that answered differently the
second time. Every record of such a tool is left out of a test (and dev) split, and the console names the tool
(``construct`` keeps going: the other tools make a usable split); training data leaves them out too (its
shortfall line counts them: their views could not be verified, so they would be prompted with the whole state). ``envsim envs check MODULE:CLASS`` finds such
tools before any construction (``envs.check``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable


def nondeterministic_tools(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Tools with a record that running again on the whole state did not reproduce: tool -> ``{"records": calls
    of that tool, "not_reproduced": those not reproduced}``."""
    calls: Counter = Counter()
    failed: Counter = Counter()
    for record in records:
        calls[record["tool"]] += 1
        view = record.get("view")
        if isinstance(view, dict) and view.get("verified") is False:
            failed[record["tool"]] += 1
    return {tool: {"records": calls[tool], "not_reproduced": failed[tool]} for tool in sorted(failed)}


def without_nondeterministic(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """``records`` without every record of a tool that is not deterministic, and those tools
    (``nondeterministic_tools``)."""
    found = nondeterministic_tools(records)
    return [r for r in records if r["tool"] not in found], found


def left_out_line(found: dict[str, dict[str, int]]) -> str:
    """The console warning naming the tools left out of a test split."""
    tools = "; ".join(f"{tool} ({c['not_reproduced']} of its {c['records']} calls answered differently when run "
                      f"again on the same state)" for tool, c in found.items())
    return (f"warning: left out of the test split, not deterministic: {tools}; all "
            f"{sum(c['records'] for c in found.values())} records of these tools dropped (envsim envs check names "
            f"such tools before construction)")

"""State views measured against the truth: read coverage and counted view prompt tokens.

For τ-bench (retail and airline test tasks: their ground-truth calls replayed in order from the initial
database) and for benchmark v2 ``long_state``, each call's view is computed (never executing the call),
then the real call runs on the state wrapped in read-recording proxies (``envsim.envs.views.tracing``):

* read coverage: share of calls whose traced reads all lie inside the view;
* ``mdp-view`` prompt tokens (prompt version 3, Qwen BPE, chat framing included): p50 / p95 / max;
* view execution (τ-bench): the tool run on a copy of the view alone gives the true observation, and its
  patch applied to the full state gives the true next state (the view suffices for an oracle);
* the baseline "follow references from argument values one hop" (records keyed by an argument value,
  plus the records their string values name), measured the same way;
* long_state: the prompt shrink factor (``mdp`` v2 tokens / ``mdp-view`` v3 tokens), p50.

    ENVSIM_TAU_BENCH=../shared/third_party/tau-bench python benchmarks/view_coverage.py [--domains retail,airline]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from typing import Any

import jsonpatch

from envsim.envs.views import View, compute_view, trace_call, traced, unwrap
from envsim.envs.views.analysis import ReadNeeds
from envsim.envs.views.view import build_view
from envsim.evaluation.prompts import build_messages
from envsim.tokens import chat_tokens, get_tokenizer


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered) + 0.5)) - 1))] if ordered else 0


def one_hop_view(state: dict[str, Any], arguments: dict[str, Any]) -> View:
    """The baseline view: records keyed by an argument value, and the records their string values name."""
    def strings(value: Any) -> list[str]:
        if isinstance(value, str):
            return [value]
        if isinstance(value, dict):
            return [s for v in value.values() for s in strings(v)]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return []

    needs = ReadNeeds()
    hits = [(c, v) for v in strings(arguments) for c, coll in state.items() if isinstance(coll, dict) and v in coll]
    needs.full.update(hits)
    for c, v in list(hits):
        for s in strings(state[c][v]):
            needs.full.update((c2, s) for c2, coll in state.items() if isinstance(coll, dict) and s in coll)
    return build_view(state, needs)


def tau_figures(domain: str, counter: Any) -> dict[str, Any]:
    """Coverage, tokens and view execution over one τ-bench domain's test-task calls."""
    from envsim.envs.adapters.tau import initial_database, task_actions, tau_env, tool_classes

    env = tau_env(domain)
    tools = {t.get_info()["function"]["name"]: t for t in tool_classes(domain)}
    sources = getattr(env, "_envsim_tool_sources")
    schemas = [t.get_info() for t in tools.values()]
    rows = []
    for actions in task_actions(domain, "test"):
        state, log = traced(initial_database(domain))
        for action in actions:
            name, args = action.name, action.arguments
            record = {"env": f"tau/{domain}", "state": state, "action": {"name": name, "arguments": args},
                      "code": sources.get(name, ""), "tools": schemas}
            view = compute_view(state, name, args, record["code"], tools[name].get_info())
            tokens = chat_tokens(build_messages(record, "mdp-view", version="3"), counter)
            view_alone = unwrap(view.state)
            try:
                view_obs = tools[name].invoke(copy.deepcopy(view_alone), **args) if name in tools else None
                after_view = copy.deepcopy(view_alone)
                tools[name].invoke(after_view, **args)
                view_patch = jsonpatch.make_patch(view_alone, after_view)
            except Exception as exc:  # noqa: BLE001 - a view the tool cannot run on is a disagreement
                view_obs, view_patch = f"<raised {type(exc).__name__}>", None
            before = unwrap(state)
            baseline = one_hop_view(before, args)
            obs, reads = trace_call(state, log, lambda s: tools[name].invoke(s, **args))
            after = unwrap(state)
            agrees = view_patch is not None and view_obs == obs and view_patch.apply(before) == after
            rows.append({"covered": all(view.covers(*r) for r in reads), "tokens": tokens,
                         "base_covered": all(baseline.covers(*r) for r in reads),
                         "base_chars": len(baseline.render()), "view_chars": len(view.render()), "agrees": agrees})
    return summarise(rows)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Coverage and size figures of per-call rows."""
    out: dict[str, Any] = {"calls": len(rows), "coverage": sum(r["covered"] for r in rows) / max(1, len(rows))}
    for key in ("tokens", "view_chars", "base_chars", "shrink"):
        vals = [r[key] for r in rows if key in r]
        if vals:
            out[key] = {"p50": pct(vals, 0.5), "p95": pct(vals, 0.95), "max": max(vals)}
    for key in ("base_covered", "agrees"):
        vals = [r[key] for r in rows if key in r]
        if vals:
            out[key] = sum(vals) / len(vals)
    return out


def long_state_figures(counter: Any) -> dict[str, Any]:
    """Coverage and prompt shrink over benchmark v2 ``long_state``."""
    from envsim.benchmark import load
    from envsim.envs.registry import get_env

    rows = []
    for record in load("v2", "long_state"):
        cls = get_env(record["env"])
        env = cls.from_state(copy.deepcopy(record["state"]))
        state, log = traced(copy.deepcopy(record["state"]))
        for key in state:
            setattr(env, key, state[key])
        action = record["action"]
        schema = next((t for t in record["tools"] if t.get("function", {}).get("name") == action["name"]), None)
        view = compute_view(record["state"], action["name"], action["arguments"], record["code"], schema)
        full = chat_tokens(build_messages(record, "mdp", version="2"), counter)
        tokens = chat_tokens(build_messages(record, "mdp-view", version="3"), counter)
        _, reads = trace_call(state, log, lambda s: _run_tool(env, action))
        rows.append({"covered": all(view.covers(*r) for r in reads), "tokens": tokens, "shrink": full / tokens,
                     "view_chars": len(view.render())})
    return summarise(rows)


def _run_tool(env: Any, action: dict[str, Any]) -> Any:
    try:
        return getattr(env, action["name"])(**action["arguments"])
    except Exception as exc:  # noqa: BLE001 - tool errors are observations; the reads made still count
        return repr(exc)


def main() -> None:
    """Print the figures (``--json`` for machine-readable output)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", default="retail,airline")
    parser.add_argument("--no-long-state", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    counter = get_tokenizer()
    figures: dict[str, Any] = {d: tau_figures(d, counter) for d in args.domains.split(",") if d}
    if not args.no_long_state:
        figures["v2 long_state"] = long_state_figures(counter)
    if args.json:
        json.dump(figures, sys.stdout, indent=2)
        print()
        return
    print("State views (mdp-view, prompt version 3; tokens counted with Qwen BPE, chat framing included)\n")
    print("| calls | n | read coverage | prompt tokens p50 / p95 / max | view chars p50 / p95 | view execution = truth "
          "| one-hop baseline coverage | baseline chars p50 / p95 | shrink p50 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, f in figures.items():
        t, v = f["tokens"], f["view_chars"]
        b = f.get("base_chars")
        print(f"| {name} | {f['calls']} | {100 * f['coverage']:.1f}% | {t['p50']:,} / {t['p95']:,} / {t['max']:,} | "
              f"{v['p50']:,} / {v['p95']:,} | "
              + (f"{100 * f['agrees']:.1f}%" if "agrees" in f else "–") + " | "
              + (f"{100 * f['base_covered']:.1f}%" if "base_covered" in f else "–") + " | "
              + (f"{b['p50']:,} / {b['p95']:,}" if b else "–") + " | "
              + (f"{f['shrink']['p50']:.1f}x" if "shrink" in f else "–") + " |")


if __name__ == "__main__":
    main()

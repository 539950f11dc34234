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
import marshal
import sys
import time
from typing import Any

import jsonpatch
import jsonpointer

from envsim.delta import canonical_json
from envsim.envs.views import View, compute_view, trace_call, traced, traced_env, unwrap
from envsim.envs.views.analysis import ReadNeeds
from envsim.envs.views.oracle import view_of, view_oracle_answer
from envsim.envs.views.view import build_view
from envsim.evaluation.prompting.prompts import build_messages
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


def _local_changed_paths(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The changed paths of one call, diffing only the top-level records that differ (exact, and fast on
    databases where a call changes a few records)."""
    from envsim.delta import compute_delta
    from envsim.envs.views.analysis import pointer

    paths: list[str] = []
    for top in sorted(set(before) | set(after)):
        old, new = before.get(top), after.get(top)
        if old == new:
            continue
        if not (isinstance(old, dict) and isinstance(new, dict)):
            paths.extend(compute_delta({top: old}, {top: new}).paths)
            continue
        for key in [k for k in old if k not in new] + [k for k in new if k not in old]:
            paths.append(pointer((top, key)))
        for key in (k for k in old if k in new and old[k] != new[k]):
            paths.extend(pointer((top, key)) + p for p in compute_delta(old[key], new[key]).paths)
    return paths


def scored(record: dict[str, Any], answer: dict[str, Any]) -> tuple[bool, bool]:
    """FM and CM of ``answer`` against ``record`` through the real parser and scorer."""
    from envsim.evaluation.scoring.parsing import parse_answer
    from envsim.evaluation.scoring.scoring import score_prediction

    score = score_prediction(record, parse_answer(json.dumps(answer)))
    return score.fm, score.cm


def tau_rows(domain: str, counter: Any, real_scorer: bool = False, tasks: int | None = None) -> list[dict[str, Any]]:
    """Coverage, tokens and the oracle through views over one τ-bench domain's test-task calls.

    Each task replays from the initial database. A plain copy (``shadow``) carries the state the view is
    computed from; the traced copy runs the real call. The view oracle's patch is applied to the shadow in
    place and the two full states are compared (CM exactly, at C speed); ``real_scorer`` also scores each
    answer with ``evaluation.scoring.scoring`` against the full truth (slow on megabyte states). ``tasks``: only the
    first N test tasks.
    """
    from envsim.delta import same_json
    from envsim.envs.adapters.tau import initial_database, task_actions, tau_env, tool_classes

    env = tau_env(domain)
    tools = {t.get_info()["function"]["name"]: t for t in tool_classes(domain)}
    sources = getattr(env, "_envsim_tool_sources")
    schemas = [t.get_info() for t in tools.values()]
    database = json.loads(canonical_json(initial_database(domain)))
    rows = []
    for actions in task_actions(domain, "test")[:tasks]:
        state, log = traced(database)
        shadow = marshal.loads(marshal.dumps(database))
        for action in actions:
            name, args = action.name, action.arguments
            record = {"env": f"tau/{domain}", "state": shadow, "action": {"name": name, "arguments": args},
                      "code": sources.get(name, ""), "tools": schemas}
            view = compute_view(shadow, name, args, record["code"], tools[name].get_info())
            tokens = chat_tokens(build_messages(record, "mdp-view", version="3"), counter)
            answer = view_oracle_answer(record, run=lambda s: _invoke(tools[name], s, args))
            baseline = one_hop_view(shadow, args)
            obs, reads = trace_call(state, log, lambda s: _invoke(tools[name], s, args)[0])
            row = {"covered": all(view.covers(*r) for r in reads), "tokens": tokens,
                   "base_covered": all(baseline.covers(*r) for r in reads),
                   "base_chars": len(baseline.render()), "view_chars": len(view.render())}
            if real_scorer:
                truth = {**record, "observation": obs, "next_state": state,
                         "changed_paths": _local_changed_paths(shadow, state)}
                row["fm"], row["cm"] = scored(truth, answer)
            else:
                row["fm"] = same_json(answer["observation"], obs)
            try:
                jsonpatch.apply_patch(shadow, answer["patch"], in_place=True)
                cm = shadow == state
            except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, LookupError, TypeError):
                cm = False
            row["cm"] = row.get("cm", True) and cm
            if not cm:
                shadow = unwrap(state)
            else:  # equal as JSON; copy the touched records back so that key order stays the real one too
                _copy_touched(shadow, state, answer["patch"])
            if not (row["fm"] and row["cm"]):
                row["miss"] = f"{name} {json.dumps(args)[:80]}"
            rows.append(row)
    return rows


def tau_figures(domain: str, counter: Any, real_scorer: bool = False) -> dict[str, Any]:
    """The figures of :func:`tau_rows` for one domain."""
    return summarise(tau_rows(domain, counter, real_scorer))


def _copy_touched(shadow: dict[str, Any], state: Any, patch: list[dict[str, Any]]) -> None:
    """Replace the records a patch touched (two path levels) in ``shadow`` by plain copies of ``state``'s."""
    for op in patch:
        parts = [jsonpointer.unescape(p) for p in op["path"].split("/")[1:3]]
        if len(parts) == 2 and isinstance(shadow.get(parts[0]), dict) and parts[1] in dict.keys(state[parts[0]]):
            shadow[parts[0]][parts[1]] = unwrap(dict.__getitem__(state[parts[0]], parts[1]))
        elif parts and parts[0] in dict.keys(state):
            shadow[parts[0]] = unwrap(dict.__getitem__(state, parts[0]))


def _invoke(tool: Any, state: Any, args: dict[str, Any]) -> tuple[Any, Any]:
    """τ-bench's ``invoke`` on ``state`` (mutated in place); an exception is an observation."""
    try:
        return tool.invoke(state, **args), state
    except Exception as exc:  # noqa: BLE001 - the same on the view and the full state
        return f"<raised {type(exc).__name__}: {exc}>", state


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Coverage, size and oracle figures of per-call rows."""
    out: dict[str, Any] = {"calls": len(rows), "coverage": sum(r["covered"] for r in rows) / max(1, len(rows))}
    for key in ("tokens", "view_chars", "base_chars", "shrink"):
        vals = [r[key] for r in rows if key in r]
        if vals:
            out[key] = {"p50": pct(vals, 0.5), "p95": pct(vals, 0.95), "max": max(vals)}
    for key in ("base_covered", "fm", "cm"):
        vals = [r[key] for r in rows if key in r]
        if vals:
            out[key] = sum(vals) / len(vals)
    out["misses"] = [r["miss"] for r in rows if "miss" in r][:10]
    return out


def track_figures(benchmark: str, split: str, counter: Any) -> dict[str, Any]:
    """Coverage, prompt shrink (``mdp`` v2 tokens / ``mdp-view`` v3 tokens) and the oracle through views (real
    scorer) over one shipped split of EnvSim's own environments."""
    from envsim.benchmark import load
    from envsim.envs.registry import get_env

    rows = []
    for record in load(benchmark, split):
        state, log = traced(copy.deepcopy(record["state"]))
        env = traced_env(get_env(record["env"]), state, log)  # top-level scalars (self.today) traced too
        action = record["action"]
        view = view_of(record)
        full = chat_tokens(build_messages(record, "mdp", version="2"), counter)
        tokens = chat_tokens(build_messages(record, "mdp-view", version="3"), counter)
        _, reads = trace_call(state, log, lambda s: _run_tool(env, action))
        fm, cm = scored(record, view_oracle_answer(record))
        rows.append({"covered": all(view.covers(*r) for r in reads), "tokens": tokens, "shrink": full / tokens,
                     "view_chars": len(view.render()), "fm": fm, "cm": cm})
        if not (fm and cm) or not rows[-1]["covered"]:
            rows[-1]["miss"] = record["id"]
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
    parser.add_argument("--no-v1", action="store_true")
    parser.add_argument("--real-scorer", action="store_true",
                        help="score τ-bench view-oracle answers with evaluation.scoring.scoring too (slow: ~1 s a call)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    counter = get_tokenizer()
    figures: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    every: list[dict[str, Any]] = []
    for domain in [d for d in args.domains.split(",") if d]:
        started = time.perf_counter()
        rows = tau_rows(domain, counter, args.real_scorer)
        every += rows
        figures[f"τ {domain}"] = summarise(rows)
        seconds[f"τ {domain}"] = time.perf_counter() - started
    if len(figures) > 1:
        figures["τ both"] = summarise(every)
    if not args.no_long_state:
        started = time.perf_counter()
        figures["v2 long_state"] = track_figures("v2", "long_state", counter)
        seconds["v2 long_state"] = time.perf_counter() - started
    if not args.no_v1:
        started = time.perf_counter()
        figures["v1 test"] = track_figures("v1", "test", counter)
        seconds["v1 test"] = time.perf_counter() - started
    if args.json:
        json.dump({"figures": figures, "seconds": seconds}, sys.stdout, indent=2, ensure_ascii=False)
        print()
        return
    print("State views (mdp-view, prompt version 3; tokens counted with Qwen BPE, chat framing included)\n")
    print("| calls | n | read coverage | prompt tokens p50 / p95 / max | view chars p50 / p95 / max "
          "| view oracle FM / CM | one-hop baseline coverage | baseline chars p50 / p95 | shrink p50 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, f in figures.items():
        t, v, b = f["tokens"], f["view_chars"], f.get("base_chars")
        print(f"| {name} | {f['calls']} | {100 * f['coverage']:.1f}% | {t['p50']:,} / {t['p95']:,} / {t['max']:,} | "
              f"{v['p50']:,} / {v['p95']:,} / {v['max']:,} | "
              + f"{100 * f['fm']:.1f}% / {100 * f['cm']:.1f}% | "
              + (f"{100 * f['base_covered']:.1f}%" if "base_covered" in f else "–") + " | "
              + (f"{b['p50']:,} / {b['p95']:,}" if b else "–") + " | "
              + (f"{f['shrink']['p50']:.1f}x" if "shrink" in f else "–") + " |")
    scorer = "evaluation.scoring.scoring" if args.real_scorer else "exact full-state comparison"
    print(f"\nView oracle: the tool run on the view alone; τ-bench scored by {scorer}, v1/v2 by evaluation.scoring.scoring.")
    for name, f in figures.items():
        if f.get("misses"):
            print(f"{name} misses: {f['misses']}")
    print("seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items()))


if __name__ == "__main__":
    main()

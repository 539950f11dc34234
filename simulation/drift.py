"""Multi-step drift of a simulator: CM/FM by step index and steps to first divergence.

Besides the plain figures, every rate is also reported where the true state changes, so that a
simulator that predicts "no change" cannot score on steps where nothing happens: the step CM over
steps with a true change (``by_step[k]["cm_changed"]``, over ``n_changed`` steps) and CM@k over the
episodes whose first ``k`` steps changed the true state at least once (``cm_at_k_changed``, over
``cm_at_k_changed_n`` episodes). A rate over an empty group is ``None``. Episodes with ``status`` other than
``scored`` (infrastructure failures) are counted apart and left out of every figure.

Fallback steps (the simulator gave no usable answer; ``simulation.simulated``) are never matches: they
count as misses in every figure, and their number, rate and reasons head the report.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from envsim.evaluation.reporting.report import bootstrap_ci, reason_counts

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DASH = "–"


def is_scored(episode: dict[str, Any]) -> bool:
    """Whether an episode counts in the drift figures (rows written before ``status`` existed do)."""
    return episode.get("status", "scored") == "scored"


def _changes(step: dict[str, Any]) -> bool:
    return (step.get("true_delta_size") or 0) > 0


def _group(values: list[float]) -> dict[str, Any]:
    """``{"n", "rate", "ci"}``; the rate is ``None`` for an empty group."""
    return {"n": len(values), "rate": round(sum(values) / len(values), 4) if values else None,
            "ci": bootstrap_ci(values)}


def _alive(episode: dict[str, Any], k: int) -> float:
    first = episode.get("first_divergence")
    return 1.0 if (first is None or first >= k) and len(episode["steps"]) >= k else 0.0


def _by_step(episodes: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    steps: dict[int, list[dict[str, Any]]] = {}
    for episode in episodes:
        for step in episode["steps"]:
            steps.setdefault(step["index"] + 1, []).append(step)
    out = {}
    for k, group in sorted(steps.items()):
        cm = [1.0 if s.get("cm") else 0.0 for s in group]
        changed = _group([1.0 if s.get("cm") else 0.0 for s in group if _changes(s)])
        out[str(k)] = {"n": len(group), "fm": round(sum(1.0 if s.get("fm") else 0.0 for s in group) / len(group), 4),
                       "cm": round(sum(cm) / len(cm), 4), "ci_cm": bootstrap_ci(cm),
                       "n_changed": changed["n"], "cm_changed": changed["rate"], "ci_cm_changed": changed["ci"]}
    return out


def _histogram(episodes: Sequence[dict[str, Any]], horizon: int) -> dict[str, int]:
    """Episodes by first divergence step (1-based), every step up to the horizon, then ``never``."""
    counts = Counter(e.get("first_divergence") for e in episodes)
    last = max([horizon] + [f + 1 for f in counts if f is not None])
    return {**{str(k): counts.get(k - 1, 0) for k in range(1, last + 1)}, "never": counts.get(None, 0)}


def fallback_counts(episodes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Fallback steps over ``episodes``: ``steps``, ``fallback_steps``, ``fallback_rate`` (0.0 with no step),
    ``fallback_episodes`` and ``fallback_reasons`` (reason -> steps, most common first)."""
    steps = [s for e in episodes for s in e["steps"]]
    fallbacks = [s for s in steps if s.get("fallback")]
    return {"steps": len(steps), "fallback_steps": len(fallbacks),
            "fallback_rate": round(len(fallbacks) / len(steps), 4) if steps else 0.0,
            "fallback_episodes": sum(any(s.get("fallback") for s in e["steps"]) for e in episodes),
            "fallback_reasons": reason_counts({"reason": s.get("reason") or "no answer"} for s in fallbacks)}


def drift_report(episodes: Sequence[dict[str, Any]], horizon: int) -> dict[str, Any]:
    """Aggregate shadow-mode episodes (each with ``steps`` carrying ``fm``/``cm``/``true_delta_size`` and
    ``first_divergence``); see the module docstring.

    ``cm_at_k[k]`` is the share of scored episodes whose tracked state still equals the true state
    after step ``k`` (1-based; an episode shorter than ``k`` counts as not exact), over ``scored``
    episodes; ``cm_at_k_changed[k]`` is the same share (``None`` when there are none) over the
    ``cm_at_k_changed_n[k]`` scored episodes with at least ``k`` steps of which one of the first ``k``
    changed the true state (95% interval in ``cm_at_k_changed_ci``). ``mean_steps_before_divergence``
    counts a never-diverging episode as its full length.
    """
    scored = [e for e in episodes if is_scored(e)]
    failed = [e for e in episodes if not is_scored(e)]
    first = [e.get("first_divergence") for e in scored]
    before = [f if f is not None else len(e["steps"]) for f, e in zip(first, scored)]
    cm_at_k, changed = {}, {}
    for k in range(1, horizon + 1):
        cm_at_k[str(k)] = round(sum(_alive(e, k) for e in scored) / len(scored), 4) if scored else 0.0
        changed[str(k)] = _group([_alive(e, k) for e in scored
                                  if len(e["steps"]) >= k and any(_changes(s) for s in e["steps"][:k])])
    return {
        "episodes": len(episodes),
        "scored": len(scored),
        "infra_failures": len(failed),
        "infra_failure_reasons": reason_counts(failed),
        "horizon": horizon,
        "cm_at_k": cm_at_k,
        "cm_at_k_changed": {k: g["rate"] for k, g in changed.items()},
        "cm_at_k_changed_n": {k: g["n"] for k, g in changed.items()},
        "cm_at_k_changed_ci": {k: g["ci"] for k, g in changed.items()},
        "by_step": _by_step(scored),
        "mean_steps_before_divergence": round(sum(before) / len(before), 3) if before else 0.0,
        "first_divergence_histogram": _histogram(scored, horizon),
        "diverged_episodes": sum(f is not None for f in first),
        "first_step_unchanged": sum(e.get("first_step_changes_state") is False for e in scored),
        **fallback_counts(scored),
        **step_failure_fields(scored),
    }


def step_failure_fields(episodes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Failure classes of the steps (overall, per environment and per ``env.tool``) and the tolerant step rates
    ``step_fm_json`` / ``step_cm_numeric`` (only when the steps carry them: ``evaluation.scoring.failure_classes``)."""
    from envsim.evaluation.scoring.failure_classes import FailureClassCounter, counter_fields

    counter = FailureClassCounter()
    steps = [(e, s) for e in episodes for s in e["steps"]]
    for episode, step in steps:
        env = str(episode.get("env"))
        counter.add(step, {"env": env, "tool": f"{env}.{(step.get('action') or {}).get('name')}"})
    fields = counter_fields(counter)
    if any("fm_json" in s for _, s in steps):
        for rate, exact in (("fm_json", "fm"), ("cm_numeric", "cm")):
            fields[f"step_{rate}"] = _group([1.0 if s.get(rate, s.get(exact)) else 0.0 for _, s in steps])
    return fields


def _pct(rate: float | None, n: int) -> str:
    """A rate as a percentage, or a dash for an empty group."""
    return DASH if rate is None or not n else f"{100 * rate:.1f}"


def drift_markdown(report: dict[str, Any], title: str) -> str:
    """The drift report as Markdown (empty groups shown as a dash)."""
    scored = report.get("scored", report["episodes"])
    lines = [f"# Drift: {title}", ""]
    if report.get("fallback_steps"):
        reasons = "; ".join(f"{r} ({n})" for r, n in report["fallback_reasons"].items())
        lines += [f"**{report['fallback_steps']} of {report['steps']} steps "
                  f"({100 * report['fallback_rate']:.1f}%) in {report['fallback_episodes']} episodes are fallback "
                  f"steps**: the simulator gave no usable answer, the step got an error observation and the state "
                  f"was left unchanged. They count as misses in every figure below. Reasons: {reasons}.", ""]
    lines += [f"{scored} episodes scored, horizon {report['horizon']}; mean steps before divergence "
             f"{report['mean_steps_before_divergence'] if scored else DASH}; "
             f"{report['diverged_episodes']} episodes diverged."]
    if report.get("infra_failures"):
        reasons = "; ".join(f"{r} ({n})" for r, n in report["infra_failure_reasons"].items())
        lines.append(f"{report['infra_failures']} infrastructure failures, not in any figure (re-run to retry): "
                     f"{reasons}.")
    if report.get("first_step_unchanged"):
        lines.append(f"{report['first_step_unchanged']} episodes found no state-changing first call (a write call "
                     "was played instead).")
    lines += ["", "Step columns: all calls at step k, then only the calls that change the true state. "
              "CM@k: episodes still exact after step k, over all scored episodes, then over the episodes whose "
              "first k steps changed the true state at least once (a model predicting no change scores 0 there).",
              "", "| step k | n | step FM % | step CM % | n (true change) | step CM on them % | CM@k % (n) "
              "| CM@k, episodes with a change by k % (n) |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k in map(str, range(1, report["horizon"] + 1)):
        s = report["by_step"].get(k, {"n": 0, "fm": None, "cm": None, "n_changed": 0, "cm_changed": None})
        n_changed = report.get("cm_at_k_changed_n", {}).get(k, 0)
        lines.append(f"| {k} | {s['n']} | {_pct(s['fm'], s['n'])} | {_pct(s['cm'], s['n'])} | "
                     f"{s.get('n_changed', 0)} | {_pct(s.get('cm_changed'), s.get('n_changed', 0))} | "
                     f"{_pct(report['cm_at_k'].get(k), scored)} ({scored}) | "
                     f"{_pct(report.get('cm_at_k_changed', {}).get(k), n_changed)} ({n_changed}) |")
    lines += ["", "First divergence at step: " + ", ".join(f"{k}: {v}" for k, v in
                                                            report["first_divergence_histogram"].items())]
    if "step_fm_json" in report:
        lines += ["", f"Tolerant, beside the exact figures: step FM-json "
                      f"{_pct(report['step_fm_json']['rate'], report['step_fm_json']['n'])}%, step CM-numeric "
                      f"{_pct(report['step_cm_numeric']['rate'], report['step_cm_numeric']['n'])}%."]
    if report.get("steps") and "failure_classes" in report:
        from envsim.evaluation.scoring.failure_classes import markdown as failure_markdown

        lines += ["", failure_markdown(report, ("env", "tool")).replace("failed sample", "failed step")]
    return "\n".join(lines) + "\n"


_STYLES = (  # (marker, line style, hollow marker): every line stays visible where the rates coincide
    ("^", "-", False), ("v", "--", False), ("o", "-", True), ("D", ":", True), ("s", "-.", True))
_DODGE = 0.09


def _series(report: dict[str, Any]) -> list[tuple[str, list[float | None], list[int]]]:
    """(label, rate per step k, n per step k) for each line of the left panel."""
    ks = [str(k) for k in range(1, report["horizon"] + 1)]
    scored = report.get("scored", report["episodes"])
    by_step = report["by_step"]
    empty = {"n": 0, "fm": None, "cm": None, "n_changed": 0, "cm_changed": None}
    steps = [by_step.get(k, empty) for k in ks]
    return [
        ("CM@k: exact through step k, all episodes", [report["cm_at_k"].get(k) for k in ks], [scored] * len(ks)),
        ("CM@k: episodes with a true change by step k", [report.get("cm_at_k_changed", {}).get(k) for k in ks],
         [report.get("cm_at_k_changed_n", {}).get(k, 0) for k in ks]),
        ("step CM: state exact after the call", [s["cm"] for s in steps], [s["n"] for s in steps]),
        ("step CM: calls that change the true state", [s.get("cm_changed") for s in steps],
         [s.get("n_changed", 0) for s in steps]),
        ("step FM: observation exact", [s["fm"] for s in steps], [s["n"] for s in steps]),
    ]


def _n_text(ns: list[int]) -> str:
    low, high = min(ns, default=0), max(ns, default=0)
    return f"n = {low}" if low == high else f"n = {low}–{high}"


_LABELLED_STEPS = 12  # up to this horizon, every step tick also carries its n


def _step_tick_labels(report: dict[str, Any], ks: list[int]) -> list[str]:
    """``k`` over ``n calls / n with a true change`` at each step (plain ``k`` for long horizons)."""
    if len(ks) > _LABELLED_STEPS:
        return [str(k) for k in ks]
    empty = {"n": 0, "n_changed": 0}
    steps = [report["by_step"].get(str(k), empty) for k in ks]
    return [f"{k}\nn={s['n']} / {s.get('n_changed', 0)}" for k, s in zip(ks, steps)]


def _histogram_keys(hist: dict[str, int]) -> list[str]:
    """Step order, ``never`` last (whatever order the keys came in)."""
    return sorted(hist, key=lambda k: (not k.isdigit(), int(k) if k.isdigit() else 0))


def drift_figure(report: dict[str, Any], title: str) -> "Figure":
    """The drift plot as a matplotlib Figure: rates by step k (left) and the first-divergence histogram (right)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(12, 5.4))
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    ks = list(range(1, report["horizon"] + 1))
    series = _series(report)
    for i, ((label, rates, ns), (marker, style, hollow)) in enumerate(zip(series, _STYLES)):
        offset = (i - (len(series) - 1) / 2) * _DODGE
        ys = [float("nan") if r is None or not n else 100 * r for r, n in zip(rates, ns)]
        left.plot([k + offset for k in ks], ys, marker=marker, linestyle=style, color=f"C{i}", markersize=7,
                  markerfacecolor="none" if hollow else f"C{i}", linewidth=1.6, alpha=0.9,
                  label=f"{label} ({_n_text(ns)})")
    left.set_xticks(ks, _step_tick_labels(report, ks))
    left.set_xlim(0.5, max(ks, default=1) + 0.5)
    left.set_ylim(-5, 105)
    left.set_xlabel("step k   (n = calls at step k / of them, calls that change the true state)"
                    if len(ks) <= _LABELLED_STEPS else "step k (tool call number in the episode)", fontsize=9)
    left.set_ylabel("rate (%)")
    left.set_title("exact-match rates by step", fontsize=10)
    left.grid(alpha=0.3)
    hist = report["first_divergence_histogram"]
    keys = _histogram_keys(hist)
    bars = right.bar(range(len(keys)), [hist[k] for k in keys],
                     color=["C2" if k == "never" else "C3" for k in keys])
    right.bar_label(bars, fontsize=8)
    right.set_xticks(range(len(keys)), keys)
    right.set_ylim(0, max(max(hist.values(), default=0), 1) * 1.1)
    right.yaxis.set_major_locator(MaxNLocator(integer=True))
    right.set_xlabel("first divergence at step k (never: exact to the end)", fontsize=9)
    right.set_ylabel("episodes")
    infra = report.get("infra_failures", 0)
    right.set_title(f"first divergence ({sum(hist.values())} scored episodes)"
                    + (f"\n{infra} infrastructure failures left out" if infra else ""), fontsize=10)
    if not report.get("scored", report["episodes"]):
        left.text(0.5, 0.5, "no scored episodes", transform=left.transAxes, ha="center", va="center", fontsize=12)
    fig.legend(*left.get_legend_handles_labels(), loc="lower left", bbox_to_anchor=(0.01, 0.0), ncol=2,
               fontsize=8, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.13, 1, 1))
    return fig


def plot_drift(report: dict[str, Any], path: Path, title: str) -> None:
    """Write :func:`drift_figure` as a PNG (renamed into place, never through a link: ``envsim.safe_files``)."""
    from envsim.safe_files import save_figure

    save_figure(drift_figure(report, title), path, dpi=110)

"""What ``envsim view`` shows of each run directory, read without writing anything: key figures, plots, failure-class
tables and one entry per sample (a one-step sample, or a step of a chained, rollout or simulate episode).

Kinds are recognised as ``envsim report`` recognises them (``evaluation.running.run_kinds``); a tiers directory becomes one
run per tier. A one-step row written before failure classes existed is classified again from its stored answer
(``reclassified``: the row's own FM and CM are kept); the figures and tables are computed from the rows read here.
Everything in the result came from files a model or a benchmark wrote: the page renders it as text only.
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from envsim.evaluation.scoring.failure_classes import FailureClassCounter, counter_fields
from envsim.evaluation.running.run_kinds import UnknownRunKind, run_kind, tier_dirs
from envsim.evaluation.reporting.view_values import (CHUNK_SAMPLES, DETAIL_KEYS, cell, compare_changes, cut_text, op_changes,
                                           pack_chunks, state_changes)

MAX_TEXT = 40_000          # characters of a prompt or an answer embedded per sample
MAX_NOTE = 2_000           # characters of a warning or a reason (whole unless longer; then cut at a word end)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@dataclass
class RunView:
    """One run as the page shows it."""

    label: str
    kind: str
    path: str
    figures: list[dict[str, Any]] = field(default_factory=list)   # rows: {"group", "n", RATE: "text"}
    lines: list[str] = field(default_factory=list)                # key figures of the kind, as sentences
    notes: list[str] = field(default_factory=list)                # warnings: rows not counted, data missing
    plots: list[dict[str, str]] = field(default_factory=list)     # {"title", "png": base64}
    failure: dict[str, Any] = field(default_factory=dict)         # failure_classes(_by_*) fields
    samples: list[dict[str, Any]] = field(default_factory=list)
    texts: list[tuple[str, str | None]] = field(default_factory=list)  # per sample: prompt, raw answer

    def add(self, sample: dict[str, Any], prompt: str, answer: str | None) -> None:
        """Add one sample with its prompt and raw answer (packed apart from it: ``to_json``)."""
        sample["has_answer"] = answer is not None
        self.samples.append(sample)
        self.texts.append((prompt, None if answer is None else _cut(answer)))

    def to_json(self) -> dict[str, Any]:
        """The run's part of the page data. Each sample keeps what the filters and its header need and ``at: [chunk,
        index]``, its place in ``details`` (its ``DETAIL_KEYS``: the call, the observations and patches, the changes
        table) and in ``texts`` (its prompt and raw answer), both packed ``CHUNK_SAMPLES`` samples a chunk
        (``view_values.pack_chunks``): the page decompresses the details of the samples it shows, a text when opened.
        ``view_values.page_samples`` puts them back together."""
        samples, details = [], []
        for i, sample in enumerate(self.samples):
            details.append({k: sample.get(k) for k in DETAIL_KEYS})
            samples.append({**{k: v for k, v in sample.items() if k not in DETAIL_KEYS},
                            "at": [i // CHUNK_SAMPLES, i % CHUNK_SAMPLES]})
        return {"label": self.label, "kind": self.kind, "path": self.path, "figures": self.figures,
                "lines": self.lines, "notes": self.notes, "plots": self.plots, "failure": self.failure,
                "samples": samples, "details": pack_chunks(details, CHUNK_SAMPLES),
                "texts": pack_chunks(self.texts, CHUNK_SAMPLES)}


def _cut(text: str, limit: int = MAX_TEXT) -> str:
    return cut_text(text, limit)


def _whole(exc: BaseException | str) -> str:
    """An error's message for a warning: whole (cut at a word end past ``MAX_NOTE`` characters)."""
    return cut_text(str(exc), MAX_NOTE)


def _png(path: Path) -> str | None:
    from envsim.safe_files import MAX_PNG_BYTES, read_bytes

    try:  # a regular file in the run directory only: never a link (a PNG elsewhere), a FIFO or /dev/zero
        data = read_bytes(path, MAX_PNG_BYTES)
    except OSError:
        return None
    return base64.b64encode(data).decode("ascii") if data.startswith(PNG_MAGIC) else None


def _figure_png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _read_json(path: Path) -> Any:
    from envsim.safe_files import read_json

    try:  # bounded, never through a link (envsim.safe_files)
        return read_json(path)
    except (OSError, ValueError, RecursionError):
        return None


def _prompt_text(record: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """The prompt the run sent for ``record`` (rebuilt), or why it is not shown."""
    from envsim.evaluation.prompting.prompts import build_messages

    mode = str(config.get("prompt_mode") or "mdp")
    if "state_ref" in record and mode != "mdp-view":
        return "(not embedded: a whole-state prompt of a state stored by reference is too large for the page)"
    source = None
    try:
        if mode == "full-class":
            from envsim.envs.registry import get_env
            from envsim.envs.shown import class_source

            source = class_source(get_env(str(record["env"])))
        messages = build_messages(dict(record), mode, class_source=source,
                                  version=str(config.get("prompt_version") or "1"))
    except Exception as exc:  # noqa: BLE001 - a prompt that cannot be rebuilt is said so, never raised
        return f"(the prompt cannot be rebuilt here: {type(exc).__name__}: {_whole(exc)})"
    return _cut("\n\n".join(f"[{m.get('role')}]\n{m.get('content')}" for m in messages))


def _predicted(answer: Any, record: Mapping[str, Any] | None) -> tuple[Any, Any, Any]:
    """(parsed answer or None, predicted observation, predicted patch) of a stored answer text."""
    from envsim.evaluation.scoring.parsing import parse_answer

    if not isinstance(answer, str) or not answer:
        return None, None, None
    parsed = parse_answer(answer)
    if not parsed.ok:
        return parsed, None, None
    patch = parsed.patch
    if patch is None and record is not None and isinstance(parsed.next_state, dict):
        try:
            from envsim.delta import compute_delta

            patch = compute_delta(record["state"], parsed.next_state).patch
        except Exception:  # noqa: BLE001 - shown as the next state instead
            patch = {"next_state": parsed.next_state}
    return parsed, parsed.observation, patch


def _one_step_changes(record: Mapping[str, Any] | None, parsed: Any, patch: Any) -> dict[str, Any] | None:
    """The changed paths of the true call and of the prediction on the record's state, old → new."""
    if record is None:
        return None
    notes = []
    try:
        expected = state_changes(record["state"], record["next_state"])
    except Exception as exc:  # noqa: BLE001 - too large a change to align: said so
        expected, notes = None, [f"the true changes cannot be listed ({_whole(exc)})"]
    predicted = None
    if parsed is not None and parsed.ok:
        try:
            if isinstance(parsed.next_state, dict):
                after = parsed.next_state
            else:
                from envsim.evaluation.scoring.scoring import apply_prediction

                after = apply_prediction(record["state"], patch if isinstance(patch, list) else [])
            predicted = state_changes(record["state"], after)
        except Exception as exc:  # noqa: BLE001 - a patch that does not apply is shown as its ops
            notes.append(f"the predicted patch does not apply to the state ({_whole(exc)})")
    return compare_changes(expected, predicted, old_known=True, note="; ".join(notes) or None)


def _step_changes(expected_patch: Any, predicted_patch: Any, has_expected: bool, has_predicted: bool
                  ) -> dict[str, Any]:
    """The changed paths of a step of a multi-step run, read off the patches (the state before it is not kept)."""
    return compare_changes(op_changes(expected_patch) if has_expected else None,
                           op_changes(predicted_patch) if has_predicted else None, old_known=False,
                           note="paths and new values as the patches write them (a step's state before it is "
                                "not kept)")


def _reclassify(row: dict[str, Any], record: Mapping[str, Any] | None, parsed: Any) -> dict[str, Any]:
    """A scored row without failure classes, classified from its stored answer (its own FM and CM kept)."""
    if "failure" in row or row.get("status") != "scored" or record is None or parsed is None:
        return row
    if row.get("parsed") and not parsed.ok:  # the stored answer was cut: it cannot be judged again
        return row
    from envsim.evaluation.scoring.scoring import score_prediction

    try:
        score = score_prediction(dict(record), parsed)
    except Exception:  # noqa: BLE001 - left unclassified
        return row
    return {**row, "fm_json": score.fm_json, "cm_numeric": score.cm_numeric, "failure": score.failure,
            "reclassified": True}


def _sample(sid: str, *, env: Any, tool: Any, stratum: Any, scores: Mapping[str, Any], call: Any,
            expected: tuple[Any, Any] | None, predicted: tuple[Any, Any] | None, changes: dict[str, Any] | None,
            reason: Any = None, status: str = "scored") -> dict[str, Any]:
    """One sample of the page: scores, classes, the call, and the expected and predicted observation and patch as
    cells (``None``: not available) beside the changes table; its prompt and answer travel in ``RunView.texts``."""
    failure = scores.get("failure") if isinstance(scores.get("failure"), dict) else {}
    sample = {"id": sid, "env": str(env), "tool": str(tool), "stratum": str(stratum), "status": status,
              "fm": bool(scores.get("fm")), "cm": bool(scores.get("cm")),
              "fm_json": scores.get("fm_json"), "cm_numeric": scores.get("cm_numeric"),
              "classes": {side: (failure.get(side) if isinstance(failure.get(side), str) else
                                 ("unclassified" if status == "scored" and not scores.get(rate) else None))
                          for side, rate in (("observation", "fm"), ("state", "cm"))},
              "reason": None if reason is None else _whole(reason), "call": None if call is None else cell(call),
              "observation": [None if expected is None else cell(expected[0]),
                              None if predicted is None else cell(predicted[0])],
              "patch": [None if expected is None else cell(expected[1]),
                        None if predicted is None else cell(predicted[1])],
              "changes": changes}
    if predicted is None:
        sample["predicted_missing"] = True
    if expected is None:
        sample["expected_missing"] = True
    return sample


def _failure_tables(samples: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    counter = FailureClassCounter()
    for s in samples:
        if s["status"] == "scored":
            counter.add({"fm": s["fm"], "cm": s["cm"], "failure": s["classes"]},
                        {"stratum": s["stratum"], "env": s["env"], "tool": f"{s['env']}.{s['tool']}"})
    return counter_fields(counter)


def _step_figures(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Step rates (point values) overall and per stratum, from the samples."""
    from envsim.records import STRATA

    groups: dict[str, list[dict[str, Any]]] = {"overall": [s for s in samples if s["status"] == "scored"]}
    for stratum in STRATA:
        groups[stratum] = [s for s in groups["overall"] if s["stratum"] == stratum]
    rows = []
    for name, group in groups.items():
        if not group:
            continue
        row: dict[str, Any] = {"group": name, "n": len(group)}
        for rate, exact in (("fm", "fm"), ("fm_json", "fm"), ("cm", "cm"), ("cm_numeric", "cm")):
            hits = sum(1 for s in group if (s.get(rate) if s.get(rate) is not None else s.get(exact)))
            row[rate] = f"{100 * hits / len(group):.1f}"
        rows.append(row)
    return rows


def _cm_plot(samples: list[dict[str, Any]], delta_of: Mapping[str, Any], label: str) -> str:
    """The CM-vs-|Δ| figure re-rendered from the samples (PNG, base64)."""
    from envsim.evaluation.reporting.report import _cm_by_delta_figure, group_stats

    by_delta: dict[str, list[dict[str, Any]]] = {}
    for s in samples:
        delta = delta_of.get(s["id"])
        if s["status"] == "scored" and isinstance(delta, int):
            by_delta.setdefault(str(delta), []).append(s)
    summary = {"by_delta": {k: group_stats(v) for k, v in by_delta.items()}}
    return _figure_png(_cm_by_delta_figure({label: summary}))


def _single(path: Path, label: str) -> RunView:
    from envsim.benchmark import load
    from envsim.evaluation.reporting.report import PLOT_FILE, RATES, TOLERANT_RATES, format_rate, summarize
    from envsim.evaluation.running.run_rows import check_rows, read_rows
    from envsim.evaluation.running.selection import run_sample_ids

    config = _read_json(path / "config.json") or {}
    view = RunView(label, "single", str(path))
    records: dict[str, Any] = {}
    ids, warning = run_sample_ids(path, config)  # the run's own samples (SelectionUnknown: none shown)
    if warning:
        view.notes.append(warning)
    try:
        wanted = set(ids) if ids is not None else None
        items = load(str(config.get("benchmark")), str(config.get("split") or "test"))
        records = {str(r.get("id")): r for r in items if wanted is None or str(r.get("id")) in wanted}
    except Exception as exc:  # noqa: BLE001 - the page still shows what the rows hold
        view.notes.append(f"the run's benchmark cannot be read here ({_whole(exc)}): expected answers, calls "
                          "and prompts are not shown")
    checked = check_rows(read_rows(path / "results.jsonl"), ids)
    view.notes += checked.warnings
    order = {sid: i for i, sid in enumerate(ids or [])}
    rows = sorted(checked.rows, key=lambda r: (order.get(r["id"], len(order)), r["id"]))
    classified, reclassified = [], 0
    for row in rows:
        record = records.get(row["id"])
        parsed, observation, patch = _predicted(row.get("answer"), record)
        row = _reclassify(row, record, parsed)
        reclassified += bool(row.get("reclassified"))
        classified.append(row)
        view.add(_sample(
            row["id"], env=row.get("env"), tool=row.get("tool") or (record or {}).get("tool"),
            stratum=row.get("stratum"), scores=row, call=record.get("action") if record else None,
            expected=(record.get("observation"), record.get("patch")) if record else None,
            predicted=(observation, patch) if parsed is not None and parsed.ok else None,
            changes=_one_step_changes(record, parsed, patch), reason=row.get("reason"),
            status=str(row.get("status"))),
            prompt=_prompt_text(record, config) if record else "(the benchmark record is not available)",
            answer=row.get("answer") if isinstance(row.get("answer"), str) else None)
    if reclassified:
        view.notes.append(f"{reclassified} result rows were written before failure classes existed: classified "
                          "again here from their stored answers (their FM and CM are the run's own)")
    summary = summarize(classified, config)
    rates = [r for r in ("fm", "fm_json", "cm", "cm_numeric", "cm_lenient", "cm_original")
             if r in RATES or r in TOLERANT_RATES]
    for name, stats in {"overall": summary["overall"], **summary["by_stratum"]}.items():
        if stats["n"]:
            view.figures.append({"group": name, "n": stats["n"], **{r: format_rate(stats, r) for r in rates}})
    view.lines.append(f"model {summary['model']}, benchmark {summary['benchmark']}/{summary['split']}, prompt "
                      f"{summary['prompt_mode']} v{summary['prompt_version']}: {summary['scored']} scored, "
                      f"{summary['infra_failures']} infrastructure failures (not counted as wrong)")
    view.failure = {k: v for k, v in summary.items() if k.startswith("failure_classes")}
    png = _png(path / PLOT_FILE)
    view.plots.append({"title": "CM by |Δ| (95% bootstrap CI)", "png": png or _cm_plot(
        view.samples, {r["id"]: r.get("delta_size") for r in classified}, label)})
    return view


def _chained(path: Path, label: str) -> RunView:
    from envsim.construction.chained import load_episodes
    from envsim.evaluation.scoring.chained import chained_summary
    from envsim.evaluation.running.run_rows import chained_row_problem

    config = _read_json(path / "config.json") or {}
    view = RunView(label, "chained", str(path))
    episodes: dict[str, Any] = {}
    try:
        episodes = {e["id"]: e for e in load_episodes(str(config.get("benchmark")), str(config.get("split")
                                                                                        or "chained"))}
    except Exception as exc:  # noqa: BLE001
        view.notes.append(f"the run's episodes cannot be read here ({_whole(exc)}): expected answers of rows "
                          "written before steps kept them are not shown")
    from envsim.evaluation.running.run_rows import read_rows

    rows = [r for r in read_rows(path / "results.jsonl") if chained_row_problem(r) is None]
    deltas: dict[str, Any] = {}
    for row in rows:
        episode = episodes.get(row["id"], {})
        for step in row.get("steps") or []:
            index = step.get("index")
            truth = (episode.get("steps") or [])[index] if isinstance(index, int) and index < len(
                episode.get("steps") or []) else {}
            sid = f"{row['id']}#{index}"
            deltas[sid] = step.get("true_delta_size")
            action = step.get("action") or truth.get("action")
            kept = "observation" in step
            known = "true_observation" in step or "observation" in truth
            expected = (step.get("true_observation", truth.get("observation")),
                        step.get("true_patch", truth.get("patch")))
            view.add(_sample(
                sid, env=row.get("env"), tool=(action or {}).get("name"), stratum=step.get("stratum"), scores=step,
                call=action, expected=expected if known else None,
                predicted=(step.get("observation"), step.get("patch")) if kept else None,
                changes=_step_changes(expected[1], step.get("patch"), known, kept), reason=step.get("reason")),
                prompt="(not kept: a chained step's prompt holds the simulator's own state, rebuilt as it played)",
                answer=None)
    summary = chained_summary(rows)
    view.lines += [f"{summary['scored']} episodes scored ({summary['steps']} steps), {summary['infra_failures']} "
                   f"infrastructure failures; episode CM {100 * summary['episode_cm']['rate']:.1f}%",
                   "CM@k: " + ", ".join(f"{k}: {100 * g['rate']:.1f}%" for k, g in summary["cm_at_k"].items())]
    view.figures = _step_figures(view.samples)
    view.failure = _failure_tables(view.samples)
    view.plots.append({"title": "step CM by |Δ| of the true call", "png": _cm_plot(view.samples, deltas, label)})
    return view


def _steps_view(path: Path, label: str, kind: str, episodes: list[dict[str, Any]]) -> RunView:
    """A rollout track or an ``envsim simulate`` output: one sample per step of its episodes."""
    from envsim.records import outcome_of, stratum_of

    view = RunView(label, kind, str(path))
    deltas: dict[str, Any] = {}
    for episode in episodes:
        for step in episode.get("steps") or []:
            if not isinstance(step, dict):
                continue
            sid = f"{episode.get('env')}#{episode.get('seed')}#{step.get('index')}"
            delta = step.get("true_delta_size")
            deltas[sid] = delta
            stratum = stratum_of(outcome_of(step.get("true_observation"), delta, str(episode.get("env"))), delta) \
                if isinstance(delta, int) else "unknown"
            known = "true_observation" in step or "true_patch" in step
            view.add(_sample(
                sid, env=episode.get("env"), tool=(step.get("action") or {}).get("name"), stratum=stratum,
                scores=step, call=step.get("action"),
                expected=(step.get("true_observation"), step.get("true_patch")) if known else None,
                predicted=(step.get("observation"), step.get("patch")),
                changes=_step_changes(step.get("true_patch"), step.get("patch"), known, True),
                reason=step.get("reason"), status="scored" if step.get("fm") is not None else "unscored"),
                prompt="(not kept: a simulated step's prompt holds the simulator's own state)", answer=None)
    drift = _read_json(path / "drift.json")
    if isinstance(drift, dict) and isinstance(drift.get("cm_at_k"), dict):
        view.lines.append(f"{drift.get('scored', drift.get('episodes'))} episodes scored, horizon "
                          f"{drift.get('horizon')}; mean steps before divergence "
                          f"{drift.get('mean_steps_before_divergence')}; fallback steps {drift.get('fallback_steps')}")
        view.lines.append("CM@k: " + ", ".join(f"{k}: {100 * float(v):.1f}%" for k, v in drift["cm_at_k"].items()
                                               if isinstance(v, (int, float))))
    if not any(s["status"] == "scored" for s in view.samples):
        view.notes.append("no step carries shadow scores (run without --shadow): nothing to compare")
    view.figures = _step_figures(view.samples)
    view.failure = _failure_tables(view.samples)
    png = _png(path / "drift.png")
    if png:
        view.plots.append({"title": "drift by step", "png": png})
    view.plots.append({"title": "step CM by |Δ| of the true call", "png": _cm_plot(view.samples, deltas, label)})
    return view


def _jsonl(path: Path) -> list[Any]:
    from envsim.evaluation.running.runner import iter_result_lines

    return list(iter_result_lines(path))


def _rollout(path: Path, label: str) -> RunView:
    latest: dict[tuple[Any, Any], dict[str, Any]] = {}
    for row in _jsonl(path / "episodes.jsonl"):
        if isinstance(row, dict) and isinstance(row.get("steps"), list):
            latest[(row.get("env"), row.get("seed"))] = row
    episodes = [e for e in latest.values() if e.get("status", "scored") == "scored"]
    return _steps_view(path, label, "rollout", episodes)


def _simulate(path: Path, label: str) -> RunView:
    episodes: dict[tuple[Any, Any], dict[str, Any]] = {}
    for row in _jsonl(path / "steps.jsonl"):
        if isinstance(row, dict):
            episodes.setdefault((row.get("env"), row.get("seed")), {"env": row.get("env"), "seed": row.get("seed"),
                                                                    "steps": []})["steps"].append(row)
    return _steps_view(path, label, "simulate", list(episodes.values()))


def collect(path: Path, label: str | None = None) -> list[RunView]:
    """The runs of one directory (a tiers directory gives one per tier); raises ``UnknownRunKind``."""
    label = label or path.name or str(path)
    kind = run_kind(path)
    if kind == "tiers":
        return [view for tier in tier_dirs(path) for view in collect(tier, f"{label}/{tier.name}")]
    return [{"single": _single, "chained": _chained, "rollout": _rollout, "simulate": _simulate}[kind](path, label)]


def view_data(paths: Iterable[Path]) -> dict[str, Any]:
    """The page data of several run directories (labels made unique)."""
    runs: list[RunView] = []
    for path in paths:
        for view in collect(Path(path)):
            if any(v.label == view.label for v in runs):
                view.label = f"{view.label} [{view.path}]"
            runs.append(view)
    if not runs:
        raise UnknownRunKind("no run to show")
    return {"title": "EnvSim view: " + ", ".join(v.label for v in runs), "runs": [v.to_json() for v in runs]}

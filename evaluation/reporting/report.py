"""Aggregate results into ``summary.json``, ``report.md`` and a CM-vs-|Δ| plot; compare runs."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from envsim.construction.stats import token_stats_by_stratum, tokens_markdown
from envsim.evaluation.reporting.console import SMALL_N_NOTE, small_group_mark
from envsim.evaluation.scoring.failure_classes import markdown as failure_markdown
from envsim.evaluation.scoring.failure_classes import summary_fields as failure_summary_fields
from envsim.records import STRATA

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from envsim.evaluation.running.run_rows import CheckedRows

RATES = ("fm", "cm", "cm_lenient", "cm_original")
#: Tolerant rates beside the exact ones (``evaluation.scoring.failure_classes``), reported when the run's rows carry them;
#: a row written before them counts with its exact verdict (a lower bound).
TOLERANT_RATES = {"fm_json": "fm", "cm_numeric": "cm"}
BOOTSTRAP_SAMPLES = 1000
EMPTY = "–"  # how a figure of a group with nothing scored (n = 0) reads: never a real-looking 0.0
SUMMARY_FILE, REPORT_FILE, PLOT_FILE, COMPARISON_FILE = "summary.json", "report.md", "cm_by_delta.png", "comparison.md"
#: Result fields no report reads, dropped as results.jsonl is read (the stored answer: up to 20,000 characters).
UNREAD_FIELDS = ("answer",)


def bootstrap_ci(values: list[float], seed: int = 0, samples: int = BOOTSTRAP_SAMPLES) -> list[float]:
    """Percentile bootstrap 95% interval of the mean of ``values`` (``[0, 0]`` when empty)."""
    return bootstrap_cis([values], seed, samples)[0]


#: Resampling indices drawn per block (rows x n): bounds the bootstrap's memory at any sample count (one
#: 1000 x 40,000 draw would hold 320 MB of indices); blocks drawn in turn give the very same numbers.
BOOTSTRAP_BLOCK_VALUES = 2_000_000


def bootstrap_cis(columns: Sequence[Sequence[float]], seed: int = 0, samples: int = BOOTSTRAP_SAMPLES
                  ) -> list[list[float]]:
    """``bootstrap_ci`` of each column (all of one length ``n``), from one draw of resampling indices shared by
    the columns (each column alone would draw the same indices: same seed, same ``n``)."""
    n = len(columns[0]) if columns else 0
    if not n:
        return [[0.0, 0.0] for _ in columns]
    data = [np.asarray(values, dtype=float) for values in columns]
    if all(bool(((column == 0.0) | (column == 1.0)).all()) for column in data):
        return _verdict_cis(data, seed, samples)
    means = _bootstrap_means(n, len(data), seed, samples,
                             lambda indices: [column[indices].mean(axis=1) for column in data])
    return [_interval(out) for out in means]


def _verdict_cis(data: list[np.ndarray], seed: int, samples: int) -> list[list[float]]:
    """``bootstrap_cis`` of columns of 0.0/1.0 verdicts, the very numbers of the float means: a mean of 0/1 values
    is an exact count over ``n``. Equal columns (CM, CM-lenient and CM-original mostly agree) are resampled once; a
    column of one value has that value for every draw, so it needs none; the others (8 at a time) are packed one
    bit each into a byte per sample, gathered once per drawn index and counted bit by bit."""
    n = len(data[0])
    unique = {column.tobytes(): column for column in data}
    found = {key: _interval(np.full(samples, column[0])) for key, column in unique.items()
             if column.min() == column.max()}
    varying = [(key, column) for key, column in unique.items() if key not in found]
    for first in range(0, len(varying), 8):
        group = varying[first:first + 8]
        packed = np.zeros(n, dtype=np.uint8)
        for bit, (_, column) in enumerate(group):
            packed |= column.astype(np.uint8) << np.uint8(bit)

        def counted(indices: np.ndarray, packed: np.ndarray = packed, bits: int = len(group)) -> list[np.ndarray]:
            drawn = packed[indices]  # one gather of one byte per drawn index, for the whole group
            return [np.count_nonzero(drawn & np.uint8(1 << bit), axis=1) / n for bit in range(bits)]

        means = _bootstrap_means(n, len(group), seed, samples, counted)
        found.update((key, _interval(out)) for (key, _), out in zip(group, means))
    return [found[column.tobytes()] for column in data]


def _bootstrap_means(n: int, count: int, seed: int, samples: int,
                     block_means: Callable[[np.ndarray], list[np.ndarray]]) -> list[np.ndarray]:
    """``samples`` resampled means of ``count`` columns of ``n`` values: ``block_means(indices)`` gives the
    columns' means over each block of drawn indices (``BOOTSTRAP_BLOCK_VALUES`` at most), the same draws for every
    column (seed ``seed``)."""
    rng = np.random.default_rng(seed)
    means = [np.empty(samples) for _ in range(count)]
    rows = max(1, BOOTSTRAP_BLOCK_VALUES // n)
    # numpy draws indices below 2**32 from the same 32-bit stream whatever the dtype: int32 draws are the int64
    # draws, three times as fast (tests/evaluation/test_bootstrap.py checks it on the installed numpy)
    dtype = np.int32 if n <= np.iinfo(np.int32).max else np.int64
    for start in range(0, samples, rows):
        indices = rng.integers(0, n, size=(min(rows, samples - start), n), dtype=dtype)
        for out, block in zip(means, block_means(indices)):
            out[start:start + len(indices)] = block
    return means


def _interval(means: np.ndarray) -> list[float]:
    """The percentile 95% interval of resampled means, rounded as reports show it."""
    low, high = np.percentile(means, [2.5, 97.5])
    return [round(float(low), 4), round(float(high), 4)]


def group_stats(rows: list[dict[str, Any]], tolerant: bool = False) -> dict[str, Any]:
    """``{"n", "fm", "cm", "cm_lenient", "ci", ...}`` for scored rows of one group (``tolerant``: FM-json and
    CM-numeric too)."""
    n = len(rows)
    stats: dict[str, Any] = {"n": n}
    columns: dict[str, list[float]] = {}
    for rate in RATES + (tuple(TOLERANT_RATES) if tolerant else ()):
        if rate == "cm_original" and rows and not any(rate in r for r in rows):
            continue  # results written before cm_original existed: not reported rather than 0
        exact = TOLERANT_RATES.get(rate)
        values = ([1.0 if r.get(rate) else 0.0 for r in rows] if exact is None else
                  [1.0 if (r[rate] if rate in r else r.get(exact)) else 0.0 for r in rows])
        stats[rate] = round(sum(values) / n, 4) if n else 0.0
        columns[rate] = values
    stats["ci"] = dict(zip(columns, bootstrap_cis(list(columns.values()))))
    stats["parse_failure_rate"] = round(sum([not r.get("parsed") for r in rows]) / n, 4) if n else 0.0
    for key in ("delta_precision", "delta_recall", "delta_f1"):
        stats[key] = round(sum([r.get(key, 0.0) for r in rows]) / n, 4) if n else 0.0
    return stats


def _grouped(rows: list[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[str(row.get(key))].append(row)
    return groups


def summarize(results: Iterable[dict[str, Any]], config: dict[str, Any]) -> dict[str, Any]:
    """The run summary: overall and per stratum / |Δ| / arity / domain, infra failures kept apart.

    Rows are taken in id order (not the order they finished), so the bootstrap intervals of the
    same results are always the same."""
    rows = sorted(results, key=lambda r: str(r.get("id")))
    scored = [r for r in rows if r.get("status") == "scored"]
    bad = [r for r in rows if r.get("status") == "bad_record"]
    infra = [r for r in rows if r.get("status") not in ("scored", "bad_record")]
    by_stratum = _grouped(scored, "stratum")
    by_delta = _grouped(scored, "delta_size")
    by_arity = _grouped(scored, "arg_count")
    by_domain = _grouped(scored, "domain")
    tokens_in = [r["prompt_tokens"] for r in scored if isinstance(r.get("prompt_tokens"), int)]
    tokens_out = [r["completion_tokens"] for r in scored if isinstance(r.get("completion_tokens"), int)]
    latencies = [r["latency_s"] for r in scored if isinstance(r.get("latency_s"), (int, float))]
    tolerant = any("fm_json" in r for r in scored)  # results written before the tolerant rates: not reported
    stats = partial(group_stats, tolerant=tolerant)
    return {
        "model": config.get("model"),
        "benchmark": config.get("benchmark"),
        "split": config.get("split"),
        "prompt_mode": config.get("prompt_mode"),
        "prompt_version": config.get("prompt_version"),
        "response_format": config.get("response_format", "free"),
        "config_hash": config.get("config_hash"),
        "samples": len(rows),
        "scored": len(scored),
        "infra_failures": len(infra),
        "infra_failure_reasons": reason_counts(infra),
        "overall": stats(scored),
        "by_stratum": {s: stats(by_stratum.get(s, [])) for s in STRATA},
        "by_delta": {k: stats(v) for k, v in sorted(by_delta.items(), key=_numeric_key)},
        "by_arity": {k: stats(v) for k, v in sorted(by_arity.items(), key=_numeric_key)},
        "by_domain": {k: stats(v) for k, v in sorted(by_domain.items())},
        "parse_failure_reasons": reason_counts((r for r in scored if not r.get("parsed")), width=80),
        "tokens": {"prompt_mean": round(float(np.mean(tokens_in)), 1) if tokens_in else None,
                   "completion_mean": round(float(np.mean(tokens_out)), 1) if tokens_out else None,
                   "counted": counted_tokens(scored, config)},
        "latency_s": {"mean": round(float(np.mean(latencies)), 4) if latencies else None,
                      "p95": round(float(np.percentile(latencies, 95)), 4) if latencies else None},
        **failure_summary_fields(scored),
        # only a run with bad records gets these keys (a clean run's summary keeps its v1/v2 form)
        **({"bad_records": len(bad), "bad_record_reasons": reason_counts(bad)} if bad else {}),
    }


def reason_counts(rows: Iterable[dict[str, Any]], width: int = 200, limit: int = 10) -> dict[str, int]:
    """``reason`` → count over ``rows``, most common first (top ``limit``, reasons cut to ``width`` characters)."""
    return dict(Counter(str(r.get("reason"))[:width] for r in rows).most_common(limit))


def _numeric_key(item: tuple[str, Any]) -> tuple[int, int, str]:
    """Sort key of a group name that should be an integer (a hand-edited row may hold anything)."""
    name = item[0]
    digits = name[1:] if name.startswith("-") else name
    return (0, int(name), "") if digits.isdigit() and len(digits) < 18 else (1, 0, name)


def counted_tokens(scored: list[dict[str, Any]], config: dict[str, Any]) -> dict[str, Any]:
    """Counted prompt / answer tokens per stratum (``counted_*_tokens`` of the result rows; the
    server's ``usage`` figures stay in ``prompt_mean`` / ``completion_mean``)."""
    names = sorted({str(r["tokenizer"]) for r in scored if r.get("tokenizer")})
    return token_stats_by_stratum(scored, lambda r: r.get("counted_prompt_tokens"),
                                  lambda r: r.get("counted_answer_tokens"), tokenizer=", ".join(names) or "none",
                                  prompt_mode=str(config.get("prompt_mode")),
                                  prompt_version=str(config.get("prompt_version")))


def format_rate(stats: Mapping[str, Any], rate: str, *, ci: bool = True) -> str:
    """``stats[rate]`` as a percentage with its 95% interval (``"12.5 [9.0, 16.1]"``; ``ci=False``: the
    point only). An empty group (``n`` = 0) reads "–", never a real-looking zero; a rate the summary
    predates reads "n/a"."""
    if not stats.get("n"):
        return EMPTY
    if rate not in stats.get("ci", {}):
        return "n/a"
    point = f"{100 * stats[rate]:.1f}"
    if not ci:
        return point
    low, high = stats["ci"][rate]
    return f"{point} [{100 * low:.1f}, {100 * high:.1f}]"


def _figure(stats: Mapping[str, Any], key: str, spec: str) -> str:
    """``stats[key]`` formatted with ``spec`` (e.g. ``".2f"``, ``".1%"``), or "–" for an empty group."""
    return format(stats[key], spec) if stats.get("n") else EMPTY


RATE_NAMES = {"fm": "FM", "fm_json": "FM-json", "cm": "CM", "cm_numeric": "CM-numeric", "cm_lenient": "CM-lenient",
              "cm_original": "CM-original"}


def shown_rates(groups: Iterable[Mapping[str, Any]]) -> list[str]:
    """The rates a table shows: the exact ones, with FM-json / CM-numeric beside FM / CM when the groups have them."""
    groups = list(groups)
    tolerant = {rate for rate in TOLERANT_RATES if any(rate in g.get("ci", {}) for g in groups)}
    order = ("fm", "fm_json", "cm", "cm_numeric", "cm_lenient", "cm_original")
    return [rate for rate in order if rate in RATES or rate in tolerant]


def markdown_table(title: str, groups: dict[str, dict[str, Any]], keep_empty: bool = False) -> str:
    """A Markdown table of FM / CM / CM-lenient / CM-original with 95% intervals, one row per group (FM-json and
    CM-numeric beside FM and CM when the summary has them); empty groups are left out unless ``keep_empty``
    (then their figures read "–")."""
    rates = shown_rates(groups.values())
    lines = [f"### {title}", "", "| group | n | " + "".join(f"{RATE_NAMES[r]} % [95% CI] | " for r in rates)
             + "Δ-F1 |", "|---|---:|" + "---:|" * (len(rates) + 1)]
    small = False
    for name, stats in groups.items():
        if stats["n"] or keep_empty:
            cells = " | ".join(format_rate(stats, rate) for rate in rates)
            mark = small_group_mark(stats["n"])
            small = small or bool(mark)
            n_cell = f"{stats['n']}\\{mark}" if mark else str(stats["n"])  # "\*" in Markdown shows the star
            lines.append(f"| {name} | {n_cell} | {cells} | {_figure(stats, 'delta_f1', '.2f')} |")
    if small:
        lines += ["", "\\" + SMALL_N_NOTE]  # escaped: a leading "*" would start a Markdown list
    return "\n".join(lines) + "\n"


def _reason_lines(reasons: Mapping[str, int]) -> str:
    """Markdown bullets ``- N× reason``, in the given order (most common first)."""
    return "".join(f"- {count}× {reason}\n" for reason, count in reasons.items())


def _uncounted_section(summary: dict[str, Any]) -> list[str]:
    """Result rows the report did not count: wrong types (invalid) and ids not in the benchmark (ignored)."""
    parts: list[str] = []
    if summary.get("invalid_rows"):
        parts.append(f"## Invalid result rows: {summary['invalid_rows']} rows have wrong types and are not counted\n\n"
                     + _reason_lines(summary.get("invalid_row_reasons") or {}))
    if summary.get("ignored_rows"):
        parts.append(f"**{summary['ignored_rows']} result rows were ignored**: their ids are not samples of this "
                     "run's benchmark.\n")
    return parts


def _unscored_section(summary: dict[str, Any]) -> list[str]:
    """The "nothing scored" banner and the infrastructure failures with their reasons (none when all scored)."""
    total, infra = summary["samples"], summary["infra_failures"]
    parts: list[str] = _uncounted_section(summary)
    if not summary["scored"]:
        why = (f"all {total} samples failed before an answer could be scored (infrastructure failures below)"
               if total else "the run directory holds no results")
        parts.append(f"**No sample was scored** — {why}; the figures below are empty ({EMPTY}).\n")
    if summary.get("bad_records"):
        parts.append(f"## Bad records: {summary['bad_records']} of {total} samples were not scored\n\n"
                     "Their records are at fault (EnvSim cannot build their prompt); they are left out of every "
                     "figure and a re-run does not try them again: fix the benchmark file.\n\n"
                     + _reason_lines(summary.get("bad_record_reasons") or {}))
    if infra:
        parts.append(f"## Infrastructure failures: {infra} of {total} samples were not scored\n\n"
                     "They are not counted as wrong and are left out of every figure; a re-run of the same command "
                     "retries them (the answers already scored are kept).\n\n"
                     + _reason_lines(summary.get("infra_failure_reasons") or {}))
    return parts


def _reused_line(summary: dict[str, Any]) -> str:
    """The report's line on results a re-run took over from an earlier run (empty when none)."""
    from envsim.evaluation.running.reuse import reuse_phrase

    phrase = reuse_phrase(summary)
    return f"\n**Not scored again: {phrase}; `--overwrite` scores them again.**\n" if phrase else ""


def _schema_words(response_format: str | None) -> str:
    """How the report's header names a run's structured answers ('' for free answers)."""
    return {"json-schema": ", answers under the JSON Schema",
            "json-schema-path-first": ", answers under the JSON Schema (operations' path before op)"}.get(
                response_format or "free", "")


def render_markdown(summary: dict[str, Any]) -> str:
    """The run report as Markdown: header, unscored samples (if any), then the tables."""
    overall = summary["overall"]
    head = (f"# EnvSim evaluation: {summary['model']}\n\nbenchmark `{summary['benchmark']}` split "
            f"`{summary['split']}`, prompt `{summary['prompt_mode']}` v{summary['prompt_version']}"
            f"{_schema_words(summary.get('response_format'))}; "
            f"{summary['scored']} scored, {summary['infra_failures']} infrastructure failures "
            f"(not counted as wrong), parse failures {_figure(overall, 'parse_failure_rate', '.1%')}.\n"
            f"{_reused_line(summary)}")
    parts = [head, *_unscored_section(summary), markdown_table("Overall", {"all": overall}, keep_empty=True)]
    if overall["n"]:
        parts += [markdown_table("By stratum", summary["by_stratum"]), markdown_table("By |Δ|", summary["by_delta"]),
                  markdown_table("By argument count", summary["by_arity"]),
                  markdown_table("By domain", summary["by_domain"])]
    if overall["n"] and "failure_classes" in summary:
        parts.append(failure_markdown(summary))
    if summary["parse_failure_reasons"]:
        parts.append("### Parse failures\n\n" + _reason_lines(summary["parse_failure_reasons"]))
    if summary.get("executor_misses"):
        from envsim.evaluation.baselines.executor_misses import counts_markdown

        parts.append(counts_markdown(summary["executor_misses"]))
    counted = summary.get("tokens", {}).get("counted")
    if counted and counted["prompt"]["overall"]["n"]:
        parts.append("### Tokens\n\n" + tokens_markdown(counted))
    return "\n".join(parts)


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _scored_deltas(summary: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The scored |Δ| groups of a summary by integer |Δ|, in order (n = 0 and non-numeric keys left out)."""
    groups = {int(d): g for d, g in summary.get("by_delta", {}).items() if _numeric_key((d, None))[0] == 0
              and g.get("n")}
    return dict(sorted(groups.items()))


def _annotate_counts(ax: Any, groups: dict[int, dict[str, Any]], column: dict[int, int], row: int,
                     color: str) -> None:
    """One row of sample counts under the x axis (row ``row``, in the run's colour), one count per |Δ|."""
    offset = -20 - 10 * row  # points below the axis, under the tick labels
    ax.annotate("n", xy=(0, 0), xycoords="axes fraction", xytext=(-8, offset), textcoords="offset points",
                ha="right", va="top", fontsize=7.5, color=color, fontweight="bold")
    for delta, stats in groups.items():
        ax.annotate(str(stats["n"]), xy=(column[delta], 0), xycoords=ax.get_xaxis_transform(), xytext=(0, offset),
                    textcoords="offset points", ha="center", va="top", fontsize=7.5, color=color)


def _plot_run(ax: Any, xs: list[float], groups: list[dict[str, Any]], marker: str, label: str) -> Any:
    """One run's CM points (%) with their 95% intervals as error bars, joined by a line that breaks where a
    column in between has no point of this run (no implied value there); the errorbar container."""
    ys = [100 * g["cm"] for g in groups]
    low = [y - 100 * g["ci"]["cm"][0] for y, g in zip(ys, groups)]
    high = [100 * g["ci"]["cm"][1] - y for y, g in zip(ys, groups)]
    bars = ax.errorbar(xs, ys, yerr=[low, high], marker=marker, markersize=6, capsize=3, linestyle="none", label=label)
    line_x: list[float] = []
    line_y: list[float] = []
    for i, (x, y) in enumerate(zip(xs, ys)):
        if i and x - xs[i - 1] > 1.5:  # a column in between without a point of this run: break the line
            line_x.append(x - 1)
            line_y.append(float("nan"))
        line_x.append(x)
        line_y.append(y)
    ax.plot(line_x, line_y, color=bars.lines[0].get_color(), linewidth=1.2)
    return bars


def _cm_by_delta_figure(summaries: dict[str, dict[str, Any]], warnings: Sequence[str] = ()) -> "Figure":
    """The CM-vs-|Δ| figure: one marker style per run, dodged sideways, with each point's n under the axis;
    ``warnings`` (why the runs are not directly comparable) are printed under the plot.

    Only |Δ| values with scored samples are columns (equally spaced, labelled with the value)."""
    from matplotlib.figure import Figure

    points = {label: _scored_deltas(summary) for label, summary in summaries.items()}
    plotted = [label for label, groups in points.items() if groups]
    deltas = sorted(set().union(*points.values()))
    column = {delta: i for i, delta in enumerate(deltas)}
    fig = Figure(figsize=(min(18.0, max(7.0, 2.0 + 0.45 * len(deltas))), 4.2 + 0.15 * len(plotted)))
    ax = fig.subplots()
    step = min(0.2, 0.6 / max(1, len(plotted)))
    handles = []  # legend in run order, runs that scored nothing included
    for index, (label, groups) in enumerate(points.items()):
        marker = MARKERS[index % len(MARKERS)]
        if not groups:  # listed, so that a run which scored nothing is not silently missing
            handles += ax.plot([], [], marker=marker, linestyle="none", color="grey",
                               label=f"{label} (no sample scored)")
            continue
        row = plotted.index(label)
        xs = [column[d] + (row - (len(plotted) - 1) / 2) * step for d in groups]  # dodged around the column
        bars = _plot_run(ax, xs, list(groups.values()), marker, label)
        _annotate_counts(ax, groups, column, row, bars.lines[0].get_color())
        handles.append(bars)
    if not deltas:
        ax.text(0.5, 0.5, "no sample scored", transform=ax.transAxes, ha="center", va="center", color="grey")
    ax.set_xticks(range(len(deltas)), [str(d) for d in deltas])
    ax.set_xlim(-0.6, max(len(deltas) - 0.4, 0.6))
    ax.set_xlabel("|Δ| (changed state leaves); n = scored samples", labelpad=6 + 10 * len(plotted))
    ax.set_ylabel("Config Match (%)")
    ax.set_ylim(-5, 105)
    ax.grid(alpha=0.3)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.set_title("CM vs |Δ| (95% bootstrap CI)")
    if warnings:
        import textwrap

        text = "Not directly comparable: " + "; ".join(warnings)
        fig.text(0.01, -0.02, "\n".join(textwrap.wrap(text, 140)), ha="left", va="top", fontsize=8,
                 color="firebrick")
    return fig


def plot_cm_by_delta(summaries: dict[str, dict[str, Any]], path: Path, warnings: Sequence[str] = ()) -> None:
    """CM (with 95% CI) against |Δ|, one line per run, each point's sample count shown (PNG at ``path``);
    ``warnings`` (why the runs are not directly comparable) are printed under the plot."""
    save_figure_atomic(_cm_by_delta_figure(summaries, warnings), path, dpi=120, bbox_inches="tight")


def report_files(run_dir: Path) -> list[Path]:
    """The files ``write_reports`` (re)builds in ``run_dir``."""
    return [run_dir / SUMMARY_FILE, run_dir / REPORT_FILE, run_dir / PLOT_FILE]


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it over ``path``: never half a file, never
    through a link planted in the run directory (``envsim.safe_files.write_text``)."""
    from envsim.safe_files import write_text

    write_text(path, text)


def write_markdown(path: Path, text: str) -> str:
    """``write_text_atomic`` of a Markdown file with its control characters escaped (a model name, an endpoint's
    error text or a record's reason may hold ``ESC [ 2 J``, ``ESC ] 0 ; ... BEL`` or a bare ``\\r``, which a
    terminal showing the file would act on); returns the text written, for the console."""
    from envsim.control_chars import escape_lines

    shown = escape_lines(text)
    write_text_atomic(path, shown)
    return shown


def save_figure_atomic(figure: "Figure", path: Path, **kwargs: Any) -> None:
    """``figure.savefig`` to a temporary file beside ``path``, then renamed over it (``envsim.safe_files``)."""
    from envsim.safe_files import save_figure

    save_figure(figure, path, **kwargs)


def checked_results(run_dir: Path, config: dict[str, Any],
                    sample_ids: Sequence[str] | None = None) -> "CheckedRows":
    """The rows of ``run_dir/results.jsonl`` the report counts (``evaluation.running.run_rows``); ``sample_ids``: the ids
    the run was asked to score when the caller holds them (else the benchmark named in ``config`` is read again)."""
    from envsim.evaluation.running.run_rows import check_rows, read_rows
    from envsim.evaluation.running.selection import run_sample_ids

    ids, warning = (list(sample_ids), None) if sample_ids is not None else run_sample_ids(run_dir, config)
    checked = check_rows(read_rows(run_dir / "results.jsonl", drop=UNREAD_FIELDS), ids)
    if warning:
        checked.warnings.insert(0, warning)
    return checked


def write_reports(run_dir: Path, sample_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """(Re)build ``summary.json``, ``report.md`` and ``cm_by_delta.png`` from a one-step run directory.

    Result rows with wrong types are counted as invalid rows (shown first), rows whose id is not a sample
    of the run's benchmark are ignored (``summary["warnings"]`` says so); files are replaced atomically.
    ``sample_ids``: the run's sample ids, in benchmark order, when the caller has them (``envsim eval`` does:
    the benchmark is then not read a second time); without them they are the ones the run recorded
    (``evaluation.running.selection``: ``SelectionUnknown``, nothing written, when they cannot be told exactly)."""
    from envsim.safe_files import read_json

    config = read_json(run_dir / "config.json")
    checked = checked_results(run_dir, config, sample_ids)
    summary = summarize(checked.rows, config)
    # Only a run with dropped rows or warnings gets these keys: a clean run's summary.json keeps its v1/v2 form.
    if checked.invalid_count:
        summary.update(invalid_rows=checked.invalid_count, invalid_row_reasons=checked.invalid)
    if checked.unknown_ids:
        summary["ignored_rows"] = len(checked.unknown_ids)
    if checked.warnings:
        summary["warnings"] = checked.warnings
    endpoints = run_dir / "endpoints.json"            # written by envsim eval with several --base-url
    if endpoints.exists():
        try:
            summary["endpoints"] = read_json(endpoints)
        except (OSError, ValueError):
            pass
    from envsim.evaluation.baselines.executor_misses import read_miss_counts

    from envsim.evaluation.running.reuse import summary_fields

    summary.update(summary_fields(run_dir))          # a re-run that reused results says so (RUN/reuse.json)
    misses = read_miss_counts(run_dir)               # written by envsim eval --model executor
    if misses is not None:
        summary["executor_misses"] = misses
    summary_path, report_path, plot_path = report_files(run_dir)
    write_text_atomic(summary_path, json.dumps(summary, indent=2) + "\n")
    write_markdown(report_path, render_markdown(summary))
    plot_cm_by_delta({summary["model"] or run_dir.name: summary}, plot_path)
    return summary


@dataclass
class Comparison:
    """What ``compare_runs`` produced: the Markdown, why the runs may not be comparable, the files written."""

    text: str
    warnings: list[str]
    written: list[Path]


# settings that must match for two runs' figures to be compared directly: (config key, how it is named)
COMPARED_SETTINGS = (("benchmark", "benchmark"), ("split", "split"), ("benchmark_sha256", "benchmark file sha256"),
                     ("prompt_mode", "prompt mode"), ("prompt_version", "prompt version"), ("limit", "--limit"))


def _load_run(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run's summary (built when missing) and its settings (``config.json``, else the summary's)."""
    from envsim.safe_files import read_json

    path = run_dir / SUMMARY_FILE
    summary = read_json(path) if path.exists() else write_reports(run_dir)
    config_path = run_dir / "config.json"
    config = read_json(config_path) if config_path.exists() else {}
    return summary, {key: config.get(key, summary.get(key)) for key, _ in COMPARED_SETTINGS}


def tier_of(run_dir: Path, split: Any) -> str:
    """The tier a run directory holds (its folder name under a tiers directory of ``eval --benchmark v2``),
    else its split."""
    return run_dir.name if (run_dir.parent / "tiers.json").exists() else str(split or "test")


def run_label(run_dir: Path, summary: Mapping[str, Any], setting: Mapping[str, Any]) -> str:
    """How a run is named in comparisons and plot legends: model, benchmark and tier (or split)."""
    benchmark = str(setting.get("benchmark") or summary.get("benchmark") or "?")
    if benchmark.endswith(".jsonl") or "/" in benchmark:
        benchmark = Path(benchmark).name
    tier = tier_of(run_dir, setting.get("split") or summary.get("split"))
    return f"{summary.get('model')} ({run_dir.name}) · {benchmark}/{tier}"


def _difference(name: str, values: dict[str, Any]) -> str | None:
    """``"different NAME: A in run1; B in run2, run3"`` when the runs' values differ, else None."""
    by_value: dict[str, list[str]] = defaultdict(list)
    for label, value in values.items():
        by_value["not set" if value is None else str(value)].append(label)
    if len(by_value) < 2:
        return None
    return f"different {name}: " + "; ".join(f"{value} in {', '.join(labels)}" for value, labels in by_value.items())


def comparability_warnings(summaries: dict[str, dict[str, Any]], settings: dict[str, dict[str, Any]]) -> list[str]:
    """Why runs (by label) are not directly comparable: a setting of ``COMPARED_SETTINGS`` differs, or they
    scored different numbers of samples. The file digest is checked only among runs that recorded one
    and only when the benchmark names agree."""
    warnings: list[str] = []
    for key, name in COMPARED_SETTINGS:
        values = {label: s[key] for label, s in settings.items()}
        if key == "benchmark_sha256":  # an unknown digest is no difference; another benchmark already differs
            other_benchmark = any(w.startswith("different benchmark:") for w in warnings)
            values = {} if other_benchmark else {label: str(v)[:12] for label, v in values.items() if v}
        difference = _difference(name, values)
        if difference:
            warnings.append(difference)
    counts = _difference("numbers of scored samples", {label: s["scored"] for label, s in summaries.items()})
    if counts:
        warnings.append(counts + " (the figures are not over the same samples; intervals differ in width)")
    return warnings


def _comparison_table(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown rows: CM per stratum (strata empty in every run left out) and overall FM / CM per run."""
    shown = [k for k in STRATA if any(s["by_stratum"].get(k, {}).get("n") for s in summaries.values())]
    lines = ["| run | scored | " + "".join(f"{k} CM % | " for k in shown) + "overall FM % [95% CI] | "
             "overall CM % [95% CI] |", "|---|---:|" + "---:|" * (len(shown) + 2)]
    for label, s in summaries.items():
        unscored = f" (+{s['infra_failures']} unscored)" if s.get("infra_failures") else ""
        cells = "".join(f"{format_rate(s['by_stratum'].get(k, {}), 'cm', ci=False)} | " for k in shown)
        lines.append(f"| {label} | {s['scored']}{unscored} | {cells}"
                     f"{format_rate(s['overall'], 'fm')} | {format_rate(s['overall'], 'cm')} |")
    return lines


def compare_runs(run_dirs: list[Path], out: Path | None = None) -> Comparison:
    """Side-by-side Markdown of several runs (CM by stratum, overall FM / CM), the reasons they may not be
    directly comparable, and (with ``out``) ``comparison.md`` plus one CM-vs-|Δ| plot with a line per run."""
    summaries: dict[str, dict[str, Any]] = {}
    settings: dict[str, dict[str, Any]] = {}
    for run_dir in run_dirs:
        summary, setting = _load_run(run_dir)
        label = run_label(run_dir, summary, setting)
        label = label if label not in summaries else f"{label} [{run_dir}]"
        summaries[label], settings[label] = summary, setting
    warnings = comparability_warnings(summaries, settings)
    lines = ["## Runs side by side", "", *_comparison_table(summaries), "",
             f"Stratum columns are CM %; {EMPTY} marks a stratum a run has no scored sample of."]
    if warnings:
        lines += ["", "> **Not directly comparable:**", *(f"> - {w}" for w in warnings)]
    text = "\n".join(lines) + "\n"
    written: list[Path] = []
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        written = [out / COMPARISON_FILE, out / PLOT_FILE]
        write_markdown(written[0], text)
        plot_cm_by_delta(summaries, written[1], warnings)
    return Comparison(text, warnings, written)

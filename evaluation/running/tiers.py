"""Evaluation over the tiers of a tiered benchmark (v2): each tier in its own run directory, reported
apart, plus ``tiers.json`` / ``tiers.md`` side by side. The tier list comes from the benchmark's
``build.json`` (``"tiers": {name: {"split", "kind"}}``); ``kind`` is ``single`` (one-step samples, the
usual runner) or ``chained`` (episodes, ``evaluation/scoring/chained.py``).

What a tier needs beyond the core install is registered in ``TIER_REQUIREMENTS`` (one entry per tier:
adding a track is a registration here, not a change to the command line); ``check_requirements`` is
called before any tier runs. With no ``--tier``, tiers whose requirement is not met are left out and named
(``runnable_tiers``); a tier asked for by name (or ``--tier all``) stops the run up front instead."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from envsim.evaluation.reporting.console import infra_lines
from envsim.evaluation.errors import BenchmarkUnavailable, InvalidOption, MissingRequirement, RunDirUnusable
from envsim.evaluation.running.eval_options import EvalOptions
from envsim.evaluation.running.eval_summary import EvalSummary


def runs_environment_code(options: EvalOptions) -> bool:
    """Whether a run executes or reads the environments' classes (the oracle runs them; ``full-class``
    prompts show their source); other runs need only the records."""
    return options.model == "oracle" or options.prompt_mode == "full-class"


@dataclass(frozen=True)
class TierRequirement:
    """Modules a tier needs (when ``applies(options)``), and the command that installs them. ``missing``,
    when given, replaces the module check: it names what is missing (``None`` when all is there)."""

    modules: tuple[str, ...]
    install: str
    applies: Callable[[EvalOptions], bool] = runs_environment_code
    missing: Callable[[], str | None] | None = None


def tau_bench_missing() -> str | None:
    """``None`` when τ-bench is found the way the adapter finds it (``--tau-path``, installed, or
    ``$ENVSIM_TAU_BENCH``); otherwise what was tried."""
    from envsim.envs.adapters.tau import TauBenchNotFound, locate_tau_bench

    try:
        locate_tau_bench()
        return None
    except TauBenchNotFound as exc:
        why = str(exc).split(";")[0].removeprefix("τ-bench not found: ")
        return "τ-bench (" + why.replace(" at nothing", "; $ENVSIM_TAU_BENCH not set") + ")"


TAU_INSTALL = ("pip install git+https://github.com/sierra-research/tau-bench, or --tau-path / $ENVSIM_TAU_BENCH "
               "set to the folder holding tau_bench/")
TIER_REQUIREMENTS: dict[str, TierRequirement] = {
    "bfcl": TierRequirement(("mpmath", "bfcl_eval"),
                            'pip install -e ".[bfcl]" && pip install --no-deps "bfcl-eval==2026.3.23"'),
    "tau": TierRequirement((), TAU_INSTALL, missing=tau_bench_missing),
    # chained episodes step the real environment alongside the simulator: every model needs τ-bench there
    "tau_chained": TierRequirement((), TAU_INSTALL, applies=lambda _options: True, missing=tau_bench_missing),
}


def module_available(name: str) -> bool:
    """Whether ``name`` can be imported (found without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def unmet_requirements(tier_names: list[str], options: EvalOptions) -> dict[str, str]:
    """Tier -> what it needs and how to install it (``"bfcl_eval (install: ...)"``), for every tier of
    ``tier_names`` whose requirement applies to ``options`` and is not met here."""
    missing: dict[str, str] = {}
    for name in tier_names:
        need = TIER_REQUIREMENTS.get(name)
        if need is None or not need.applies(options):
            continue
        absent = [need.missing()] if need.missing else [m for m in need.modules if not module_available(m)]
        absent = [a for a in absent if a]
        if absent:
            missing[name] = f"{', '.join(absent)} (install: {need.install})"
    return missing


def check_requirements(tier_names: list[str], options: EvalOptions) -> None:
    """Raise ``MissingRequirement`` naming every tier of ``tier_names`` whose extra is missing, before any runs."""
    missing = unmet_requirements(tier_names, options)
    if missing:
        others = [n for n in tier_names if n not in missing]
        lines = [f"tier {name} needs {what}" for name, what in missing.items()]
        hint = f"; or run the other tiers alone, e.g. --tier {others[0]}" if others else ""
        raise MissingRequirement("nothing was run: " + "; ".join(lines) + hint, missing)


def runnable_tiers(plan: dict[str, dict[str, Any]], options: EvalOptions) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The tiers of ``plan`` to run and those left out (tier -> what it needs and how to install it).

    With no ``--tier`` (``options.tier is None``: the default of a tiered benchmark) a tier whose requirement
    is not met here is left out and named, and the others run; a tier asked for by name or with ``--tier
    all`` must run, so a missing requirement stops everything up front (``MissingRequirement``), as it does
    when no tier at all could run."""
    missing = unmet_requirements(list(plan), options)
    if options.tier is not None or len(missing) == len(plan):
        check_requirements(list(plan), options)
    return {n: t for n, t in plan.items() if n not in missing}, missing


def not_run_lines(not_run: dict[str, str]) -> list[str]:
    """Console and ``tiers.md`` lines naming the tiers left out, why, and how to get them."""
    if not not_run:
        return []
    return ([f"{len(not_run)} tier(s) not run (a requirement is missing here; the run is complete for the others):"]
            + [f"  tier {name}: needs {what}" for name, what in not_run.items()]
            + ["  install what a tier needs and re-run the same command: tiers already scored are kept"])


SINGLE_SPLIT = "_split"  # internal tier value: evaluate the split only (kept for callers of tier_plan)


def benchmark_tiers(benchmark: str) -> dict[str, dict[str, Any]]:
    """The tiers of a shipped benchmark whose files exist (``{}`` for a file or an untiered benchmark)."""
    from envsim.benchmark import BENCHMARK_DIR

    if "/" in benchmark or Path(benchmark).suffix in (".jsonl", ".json") or not (BENCHMARK_DIR / benchmark).is_dir():
        return {}  # a file, not a shipped benchmark (a point release's name, v2.1, has a dot too)
    build = BENCHMARK_DIR / benchmark / "build.json"
    try:
        tiers = json.loads(build.read_text()).get("tiers", {})
    except (OSError, ValueError):
        return {}
    return {name: t for name, t in tiers.items() if (BENCHMARK_DIR / benchmark / f"{t['split']}.jsonl").is_file()}


def tier_plan(benchmark: str, tier: str | None, split_given: bool,
              split: str = "test") -> dict[str, dict[str, Any]] | None:
    """The tiers to run, or ``None`` for a plain single-split evaluation.

    ``tier="all"`` (the default for a tiered benchmark when no split is given) runs every tier;
    a tier name runs one; an untiered benchmark or an explicit split runs that split only.
    """
    if tier == SINGLE_SPLIT:
        return None
    tiers = benchmark_tiers(benchmark)
    if tier is None:
        if split_given:  # that split only; a chained split still needs the episode runner
            return {n: t for n, t in tiers.items() if t["split"] == split and t.get("kind") == "chained"} or None
        return tiers or None
    if not tiers:
        raise InvalidOption("--tier", f"benchmark {benchmark!r} has no tiers")
    if tier == "all":
        return tiers
    if tier not in tiers:
        raise InvalidOption("--tier", f"unknown tier {tier!r}; {benchmark} has: {', '.join(tiers)}, all")
    return {tier: tiers[tier]}


def tiers_of_split(benchmark: str, split: str) -> list[str]:
    """Names of the tiers of ``benchmark`` stored in ``split`` (to check an explicit split's needs)."""
    return [name for name, t in benchmark_tiers(benchmark).items() if t["split"] == split]


def run_tiers(plan: dict[str, dict[str, Any]], options: EvalOptions) -> EvalSummary:
    """Evaluate every tier of ``plan`` that can run here (``runnable_tiers``: with no ``--tier``, a tier whose
    requirement is missing is left out and named on ``echo_err`` before and after the run, in ``tiers.md`` and
    in the summary's ``not_run``); write ``tiers.json``/``tiers.md`` and print the side-by-side table.

    One preflight before the first tier (after the requirement check)."""
    from envsim.evaluation.endpoints.endpoints import endpoint_urls
    from envsim.evaluation.running.single_run import run_preflight, run_split, slug

    base = Path(options.run_dir or options.runs_root / slug(  # named by what was asked: a re-run resumes it
        f"{options.model}-{options.benchmark}-{'+'.join(plan) if len(plan) < 4 else 'tiers'}-{options.prompt_mode}"
        + (f"-{options.response_format}" if options.response_format != "free" else "")
        + (f"-n{options.limit}" if options.limit else "")))
    plan, not_run = runnable_tiers(plan, options)
    for line in not_run_lines(not_run):  # left out: said first, and again under the table
        options.echo_err(line)
    if options.preflight:
        run_preflight(options, endpoint_urls(options.base_urls, options.base_url_file))
    summaries: dict[str, EvalSummary] = {}
    for name, tier in plan.items():
        options.echo(f"== tier {name} ({tier['split']}.jsonl)")
        tier_options = dataclasses.replace(options, split=tier["split"], run_dir=base / name, tier=SINGLE_SPLIT)
        if tier.get("kind") == "chained":
            summaries[name] = _run_chained(tier_options)
        else:
            summaries[name] = run_split(tier_options, preflight_done=True)
    base.mkdir(parents=True, exist_ok=True)
    from envsim.evaluation.reporting.report import write_markdown
    from envsim.safe_files import read_json, write_json

    try:  # tiers run earlier into the same directory (one tier at a time) stay in the table
        table = read_json(base / "tiers.json")
    except (OSError, ValueError):
        table = {}
    table = {**(table if isinstance(table, dict) else {}), **tiers_table({n: s.data for n, s in summaries.items()})}
    order = list(benchmark_tiers(options.benchmark))
    table = dict(sorted(table.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
    write_json(base / "tiers.json", table)  # never through a link planted in the tiers directory
    write_markdown(base / "tiers.md", tiers_markdown(table, options.model, options.benchmark, not_run))
    options.echo(tiers_markdown(table, options.model, options.benchmark))
    for line in not_run_lines(not_run):
        options.echo_err(line)
    options.echo(f"run directory: {base}")
    return EvalSummary(kind="tiers", run_dir=base, model=options.model, benchmark=options.benchmark,
                       scored=sum(s.scored for s in summaries.values()), total=sum(s.total for s in summaries.values()),
                       required=sum(s.required for s in summaries.values()),
                       infra_failures=sum(s.infra_failures for s in summaries.values()), data=table, tiers=summaries,
                       not_run=not_run)


def _run_chained(options: EvalOptions) -> EvalSummary:
    """The chained tier: resumable like the single-step runner, guarded by the same config hash."""
    import shutil

    from envsim.benchmark import file_digest
    from envsim.construction.chained import load_episodes
    from envsim.evaluation.scoring.chained import chained_markdown, run_chained
    from envsim.evaluation.endpoints.endpoints import endpoint_urls
    from envsim.evaluation.prompting.prompts import default_prompt_version
    from envsim.evaluation.running.runner import EvalConfig, RunConfigMismatch, prepare_run_dir
    from envsim.evaluation.running.single_run import evenly_spaced, provider_for, retry_policy
    from envsim.progress import progress

    from envsim.evaluation.prompting.prompts import view_problem

    run_dir = Path(options.run_dir or ".")
    if options.logged_calls is not None:  # a chained step's prompt is built from the episode: no logged calls
        raise BenchmarkUnavailable("the chained tier does not list logged calls (--logged-calls): run the "
                                   "single-step tiers with it, or this tier without it")
    check = view_problem if options.prompt_mode == "mdp-view" else None  # a step no view can be derived from
    try:
        episodes = evenly_spaced(load_episodes(options.benchmark, options.split, check), options.limit)
    except (FileNotFoundError, ValueError) as exc:
        raise BenchmarkUnavailable(str(exc)) from None
    urls = endpoint_urls(options.base_urls, options.base_url_file)
    prompt_version = options.prompt_version or default_prompt_version(options.benchmark, options.prompt_mode)
    config = EvalConfig(model=options.model, benchmark=options.benchmark, split=options.split,
                        benchmark_sha256=file_digest(options.benchmark, options.split),
                        prompt_mode=options.prompt_mode, prompt_version=prompt_version,
                        base_url=",".join(sorted(urls)) or None, temperature=options.temperature,
                        max_tokens=options.max_tokens, extra_body=options.extra,
                        response_format=options.response_format, limit=options.limit, track="chained")
    if options.overwrite and run_dir.exists():
        shutil.rmtree(run_dir)
    try:
        prepare_run_dir(run_dir, config)
    except RunConfigMismatch as exc:
        raise RunDirUnusable(str(exc)) from None
    from dataclasses import asdict

    from envsim.evaluation.running.selection import write_selection

    write_selection(run_dir, asdict(config), [str(e["id"]) for e in episodes])  # what report / view count
    bar = progress(total=len(episodes), desc=f"chained {options.model}", unit="episode")
    summary = asyncio.run(run_chained(episodes, provider_for(options, urls), run_dir, prompt_mode=options.prompt_mode,
                                      prompt_version=prompt_version, concurrency=options.concurrency,
                                      policy=retry_policy(options), on_episode=lambda _row: bar.update(1)))
    bar.close()
    if options.model == "executor" and not options.base_urls:  # every miss classified (evaluation/baselines/executor_misses.py)
        from envsim.evaluation.baselines.executor_misses import read_miss_counts, record_run_misses

        record_run_misses(run_dir, episodes, options.prompt_mode, prompt_version, options.echo_err, chained=True)
        summary["executor_misses"] = read_miss_counts(run_dir)
    options.echo(chained_markdown(summary))
    for line in infra_lines(summary["infra_failures"], summary["episodes"], summary.get("infra_failure_reasons"),
                            unit="episodes"):
        options.echo_err(line)
    return EvalSummary.from_summary(summary, run_dir, options.min_scored.required, model=options.model,
                                    benchmark=options.benchmark)


def tiers_table(summaries: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One row per tier: n, FM, CM (with CIs) for one-step tiers; step FM/CM, episode CM and CM@k for chained."""
    table: dict[str, dict[str, Any]] = {}
    for name, s in summaries.items():
        if s.get("tier") == "chained":
            table[name] = {"kind": "chained", "n": s["scored"], "steps": s["steps"], "fm": s["step_fm"]["rate"],
                           "cm": s["step_cm"]["rate"], "episode_cm": s["episode_cm"]["rate"],
                           "cm_at_k": {k: v["rate"] for k, v in s["cm_at_k"].items()},
                           "cm_at_k_changed": {k: v["rate"] if v["n"] else None
                                               for k, v in s.get("cm_at_k_changed", {}).items()},
                           "mean_steps_before_divergence": s["mean_steps_before_divergence"],
                           "infra_failures": s["infra_failures"]}
        else:
            o = s["overall"]
            table[name] = {"kind": "single", "n": o["n"], "fm": o["fm"], "cm": o["cm"],
                           "cm_lenient": o.get("cm_lenient"), "ci": o.get("ci", {}),
                           "by_stratum": {k: {"n": v["n"], "fm": v["fm"], "cm": v["cm"]}
                                          for k, v in s.get("by_stratum", {}).items() if v.get("n")},
                           "infra_failures": s.get("infra_failures", 0)}
    return table


def tiers_markdown(table: dict[str, dict[str, Any]], model: str, benchmark: str,
                   not_run: dict[str, str] | None = None) -> str:
    """The tiers side by side (never pooled: each tier answers a different question); a tier with
    nothing scored reads "–", never 0.0. Tiers ``not_run`` (tier -> what it needs) are listed first."""
    def pct(row: dict[str, Any], value: Any) -> str:
        return f"{100 * value:.1f}" if row["n"] and value is not None else "–"

    def series(row: dict[str, Any], rates: dict[str, Any]) -> str:
        return " / ".join("–" if v is None else f"{100 * v:.0f}" for v in rates.values()) if row["n"] else "–"

    lines = [f"# {model} on {benchmark}, by tier", ""]
    if not_run:
        lines += [f"**Not run here:** {', '.join(not_run)}", ""] + [f"- {n}: needs {w}" for n, w in not_run.items()] + [""]
    lines += ["| tier | n | FM % | CM % | episode CM % | CM@k % (k=1..) | CM@k, state changed by k % | infra |",
             "|---|---:|---:|---:|---:|---|---|---:|"]
    for name, row in table.items():
        if row["kind"] == "chained":
            lines.append(f"| {name} | {row['n']} ep. ({row['steps']} calls) | {pct(row, row['fm'])} | "
                         f"{pct(row, row['cm'])} | {pct(row, row['episode_cm'])} | {series(row, row['cm_at_k'])} | "
                         f"{series(row, row.get('cm_at_k_changed', {}))} | {row['infra_failures']} |")
        else:
            lines.append(f"| {name} | {row['n']} | {pct(row, row['fm'])} | {pct(row, row['cm'])} | – | – | – | "
                         f"{row['infra_failures']} |")
    return "\n".join(lines) + "\n"

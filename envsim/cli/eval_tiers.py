"""``envsim eval`` over the tiers of a tiered benchmark (v2): each tier in its own run directory,
reported apart, plus ``tiers.json`` / ``tiers.md`` side by side. The tier list comes from the
benchmark's ``build.json`` (``"tiers": {name: {"split", "kind"}}``); ``kind`` is ``single`` (one-step
samples, the usual runner) or ``chained`` (episodes, ``evaluation/chained.py``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click

SINGLE_SPLIT = "_split"  # internal --tier value: evaluate --split only (used when a tier recurses)


def benchmark_tiers(benchmark: str) -> dict[str, dict[str, Any]]:
    """The tiers of a shipped benchmark whose files exist (``{}`` for a file or an untiered benchmark)."""
    from envsim.benchmark import BENCHMARK_DIR

    if Path(benchmark).suffix or "/" in benchmark:
        return {}
    build = BENCHMARK_DIR / benchmark / "build.json"
    try:
        tiers = json.loads(build.read_text()).get("tiers", {})
    except (OSError, ValueError):
        return {}
    return {name: t for name, t in tiers.items() if (BENCHMARK_DIR / benchmark / f"{t['split']}.jsonl").is_file()}


def tier_plan(benchmark: str, tier: str | None, split_given: bool,
              split: str = "test") -> dict[str, dict[str, Any]] | None:
    """The tiers to run, or ``None`` for a plain single-split evaluation.

    ``--tier all`` (the default for a tiered benchmark when no ``--split`` is given) runs every tier;
    ``--tier NAME`` runs one; an untiered benchmark or an explicit ``--split`` runs that split only.
    """
    if tier == SINGLE_SPLIT:
        return None
    tiers = benchmark_tiers(benchmark)
    if tier is None:
        if split_given:  # that split only; a chained split still needs the episode runner
            return {n: t for n, t in tiers.items() if t["split"] == split and t.get("kind") == "chained"} or None
        return tiers or None
    if not tiers:
        raise click.BadParameter(f"benchmark {benchmark!r} has no tiers", param_hint="--tier")
    if tier == "all":
        return tiers
    if tier not in tiers:
        raise click.BadParameter(f"unknown tier {tier!r}; {benchmark} has: {', '.join(tiers)}, all",
                                 param_hint="--tier")
    return {tier: tiers[tier]}


def run_tiers(plan: dict[str, dict[str, Any]], params: dict[str, Any]) -> None:
    """Evaluate every tier of ``plan`` with the eval command's ``params``; write and print the side-by-side table.

    One preflight before the first tier; ``--min-scored`` is judged per tier after all tiers ran (exit 3
    when any tier falls short)."""
    from envsim.cli.eval_cmd import _slug, eval_cmd
    from envsim.cli.eval_outcome import enforce_min_scored

    ctx = click.get_current_context()
    if params.get("preflight", True):
        _preflight(params)
    benchmark, model = params["benchmark"], params["model"]
    limit = params.get("limit")
    base = params.get("run_dir") or params["runs_root"] / _slug(
        f"{model}-{benchmark}-{'+'.join(plan) if len(plan) < 4 else 'tiers'}-{params['prompt_mode']}"
        + (f"-n{limit}" if limit else ""))
    summaries: dict[str, dict[str, Any]] = {}
    for name, tier in plan.items():
        click.echo(f"== tier {name} ({tier['split']}.jsonl)")
        run_dir = Path(base) / name
        if tier.get("kind") == "chained":
            summaries[name] = _run_chained(tier["split"], run_dir, params)
        else:
            ctx.invoke(eval_cmd, **{**params, "split": tier["split"], "run_dir": run_dir, "tier": SINGLE_SPLIT})
            summaries[name] = json.loads((run_dir / "summary.json").read_text())
    Path(base).mkdir(parents=True, exist_ok=True)
    try:  # tiers run earlier into the same directory (one --tier at a time) stay in the table
        table = json.loads((Path(base) / "tiers.json").read_text())
    except (OSError, ValueError):
        table = {}
    table = {**(table if isinstance(table, dict) else {}), **tiers_table(summaries)}
    order = list(benchmark_tiers(benchmark))
    table = dict(sorted(table.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
    (Path(base) / "tiers.json").write_text(json.dumps(table, indent=2) + "\n")
    (Path(base) / "tiers.md").write_text(tiers_markdown(table, model, benchmark))
    click.echo(tiers_markdown(table, model, benchmark))
    click.echo(f"run directory: {base}")
    short = [(name, s) for name, s in summaries.items()
             if s["scored"] < params["min_scored"].required(_tier_total(s))]
    for name, s in short:
        click.echo(f"tier {name}: {s['scored']} of {_tier_total(s)} scored", err=True)
    if short:
        name, s = short[0]
        enforce_min_scored(s["scored"], _tier_total(s), params["min_scored"],
                           unit="episodes" if s.get("tier") == "chained" else "samples")


def _tier_total(summary: dict[str, Any]) -> int:
    """Samples (episodes for the chained tier) a tier's run tried."""
    return summary["episodes"] if summary.get("tier") == "chained" else summary["samples"]


def _preflight(params: dict[str, Any]) -> None:
    """The eval command's preflight, once for all tiers."""
    from envsim.cli.eval_cmd import endpoint_urls, run_preflight_or_stop
    from envsim.evaluation.runner import RetryPolicy

    urls = endpoint_urls(tuple(params.get("base_url") or ()), params.get("base_url_file"))
    run_preflight_or_stop(params["model"], _provider(params, urls), urls, params.get("api_key"),
                          RetryPolicy(timeout=params["timeout"], max_retries=params["max_retries"]))


def _provider(params: dict[str, Any], urls: list[str]) -> Any:
    """The endpoint provider (or baseline) the eval command's ``params`` describe."""
    from envsim.cli.eval_cmd import make_endpoint_provider

    extra = json.loads(params["extra_json"]) if params.get("extra_json") else {}
    return make_endpoint_provider(params["model"], urls, temperature=params["temperature"],
                                  max_tokens=params["max_tokens"], timeout=params["timeout"], extra_body=extra,
                                  max_response_bytes=params.get("max_response_bytes"), api_key=params.get("api_key"))


def _run_chained(split: str, run_dir: Path, params: dict[str, Any]) -> dict[str, Any]:
    """The chained tier: resumable like the single-step runner, guarded by the same config hash."""
    import shutil

    from envsim.benchmark import file_digest
    from envsim.cli.eval_cmd import endpoint_urls
    from envsim.cli.eval_outcome import infra_lines
    from envsim.construction.chained import load_episodes
    from envsim.evaluation.chained import chained_markdown, run_chained
    from envsim.evaluation.prompts import default_prompt_version
    from envsim.evaluation.runner import EvalConfig, RetryPolicy, RunConfigMismatch, prepare_run_dir
    from envsim.progress import progress

    benchmark = params["benchmark"]
    try:
        episodes = load_episodes(benchmark, split)
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    limit = params.get("limit")
    if limit is not None and 0 <= limit < len(episodes):
        episodes = [episodes[i * len(episodes) // limit] for i in range(limit)]
    extra = json.loads(params["extra_json"]) if params.get("extra_json") else {}
    urls = endpoint_urls(tuple(params.get("base_url") or ()), params.get("base_url_file"))
    prompt_version = params.get("prompt_version") or default_prompt_version(benchmark)
    config = EvalConfig(model=params["model"], benchmark=benchmark, split=split,
                        benchmark_sha256=file_digest(benchmark, split), prompt_mode=params["prompt_mode"],
                        prompt_version=prompt_version, base_url=",".join(sorted(urls)) or None,
                        temperature=params["temperature"], max_tokens=params["max_tokens"], extra_body=extra,
                        limit=limit, track="chained")
    if params.get("overwrite") and run_dir.exists():
        shutil.rmtree(run_dir)
    try:
        prepare_run_dir(run_dir, config)
    except RunConfigMismatch as exc:
        raise click.ClickException(str(exc)) from None
    provider = _provider(params, urls)
    bar = progress(total=len(episodes), desc=f"chained {params['model']}", unit="episode")
    summary = asyncio.run(run_chained(episodes, provider, run_dir, prompt_mode=params["prompt_mode"],
                                      prompt_version=prompt_version, concurrency=params["concurrency"],
                                      policy=RetryPolicy(timeout=params["timeout"], max_retries=params["max_retries"]),
                                      on_episode=lambda _row: bar.update(1)))
    bar.close()
    click.echo(chained_markdown(summary))
    for line in infra_lines(summary["infra_failures"], summary["episodes"], summary.get("infra_failure_reasons"),
                            unit="episodes"):
        click.echo(line, err=True)
    return summary


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


def tiers_markdown(table: dict[str, dict[str, Any]], model: str, benchmark: str) -> str:
    """The tiers side by side (never pooled: each tier answers a different question); a tier with
    nothing scored reads "–", never 0.0."""
    def pct(row: dict[str, Any], value: Any) -> str:
        return f"{100 * value:.1f}" if row["n"] and value is not None else "–"

    def series(row: dict[str, Any], rates: dict[str, Any]) -> str:
        return " / ".join("–" if v is None else f"{100 * v:.0f}" for v in rates.values()) if row["n"] else "–"

    lines = [f"# {model} on {benchmark}, by tier", "",
             "| tier | n | FM % | CM % | episode CM % | CM@k % (k=1..) | CM@k, state changed by k % | infra |",
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

"""``envsim eval``: score a model on a benchmark split, resumably, with live FM/CM."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import click

from envsim.cli.eval_outcome import MinScored, MinScoredType, enforce_min_scored, infra_lines
from envsim.progress import progress_option


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:80] or "run"


def _class_sources(records: list[dict[str, Any]]) -> dict[str, str]:
    from envsim.envs.registry import get_env
    from envsim.envs.source import class_source

    sources = {}
    for env_id in sorted({r["env"] for r in records}):
        try:
            sources[env_id] = class_source(get_env(env_id))
        except Exception:  # noqa: BLE001 - reported per sample as a prompt failure
            continue
    return sources


@click.command("eval")
@click.option("--model", required=True, help="Model name at the endpoint, or the baselines 'null' / 'oracle'.")
@click.option("--base-url", multiple=True, help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1. "
              "Without it, a model name goes to $OPENAI_BASE_URL or api.openai.com (needs --api-key). Repeat it (or use --base-url-file) for a fleet of replicas: requests "
              "go to the endpoint with the fewest in flight; one that fails 3 times in a row is taken out for 30 s "
              "(doubling on repeat) and the run goes on with the others.")
@click.option("--base-url-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="File of endpoint URLs, one per line ('#' comments), added to --base-url.")
@click.option("--api-key", envvar="OPENAI_API_KEY", show_envvar=True, default=None,
              help="API key of the endpoint (never written to the run directory). Local servers need none.")
@click.option("--preflight/--no-preflight", default=True, show_default=True,
              help="Before the run, check the key/URL and send one tiny request with the run's settings; stop "
                   "with the server's error message when no endpoint answers.")
@click.option("--min-scored", type=MinScoredType(), default="1", show_default=True,
              help="Exit with code 3 when fewer samples (rollout track: episodes) than this were scored: a count "
                   "(380) or a percentage of the run (95%). 0 turns the check off. Scored results are kept.")
@progress_option
@click.option("--benchmark", default="v1", show_default=True, help="Shipped benchmark name, or a file: our JSONL or the original "
              "EnvSimBench JSON list.")
@click.option("--split", default="test", show_default=True, help="Split of a shipped benchmark.")
@click.option("--tier", default=None, help="Tier of a tiered benchmark (v2: core, extreme, long_state, chained, "
              "and bfcl when shipped) or 'all' (the default for v2 when no --split is given); each tier is "
              "reported apart, side by side in RUN/tiers.md.")
@click.option("--limit", type=int, default=None, help="Only N samples, evenly spaced over the split (every stratum).")
@click.option("--prompt-mode", type=click.Choice(["mdp", "pomdp", "full-class"]), default="mdp", show_default=True,
              help="What the model sees: mdp = state + the tool's code + the call; pomdp = the call history only "
                   "(no state, no code; an ablation); full-class = state + the whole class source + the call.")
@click.option("--prompt-version", type=click.Choice(["1", "2"]), default=None,
              help="Prompt version (default: 1 for benchmark v1 and JSONL files, 2 for v2; 2 = compact JSON, "
                   "as 'envsim train data' writes by default).")
@click.option("--tokenizer", "tokenizer_dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="Local model directory whose tokenizer counts prompt/answer tokens (default: --model when it "
                   "is a local directory, else Qwen's BPE, offline).")
@click.option("--temperature", type=float, default=0.0, show_default=True,
              help="Sampling temperature sent with every request (0: greedy, the published setting).")
@click.option("--max-tokens", type=int, default=2048, show_default=True,
              help="Answer token limit per request; reasoning models need room for their thinking (v2: 4096+).")
@click.option("--extra", "extra_json", default=None,
              help='Extra request fields as JSON, e.g. \'{"response_format": {"type": "json_object"}}\'.')
@click.option("--concurrency", type=int, default=8, show_default=True)
@click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds per request.")
@click.option("--max-retries", type=int, default=4, show_default=True,
              help="Retries on 429/5xx/timeouts/connection errors (exponential backoff).")
@click.option("--max-response-bytes", type=click.IntRange(min=1024), default=4 * 1024 * 1024, show_default=True,
              help="Cap on one HTTP response body (decoded); a longer answer stops being read there and is a scored "
                   "failure 'response exceeded N bytes'.")
@click.option("--runs-root", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True)
@click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run directory (default: RUNS_ROOT/<model>-<benchmark>-<split>-<mode>).")
@click.option("--overwrite", is_flag=True, help="Delete an existing run directory first instead of resuming.")
@click.option("--track", type=click.Choice(["single", "rollout"]), default="single", show_default=True,
              help="single: one-step samples. rollout: K-step explorer trajectories on the benchmark's environments "
                   "with the simulator's own state fed forward (CM@k, steps before divergence).")
@click.option("--horizon", type=int, default=5, show_default=True, help="Steps per rollout episode.")
@click.option("--episodes", type=int, default=2, show_default=True, help="Rollout episodes per environment.")
def eval_cmd(model: str, base_url: tuple[str, ...], benchmark: str, split: str, limit: int | None, prompt_mode: str,
             temperature: float, max_tokens: int, extra_json: str | None, concurrency: int, timeout: float,
             max_retries: int, runs_root: Path, run_dir: Path | None, overwrite: bool, track: str, horizon: int,
             episodes: int, prompt_version: str | None = None, tokenizer_dir: str | None = None,
             base_url_file: Path | None = None, tier: str | None = None,
             max_response_bytes: int = 4 * 1024 * 1024, api_key: str | None = None, preflight: bool = True,
             min_scored: MinScored = MinScored(count=1)) -> None:
    """Evaluate MODEL on FM / CM / CM-lenient per stratum, |Δ|, arity and domain, with 95% CIs.

    Exit codes: 0 done; 1 stopped before the run (bad option or benchmark, failed preflight);
    2 usage error; 3 done, but fewer samples scored than --min-scored (default 1)."""
    from click.core import ParameterSource

    from envsim.cli.eval_tiers import SINGLE_SPLIT, run_tiers, tier_plan

    ctx = click.get_current_context()
    plan = tier_plan(benchmark, tier, ctx.get_parameter_source("split") not in (None, ParameterSource.DEFAULT), split)
    if plan is not None:
        run_tiers(plan, dict(ctx.params))
        return
    from envsim.progress import progress as tqdm

    urls = endpoint_urls(base_url, base_url_file)
    base_url = ",".join(sorted(urls)) if len(urls) > 1 else (urls[0] if urls else None)  # type: ignore[assignment]

    from envsim.benchmark import benchmark_path, file_digest, load
    from envsim.evaluation.report import write_reports
    from envsim.evaluation.runner import (ROLLOUT_VERSION, EvalConfig, RetryPolicy, RunConfigMismatch, RunDirLocked,
                                          clear_run_dir, lock_run_dir, prepare_run_dir, run_samples)

    try:
        extra = json.loads(extra_json) if extra_json else {}
        if not isinstance(extra, dict):
            raise ValueError("must be a JSON object")
    except ValueError as exc:
        raise click.BadParameter(f"--extra: {exc}") from None
    try:
        records = load(benchmark, split)
        digest = file_digest(benchmark, split)
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    if limit is not None and 0 <= limit < len(records):
        # evenly spaced over the file, so a small limit still covers every stratum (files are ordered by cell)
        records = [records[i * len(records) // limit] for i in range(limit)]
    bench_name = benchmark_path(benchmark, split).stem if Path(benchmark).is_file() else benchmark
    from envsim.evaluation.prompts import default_prompt_version
    from envsim.tokens import TokenizerUnavailable, eval_tokenizer

    prompt_version = prompt_version or default_prompt_version(benchmark)
    try:
        token_counter, token_warning = eval_tokenizer(model, tokenizer_dir)
    except TokenizerUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    if token_warning:
        click.echo(f"warning: {token_warning}", err=True)
    config = EvalConfig(model=model, benchmark=benchmark, split=split, benchmark_sha256=digest, prompt_mode=prompt_mode,
                        prompt_version=prompt_version,
                        base_url=base_url, temperature=temperature, max_tokens=max_tokens, extra_body=extra, limit=limit,
                        track=track, horizon=horizon if track == "rollout" else 0,
                        episodes=episodes if track == "rollout" else 0,
                        rollout_version=ROLLOUT_VERSION if track == "rollout" else None)
    run_dir = run_dir or runs_root / _slug(f"{model}-{bench_name}-{split}-{prompt_mode}"
                                           + (f"-p{prompt_version}" if prompt_version != default_prompt_version(benchmark)
                                              else "")
                                           + (f"-n{limit}" if limit else "") + ("-rollout" if track == "rollout" else ""))
    provider = make_endpoint_provider(model, urls, temperature=temperature, max_tokens=max_tokens, timeout=timeout,
                                      extra_body=extra, max_response_bytes=max_response_bytes, api_key=api_key)
    policy = RetryPolicy(timeout=timeout, max_retries=max_retries)
    in_tier = tier == SINGLE_SPLIT          # one tier of a tiered run: the tier runner did the preflight and judges
    if preflight and not in_tier:           # before the run directory is created or touched
        run_preflight_or_stop(model, provider, urls, api_key, policy)
    try:  # one process per run directory, held until this command ends (the kernel drops it on any exit)
        run_lock = lock_run_dir(run_dir)
        run_lock.__enter__()
    except RunDirLocked as exc:
        raise click.ClickException(str(exc)) from None
    click.get_current_context().call_on_close(lambda: run_lock.__exit__(None, None, None))
    if overwrite:
        clear_run_dir(run_dir)
    try:
        prepare_run_dir(run_dir, config)
    except RunConfigMismatch as exc:
        raise click.ClickException(str(exc)) from None
    if track == "rollout":
        report = _rollout(records, provider, run_dir, episodes=episodes, horizon=horizon, concurrency=concurrency,
                          prompt_mode=prompt_mode, prompt_version=prompt_version)
        _endpoint_summary(provider, run_dir)
        enforce_min_scored(report.get("scored", report["episodes"]),
                           report.get("scored", report["episodes"]) + report.get("infra_failures", 0), min_scored,
                           unit="episodes")
        return
    sources = _class_sources(records) if prompt_mode == "full-class" else {}
    from envsim.evaluation.runner import read_results

    already = sum(1 for r in read_results(run_dir / "results.jsonl").values() if r.get("status") == "scored")
    counts = {"n": 0, "fm": 0, "cm": 0, "infra": 0}
    bar = tqdm(total=len(records), initial=min(already, len(records)), desc=f"eval {model}", unit="sample")

    def on_result(row: dict[str, Any]) -> None:
        if row["status"] == "scored":
            counts["n"] += 1
            counts["fm"] += bool(row.get("fm"))
            counts["cm"] += bool(row.get("cm"))
        else:
            counts["infra"] += 1
        fleet = {}
        if hasattr(provider, "endpoint_report"):          # a fleet: how many endpoints are in service
            health = [row["healthy_at_end"] for row in provider.endpoint_report()]
            fleet = {"endpoints": f"{sum(health)}/{len(health)} up"}
        bar.set_postfix(**live_rates(counts), infra=counts["infra"], **fleet)
        bar.update(1)

    asyncio.run(run_samples(records, provider, config, run_dir, concurrency=concurrency, policy=policy,
                            tokenizer=token_counter,
                            class_sources=sources, on_result=on_result))
    bar.close()
    _endpoint_summary(provider, run_dir)
    summary = write_reports(run_dir)
    click.echo(format_summary(summary, run_dir))
    for line in infra_lines(summary["infra_failures"], summary["samples"], summary.get("infra_failure_reasons")):
        click.echo(line, err=True)
    if not in_tier:
        enforce_min_scored(summary["scored"], len(records), min_scored)


def live_rates(counts: dict[str, int]) -> dict[str, str]:
    """FM / CM of the samples scored so far, for the progress display ("–" until one is scored)."""
    if not counts["n"]:
        return {"FM": "–", "CM": "–"}
    return {rate.upper(): f"{100 * counts[rate] / counts['n']:.1f}%" for rate in ("fm", "cm")}


def run_preflight_or_stop(model: str, provider: Any, urls: list[str], api_key: str | None, policy: Any) -> None:
    """The preflight (see ``evaluation/preflight.py``): a line per endpoint on stderr; a failure stops
    the command (exit 1) before any sample is sent."""
    from envsim.evaluation.preflight import PreflightFailed, preflight

    try:
        checks = preflight(model, provider, urls, api_key, policy)
    except PreflightFailed as exc:
        raise click.ClickException(str(exc)) from None
    for check in checks:
        if check.ok:
            click.echo(f"preflight: {check.url} answered in {check.latency_s:.2f} s", err=True)
        else:
            click.echo(f"warning: preflight: {check.detail} (the run goes on with the endpoints that answered)",
                       err=True)


def endpoint_urls(base_urls: tuple[str, ...], url_file: Path | None) -> list[str]:
    """``--base-url`` values (repeatable) and the URLs of ``--base-url-file``, in order, without repeats."""
    from envsim.evaluation.fleet import read_url_file

    urls = [u.strip() for u in base_urls if u.strip()]
    if url_file is not None:
        try:
            urls += read_url_file(url_file)
        except (OSError, UnicodeDecodeError) as exc:
            raise click.BadParameter(f"cannot read {url_file}: {exc}", param_hint="--base-url-file") from None
        if not urls:
            raise click.BadParameter(f"{url_file} lists no endpoint", param_hint="--base-url-file")
    bad = [u for u in urls if not u.startswith(("http://", "https://"))]
    if bad:
        raise click.BadParameter(f"not an http(s) URL: {', '.join(bad)}", param_hint="--base-url")
    return list(dict.fromkeys(urls))


def make_endpoint_provider(model: str, urls: list[str], **kwargs: Any) -> Any:
    """One endpoint (or none: the built-in baselines) as before; several as a ``FleetProvider``."""
    from envsim.evaluation.fleet import make_fleet
    from envsim.evaluation.providers import make_provider

    if len(urls) <= 1:
        return make_provider(model, urls[0] if urls else None, **kwargs)
    return make_fleet(model, urls, log=lambda text: click.echo(f"warning: {text}", err=True), **kwargs)


def _endpoint_summary(provider: Any, run_dir: Path) -> None:
    """Per-endpoint counts of a fleet into RUN/endpoints.json (added up over resumed invocations; the
    report copies them into summary.json) and onto the console."""
    from envsim.evaluation.fleet import format_endpoints, merge_reports

    report = getattr(provider, "endpoint_report", None)
    if report is None:
        return
    path = run_dir / "endpoints.json"
    try:
        previous = json.loads(path.read_text()) if path.exists() else []
    except (OSError, ValueError):
        previous = []
    merged = merge_reports(previous if isinstance(previous, list) else [], report())
    path.write_text(json.dumps(merged, indent=2) + "\n")
    click.echo(format_endpoints(merged))


def _rollout(records: list[dict[str, Any]], provider: Any, run_dir: Path, *, episodes: int, horizon: int,
             concurrency: int, prompt_mode: str, prompt_version: str) -> dict[str, Any]:
    """Run the multi-step track over the environments of ``records``."""
    from envsim.progress import progress as tqdm

    from envsim.simulation.rollout_track import run_rollout_track

    env_ids = sorted({r["env"] for r in records})
    bar = tqdm(total=len(env_ids) * episodes, desc="rollout track", unit="episode")
    report = asyncio.run(run_rollout_track(env_ids, provider, run_dir, episodes=episodes, horizon=horizon,
                                           concurrency=concurrency, prompt_mode=prompt_mode,
                                           prompt_version=prompt_version, on_episode=lambda _: bar.update(1)))
    bar.close()
    click.echo(f"{report['episodes']} episodes of {horizon} steps on {len(env_ids)} environments; "
               f"mean steps before divergence {report['mean_steps_before_divergence']}")
    click.echo("CM@k: " + "  ".join(f"@{k} {100 * v:.1f}%" for k, v in report["cm_at_k"].items()))
    if "cm_at_k_changed" in report:
        click.echo("CM@k, episodes whose state had changed by step k: " + "  ".join(
            f"@{k} {'–' if v is None else f'{100 * v:.1f}%'}" for k, v in report["cm_at_k_changed"].items()))
    total = report.get("scored", report["episodes"]) + report.get("infra_failures", 0)
    for line in infra_lines(report.get("infra_failures", 0), total, report.get("infra_failure_reasons"),
                            unit="episodes"):
        click.echo(line, err=True)
    click.echo(f"run directory: {run_dir}")
    return report


def format_summary(summary: dict[str, Any], run_dir: Path) -> str:
    """Console summary: overall and per-stratum rates with 95% intervals."""
    lines = [f"{summary['model']} on {summary['benchmark']}/{summary['split']} ({summary['prompt_mode']}): "
             f"{summary['scored']} scored, {summary['infra_failures']} infrastructure failures"]
    if not summary["scored"]:
        return "\n".join(lines + ["no figures: no sample was scored", f"run directory: {run_dir}"])
    lines.append(f"{'group':12} {'n':>4}  {'FM %':>18}  {'CM %':>18}  {'CM-lenient %':>18}  {'CM-original %':>18}")
    groups = {"overall": summary["overall"], **summary["by_stratum"]}
    for name, s in groups.items():
        if not s["n"]:
            continue
        cells = []
        for rate in ("fm", "cm", "cm_lenient", "cm_original"):
            if rate not in s["ci"]:
                continue
            lo, hi = s["ci"][rate]
            cells.append(f"{100 * s[rate]:5.1f} [{100 * lo:5.1f},{100 * hi:5.1f}]")
        lines.append(f"{name:12} {s['n']:>4}  " + "  ".join(f"{c:>18}" for c in cells))
    lines.append(f"run directory: {run_dir}")
    return "\n".join(lines)

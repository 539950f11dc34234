"""One evaluation run of one split: load and limit the benchmark, preflight, lock and prepare the run
directory, run the samples (or the rollout track), write the reports. Used by ``envsim.evaluate`` for an
untiered benchmark and for every one-step tier of a tiered one."""

from __future__ import annotations

import asyncio
import re
from functools import partial
from pathlib import Path
from typing import Any

from envsim.evaluation.reporting.console import bad_record_lines, format_summary, infra_lines, live_rates
from envsim.evaluation.errors import BenchmarkUnavailable, PreflightStopped, RunDirUnusable, TokenizerMissing
from envsim.evaluation.running.eval_options import EvalOptions
from envsim.evaluation.running.eval_summary import EvalSummary


#: The longest directory name ``slug`` gives.
SLUG_MAX = 80


def slug(text: str) -> str:
    """``text`` as a directory name of at most ``SLUG_MAX`` characters. A longer name keeps its head and ends in
    ``-`` + 12 hex digits of the sha256 of the whole ``text``: never cut, so two texts that differ past the cut
    (``...-n10`` and ``...-n2``) never get the same name."""
    import hashlib

    name = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "run"
    if len(name) <= SLUG_MAX:
        return name
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return f"{name[:SLUG_MAX - len(digest) - 1].rstrip('-')}-{digest}"


def evenly_spaced(items: list[Any], limit: int | None) -> list[Any]:
    """``limit`` items evenly spaced over ``items`` (files are ordered by cell, so every stratum is kept)."""
    if limit is not None and 0 <= limit < len(items):
        return [items[i * len(items) // limit] for i in range(limit)]
    return items


def class_sources(records: list[dict[str, Any]]) -> dict[str, str]:
    """Class source per environment of ``records`` (for ``full-class`` prompts); a failing one is left out
    (reported per sample as a prompt failure)."""
    from envsim.envs.registry import get_env
    from envsim.envs.shown import class_source

    sources = {}
    for env_id in sorted({r["env"] for r in records}):
        try:
            sources[env_id] = class_source(get_env(env_id))
        except Exception:  # noqa: BLE001 - reported per sample as a prompt failure
            continue
    return sources


def provider_for(options: EvalOptions, urls: list[str]) -> Any:
    """The endpoint provider (or baseline) of ``options``."""
    from envsim.evaluation.endpoints.endpoints import make_endpoint_provider

    return make_endpoint_provider(options.model, urls, log=lambda text: options.echo_err(f"warning: {text}"),
                                  temperature=options.temperature, max_tokens=options.max_tokens,
                                  timeout=options.timeout, extra_body=options.request_extra(),
                                  max_response_bytes=options.max_response_bytes, api_key=options.api_key)


def retry_policy(options: EvalOptions) -> Any:
    """The runner's ``RetryPolicy`` of ``options``."""
    from envsim.evaluation.running.runner import RetryPolicy

    return RetryPolicy(timeout=options.timeout, max_retries=options.max_retries)


def run_preflight(options: EvalOptions, urls: list[str], provider: Any | None = None) -> None:
    """The preflight (``evaluation/endpoints/preflight.py``): a line per endpoint on ``echo_err``; raises
    ``PreflightStopped`` before any sample is sent when no endpoint answers."""
    from envsim.evaluation.endpoints.preflight import PreflightFailed, announce, preflight

    try:
        checks = preflight(options.model, provider or provider_for(options, urls), urls, options.api_key,
                           retry_policy(options), options.response_format)
    except PreflightFailed as exc:
        raise PreflightStopped(str(exc)) from None
    announce(checks, options.echo_err)


def default_run_dir(options: EvalOptions, bench_name: str, prompt_version: str) -> Path:
    """``RUNS_ROOT/<model>-<benchmark>-<split>-<mode>[-pV][-json-schema[-path-first]][-<ids>][-nN][-logged<K>]
    [-rollout]``."""
    from envsim.evaluation.prompting.prompts import default_prompt_version

    return options.runs_root / slug(
        f"{options.model}-{bench_name}-{options.split}-{options.prompt_mode}"
        + (f"-p{prompt_version}" if prompt_version != default_prompt_version(options.benchmark, options.prompt_mode) else "")
        + (f"-{options.response_format}" if options.response_format != "free" else "")
        + (f"-{Path(options.ids).stem}" if options.ids else "") + (f"-n{options.limit}" if options.limit else "")
        + (f"-logged{options.logged_k}" if options.logged_calls is not None else "")
        + ("-rollout" if options.track == "rollout" else ""))


#: How long the check before a run goes on before its progress shows: short, so that a user sees the command at
#: work within half a second of starting it (the imports before the check take ~0.2-0.3 s on a 2-core machine).
CHECK_PROGRESS_DELAY_S = 0.1


def _check_progress(options: EvalOptions) -> Any:
    """A display of the check that reads the whole benchmark file before the run (``benchmark.stream.check_file``),
    shown when the check outlasts ``CHECK_PROGRESS_DELAY_S`` (a 40,000-sample file takes seconds); ``None`` if the
    file cannot be sized here (the check then says why)."""
    from envsim.benchmark import benchmark_path
    from envsim.progress import DelayedProgress

    try:
        path = benchmark_path(options.benchmark, options.split)
        size = path.stat().st_size
    except (OSError, ValueError):
        return None
    return DelayedProgress(size, f"eval {options.model}: checking {path.name}", delay_s=CHECK_PROGRESS_DELAY_S)


def run_split(options: EvalOptions, *, preflight_done: bool = False) -> EvalSummary:
    """Evaluate ``options.split`` of ``options.benchmark`` (one-step samples, or the rollout track)."""
    from envsim.benchmark import benchmark_path
    from envsim.benchmark.stream import file_sha256, open_stream
    from envsim.evaluation.endpoints.endpoints import endpoint_urls
    from envsim.evaluation.prompting.prompts import default_prompt_version, view_problem
    from envsim.evaluation.running.runner import (ROLLOUT_VERSION, EvalConfig, RunConfigMismatch, RunDirLocked,
                                          clear_run_dir, lock_run_dir, prepare_run_dir)
    urls = endpoint_urls(options.base_urls, options.base_url_file)
    base_url = ",".join(sorted(urls)) if len(urls) > 1 else (urls[0] if urls else None)
    check = view_problem if options.prompt_mode == "mdp-view" else None  # a record no view can be built from
    ids_digest, select = None, None
    try:  # records are read when their turn comes (benchmark.stream); read-only once read
        if options.ids is not None:
            from envsim.evaluation.running.subsets import ids_sha256, read_ids, select_positions

            ids = read_ids(options.ids)
            ids_digest = ids_sha256(ids)
            select = partial(select_positions, ids=ids, source=str(options.ids))
        checking = _check_progress(options)
        try:
            records = open_stream(options.benchmark, options.split, options.limit, check=check, select=select,
                                  on_bytes=checking)
        finally:
            if checking is not None:
                checking.close()
        digest = file_sha256(records.path)
    except (FileNotFoundError, ValueError) as exc:  # SubsetError is a ValueError
        raise BenchmarkUnavailable(str(exc)) from None
    bench_name = (benchmark_path(options.benchmark, options.split).stem if Path(options.benchmark).is_file()
                  else options.benchmark)
    prompt_version = options.prompt_version or default_prompt_version(options.benchmark, options.prompt_mode)
    token_counter = _explicit_tokenizer(options)  # a broken --tokenizer stops here, before anything is touched
    rollout = options.track == "rollout"
    logged = _logged_calls(options)
    config = EvalConfig(model=options.model, benchmark=options.benchmark, split=options.split,
                        benchmark_sha256=digest, prompt_mode=options.prompt_mode, prompt_version=prompt_version,
                        base_url=base_url, temperature=options.temperature, max_tokens=options.max_tokens,
                        extra_body=options.extra, response_format=options.response_format, limit=options.limit,
                        ids_sha256=ids_digest, track=options.track,
                        horizon=options.horizon if rollout else 0, episodes=options.episodes if rollout else 0,
                        rollout_version=ROLLOUT_VERSION if rollout else None,
                        logged_calls_sha256=logged.digest() if logged else None,
                        logged_k=options.logged_k if logged else 0)
    run_dir = options.run_dir or default_run_dir(options, bench_name, prompt_version)
    if not rollout:  # before anything is sent: a full-state run of large prompts where views exist is told so
        _warn_large_prompts(records, options, prompt_version, token_counter)
    provider = provider_for(options, urls)
    if options.preflight and not preflight_done:  # before the run directory is created or touched
        run_preflight(options, urls, provider)
    try:  # one process per run directory, held until the run ends (the kernel drops it on any exit)
        lock = lock_run_dir(run_dir)
        lock.__enter__()
    except RunDirLocked as exc:
        raise RunDirUnusable(str(exc)) from None
    if token_counter is None:  # loaded beside the run's first requests, not before: its ~0.1 s of Python (the
        # rank table) would hold the GIL while the check, the provider and the preflight run
        token_counter = _tokenizer_soon(options)
    try:
        if options.overwrite:
            clear_run_dir(run_dir)
        try:
            prepare_run_dir(run_dir, config)
        except RunConfigMismatch as exc:
            raise RunDirUnusable(str(exc)) from None
        if not rollout:  # the samples selected, so that report / view / compare count exactly these
            from dataclasses import asdict

            from envsim.evaluation.running.selection import write_selection

            write_selection(run_dir, asdict(config), records.sample_ids)
        if rollout:
            records = list(records)
            report = _rollout(records, provider, run_dir, options, prompt_version)
            sample_ids = [str(r["id"]) for r in records]
        else:
            sample_ids = _single(records, provider, config, run_dir, options, token_counter, logged)
            if getattr(provider, "name", None) == "executor":  # every miss classified (evaluation/baselines/executor_misses.py)
                from envsim.evaluation.baselines.executor_misses import record_run_misses

                record_run_misses(run_dir, records, options.prompt_mode, prompt_version, options.echo_err)
        del records, token_counter  # the reports need the ids only: the token counter's memory
        # (envsim.tokens.eval_tokenizer: not cached) is given back before the plot is drawn
        _endpoint_summary(provider, run_dir, options)
        if not rollout:
            from envsim.evaluation.reporting.report import write_reports

            report = write_reports(run_dir, sample_ids)  # the ids of this run: the benchmark is not read again
    finally:
        lock.__exit__(None, None, None)
    if not rollout:
        options.echo(format_summary(report, run_dir))
        for line in infra_lines(report["infra_failures"], report["samples"], report.get("infra_failure_reasons")):
            options.echo_err(line)
        for line in bad_record_lines(report):
            options.echo_err(line)
    return EvalSummary.from_summary(report, run_dir, options.min_scored.required, model=options.model,
                                    benchmark=options.benchmark)


def _warn_large_prompts(records: Any, options: EvalOptions, prompt_version: str, token_counter: Any) -> None:
    """``evaluation.prompting.prompt_size.large_prompt_warning`` on ``echo_err`` (a failure to count is no reason to stop)."""
    from envsim.evaluation.prompting.prompt_size import large_prompt_warning

    try:
        line = large_prompt_warning(records, options.prompt_mode, prompt_version, token_counter)
    except Exception:  # noqa: BLE001 - a diagnostic: a record that cannot be prompted is reported per sample
        return
    if line:
        options.echo_err(line)


def _explicit_tokenizer(options: EvalOptions) -> Any:
    """The tokenizer named by ``--tokenizer``, loaded now so that a broken one stops the run before it starts
    (``TokenizerMissing``); ``None`` without one (``_tokenizer_soon`` loads the default later)."""
    from envsim.tokens import TokenizerUnavailable, eval_tokenizer

    if options.tokenizer_dir is None:
        return None
    try:
        counter, _warning = eval_tokenizer(options.model, options.tokenizer_dir)
    except TokenizerUnavailable as exc:
        raise TokenizerMissing(str(exc)) from None
    return counter


def _tokenizer_soon(options: EvalOptions) -> Any:
    """The run's default token counter (``envsim.tokens.eval_tokenizer``), loaded in a background thread while the
    run starts (a ``Future``: the scorer waits for it)."""
    from concurrent.futures import Future
    import threading

    from envsim.tokens import eval_tokenizer

    future: Future[Any] = Future()

    def load() -> None:
        try:
            counter, warning = eval_tokenizer(options.model, None)
            if warning:
                options.echo_err(f"warning: {warning}")
            future.set_result(counter)
        except BaseException as exc:  # noqa: BLE001 - the scorer sees it (counted tokens are then left out)
            future.set_exception(exc)

    threading.Thread(target=load, name="envsim-tokenizer", daemon=True).start()
    return future


def _loaded(token_counter: Any) -> Any:
    """The token counter a ``_tokenizer_soon`` future holds, once loaded (``TokenizerMissing`` if it failed)."""
    from concurrent.futures import Future

    from envsim.tokens import TokenizerUnavailable

    if not isinstance(token_counter, Future):
        return token_counter
    try:
        return token_counter.result()
    except TokenizerUnavailable as exc:
        raise TokenizerMissing(str(exc)) from None


class LazyClassSources:
    """Class source per environment for ``full-class`` prompts, looked up when a record of it comes (records
    are streamed); a failing one is left out (reported per sample as a prompt failure)."""

    def __init__(self) -> None:
        self._sources: dict[str, str | None] = {}

    def get(self, env_id: str, default: str | None = None) -> str | None:
        """The class source of ``env_id`` (``default`` when it cannot be read)."""
        if env_id not in self._sources:
            self._sources[env_id] = class_sources([{"env": env_id}]).get(env_id)
        found = self._sources[env_id]
        return default if found is None else found


def _logged_calls(options: EvalOptions) -> Any:
    """The pool of logged calls of ``--logged-calls`` (``evaluation.prompting.logged_calls``), or None; an unreadable
    folder or a pool of held-out environments stops the run before anything is sent (``InvalidOption``)."""
    from envsim.construction.splits import LeakError
    from envsim.evaluation.errors import InvalidOption
    from envsim.evaluation.prompting.logged_calls import load_logged_calls

    if options.logged_calls is None:
        return None
    try:
        pool = load_logged_calls(Path(options.logged_calls))
    except (OSError, ValueError, KeyError, LeakError) as exc:  # LeakError: calls of held-out environments
        raise InvalidOption("--logged-calls", f"{options.logged_calls}: {exc}") from None
    options.echo_err(f"logged calls: {pool.size} calls of {len(pool.by_tool)} tools from {options.logged_calls}; "
                     f"each prompt lists up to {options.logged_k} of its tool's")
    return pool


def _single(records: Any, provider: Any, config: Any, run_dir: Path, options: EvalOptions,
            token_counter: Any, logged: Any = None) -> list[str]:
    """Run the one-step samples with a live progress display; the run's sample ids, in benchmark order."""
    from envsim.evaluation.running.reuse import EvalInterrupted, announcement, count_reuse, record_reuse
    from envsim.evaluation.running.runner import run_samples, scored_ids
    from envsim.progress import progress

    sources = LazyClassSources() if options.prompt_mode == "full-class" else {}
    already = len(scored_ids(run_dir / "results.jsonl"))
    reuse = count_reuse(run_dir, len(records), already)
    record_reuse(run_dir, reuse)
    said = announcement(reuse)
    if said:
        options.echo_err(said)  # first and loudly: a re-run after retraining must not pass old scores off as new
    counts = {"n": 0, "fm": 0, "cm": 0, "infra": 0}
    bar = progress(total=len(records), initial=min(already, len(records)), desc=f"eval {options.model}",
                   unit="sample")
    bar.set_postfix(**live_rates(counts), infra=0)
    announce = getattr(bar, "announce", None)
    if announce is not None:
        announce()  # the first line now, not at the first 10 %
    token_counter = _loaded(token_counter)  # before the first request: its timing never shares the GIL with the load
    sample_ids: list[str] = []

    def stream() -> Any:
        for record in records:
            sample_ids.append(str(record["id"]))
            yield record

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
        bar.set_postfix(**live_rates(counts), infra=counts["infra"], **fleet, refresh=False)
        bar.update(1)  # redraws at the bar's own pace (tqdm: mininterval), with the latest rates

    examples = logged.examples_for(options.logged_k) if logged else None
    try:
        asyncio.run(run_samples(stream(), provider, config, run_dir, concurrency=options.concurrency,
                                policy=retry_policy(options), tokenizer=token_counter, class_sources=sources,
                                on_result=on_result, keep_rows=False, examples=examples))
    except KeyboardInterrupt:
        bar.close()
        raise EvalInterrupted(run_dir, len(scored_ids(run_dir / "results.jsonl")), len(records)) from None
    except ValueError as exc:
        from envsim.benchmark.validation import BenchmarkFileError

        if isinstance(exc, BenchmarkFileError):  # a bad line part-way: what was scored before it is kept
            raise BenchmarkUnavailable(f"{exc} (the samples scored before it are kept)") from None
        raise
    finally:
        bar.close()
    return sample_ids


def _endpoint_summary(provider: Any, run_dir: Path, options: EvalOptions) -> None:
    """Per-endpoint counts of a fleet into RUN/endpoints.json (added up over resumed runs; the report
    copies them into summary.json) and onto the console."""
    report = getattr(provider, "endpoint_report", None)
    if report is None:
        return
    from envsim.evaluation.endpoints.fleet import format_endpoints, merge_reports

    from envsim.safe_files import read_json, write_json

    path = run_dir / "endpoints.json"
    try:
        previous = read_json(path) if path.exists() else []
    except (OSError, ValueError):
        previous = []
    merged = merge_reports(previous if isinstance(previous, list) else [], report())
    write_json(path, merged)
    options.echo(format_endpoints(merged))


def _rollout(records: list[dict[str, Any]], provider: Any, run_dir: Path, options: EvalOptions,
             prompt_version: str) -> dict[str, Any]:
    """Run the multi-step track over the environments of ``records``; returns its drift report."""
    from envsim.progress import progress
    from envsim.simulation.rollout_track import run_rollout_track

    env_ids = sorted({r["env"] for r in records})
    bar = progress(total=len(env_ids) * options.episodes, desc="rollout track", unit="episode")
    report = asyncio.run(run_rollout_track(env_ids, provider, run_dir, episodes=options.episodes,
                                           horizon=options.horizon, concurrency=options.concurrency,
                                           prompt_mode=options.prompt_mode, prompt_version=prompt_version,
                                           on_episode=lambda _: bar.update(1)))
    bar.close()
    options.echo(f"{report['episodes']} episodes of {options.horizon} steps on {len(env_ids)} environments; "
                 f"mean steps before divergence {report['mean_steps_before_divergence']}")
    options.echo("CM@k: " + "  ".join(f"@{k} {100 * v:.1f}%" for k, v in report["cm_at_k"].items()))
    if "cm_at_k_changed" in report:
        options.echo("CM@k, episodes whose state had changed by step k: " + "  ".join(
            f"@{k} {'–' if v is None else f'{100 * v:.1f}%'}" for k, v in report["cm_at_k_changed"].items()))
    total = report.get("scored", report["episodes"]) + report.get("infra_failures", 0)
    for line in infra_lines(report.get("infra_failures", 0), total, report.get("infra_failure_reasons"),
                            unit="episodes"):
        options.echo_err(line)
    options.echo(f"run directory: {run_dir}")
    return report

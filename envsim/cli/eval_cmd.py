"""``envsim eval``: options -> ``envsim.evaluate`` -> console and exit code (the work is in ``evaluation/``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from envsim.cli.env_module_option import env_module_option
from envsim.cli.tau_path_option import tau_path_option
from envsim.cli.eval_outcome import MinScoredType, exit_if_too_few
from envsim.cli.request_options import max_tokens_option, response_format_option, timeout_option
from envsim.evaluation.running.eval_options import MinScored
from envsim.evaluation.prompting.prompts import PROMPT_MODES, PROMPT_VERSIONS
from envsim.progress import progress_option


@click.command("eval")
@click.option("--model", required=True, help="Model name at the endpoint, or the baselines 'null' / 'oracle' / "
              "'executor' (runs the code the prompt shows, docs/executor.md).")
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
@click.option("--split", default=None, help="Split of a shipped benchmark.  [default: test]")
@click.option("--tier", default=None, help="Tier of a tiered benchmark (v2: core, extreme, long_state, chained, "
              "bfcl, tau, tau_chained) or 'all'. Without --tier (and --split), v2 runs every tier whose requirements "
              "are met here and names the others (what they need, how to install it); a tier named here, or "
              "'all', must run: a missing requirement stops the run up front. Each tier is reported apart, side "
              "by side in RUN/tiers.md.")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Only N samples (N >= 1), evenly spaced over the split (every stratum).")
@click.option("--ids", default=None,
              help="Only the samples listed in this id list (one id per line; or a shipped subset's name, e.g. "
                   "v1_test_smollm2_2048); applied before --limit.")
@click.option("--prompt-mode", type=click.Choice(list(PROMPT_MODES)), default="mdp", show_default=True,
              help="What the model sees: mdp = state + the tool's code + the call; pomdp = the call history only "
                   "(no state, no code; an ablation); full-class = state + the whole class source + the call "
                   "(see envsim.evaluation.prompting.prompts for every mode).")
@click.option("--prompt-version", type=click.Choice(list(PROMPT_VERSIONS)), default=None,
              help="Prompt version (default: 1 for benchmark v1 and JSONL files, 2 for v2; 2 = compact JSON, "
                   "as 'envsim train data' writes by default).")
@click.option("--tokenizer", "tokenizer_dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="Local model directory whose tokenizer counts prompt/answer tokens (default: --model when it "
                   "is a local directory, else Qwen's BPE, offline).")
@click.option("--temperature", type=click.FloatRange(min=0.0), default=0.0, show_default=True,
              help="Sampling temperature sent with every request (0: greedy, the published setting).")
@max_tokens_option
@click.option("--extra", "extra_json", default=None,
              help='Extra request fields as JSON, e.g. \'{"response_format": {"type": "json_object"}}\'. The core '
                   "fields model, messages, temperature, max_tokens, stream and n are refused (their own options set "
                   "them).")
@response_format_option
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True)
@timeout_option
@click.option("--max-retries", type=click.IntRange(min=0), default=4, show_default=True,
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
@click.option("--horizon", type=click.IntRange(min=1), default=5, show_default=True, help="Steps per rollout episode.")
@click.option("--episodes", type=click.IntRange(min=1), default=2, show_default=True,
              help="Rollout episodes per environment.")
@click.option("--sandbox-packages", envvar="ENVSIM_SANDBOX_PACKAGES", show_envvar=True, default="auto",
              show_default=True,
              help="Third-party packages the executor baseline's sandbox may import before it confines itself: "
                   "auto (those your trusted environment imports, when the shown code imports them), none, or a "
                   "comma-separated list. pydantic and sqlite3 (in-memory) are always available. Written to "
                   "RUN/config.json as sandbox_packages.")
@click.option("--logged-calls", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="An 'envsim train data' folder (your service's logged calls): each prompt lists up to --logged-k "
                   "of its tool's calls there with their answers, as a model trained with the recipe's "
                   "logged_examples saw them (docs/real-model.md).")
@click.option("--logged-k", type=click.IntRange(min=1), default=3, show_default=True,
              help="Logged calls a prompt lists at most (with --logged-calls).")
@env_module_option
@tau_path_option
def eval_cmd(model: str, base_url: tuple[str, ...], extra_json: str | None, tokenizer_dir: str | None,
             min_scored: MinScored, **options: Any) -> None:
    """Evaluate MODEL on FM / CM / CM-lenient per stratum, |Δ|, arity and domain, with 95% CIs.

    Exit codes: 0 done (v2 without --tier: every tier whose requirements are met here was run; the tiers left
    out are named on stderr and in RUN/tiers.md); 1 stopped before the run (bad option or benchmark, an
    extra missing for a tier asked for by name or with --tier all, failed preflight); 2 usage error; 3 done,
    but fewer samples scored than --min-scored (default 1); 130 interrupted (Ctrl-C): the results written are
    kept and the same command resumes. A re-run that reuses results says so first."""
    from envsim.control_chars import escape_lines
    from envsim.evaluation.api import evaluate
    from envsim.evaluation.errors import EvalStopped, InvalidOption
    from envsim.evaluation.running.reuse import EXIT_INTERRUPTED, EvalInterrupted

    try:
        extra = json.loads(extra_json) if extra_json else {}
        if not isinstance(extra, dict):
            raise ValueError("must be a JSON object")
    except ValueError as exc:
        raise click.BadParameter(f"--extra: {exc}") from None
    _refuse_misspelt_baseline(model, base_url, options.get("base_url_file"))
    from envsim.envs.sandbox.packages import setting_problem, using_setting

    sandbox_packages = options.pop("sandbox_packages")
    problem = setting_problem(sandbox_packages)
    if problem:
        raise click.BadParameter(problem, param_hint="--sandbox-packages")
    try:
        with using_setting(sandbox_packages):
            summary = evaluate(model, base_url=base_url, extra=extra, tokenizer=tokenizer_dir,
                               min_scored=min_scored, echo=click.echo,
                               echo_err=lambda text: click.echo(text, err=True), **options)
    except InvalidOption as exc:
        raise click.BadParameter(exc.message, param_hint=exc.option) from None
    except EvalStopped as exc:  # the message may hold an endpoint's words: shown with controls escaped
        raise click.ClickException(escape_lines(exc)) from None
    except EvalInterrupted as exc:
        click.echo(escape_lines(exc), err=True)
        raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
    except KeyboardInterrupt:  # before or after the samples (loading, reports): results written are kept
        click.echo("interrupted: the results already written are kept; run the same command again to resume",
                   err=True)
        raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
    exit_if_too_few(summary, min_scored)


def _refuse_misspelt_baseline(model: str, base_urls: tuple[str, ...], url_file: Path | None) -> None:
    """Stop (exit 1) when MODEL without any endpoint looks like a misspelt built-in ('nul': did you mean 'null'?),
    as 'envsim simulate' does; a name sent to $OPENAI_BASE_URL is left to the preflight."""
    import os

    from envsim.evaluation.baselines.builtin_names import unknown_builtin_hint

    if os.environ.get("OPENAI_BASE_URL"):
        return
    hint = unknown_builtin_hint(model, endpoint_urls(base_urls, url_file), "model")
    if hint:
        raise click.ClickException(hint)


def endpoint_urls(base_urls: tuple[str, ...], url_file: Path | None) -> list[str]:
    """``evaluation.endpoints.endpoints.endpoint_urls`` for a click command: a bad URL is a usage error."""
    from envsim.evaluation.endpoints.endpoints import endpoint_urls as urls_of
    from envsim.evaluation.errors import InvalidOption

    try:
        return urls_of(base_urls, url_file)
    except InvalidOption as exc:
        raise click.BadParameter(exc.message, param_hint=exc.option) from None


def make_endpoint_provider(model: str, urls: list[str], **kwargs: Any) -> Any:
    """``evaluation.endpoints.endpoints.make_endpoint_provider`` with fleet warnings on stderr."""
    from envsim.evaluation.endpoints.endpoints import make_endpoint_provider as provider_of

    return provider_of(model, urls, log=lambda text: click.echo(f"warning: {text}", err=True), **kwargs)

"""``envsim simulate``: roll out an agent in simulated environments (Simia-style)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click

from envsim.cli.env_module_option import env_module_option, trust_command_line_env
from envsim.cli.tau_path_option import tau_path_option
from envsim.cli.request_options import request_options
from envsim.progress import progress_option


def _preflight(simulator: str, provider: object, urls: list[str], api_key: str | None, policy: object,
               response_format: str) -> None:
    """``evaluation.endpoints.preflight`` for the simulator: a line per endpoint on stderr; a failure stops the command
    (exit 1) before any episode starts and before --out is touched."""
    from envsim.evaluation.endpoints.preflight import PreflightFailed, announce, preflight

    try:
        checks = preflight(simulator, provider, urls, api_key, policy, response_format)
    except PreflightFailed as exc:
        raise click.ClickException(str(exc).replace("Check --model,", "Check --simulator,")) from None
    announce(checks, lambda line: click.echo(line, err=True))


@click.command("simulate")
@click.option("--env", "env_ids", multiple=True, required=True, help="Environment id (repeatable).")
@click.option("--simulator", required=True,
              help="Simulator model at --base-url, or a built-in: 'oracle', 'null' or 'executor' (runs the code "
                   "its prompt shows on the state shown).")
@click.option("--base-url", multiple=True, help="OpenAI-compatible endpoint of the simulator; repeat it (or use "
              "--base-url-file) to spread steps over several replicas, with failing ones taken out for a while.")
@click.option("--base-url-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="File of simulator endpoint URLs, one per line ('#' comments), added to --base-url.")
@click.option("--agent", default="explorer", show_default=True,
              help="'explorer' (seeded random policy) or a model name at --agent-base-url.")
@click.option("--agent-base-url", default=None, help="OpenAI-compatible endpoint of the agent model.")
@click.option("--episodes", type=int, default=5, show_default=True, help="Episodes per environment.")
@click.option("--steps", type=int, default=8, show_default=True, help="Tool calls per episode.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--shadow/--no-shadow", default=True, show_default=True,
              help="Step the real implementation alongside and report drift.")
@click.option("--prompt-mode", type=click.Choice(["mdp", "pomdp", "full-class", "mdp-view"]), default="mdp",
              show_default=True, help="What the simulator's prompt shows of the environment (as 'envsim eval "
              "--prompt-mode'); mdp-view: the state view of each call (the full state is still tracked).")
@click.option("--prompt-version", type=click.Choice(["1", "2", "3"]), default=None,
              help="Prompt version sent to the simulator: the one its SFT data was written with ('envsim train "
                   "data' writes 2; 3 with mdp-view).  [default: 2, 3 for mdp-view]")
@request_options
@click.option("--max-attempts", type=int, default=3, show_default=True,
              help="Simulator attempts per step before the fallback policy (error observation, state unchanged).")
@click.option("--price-in", type=float, default=0.0, show_default=True, help="Price per 1M prompt tokens.")
@click.option("--price-out", type=float, default=0.0, show_default=True, help="Price per 1M completion tokens.")
@click.option("--api-key", envvar="OPENAI_API_KEY", show_envvar=True, default=None,
              help="API key of the simulator endpoint (never written to disk). Local servers need none.")
@click.option("--preflight/--no-preflight", default=True, show_default=True,
              help="Before the run, check the key/URL and send one tiny request to the simulator (as 'envsim eval').")
@click.option("--max-fallback-rate", type=click.FloatRange(0.0, 1.0), default=0.0, show_default=True,
              help="Exit with code 3 when more than this share of steps are fallback steps (the simulator gave no "
                   "usable answer); 0 = any fallback step fails the run. Outputs are written either way.")
@click.option("--include-fallbacks", is_flag=True,
              help="Keep trajectories with fallback steps in trajectories.jsonl (marked with fallback_steps) "
                   "instead of fallback_trajectories.jsonl.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
@env_module_option
@tau_path_option
@progress_option
def simulate_cmd(env_ids: tuple[str, ...], simulator: str, base_url: tuple[str, ...], agent: str,
                 agent_base_url: str | None, episodes: int, steps: int, seed: int, shadow: bool, prompt_mode: str,
                 max_attempts: int, price_in: float, price_out: float, out: Path,
                 base_url_file: Path | None = None, prompt_version: str | None = None, api_key: str | None = None,
                 preflight: bool = True, max_fallback_rate: float = 0.0, include_fallbacks: bool = False,
                 response_format: str = "free", max_tokens: int = 2048, timeout: float = 120.0) -> None:
    """Write trajectories (ShareGPT with tool calls), per-step records, costs and (shadow) a drift report.

    Exit codes (as 'envsim eval'): 0 done within --max-fallback-rate; 1 stopped before the run (unknown
    environment or simulator, failed preflight); 2 usage error; 3 done, but more fallback steps than
    --max-fallback-rate (outputs kept)."""
    from envsim.cli.eval_cmd import endpoint_urls, make_endpoint_provider
    from envsim.cli.eval_outcome import EXIT_TOO_FEW_SCORED, top_reasons
    from envsim.envs.registry import UnknownEnvironment, get_env
    from envsim.evaluation.prompting.answer_schema import request_fields
    from envsim.evaluation.running.runner import RetryPolicy
    from envsim.evaluation.prompting.prompts import default_prompt_version
    from envsim.simulation.simulate import simulate, unknown_simulator_hint

    prompt_version = prompt_version or default_prompt_version("v2", prompt_mode)

    try:
        for env_id in env_ids:
            trust_command_line_env(env_id)
        classes = [get_env(e) for e in env_ids]
    except UnknownEnvironment as exc:
        raise click.ClickException(str(exc)) from None
    urls = endpoint_urls(base_url, base_url_file)
    hint = unknown_simulator_hint(simulator, urls)
    if hint:
        raise click.ClickException(hint)
    provider = make_endpoint_provider(simulator, urls, api_key=api_key, max_tokens=max_tokens, timeout=timeout,
                                      extra_body=request_fields({}, response_format, prompt_mode, prompt_version))
    if preflight:
        _preflight(simulator, provider, urls, api_key, RetryPolicy(timeout=timeout), response_format)
    run = asyncio.run(simulate(classes, provider, out, episodes=episodes, steps=steps, seed=seed, agent=agent,
                               agent_base_url=agent_base_url, shadow=shadow, prompt_mode=prompt_mode,
                               prompt_version=prompt_version, max_attempts=max_attempts, price_in=price_in,
                               price_out=price_out, include_fallbacks=include_fallbacks, request_timeout=timeout,
                               title=f"{simulator} on {len(classes)} environment(s)"))
    if "endpoints" in run.stats:
        from envsim.evaluation.endpoints.fleet import format_endpoints

        click.echo(format_endpoints(run.stats["endpoints"]))
    fb = run.fallbacks
    click.echo(f"{len(run.episodes)} episodes, {run.stats['steps']} steps, {fb['fallback_steps']} fallback steps "
               f"({100 * fb['fallback_rate']:.1f}%), cost {run.stats['cost']:.4f} -> {out}")
    if fb["fallback_steps"]:
        kept = "kept in trajectories.jsonl (marked)" if include_fallbacks else \
            "left out of trajectories.jsonl (see fallback_trajectories.jsonl)"
        click.echo(f"{fb['fallback_steps']} fallback steps in {fb['fallback_episodes']} episodes, counted as misses; "
                   f"their trajectories are {kept}:", err=True)
        for line in top_reasons(fb["fallback_reasons"]):
            click.echo(f"  {line}", err=True)
    if run.drift:
        click.echo(f"diverged episodes: {run.drift['diverged_episodes']}/{run.drift['episodes']}; mean steps before "
                   f"divergence {run.drift['mean_steps_before_divergence']}; CM@k " + json.dumps(run.drift["cm_at_k"]))
    if run.fallback_rate_exceeds(max_fallback_rate):
        click.echo(f"error: {100 * fb['fallback_rate']:.1f}% of steps are fallback steps, above --max-fallback-rate "
                   f"{max_fallback_rate:g}; exit code {EXIT_TOO_FEW_SCORED}", err=True)
        raise click.exceptions.Exit(EXIT_TOO_FEW_SCORED)

"""``envsim simulate``: roll out an agent in simulated environments (Simia-style)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click


@click.command("simulate")
@click.option("--env", "env_ids", multiple=True, required=True, help="Environment id (repeatable).")
@click.option("--simulator", required=True, help="Simulator model at --base-url, or 'oracle' / 'null'.")
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
@click.option("--prompt-mode", type=click.Choice(["mdp", "pomdp", "full-class"]), default="mdp", show_default=True,
              help="What the simulator's prompt shows of the environment (as 'envsim eval --prompt-mode').")
@click.option("--prompt-version", type=click.Choice(["1", "2"]), default="2", show_default=True,
              help="Prompt version sent to the simulator: the one its SFT data was written with ('envsim train "
                   "data' writes 2).")
@click.option("--max-attempts", type=int, default=3, show_default=True,
              help="Simulator attempts per step before the fallback policy (error observation, state unchanged).")
@click.option("--price-in", type=float, default=0.0, show_default=True, help="Price per 1M prompt tokens.")
@click.option("--price-out", type=float, default=0.0, show_default=True, help="Price per 1M completion tokens.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
def simulate_cmd(env_ids: tuple[str, ...], simulator: str, base_url: tuple[str, ...], agent: str,
                 agent_base_url: str | None, episodes: int, steps: int, seed: int, shadow: bool, prompt_mode: str,
                 max_attempts: int, price_in: float, price_out: float, out: Path,
                 base_url_file: Path | None = None, prompt_version: str = "2") -> None:
    """Write trajectories (ShareGPT with tool calls), per-step records, costs and (shadow) a drift report."""
    from envsim.envs.registry import UnknownEnvironment, get_env
    from envsim.simulation.agents import ExplorerAgent, LLMAgent
    from envsim.simulation.simulate import cost_summary, run_episode, write_outputs
    from envsim.simulation.simulated import EnvSpec, SimulatedEnvironment

    try:
        classes = [get_env(e) for e in env_ids]
    except UnknownEnvironment as exc:
        raise click.ClickException(str(exc)) from None
    from envsim.cli.eval_cmd import endpoint_urls, make_endpoint_provider

    provider = make_endpoint_provider(simulator, endpoint_urls(base_url, base_url_file))

    async def main() -> tuple[list[dict], list[SimulatedEnvironment]]:
        results, envs = [], []
        try:
            for cls in classes:
                for i in range(episodes):
                    env = SimulatedEnvironment(EnvSpec.from_class(cls), provider, prompt_mode=prompt_mode,
                                               max_attempts=max_attempts, shadow=shadow,
                                               prompt_version=prompt_version)
                    envs.append(env)
                    policy = ExplorerAgent(cls, seed + i) if agent == "explorer" else LLMAgent(agent, agent_base_url)
                    results.append(await run_episode(env, policy, seed + i, steps))
        finally:
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()
        return results, envs

    episodes_out, envs = asyncio.run(main())
    stats = cost_summary(envs, price_in, price_out)
    if hasattr(provider, "endpoint_report"):
        from envsim.evaluation.fleet import format_endpoints

        stats["endpoints"] = provider.endpoint_report()
        click.echo(format_endpoints(stats["endpoints"]))
    report = write_outputs(episodes_out, out, horizon=steps, shadow=shadow, stats=stats,
                           title=f"{simulator} on {len(classes)} environment(s)")
    click.echo(f"{len(episodes_out)} episodes, {stats['steps']} steps, {stats['fallback_steps']} fallback steps, "
               f"cost {stats['cost']:.4f} -> {out}")
    if report:
        click.echo(f"diverged episodes: {report['diverged_episodes']}/{report['episodes']}; mean steps before "
                   f"divergence {report['mean_steps_before_divergence']}; CM@k " + json.dumps(report["cm_at_k"]))

"""``envsim construct``: options -> ``envsim.construct`` -> console and exit code (the work is in ``construction/``)."""

from __future__ import annotations

from pathlib import Path

import click

from envsim.cli.env_module_option import env_module_option
from envsim.cli.tau_path_option import tau_path_option
from envsim.construction.tracks import TRACKS
from envsim.progress import progress_option


@click.command("construct")
@click.option("--split", type=click.Choice(["test", "dev", "train"]), required=True,
              help="test/dev sample the held-out environments; train uses every other environment.")
@click.option("--version", "version", default="v1", show_default=True, help="Benchmark version (held-out list).")
@click.option("--spec", default="default", show_default=True,
              help="Composition spec: 'default' (the 400-sample table) or a JSON file; ignored with --pool. A pool "
                   "that cannot fill it is written as far as it goes, with what is missing said. With --policy replay "
                   "the default writes every logged call.")
@click.option("--pool", "pool_size", type=int, default=None,
              help="Write up to N labelled records (no stratification), e.g. a training pool.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--episodes", type=int, default=8, show_default=True, help="Rollout episodes per environment.")
@click.option("--steps", type=int, default=40, show_default=True, help="Calls per episode.")
@click.option("--exclude", "exclude_paths", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              multiple=True, help="JSONL whose sample ids must not be reused (e.g. test when building dev); repeatable.")
@click.option("--tier", type=click.Choice(["single", "long_state", "chained"]), default="single", show_default=True,
              help="single: one-step samples (v1, v2 core and extreme); long_state: one-step samples on 8k-32k-token "
                   "states; chained: episodes of several calls (benchmark v2 tiers, see benchmark/v2/README.md).")
@click.option("--scales", default="4,8,16", show_default=True, help="long_state: collection scale factors.")
@click.option("--history", type=int, default=30, show_default=True, help="long_state: explorer calls before sampling.")
@click.option("--min-tokens", type=int, default=8192, show_default=True, help="long_state: shortest prompt kept.")
@click.option("--max-tokens", type=int, default=32768, show_default=True, help="long_state: longest prompt kept.")
@click.option("--lengths", default="2-8", show_default=True, help="chained: episode lengths, e.g. '2-8'.")
@click.option("--per-length", type=int, default=16, show_default=True, help="chained: episodes per length.")
@click.option("--per-env-cap", type=int, default=None, help="chained: most episodes per environment.")
@click.option("--env", "env_overrides", multiple=True,
              help="Roll out these environments instead of the split's list (repeatable): registry or plugin ids, "
                   "'module:Class' (foreign classes are wrapped), 'bfcl/<Class>'. BFCL, τ-bench and plugin ones never "
                   "go to train; a 'module:Class' of your own does, split from its test by explorer episodes "
                   "(docs/own-environment.md).")
@click.option("--track", type=click.Choice(sorted(TRACKS)), default=None,
              help="bfcl: the BFCL track (needs the [bfcl] extra): ground-truth calls of BFCL's multi-turn "
                   "trajectories plus explorer calls, sampled per stratum; --spec overrides its composition. "
                   "tau: τ-bench retail+airline test-task replays, chained episodes and explorer calls "
                   "(τ-bench installed or at $ENVSIM_TAU_BENCH); states stored once under tau_states/.")
@click.option("--workers", type=int, default=1, show_default=True, help="Processes for rollouts; with --policy replay, whole logged tasks per process "
              "(the same files as one process).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Output JSONL.")
@click.option("--policy", type=click.Choice(["explorer", "replay", "llm"]), default="explorer", show_default=True,
              help="explorer: seeded schema/state-aware calls; replay: label --replay-log; llm: an agent model "
                   "at --agent-base-url acts in the real environments.")
@click.option("--replay-log", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="JSONL of {env, state (or seed), actions} to label (with --policy replay): every call, each on "
                   "the state the previous one left; the file is checked whole first.")
@click.option("--agent-model", default=None, help="Agent model name (with --policy llm).")
@click.option("--agent-base-url", default=None, help="OpenAI-compatible endpoint of the agent model.")
@progress_option
@env_module_option
@tau_path_option
@click.option("--format", "fmt", type=click.Choice(["envsim", "envsimbench"]), default="envsim", show_default=True,
              help="envsimbench: the original EnvSimBench layout (one JSON list), readable by its evaluation script.")
def construct_cmd(split: str, version: str, spec: str, pool_size: int | None, seed: int, episodes: int, steps: int,
                  exclude_paths: tuple[Path, ...], workers: int, policy: str, replay_log: Path | None,
                  agent_model: str | None, agent_base_url: str | None, out: Path, fmt: str, tier: str = "single",
                  scales: str = "4,8,16", history: int = 30, min_tokens: int = 8192, max_tokens: int = 32768,
                  lengths: str = "2-8", per_length: int = 16, per_env_cap: int | None = None,
                  env_overrides: tuple[str, ...] = (), track: str | None = None) -> None:
    """Build a benchmark split or a training pool; writes OUT and OUT's statistics (.stats.md/.json).

    Exit codes: 0 written; 1 stopped before writing (unknown environment, too small a pool, missing extra);
    2 usage error."""
    from envsim.construction.api import construct
    from envsim.construction.errors import ConstructInterrupted, ConstructStopped, InvalidConstructOption

    try:
        summary = construct(split, out, version=version, spec=spec, pool_size=pool_size, seed=seed, episodes=episodes,
                            steps=steps, exclude=exclude_paths, tier=tier, scales=scales, history=history,
                            min_tokens=min_tokens, max_tokens=max_tokens, lengths=lengths, per_length=per_length,
                            per_env_cap=per_env_cap, envs=env_overrides, track=track, workers=workers, policy=policy,
                            replay_log=replay_log, agent_model=agent_model, agent_base_url=agent_base_url, fmt=fmt,
                            echo_err=lambda text: click.echo(text, err=True))
    except InvalidConstructOption as exc:
        if not exc.option:
            raise click.UsageError(exc.message) from None
        raise click.BadParameter(exc.message, param_hint=exc.option) from None
    except ConstructInterrupted as exc:  # Ctrl-C: what was labelled is kept (the replay journal), said
        click.echo(str(exc), err=True)
        raise click.exceptions.Exit(130) from None
    except ConstructStopped as exc:
        raise click.ClickException(str(exc)) from None
    for line in summary.lines:
        click.echo(line)

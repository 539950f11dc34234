"""``envsim construct``: roll out environments, label transitions and sample a stratified split."""

from __future__ import annotations

import json
from pathlib import Path

import click

from envsim.cli.env_module_option import env_module_option, trust_command_line_env
from envsim.progress import progress_option


@click.command("construct")
@click.option("--split", type=click.Choice(["test", "dev", "train"]), required=True,
              help="test/dev sample the held-out environments; train uses every other environment.")
@click.option("--version", "version", default="v1", show_default=True, help="Benchmark version (held-out list).")
@click.option("--spec", default="default", show_default=True,
              help="Composition spec: 'default' (the 400-sample table) or a JSON file; ignored with --pool.")
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
                   "'module:Class' (foreign classes are wrapped), 'bfcl/<Class>'. Foreign ones never go to train.")
@click.option("--track", type=click.Choice(["bfcl"]), default=None,
              help="bfcl: the BFCL track (needs the [bfcl] extra): ground-truth calls of BFCL's multi-turn "
                   "trajectories plus explorer calls, sampled per stratum; --spec overrides its composition.")
@click.option("--workers", type=int, default=1, show_default=True, help="Processes for rollouts.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Output JSONL.")
@click.option("--policy", type=click.Choice(["explorer", "replay", "llm"]), default="explorer", show_default=True,
              help="explorer: seeded schema/state-aware calls; replay: label --replay-log; llm: an agent model "
                   "at --agent-base-url acts in the real environments.")
@click.option("--replay-log", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="JSONL of {env, state, actions} to label (with --policy replay).")
@click.option("--agent-model", default=None, help="Agent model name (with --policy llm).")
@click.option("--agent-base-url", default=None, help="OpenAI-compatible endpoint of the agent model.")
@progress_option
@env_module_option
@click.option("--format", "fmt", type=click.Choice(["envsim", "envsimbench"]), default="envsim", show_default=True,
              help="envsimbench: the original EnvSimBench layout (one JSON list), readable by its evaluation script.")
def construct_cmd(split: str, version: str, spec: str, pool_size: int | None, seed: int, episodes: int, steps: int,
                  exclude_paths: tuple[Path, ...], workers: int, policy: str, replay_log: Path | None,
                  agent_model: str | None, agent_base_url: str | None, out: Path, fmt: str, tier: str = "single",
                  scales: str = "4,8,16", history: int = 30, min_tokens: int = 8192, max_tokens: int = 32768,
                  lengths: str = "2-8", per_length: int = 16, per_env_cap: int | None = None,
                  env_overrides: tuple[str, ...] = (), track: str | None = None) -> None:
    """Build a benchmark split or a training pool; writes OUT and OUT's statistics (.stats.md/.json)."""
    from envsim.progress import progress as tqdm

    from envsim.construction.composition import CompositionError, load_spec
    from envsim.construction.interop import write_envsimbench
    from envsim.construction.pipeline import build_pool, spread_sample, write_jsonl
    from envsim.construction.splits import read_test_envs, training_envs
    from envsim.construction.stats import record_stats, record_token_stats, stats_markdown
    from envsim.evaluation.prompts import default_prompt_version
    from envsim.construction.composition import stratified_sample
    from envsim.envs.registry import list_envs

    if track == "bfcl":
        _bfcl_track(split, spec, seed, episodes, steps, out)
        return
    domains = {e.id: e.domain for e in list_envs() if e.builtin}
    held_out = read_test_envs(version)
    if not held_out:
        raise click.ClickException(f"benchmark {version} has no held-out environment list")
    env_ids = training_envs(domains, version) if split == "train" else held_out
    if env_overrides:
        env_ids = _given_envs(env_overrides, split, domains)
    missing = [e for e in env_ids if e not in domains]
    if missing:
        raise click.ClickException(f"unknown environments in the split: {', '.join(missing[:5])}")
    excluded = set()
    for exclude_path in exclude_paths:
        excluded |= {json.loads(line)["id"] for line in exclude_path.read_text().splitlines() if line.strip()}
    if tier != "single":
        _build_tier(tier, env_ids, split=split, version=version, spec=spec, seed=seed, episodes=episodes,
                    steps=steps, workers=workers, excluded=excluded, out=out, scales=scales, history=history,
                    min_tokens=min_tokens, max_tokens=max_tokens, lengths=lengths, per_length=per_length,
                    per_env_cap=per_env_cap, domains=domains)
        return
    if policy == "replay":
        pool = _replayed(replay_log, split, version)
    elif policy == "llm":
        pool = _llm_pool(env_ids, agent_model, agent_base_url, seed, episodes, steps, split)
    else:
        with tqdm(total=len(env_ids), desc=f"rollouts ({split})", unit="env") as bar:
            pool = build_pool(env_ids, seed, episodes, steps, split, workers=workers, progress=bar)
    pool = [r for r in pool if r["id"] not in excluded]
    if pool_size is not None:
        records = spread_sample(pool, pool_size, seed=seed, domains=domains)   # stratified by domain and env
    else:
        try:
            records = stratified_sample(pool, load_spec(spec), seed=seed)
        except CompositionError as exc:
            raise click.ClickException(f"{exc}; try more --episodes/--steps") from None
    if fmt == "envsimbench":  # the original's layout: one JSON list that its Evaluation/10.eval_model.py reads
        write_envsimbench(records, out)
    else:
        write_jsonl(records, out)
    stats = record_stats(records, domains)
    stats["tokens"] = record_token_stats(records, prompt_version=default_prompt_version(version))  # counted, Qwen BPE
    out.with_suffix(".stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    out.with_suffix(".stats.md").write_text(stats_markdown(f"{out.name}", stats))
    click.echo(f"{len(records)} records from {stats['environments']} environments in {stats['domains']} domains "
               f"(pool {len(pool)}) -> {out}")
    click.echo("by stratum: " + ", ".join(f"{k} {v}" for k, v in stats["by_stratum"].items()))


def _replayed(replay_log: Path | None, split: str, version: str) -> list[dict]:
    """Records of a replayed log; a training split refuses held-out environments."""
    from envsim.construction.labelling import deduplicate, to_record
    from envsim.construction.policies import ReplayError, replay_log as replay
    from envsim.construction.splits import LeakError, assert_no_test_envs

    if replay_log is None:
        raise click.UsageError("--policy replay needs --replay-log")
    try:
        records = list(deduplicate(to_record(t, cls, split) for cls, t in replay(replay_log)))
        if split == "train":
            assert_no_test_envs((r["env"] for r in records), version)
            foreign = sorted({r["env"] for r in records if r.get("origin")})
            if foreign:  # wrapped foreign classes (BFCL, module:Class) are held out from training
                raise LeakError(f"foreign environments are held out from training: {', '.join(foreign[:5])}")
    except (ReplayError, LeakError) as exc:
        raise click.ClickException(str(exc)) from None
    return records


def _llm_pool(env_ids: list[str], model: str | None, base_url: str | None, seed: int, episodes: int, steps: int,
              split: str) -> list[dict]:
    """Records of LLM-agent episodes in the real environments."""
    import asyncio

    from envsim.progress import progress as tqdm

    from envsim.construction.labelling import deduplicate, to_record
    from envsim.construction.policies import llm_rollout
    from envsim.envs.registry import get_env

    if not model:
        raise click.UsageError("--policy llm needs --agent-model (and usually --agent-base-url)")
    records = []
    for env_id in tqdm(env_ids, desc=f"agent rollouts ({split})", unit="env"):
        cls = get_env(env_id)
        for episode in range(episodes):
            try:
                transitions = asyncio.run(llm_rollout(cls, cls.sample_state(seed + episode), model, base_url, steps))
            except Exception as exc:  # noqa: BLE001 - one failing endpoint call must not lose the pool
                click.echo(f"warning: {env_id} episode {episode}: {type(exc).__name__}: {exc}", err=True)
                continue
            records += [to_record(t, cls, split) for t in transitions]
    return list(deduplicate(records))


def _int_list(text: str, option: str) -> list[int]:
    """``"4,8,16"`` or ``"2-8"`` as a list of integers."""
    try:
        if "-" in text:
            low, high = (int(x) for x in text.split("-", 1))
            return list(range(low, high + 1))
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a list like '4,8,16' or a range like '2-8'",
                                 param_hint=option) from None


def _build_tier(tier: str, env_ids: list[str], *, split: str, version: str, spec: str, seed: int, episodes: int,
                steps: int, workers: int, excluded: set[str], out: Path, scales: str, history: int, min_tokens: int,
                max_tokens: int, lengths: str, per_length: int, per_env_cap: int | None,
                domains: dict[str, str]) -> None:
    """Build a long-state or chained tier (benchmark v2) into OUT with its statistics."""
    from envsim.progress import progress as tqdm

    from envsim.construction.composition import CompositionError, load_spec, stratified_sample
    from envsim.construction.pipeline import write_jsonl
    from envsim.construction.stats import record_stats, stats_markdown

    if tier == "chained":
        from envsim.construction.chained import build_chained, chained_stats, chained_stats_markdown

        with tqdm(total=len(env_ids), desc=f"chained episodes ({split})", unit="env") as bar:
            try:
                episodes_out = build_chained(env_ids, seed, candidates_per_env=episodes,
                                             lengths=_int_list(lengths, "--lengths"), per_length=per_length,
                                             per_env_cap=per_env_cap, split=split, progress=bar)
            except ValueError as exc:
                raise click.ClickException(f"{exc}; try more --episodes") from None
        episodes_out = [e for e in episodes_out if e["id"] not in excluded]
        write_jsonl(episodes_out, out)
        stats = chained_stats(episodes_out)
        out.with_suffix(".stats.json").write_text(json.dumps(stats, indent=2) + "\n")
        out.with_suffix(".stats.md").write_text(chained_stats_markdown(out.name, stats))
        click.echo(f"{len(episodes_out)} episodes ({stats['steps']} calls) from {stats['environments']} "
                   f"environments -> {out}")
        return
    from envsim.construction.long_state import long_state_pool
    from envsim.construction.stats import record_token_stats

    with tqdm(total=len(env_ids), desc=f"long states ({split})", unit="env") as bar:
        pool = long_state_pool(env_ids, seed, workers=workers, progress=bar, scales=_int_list(scales, "--scales"),
                               history=history, steps=steps, min_tokens=min_tokens, max_tokens=max_tokens,
                               split=split)
    pool = [r for r in pool if r["id"] not in excluded]
    try:
        records = stratified_sample(pool, load_spec(spec), seed=seed)
    except CompositionError as exc:
        raise click.ClickException(f"{exc}; try more --steps or --scales") from None
    write_jsonl(records, out)
    stats = record_stats(records, domains)
    stats["tokens"] = record_token_stats(records, prompt_version="2")  # counted, Qwen BPE
    out.with_suffix(".stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    out.with_suffix(".stats.md").write_text(stats_markdown(out.name, stats))
    click.echo(f"{len(records)} long-state records from {stats['environments']} environments (pool {len(pool)}) -> {out}")
    click.echo("by stratum: " + ", ".join(f"{k} {v}" for k, v in stats["by_stratum"].items()))


def _given_envs(given: tuple[str, ...], split: str, domains: dict[str, str]) -> list[str]:
    """Resolve ``--env`` ids (adds their domains); foreign and plugin environments never go to a train split."""
    from envsim.envs.registry import UnknownEnvironment, get_env, registry

    builtin = {e.id for e in registry().values() if e.builtin}
    env_ids = []
    for env_id in given:
        try:
            trust_command_line_env(env_id)
            cls = get_env(env_id)
        except (UnknownEnvironment, ImportError, AttributeError, TypeError, ValueError) as exc:
            raise click.ClickException(f"--env {env_id}: {exc}") from None
        if not cls.tool_specs():
            raise click.ClickException(f"--env {env_id}: the environment has no tools")
        if split == "train" and env_id not in builtin:
            raise click.ClickException(f"--env {env_id}: foreign and plugin environments are held out from training")
        domains[env_id] = cls.env_domain()
        env_ids.append(env_id)
    return env_ids


def _bfcl_track(split: str, spec: str, seed: int, episodes: int, steps: int, out: Path) -> None:
    """Build the BFCL track into OUT (with .stats.json/.stats.md and a .pool.json summary)."""
    from envsim.construction.bfcl import BFCL_SPEC, build_track, pool_summary
    from envsim.construction.composition import Spec, load_spec
    from envsim.construction.pipeline import write_jsonl
    from envsim.construction.stats import record_stats, stats_markdown

    if split == "train":
        raise click.ClickException("BFCL classes are held out from training data: use --split test or dev")
    try:
        chosen = Spec.from_json(BFCL_SPEC) if spec == "default" else load_spec(spec)
        records, pool = build_track(seed=seed, episodes=episodes, steps=steps, spec=chosen, split=split)
    except ImportError as exc:
        raise click.ClickException(str(exc)) from None
    write_jsonl(records, out)
    stats = record_stats(records, {r["env"]: "bfcl" for r in records})
    stats["pool"] = pool_summary(pool)
    out.with_suffix(".stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    out.with_suffix(".stats.md").write_text(stats_markdown(out.name, stats))
    click.echo(f"{len(records)} BFCL records from {stats['environments']} classes (pool {len(pool)}) -> {out}")
    click.echo("by stratum: " + ", ".join(f"{k} {v}" for k, v in stats["by_stratum"].items()))

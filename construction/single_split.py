"""One-step samples (benchmark v1, v2 core and extreme, training pools): a labelled pool from a rollout
policy (explorer, replay of a log, or an LLM agent), then a stratified sample or a spread pool."""

from __future__ import annotations

from typing import Any, Sequence

from envsim.construction.construct_options import ConstructOptions, ConstructSummary
from envsim.construction.construct_outputs import stratum_line, write_with_stats
from envsim.construction.errors import ConstructInterrupted, ConstructStopped, InvalidConstructOption


def replayed_pool(options: ConstructOptions) -> list[dict[str, Any]]:
    """Records of every call of the replayed ``options.replay_log`` (a call repeating an earlier one on the same
    state, same id, is recorded once); a training split refuses held-out and foreign environments other than the
    user's own ``module:Class`` (whose tasks are the split: ``construction.own_env``)."""
    from envsim.construction.labelling import deduplicate
    from envsim.construction.own_env import is_own_target
    from envsim.construction.replay_journal import journal_path
    from envsim.construction.replay_log import ReplayError
    from envsim.construction.replay_workers import ReplayStopped, replayed_records
    from envsim.construction.splits import LeakError, assert_no_test_envs
    from envsim.progress import progress as tqdm

    if options.replay_log is None:
        raise InvalidConstructOption("", "--policy replay needs --replay-log")
    try:
        with tqdm(desc=f"replay ({options.split})", unit="call") as bar:
            # one reader and one labelling path; --workers N runs whole tasks in N processes (the same records)
            labelled = list(replayed_records(options.replay_log, options.split, options.workers, bar,
                                             journal=journal_path(options.out), echo=options.echo_err))
        records = list(deduplicate(labelled))
        if options.split == "train":
            assert_no_test_envs((r["env"] for r in records), options.version)
            foreign = sorted({r["env"] for r in records if r.get("origin") and not is_own_target(r["env"])})
            if foreign:  # wrapped foreign classes (BFCL, module:Class) are held out from training
                raise LeakError(f"foreign environments are held out from training: {', '.join(foreign[:5])}")
    except ReplayStopped as exc:
        raise (ConstructInterrupted if exc.interrupted else ConstructStopped)(str(exc)) from None
    except (ReplayError, LeakError) as exc:
        raise ConstructStopped(str(exc)) from None
    if len(records) < len(labelled):
        options.echo_err(f"replay: {len(labelled)} logged calls, {len(records)} records "
                         f"({len(labelled) - len(records)} repeat an earlier call on the same state: same id)")
    return records


def agent_pool(options: ConstructOptions, env_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Records of LLM-agent episodes in the real environments; a failing episode is a warning, not a stop."""
    import asyncio

    from envsim.construction.labelling import deduplicate, to_record
    from envsim.construction.policies import llm_rollout
    from envsim.envs.registry import get_env
    from envsim.progress import progress as tqdm

    if not options.agent_model:
        raise InvalidConstructOption("", "--policy llm needs --agent-model (and usually --agent-base-url)")
    records = []
    for env_id in tqdm(env_ids, desc=f"agent rollouts ({options.split})", unit="env"):
        cls = get_env(env_id)
        for episode in range(options.episodes):
            try:
                transitions = asyncio.run(llm_rollout(cls, cls.sample_state(options.seed + episode),
                                                      options.agent_model, options.agent_base_url, options.steps))
            except Exception as exc:  # noqa: BLE001 - one failing endpoint call must not lose the pool
                options.echo_err(f"warning: {env_id} episode {episode}: {type(exc).__name__}: {exc}")
                continue
            records += [to_record(t, cls, options.split) for t in transitions]
    return list(deduplicate(records))


def explorer_pool(options: ConstructOptions, env_ids: Sequence[str],
                  counts: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Records of seeded explorer rollouts (``options.episodes`` x ``options.steps`` per environment); a user's
    ``module:Class`` is split by episodes (``construction.own_env``), after the registry's environments. ``counts``
    (if given) is told how many calls were labelled and why some made no record (``own_env_records``)."""
    from envsim.construction.own_env import is_own_target, own_env_records
    from envsim.construction.pipeline import build_pool
    from envsim.progress import progress as tqdm

    registry_ids = [e for e in env_ids if not is_own_target(e)]
    with tqdm(total=len(env_ids), desc=f"rollouts ({options.split})", unit="env") as bar:
        records = build_pool(registry_ids, options.seed, options.episodes, options.steps, options.split,
                             workers=options.workers, progress=bar) if registry_ids else []
        for env_id in env_ids:
            if is_own_target(env_id):
                records += own_env_records(env_id, options.seed, options.episodes, options.steps, options.split,
                                           workers=options.workers, counts=counts)
                bar.update(1)
    return records


def pool_shortfall_line(options: ConstructOptions, written: int, counts: dict[str, int]) -> str:
    """Why ``--pool N`` wrote fewer records: how many calls were tried and what refused the others."""
    reasons = [f"{counts[key]} {text}" for key, text in (
        ("repeated_calls", "repeated a call on the same state (one record each)"),
        ("on_initial_states_of_the_other_split", "were calls on an initial state that the split policy gives to the "
                                                 "other split"),
        ("excluded_by_exclude", "were in an --exclude file")) if counts.get(key)]
    tried = (f"{counts['labelled_calls']} calls labelled (--episodes {options.episodes} x --steps {options.steps}); "
             if counts.get("labelled_calls") else "")
    return (f"warning: wrote {written} of the {options.pool_size} records --pool asks for: {tried}"
            + ("; ".join(reasons) if reasons else "the rollouts gave no more distinct calls")
            + "; try more --episodes/--steps")


def build_single_split(options: ConstructOptions, env_ids: Sequence[str], excluded: set[str],
                       domains: dict[str, str]) -> ConstructSummary:
    """Label a pool with ``options.policy`` and write a stratified sample of it (or, with ``pool_size``, up to
    that many records spread over environments and domains) with its statistics."""
    from envsim.construction.composition import load_spec, sample_with_shortfalls
    from envsim.construction.pipeline import spread_sample
    from envsim.construction.stats import (record_stats, record_token_stats, stats_markdown, tool_lines,
                                           tool_outcomes)
    from envsim.construction.stored_states import has_large_state
    from envsim.evaluation.prompting.prompts import VIEW_PROMPT_VERSION, default_prompt_version

    pool_counts: dict[str, Any] = {}
    if options.policy == "replay":
        pool = replayed_pool(options)
        if options.split != "train":  # as for the explorer's pool (own_env_records): scored against one answer
            from envsim.construction.determinism import without_nondeterministic

            pool, dropped = without_nondeterministic(pool)
            if dropped:
                pool_counts["nondeterministic"] = dropped
    elif options.policy == "llm":
        pool = agent_pool(options, env_ids)
    else:
        pool = explorer_pool(options, env_ids, counts=pool_counts)
    before_exclude = len(pool)
    pool = [r for r in pool if r["id"] not in excluded]
    pool_counts["excluded_by_exclude"] = before_exclude - len(pool)
    short: list[Any] = []
    if options.pool_size is not None:
        records = spread_sample(pool, options.pool_size, seed=options.seed, domains=domains)
    elif options.policy == "replay" and options.spec == "default":
        records = pool  # a replayed log is labelled whole: every logged call is a record
    else:
        try:
            spec = load_spec(options.spec)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InvalidConstructOption("--spec", f"cannot read {options.spec}: {exc}") from None
        records, short = sample_with_shortfalls(pool, spec, seed=options.seed)
    stats: dict[str, Any] = record_stats(records, domains)
    stats["tool_outcomes"] = tool_outcomes(pool)
    if pool_counts.get("nondeterministic"):  # left out of a test split: named first (construction.determinism)
        from envsim.construction.determinism import left_out_line

        stats["nondeterministic_tools"] = pool_counts["nondeterministic"]
        options.echo_err(left_out_line(pool_counts["nondeterministic"]))
        for tools in stats["tool_outcomes"].values():  # named above, not as 'never called'
            for tool in pool_counts["nondeterministic"]:
                tools.pop(tool, None)
    if has_large_state(records):  # a whole-state prompt of a production database fits no model: views
        stats["tokens"] = record_token_stats(records, prompt_mode="mdp-view", prompt_version=VIEW_PROMPT_VERSION)
    else:
        stats["tokens"] = record_token_stats(records, prompt_version=default_prompt_version(options.version))
    out = options.out
    lines = [f"{len(records)} records from {stats['environments']} environments in {stats['domains']} domains "
             f"(pool {len(pool)}) -> {out}", stratum_line(stats)]
    for line in tool_lines(stats["tool_outcomes"]):
        options.echo_err(line)
    if options.pool_size is not None and len(records) < options.pool_size:
        stats["pool_shortfall"] = {"asked": options.pool_size, "written": len(records), **pool_counts}
        options.echo_err(pool_shortfall_line(options, len(records), pool_counts))
    if short:  # labelled work is written whatever the spec asked; what is missing is said
        hint = "log more calls" if options.policy == "replay" else "try more --episodes/--steps"
        if not records:
            raise ConstructStopped(f"nothing to write: {'; '.join(s.line() for s in short)}; {hint}")
        stats["shortfall"] = [s.to_json() for s in short]
        cap = f" (at most {spec.per_env_cap} per environment)" if spec.per_env_cap is not None else ""
        options.echo_err(f"warning: wrote {len(records)} of the {spec.total} records the spec asks for{cap}; short: "
                         + ", ".join(f"{s.cell} {s.got} of {s.needed}" for s in short) + f"; {hint}")
    summary = write_with_stats(records, out, stats, stats_markdown(f"{out.name}", stats), kind="records",
                               pool=len(pool), lines=lines, fmt=options.fmt)
    if options.policy == "replay":  # the output holds the labelled work now: its journal goes
        from envsim.construction.replay_journal import remove_journal

        remove_journal(out)
    return summary

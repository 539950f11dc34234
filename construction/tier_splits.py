"""Benchmark v2's long-state and chained tiers, built into a file with their statistics."""

from __future__ import annotations

from typing import Any, Sequence

from envsim.construction.construct_options import ConstructOptions, ConstructSummary
from envsim.construction.construct_outputs import stratum_line, write_with_stats
from envsim.construction.errors import ConstructStopped, InvalidConstructOption


def int_list(text: str, option: str) -> list[int]:
    """``"4,8,16"`` or ``"2-8"`` as a list of integers; ``InvalidConstructOption`` naming ``option`` otherwise."""
    try:
        if "-" in text:
            low, high = (int(x) for x in text.split("-", 1))
            return list(range(low, high + 1))
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InvalidConstructOption(option, f"{text!r} is not a list like '4,8,16' or a range like '2-8'") from None


def build_chained_tier(options: ConstructOptions, env_ids: Sequence[str], excluded: set[str]) -> ConstructSummary:
    """Chained episodes (several calls each) of ``env_ids``, minus ``excluded`` ids, into ``options.out``."""
    from envsim.construction.chained import build_chained, chained_stats, chained_stats_markdown
    from envsim.progress import progress as tqdm

    lengths = int_list(options.lengths, "--lengths")
    with tqdm(total=len(env_ids), desc=f"chained episodes ({options.split})", unit="env") as bar:
        try:
            episodes = build_chained(list(env_ids), options.seed, candidates_per_env=options.episodes, lengths=lengths,
                                     per_length=options.per_length, per_env_cap=options.per_env_cap,
                                     split=options.split, progress=bar)
        except ValueError as exc:
            raise ConstructStopped(f"{exc}; try more --episodes") from None
    episodes = [e for e in episodes if e["id"] not in excluded]
    stats = chained_stats(episodes)
    out = options.out
    line = f"{len(episodes)} episodes ({stats['steps']} calls) from {stats['environments']} environments -> {out}"
    return write_with_stats(episodes, out, stats, chained_stats_markdown(out.name, stats), kind="episodes",
                            pool=None, lines=(line,))


def build_long_state_tier(options: ConstructOptions, env_ids: Sequence[str], excluded: set[str],
                          domains: dict[str, str]) -> ConstructSummary:
    """One-step samples on 8k-32k-token states of ``env_ids``, stratified by ``options.spec``."""
    from envsim.construction.composition import CompositionError, load_spec, stratified_sample
    from envsim.construction.long_state import long_state_pool
    from envsim.construction.stats import record_stats, record_token_stats, stats_markdown
    from envsim.progress import progress as tqdm

    scales = int_list(options.scales, "--scales")
    with tqdm(total=len(env_ids), desc=f"long states ({options.split})", unit="env") as bar:
        pool = long_state_pool(list(env_ids), options.seed, workers=options.workers, progress=bar, scales=scales,
                               history=options.history, steps=options.steps, min_tokens=options.min_tokens,
                               max_tokens=options.max_tokens, split=options.split)
    pool = [r for r in pool if r["id"] not in excluded]
    try:
        records = stratified_sample(pool, load_spec(options.spec), seed=options.seed)
    except CompositionError as exc:
        raise ConstructStopped(f"{exc}; try more --steps or --scales") from None
    stats: dict[str, Any] = record_stats(records, domains)
    stats["tokens"] = record_token_stats(records, prompt_version="2")  # counted, Qwen BPE
    out = options.out
    lines = (f"{len(records)} long-state records from {stats['environments']} environments (pool {len(pool)}) "
             f"-> {out}", stratum_line(stats))
    return write_with_stats(records, out, stats, stats_markdown(out.name, stats), kind="records", pool=len(pool),
                            lines=lines)

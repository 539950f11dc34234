"""Build labelled pools from environments and stratified benchmark splits from pools."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from envsim.construction.composition import Spec, stratified_sample
from envsim.construction.labelling import deduplicate, to_record
from envsim.construction.rollout import seeded_rollouts
from envsim.envs.registry import get_env
from envsim.jsonsafe import dumps_line, write_text_atomic


def env_records(env_id: str, seed: int, episodes: int, steps: int, split: str) -> list[dict[str, Any]]:
    """Labelled records of ``episodes`` seeded explorer rollouts of one environment."""
    from envsim.construction.cow_labelling import RecordMaker, labels_traced, traced_rollouts

    cls = get_env(env_id)
    env_seed = seed * 1_000_003 + sum(env_id.encode())  # different environments, different streams
    if labels_traced(cls):  # the user's own environment: copy-on-write labelling (construction.cow_labelling)
        maker = RecordMaker(cls, split)
        return [maker.record(call) for call in traced_rollouts(cls, env_seed, episodes, steps)]
    return [to_record(t, cls, split) for t in seeded_rollouts(cls, env_seed, episodes, steps)]


def _env_records_args(args: tuple[str, int, int, int, str]) -> list[dict[str, Any]]:
    return env_records(*args)


def build_pool(env_ids: Sequence[str], seed: int, episodes: int, steps: int, split: str, *, workers: int = 1,
               progress: Any = None) -> list[dict[str, Any]]:
    """Roll out every environment and return deduplicated records (order: by environment, then step)."""
    jobs = [(env_id, seed, episodes, steps, split) for env_id in env_ids]
    return pooled_records(_env_records_args, jobs, workers=workers, progress=progress, chunksize=4)


def pooled_records(job_fn: Callable[[Any], list[dict[str, Any]]], jobs: Sequence[Any], *, workers: int = 1,
                   progress: Any = None, chunksize: int = 4) -> list[dict[str, Any]]:
    """Run ``job_fn`` on every job (in worker processes when ``workers > 1``), in job order, and return
    the deduplicated records; ``progress.update(1)`` after each job. The result does not depend on ``workers``."""
    chunks: list[list[dict[str, Any]]] = []
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for chunk in pool.map(job_fn, jobs, chunksize=chunksize):
                chunks.append(chunk)
                if progress is not None:
                    progress.update(1)
    else:
        for job in jobs:
            chunks.append(job_fn(job))
            if progress is not None:
                progress.update(1)
    return list(deduplicate(r for chunk in chunks for r in chunk))


def build_split(env_ids: Sequence[str], spec: Spec, *, seed: int, episodes: int, steps: int, split: str,
                exclude_ids: Iterable[str] = (), workers: int = 1, progress: Any = None) -> list[dict[str, Any]]:
    """Roll out ``env_ids``, drop ``exclude_ids`` and sample the spec's composition."""
    excluded = set(exclude_ids)
    pool = [r for r in build_pool(env_ids, seed, episodes, steps, split, workers=workers, progress=progress)
            if r["id"] not in excluded]
    return stratified_sample(pool, spec, seed=seed)


def spread_sample(pool: Sequence[dict[str, Any]], size: int, *, seed: int,
                  domains: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Up to ``size`` records of ``pool`` spread evenly over domains, then over the environments of each
    domain (seeded): rounds take one record from each domain in turn, each domain cycling through its
    environments, until ``size`` records are taken or the pool is used up. The result keeps pool order."""
    import random

    rng = random.Random(seed)
    domains = domains or {}
    by_domain: dict[str, dict[str, list[int]]] = {}
    for index, record in enumerate(pool):
        by_domain.setdefault(domains.get(record["env"], "unknown"), {}).setdefault(record["env"], []).append(index)
    queues: list[list[list[int]]] = []          # per domain: its environments' shuffled record indices
    for name in sorted(by_domain):
        envs = [by_domain[name][env] for env in sorted(by_domain[name])]
        for indices in envs:
            rng.shuffle(indices)
        rng.shuffle(envs)
        queues.append(envs)
    rng.shuffle(queues)
    chosen: list[int] = []
    while len(chosen) < size and queues:
        for envs in list(queues):
            if len(chosen) >= size:
                break
            indices = envs.pop(0)
            chosen.append(indices.pop())
            if indices:
                envs.append(indices)             # this environment again after the domain's others
            if not envs:
                queues.remove(envs)
    return [pool[i] for i in sorted(chosen)]


def write_jsonl(records: Iterable[dict[str, Any]], path: Path) -> int:
    """Write records as canonical JSON lines (sorted keys, so rebuilds are byte-identical); returns the count.

    The file is written beside ``path`` and renamed over it (an error part-way keeps the old file); a line
    holding a lone surrogate is written with ASCII escapes (``jsonsafe.dumps_line``), so it stays UTF-8."""
    return write_text_atomic(path, (dumps_line(r, sort_keys=True, separators=(",", ":")) for r in records))

"""``envsim.construct``: build a benchmark split or a training pool from Python, with the same files as
``envsim construct``.

    import envsim
    summary = envsim.construct("test", out="my_test.jsonl", episodes=2, steps=10)
    print(summary.written, summary.by_stratum, summary.stats_md)

It raises ``ConstructStopped`` (``InvalidConstructOption`` for an unusable option) when it stops before
writing, and returns a ``ConstructSummary`` otherwise. Tracks other than the registry's environments
(``track="bfcl"``, ...) are entries of ``construction.tracks.TRACKS``."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Sequence

from envsim.construction.construct_options import ConstructOptions, ConstructSummary, Printer, _silent
from envsim.construction.errors import ConstructStopped, InvalidConstructOption

TIERS = ("single", "long_state", "chained")
POLICIES = ("explorer", "replay", "llm")
FORMATS = ("envsim", "envsimbench")


def construct(split: str, out: str | Path, *, version: str = "v1", spec: str = "default",
              pool_size: int | None = None, seed: int = 0, episodes: int = 8, steps: int = 40,
              exclude: Sequence[str | Path] = (), tier: str = "single", scales: str = "4,8,16", history: int = 30,
              min_tokens: int = 8192, max_tokens: int = 32768, lengths: str = "2-8", per_length: int = 16,
              per_env_cap: int | None = None, envs: Sequence[str] = (), track: str | None = None, workers: int = 1,
              policy: str = "explorer", replay_log: str | Path | None = None, agent_model: str | None = None,
              agent_base_url: str | None = None, fmt: str = "envsim", env_modules: Sequence[str] = (),
              echo_err: Printer | None = None) -> ConstructSummary:
    """Build ``split`` ("test", "dev" or "train") into ``out`` with OUT.stats.json / OUT.stats.md and return
    what was written; keywords mirror ``envsim construct``'s options (``envs`` = ``--env``, ``exclude`` =
    ``--exclude``, ``pool_size`` = ``--pool``, ``fmt`` = ``--format``). Progress follows ``ENVSIM_PROGRESS``;
    ``echo_err`` receives warnings (default: silent)."""
    from envsim.construction.tracks import track_builder

    for name, value, known in (("--split", split, ("test", "dev", "train")), ("--tier", tier, TIERS),
                               ("--policy", policy, POLICIES), ("--format", fmt, FORMATS)):
        if value not in known:
            raise InvalidConstructOption(name, f"{value!r} is not one of {', '.join(known)}")
    _import_env_modules(env_modules)
    options = ConstructOptions(
        split=split, out=Path(out), version=version, spec=spec, pool_size=pool_size, seed=seed, episodes=episodes,
        steps=steps, exclude=tuple(Path(p) for p in exclude), tier=tier, scales=scales, history=history,
        min_tokens=min_tokens, max_tokens=max_tokens, lengths=lengths, per_length=per_length,
        per_env_cap=per_env_cap, envs=tuple(envs), track=track, workers=workers, policy=policy,
        replay_log=Path(replay_log) if replay_log else None, agent_model=agent_model,
        agent_base_url=agent_base_url, fmt=fmt, echo_err=echo_err or _silent)
    if track is not None:
        return track_builder(track)(options)
    return build_from_registry(options)


def build_from_registry(options: ConstructOptions) -> ConstructSummary:
    """Roll out the split's environments (or ``options.envs``) and build ``options.tier`` into ``options.out``."""
    from envsim.construction.splits import read_test_envs, training_envs
    from envsim.envs.registry import list_envs

    domains = {e.id: e.domain for e in list_envs() if e.builtin}
    held_out = read_test_envs(options.version)
    if not held_out:
        raise ConstructStopped(f"benchmark {options.version} has no held-out environment list")
    env_ids = training_envs(domains, options.version) if options.split == "train" else held_out
    if options.envs:
        env_ids = given_envs(options.envs, options.split, domains)
    missing = [e for e in env_ids if e not in domains]
    if missing:
        raise ConstructStopped(f"unknown environments in the split: {', '.join(missing[:5])}")
    excluded = excluded_ids(options.exclude)
    if options.tier == "chained":
        from envsim.construction.tier_splits import build_chained_tier

        return build_chained_tier(options, env_ids, excluded)
    if options.tier == "long_state":
        from envsim.construction.tier_splits import build_long_state_tier

        return build_long_state_tier(options, env_ids, excluded, domains)
    from envsim.construction.single_split import build_single_split

    return build_single_split(options, env_ids, excluded, domains)


def excluded_ids(paths: Sequence[Path]) -> set[str]:
    """Sample ids of the JSONL files in ``paths`` (``--exclude``: e.g. test when building dev)."""
    excluded: set[str] = set()
    for path in paths:
        excluded |= {json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()}
    return excluded


def given_envs(given: Sequence[str], split: str, domains: dict[str, str]) -> list[str]:
    """Resolve ``--env`` ids (adds their domains to ``domains``); a ``module:Class`` the caller names is trusted
    (their own choice) and may go to a train split (``construction.own_env``: split by explorer episodes);
    BFCL classes, tracks and plugin environments never do."""
    from envsim.construction.own_env import is_own_target

    from envsim.envs.registry import UnknownEnvironment, get_env, registry
    from envsim.envs.sandbox import trust_target

    builtin = {e.id for e in registry().values() if e.builtin}
    env_ids = []
    for env_id in given:
        try:
            trust_target(env_id)
            cls = get_env(env_id)
        except (UnknownEnvironment, ImportError, AttributeError, TypeError, ValueError) as exc:
            raise ConstructStopped(f"--env {env_id}: {exc}") from None
        if not cls.tool_specs():
            raise ConstructStopped(f"--env {env_id}: the environment has no tools")
        if split == "train" and env_id not in builtin and not is_own_target(env_id):
            raise ConstructStopped(f"--env {env_id}: foreign and plugin environments are held out from training "
                                   "(a class of your own goes to a train split when named as --env module:Class)")
        domains[env_id] = cls.env_domain()
        env_ids.append(env_id)
    return env_ids


def _import_env_modules(modules: Sequence[str]) -> None:
    """Trust and import the caller's environment modules (``--env-module``)."""
    from envsim.envs.sandbox import trust_module

    for name in modules:
        try:
            trust_module(name)  # the caller's own code: records may name its environments
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any failure of the caller's module stops construction
            raise InvalidConstructOption("--env-module", f"cannot import {name!r}: {type(exc).__name__}: {exc}") \
                from None

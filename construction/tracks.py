"""Construction tracks: sources of benchmark data other than rolling out the registry's environments.

A track is one entry of ``TRACKS``: its name (``envsim construct --track NAME``) and the
``"module:function"`` that builds it. The function takes ``ConstructOptions`` and returns a
``ConstructSummary`` (``construction.construct_outputs.write_with_stats`` writes the usual files); it is
imported on use, so a track's heavy dependencies (``bfcl-eval``, τ-bench) load only when it is built.
Add a track with ``register_track`` or one more line here."""

from __future__ import annotations

import importlib
from typing import Callable

from envsim.construction.construct_options import ConstructOptions, ConstructSummary
from envsim.construction.errors import ConstructStopped

TrackBuilder = Callable[[ConstructOptions], ConstructSummary]

TRACKS: dict[str, str] = {
    "bfcl": "envsim.construction.tracks:build_bfcl",
    "tau": "envsim.construction.tracks:build_tau",
}


def register_track(name: str, target: str) -> None:
    """Make ``--track NAME`` build with ``target`` (``"module:function"``, imported on use)."""
    TRACKS[name] = target


def track_builder(name: str) -> TrackBuilder:
    """The builder function of track ``name``; ``ConstructStopped`` for an unknown name."""
    if name not in TRACKS:
        raise ConstructStopped(f"unknown track {name!r} (known: {', '.join(sorted(TRACKS))})")
    module, function = TRACKS[name].split(":", 1)
    return getattr(importlib.import_module(module), function)


def build_bfcl(options: ConstructOptions) -> ConstructSummary:
    """The BFCL track (needs the [bfcl] extra): ground-truth calls of BFCL's multi-turn trajectories plus
    explorer calls, sampled per stratum (``BFCL_SPEC`` unless ``spec`` names another); writes OUT with
    .stats.json/.stats.md, whose ``pool`` entry summarises the candidates."""
    from envsim.construction.bfcl import BFCL_SPEC, build_track, pool_summary
    from envsim.construction.composition import Spec, load_spec
    from envsim.construction.construct_outputs import stratum_line, write_with_stats
    from envsim.construction.stats import record_stats, stats_markdown

    if options.split == "train":
        raise ConstructStopped("BFCL classes are held out from training data: use --split test or dev")
    try:
        chosen = Spec.from_json(BFCL_SPEC) if options.spec == "default" else load_spec(options.spec)
        records, pool = build_track(seed=options.seed, episodes=options.episodes, steps=options.steps, spec=chosen,
                                    split=options.split)
    except ImportError as exc:
        raise ConstructStopped(str(exc)) from None
    stats = record_stats(records, {r["env"]: "bfcl" for r in records})
    stats["pool"] = pool_summary(pool)
    out = options.out
    lines = (f"{len(records)} BFCL records from {stats['environments']} classes (pool {len(pool)}) -> {out}",
             stratum_line(stats))
    return write_with_stats(records, out, stats, stats_markdown(out.name, stats), kind="bfcl", pool=len(pool),
                            lines=lines)


def build_tau(options: ConstructOptions) -> ConstructSummary:
    """The τ-bench track (``construction.tau_track.write_track``): OUT (samples), OUT_chained.jsonl (episodes),
    tau_states/ (the databases, stored once) and OUT.stats.json."""
    from envsim.construction.tau_track import write_track

    out = options.out
    try:
        stats = write_track(out, seed=options.seed)
    except ImportError as exc:  # τ-bench neither installed nor at $ENVSIM_TAU_BENCH (TauBenchNotFound)
        raise ConstructStopped(str(exc)) from None
    return ConstructSummary(kind="tau", out=out, written=stats["samples"], pool=None, stats=stats,
                            stats_json=out.with_name(f"{out.stem}.stats.json"), stats_md=None,
                            lines=(f"tau track: {stats['samples']} samples, {stats['episodes']} episodes -> {out}",),
                            extra_paths=(out.with_name(f"{out.stem}_chained.jsonl"), out.parent / "tau_states"))

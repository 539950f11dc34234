"""How long a CPU SFT run will take on this machine, measured on a few of its own samples before it starts.

``envsim train sft --device cpu --time-check N`` trains the data's first ``N`` samples for one epoch with the run's
own settings (model, trainable layers, batch, threads, precision) in a scratch folder that is removed afterwards,
then projects the whole run from what it measured, per token of the samples:

* the frozen layers' cache, once for every sample;
* the trainable layers' forward and backward, once per sample and epoch;
* the fixed cost (loading the model, tokenising, writing the last checkpoint), once.

It is a projection from a measurement, not a measurement of the run: attention grows with the square of a
sample's length, which the per-token rate does not model, and the ``--save-at`` checkpoints are not counted.
``RUN/time_check.json`` holds both the measured figures and the projection, each under its own name.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from envsim.safe_files import write_json
from envsim.training.sft_cpu import CPUSFTSettings, dataset_file, read_samples, tokenize_sample, train_sft_cpu

FILE_NAME = "time_check.json"


def project(measured: dict[str, float], run_tokens: int, epochs: float) -> dict[str, float]:
    """Projected seconds of a run over ``run_tokens`` tokens of samples for ``epochs`` epochs, from ``measured``
    (``tokens``, ``cache_s``, ``train_s`` of one epoch over ``tokens``, ``fixed_s``)."""
    tokens = max(measured["tokens"], 1)
    cache = measured["cache_s"] / tokens * run_tokens
    train = measured["train_s"] / tokens * run_tokens * epochs
    return {"cache_s": round(cache, 1), "train_s": round(train, 1), "fixed_s": round(measured["fixed_s"], 1),
            "total_s": round(cache + train + measured["fixed_s"], 1)}


def time_check(settings: CPUSFTSettings, samples: int = 8,
               echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Measure ``samples`` samples of the run ``settings`` describes (one epoch, no checkpoint kept) and project
    the whole run; writes ``settings.output_dir / time_check.json`` and returns its content."""
    from envsim.training.rl import _tokenizer

    if samples < 1:
        raise ValueError("the time check needs at least one sample")
    settings.check()
    raw = read_samples(dataset_file(settings.data_dir, settings.dataset))
    if not raw:
        raise ValueError(f"no samples in {settings.data_dir}")
    tokenizer = _tokenizer(settings.model)
    lengths = [tokenize_sample(tokenizer, sample).length for sample in raw]
    settings.output_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="time-check-", dir=settings.output_dir))
    try:
        started = time.monotonic()
        summary = train_sft_cpu(replace(settings, output_dir=scratch, epochs=1.0, max_samples=samples, save_at=()),
                                echo)
        wall = time.monotonic() - started
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    measured = {"samples": summary["samples"], "tokens": sum(lengths[:summary["samples"]]),
                "cache_s": summary["cache_seconds"], "train_s": summary["train_seconds"],
                "fixed_s": round(max(wall - summary["cache_seconds"] - summary["train_seconds"], 0.0), 3),
                "wall_s": round(wall, 3), "precision": summary["precision"], "threads": summary["threads"]}
    run = {"samples": len(raw), "tokens": sum(lengths), "epochs": settings.epochs,
           "samples_seen": max(1, round(len(raw) * settings.epochs))}
    result = {"measured": measured, "run": run, "projected": project(measured, run["tokens"], settings.epochs),
              "kind": f"a projection from {measured['samples']} measured samples at their seconds per token; "
                      "attention's quadratic share and --save-at checkpoints are not modelled",
              "settings": settings.to_json()}
    write_json(settings.output_dir / FILE_NAME, result)
    return result


def describe(result: dict[str, Any]) -> str:
    """One line: what was measured and the projected run."""
    measured, run, projected = result["measured"], result["run"], result["projected"]
    return (f"time check: {measured['samples']} samples ({measured['tokens']:,} tokens) took {measured['wall_s']:.0f} s "
            f"({measured['precision']}, {measured['threads']} thread(s)); projected for {run['samples']} samples x "
            f"{run['epochs']:g} epochs: {minutes(projected['total_s'])} (cache {minutes(projected['cache_s'])}, "
            f"training {minutes(projected['train_s'])}), a projection, not a measurement")


def minutes(seconds: float) -> str:
    """``seconds`` as minutes, or hours and minutes from an hour up."""
    whole = round(seconds / 60)
    return f"{whole // 60} h {whole % 60:02d} min" if whole >= 60 else f"{whole} min"

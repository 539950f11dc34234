"""An honest learning check on CPU: does SFT through our real path teach a tiny model anything?

A small fixed dataset of short-answer failure and no-change samples from training-split
environments; held-out samples come from other training-split environments the model never saw.
The untrained tiny model is scored in-process, then trained with ``llamafactory-cli`` from the
config ``envsim train sft`` writes, then scored again on the same held-out samples. Used by the
``train``-marked test (which asserts the rise) and by ``benchmarks/learning_check.py`` (which prints it).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

from envsim.construction.pipeline import build_pool
from envsim.construction.splits import training_envs
from envsim.envs.registry import list_envs
from envsim.evaluation.prompting.prompts import PROMPT_VERSION, build_messages, target_answer
from envsim.safe_files import open_fresh, write_json
from envsim.training.data import write_sft_files
from envsim.training.local_eval import evaluate_local
from envsim.training.sft import SFTSettings, launch_command, write_sft_files as write_sft_config
from envsim.training.tiny_model import build_tiny_model, texts_from_sft


@dataclass
class LearningCheckSettings:
    """Sizes and hyper-parameters of the check (defaults: a few minutes on 2 CPU cores)."""

    train_samples: int = 400
    heldout_per_stratum: int = 16
    heldout_envs: int = 8
    max_answer_chars: int = 140
    max_prompt_chars: int = 6000
    steps: int = 300
    batch: int = 4
    learning_rate: float = 5e-3
    hidden_size: int = 128
    layers: int = 2
    max_new_tokens: int = 96
    seed: int = 0
    rollout_episodes: int = 5
    rollout_steps: int = 30


def short_answer_samples(records: Sequence[dict[str, Any]], settings: LearningCheckSettings) -> list[dict[str, Any]]:
    """Failure and no-change records whose answer and prompt are short enough for a CPU-sized run."""
    return [r for r in records if r["stratum"] in ("failure", "no_change")
            and len(target_answer(r)) <= settings.max_answer_chars
            and sum(len(m["content"]) for m in build_messages(r)) <= settings.max_prompt_chars]


def split_fixed_set(records: Sequence[dict[str, Any]], settings: LearningCheckSettings
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(train, held-out): held-out samples come from environments absent from the training samples."""
    envs = sorted({r["env"] for r in records})
    random.Random(settings.seed).shuffle(envs)
    heldout_envs = set(envs[:settings.heldout_envs])
    train = [r for r in records if r["env"] not in heldout_envs]
    random.Random(settings.seed).shuffle(train)
    heldout = [r for r in records if r["env"] in heldout_envs]
    picked = [r for s in ("failure", "no_change") for r in [h for h in heldout if h["stratum"] == s]
              [:settings.heldout_per_stratum]]
    return train[:settings.train_samples], picked


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "answers"}


def run_learning_check(work_dir: Path, settings: LearningCheckSettings | None = None) -> dict[str, Any]:
    """Build the fixed set, score the untrained tiny model, run real SFT steps, score again; returns figures."""
    settings = settings or LearningCheckSettings()
    envs = training_envs([e.id for e in list_envs() if e.builtin])
    pool = build_pool(envs, settings.seed, settings.rollout_episodes, settings.rollout_steps, "train", workers=2)
    train, heldout = split_fixed_set(short_answer_samples(pool, settings), settings)
    if not train or not heldout:
        raise RuntimeError(f"too few short samples (train {len(train)}, held-out {len(heldout)}); widen the limits")
    data_dir = work_dir / "data"
    name = write_sft_files(train, data_dir, "learning_check", version=PROMPT_VERSION)  # the same prompts below
    texts = texts_from_sft(data_dir / f"{name}.jsonl")
    build_tiny_model(work_dir / "untrained", texts, hidden_size=settings.hidden_size, layers=settings.layers,
                     seed=settings.seed)
    before = evaluate_local(work_dir / "untrained", heldout, prompt_version=PROMPT_VERSION,
                            max_new_tokens=settings.max_new_tokens)
    sft = SFTSettings(model=str(work_dir / "untrained"), data_dir=data_dir.resolve(), dataset=name,
                      output_dir=(work_dir / "sft" / "checkpoints").resolve(), learning_rate=settings.learning_rate,
                      cutoff_len=4096, effective_batch=settings.batch, bf16=False, max_steps=settings.steps,
                      extra={"save_strategy": "no"})
    config_path, _ = write_sft_config(sft, work_dir / "sft")
    command, extra_env = launch_command(config_path, 1)
    started = time.monotonic()
    log = work_dir / "sft.log"
    with open_fresh(log) as handle:  # a new file: never a link planted at the name
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"   # this venv's launcher
        code = subprocess.call(command, env={**os.environ, **extra_env, "PATH": path}, stdout=handle,
                               stderr=subprocess.STDOUT)
    train_seconds = time.monotonic() - started
    if code != 0:
        raise RuntimeError(f"llamafactory-cli failed (exit {code}); see {log}")
    after = evaluate_local(sft.output_dir, heldout, prompt_version=PROMPT_VERSION, max_new_tokens=settings.max_new_tokens)
    figures = {"settings": asdict(settings), "train_samples": len(train), "heldout_samples": len(heldout),
               "heldout_envs": sorted({r["env"] for r in heldout}), "train_seconds": round(train_seconds, 1),
               "before": _summary(before), "after": _summary(after),
               "after_answers": after["answers"][:4]}
    write_json(work_dir / "learning_check.json", figures)
    return figures

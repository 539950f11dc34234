"""The fit check: can the SFT recipe make a model reproduce a few dozen of its own training samples?

A model that cannot fit its own training samples will not generalise, so this is the first thing to prove of a
recipe. ``envsim train fit-check`` takes ``samples`` samples of an ``envsim train data`` directory (a seeded
spread over the file, so every stratum is there), trains on them with the CPU SFT loop (``training.sft_cpu``,
the recipe's own settings), then decodes each of them greedily with the trained model and scores the answers
with the evaluator's parser and scorer against their records: parse-valid, FM, CM, CM per stratum and CM on the
change samples (true patch not empty). It passes when CM reaches ``min_cm``; ``fit_check.json`` holds the
figures, the training curve and every answer that missed.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from envsim.safe_files import write_json
from envsim.training.sft_cpu import CPUSFTSettings, dataset_file, read_samples, train_sft_cpu


@dataclass
class FitCheckSettings:
    """What the fit check trains on and how it judges the result."""

    model: str
    data_dir: Path
    output_dir: Path
    samples: int = 24
    epochs: float = 8.0
    learning_rate: float = 5e-4
    batch: int = 4
    trainable_layers: int = 8
    min_cm: float = 0.9
    threads: int | None = None
    seed: int = 0
    precision: str = "auto"                # training/cpu_precision.py
    prompt_grad: str = "full"              # training/sft_cpu.py: "none" trains without gradient through the prompt


def pick_samples(data_dir: Path, count: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``count`` chat samples spread over the data file (seeded) and their benchmark records, in the same order."""
    samples = read_samples(dataset_file(data_dir))
    picked = sorted(random.Random(seed).sample(range(len(samples)), min(count, len(samples))))
    chosen = [samples[i] for i in picked]
    name = dataset_file(data_dir).stem
    records = {r["id"]: r for r in read_samples(data_dir / f"{name}.records.jsonl")}
    missing = [s["id"] for s in chosen if s["id"] not in records]
    if missing:
        raise ValueError(f"{len(missing)} samples have no record in {name}.records.jsonl (e.g. {missing[0]})")
    return chosen, [records[s["id"]] for s in chosen]


def write_subset(samples: list[dict[str, Any]], records: list[dict[str, Any]], source: Path, out_dir: Path) -> Path:
    """A data directory holding just ``samples`` (chat file, ``dataset_info.json``, the source's ``stats.json``)
    and their records as a benchmark file (``records.jsonl``: ``envsim eval --benchmark`` scores the fitted
    checkpoint on them through a server)."""
    from envsim.construction.pipeline import write_jsonl
    from envsim.training.data import dataset_info

    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(samples, out_dir / "fit.jsonl")
    write_jsonl(records, out_dir / "records.jsonl")
    write_json(out_dir / "dataset_info.json", dataset_info("fit", "fit.jsonl"))
    if (source / "stats.json").is_file():
        (out_dir / "stats.json").write_text((source / "stats.json").read_text())
    return out_dir


def run_fit_check(settings: FitCheckSettings, echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Train on the picked samples, decode and score them; writes and returns ``fit_check.json``'s figures."""
    from envsim.evaluation.scoring.parsing import parse_answer
    from envsim.evaluation.scoring.scoring import score_prediction
    from envsim.training.local_eval import generate_answers
    from envsim.tokens import count_tokens, get_tokenizer

    out = settings.output_dir
    samples, records = pick_samples(settings.data_dir, settings.samples, settings.seed)
    data = write_subset(samples, records, settings.data_dir, out / "data")
    sft = CPUSFTSettings(model=settings.model, data_dir=data, output_dir=out / "sft",
                         learning_rate=settings.learning_rate, epochs=settings.epochs, batch=settings.batch,
                         trainable_layers=settings.trainable_layers, threads=settings.threads, seed=settings.seed,
                         precision=settings.precision, prompt_grad=settings.prompt_grad)
    summary = train_sft_cpu(sft, echo)
    counter = get_tokenizer(settings.model)
    longest = max(count_tokens(s["messages"][-1]["content"], counter) for s in samples)
    started = time.monotonic()
    answers = generate_answers(out / "sft" / "checkpoints", [s["messages"][:-1] for s in samples],
                               max_new_tokens=longest + 16, batch_size=1)
    decode_seconds = time.monotonic() - started
    scores = [score_prediction(r, parse_answer(a)) for r, a in zip(records, answers)]
    n = len(scores)
    change = [s for s, r in zip(scores, records) if r["patch"]]
    by_stratum: dict[str, list[bool]] = {}
    for record, score in zip(records, scores):
        by_stratum.setdefault(record["stratum"], []).append(score.cm)
    cm = sum(s.cm for s in scores) / n
    figures = {"settings": {**asdict(settings), "data_dir": str(settings.data_dir),
                            "output_dir": str(settings.output_dir)},
               "samples": n, "parse_valid": sum(s.parsed for s in scores) / n,
               "fm": sum(s.fm for s in scores) / n, "cm": cm,
               "cm_change": sum(s.cm for s in change) / len(change) if change else None, "change_samples": len(change),
               "cm_by_stratum": {k: {"n": len(v), "cm": sum(v) / len(v)} for k, v in sorted(by_stratum.items())},
               "passed": cm >= settings.min_cm, "train": summary, "decode_seconds": round(decode_seconds, 1),
               "misses": [{"id": r["id"], "stratum": r["stratum"], "reason": s.reason, "answer": a,
                           "expected": sample["messages"][-1]["content"]}  # the target it trained on
                          for r, s, a, sample in zip(records, scores, answers, samples) if not s.cm]}
    write_json(out / "fit_check.json", figures)
    return figures

"""What bfloat16 buys CPU SFT here: one matrix product and one CPU SFT step, fp32 against bfloat16 autocast.

Prints the CPU's bfloat16 flags, the GFLOP/s of a 1,200 x 576 by 576 x 1,536 product (SmolLM2-135M's MLP shape
on a sample of 1,200 tokens) in fp32 and bfloat16, then, for a real model and SFT data, the seconds a sample
costs for caching the frozen layers' activations and for one training step (forward and backward of the last
``--layers`` layers on the answer), in each precision, and the two losses side by side.

    python benchmarks/cpu_precision.py --model runs/real-model/model --data runs/real-model/data --threads 1
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any


def matmul_rate(dtype: object, repeats: int = 50) -> float:
    """GFLOP/s of the MLP-shaped product in ``dtype``."""
    import torch

    a, b = torch.randn(1200, 576).to(dtype), torch.randn(576, 1536).to(dtype)
    for _ in range(3):
        a @ b
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * 1200 * 576 * 1536 * repeats / (time.perf_counter() - started) / 1e9


def model_and_samples(model_dir: str, data_dir: Path, layers: int, samples: int) -> tuple[Any, list[Any], list[Any]]:
    """The fp32 model in training mode with all but its last ``layers`` layers frozen, the data's first ``samples``
    samples tokenised, and their input sequences (prompt and answer but its last token): what a timed CPU SFT
    step needs (also ``benchmarks/prompt_grad_cost.py``)."""
    import torch
    from transformers import AutoModelForCausalLM

    from envsim.training.grpo_cpu import freeze_all_but_last
    from envsim.training.rl import _tokenizer
    from envsim.training.sft_cpu import dataset_file, read_samples, tokenize_sample

    tokenizer = _tokenizer(model_dir)
    batch = [tokenize_sample(tokenizer, s) for s in read_samples(dataset_file(data_dir), samples)]
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="sdpa")
    model.train()
    freeze_all_but_last(model, layers)
    return model, batch, [s.prompt_ids + s.answer_ids[:-1] for s in batch]


def sft_step_costs(model_dir: str, data_dir: Path, layers: int, samples: int) -> None:
    """Print caching and step seconds per sample and the summed loss, fp32 and bf16."""
    from envsim.training.sft_cpu import FrozenActivations, answer_loss, shared_prefix

    model, batch, sequences = model_and_samples(model_dir, data_dir, layers, samples)
    tokens = sum(len(q) for q in sequences) / len(sequences)
    for precision in ("fp32", "bf16"):
        frozen = FrozenActivations(model, layers, sequences[0][:shared_prefix(sequences)], precision)
        started = time.perf_counter()
        cache = [frozen(q) for q in sequences]
        caching = (time.perf_counter() - started) / len(batch)
        started, total = time.perf_counter(), 0.0
        for sample, cached in zip(batch, cache):
            loss, _ = answer_loss(model, cached, sample, layers, precision)
            loss.backward()
            total += float(loss.detach())
        model.zero_grad(set_to_none=True)
        step = (time.perf_counter() - started) / len(batch)
        print(f"{precision}: caching {caching:.2f} s/sample, training step {step:.2f} s/sample "
              f"({tokens:,.0f} tokens a sample, last {layers} layers), summed answer loss {total:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="A model directory (omit: the matrix product only).")
    parser.add_argument("--data", type=Path, default=None, help="An 'envsim train data' directory.")
    parser.add_argument("--layers", type=int, default=8, help="Trainable last layers.")
    parser.add_argument("--samples", type=int, default=6, help="Samples timed per precision.")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import torch

    from envsim.training.cpu_precision import BF16_FLAGS, cpu_flags, resolve_precision

    torch.set_num_threads(args.threads)
    flags = sorted(f for f in cpu_flags() if f in BF16_FLAGS)
    print(f"torch {torch.__version__}, {args.threads} thread(s); bfloat16 flags: {', '.join(flags) or 'none'} "
          f"(--precision auto resolves to {resolve_precision('auto')})")
    for dtype in (torch.float32, torch.bfloat16):
        print(f"matmul 1200x576 @ 576x1536 {str(dtype).removeprefix('torch.')}: {matmul_rate(dtype):.0f} GFLOP/s")
    if args.model and args.data:
        sft_step_costs(args.model, args.data, args.layers, args.samples)


if __name__ == "__main__":
    main()

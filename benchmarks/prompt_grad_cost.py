"""What ``--prompt-grad none`` buys CPU SFT: one training step with and without gradient through the prompt.

For a real model and SFT data, each sample's frozen-layer activations are cached once, then one step (forward and
backward of the last ``--layers`` layers on the answer) runs with the full gradient and with the prompt's positions
run without grad (``training/sft_cpu.py``). Prints per sample the tokens, both losses (the same number), both step
times and the cosine between the two gradients of the trainable parameters, then the means.

    python benchmarks/prompt_grad_cost.py --model runs/model --data runs/ab-tests/shipped/data --threads 2
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path


def step(model: object, cached: object, sample: object, layers: int, prompt_grad: str) -> tuple[float, float, object]:
    """Seconds of one forward and backward, the summed answer loss and the flattened gradient."""
    import torch

    from envsim.training.sft_cpu import answer_loss

    model.zero_grad(set_to_none=True)
    started = time.perf_counter()
    loss, _ = answer_loss(model, cached, sample, layers, prompt_grad=prompt_grad)
    loss.backward()
    seconds = time.perf_counter() - started
    grads = [p.grad.flatten() for p in model.parameters() if p.requires_grad and p.grad is not None]
    return seconds, float(loss.detach()), torch.cat(grads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="A model directory.")
    parser.add_argument("--data", type=Path, required=True, help="An 'envsim train data' directory.")
    parser.add_argument("--layers", type=int, default=8, help="Trainable last layers.")
    parser.add_argument("--samples", type=int, default=6, help="Samples timed.")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch
    from cpu_precision import model_and_samples

    from envsim.training.sft_cpu import FrozenActivations, shared_prefix

    torch.set_num_threads(args.threads)
    model, batch, sequences = model_and_samples(args.model, args.data, args.layers, args.samples)
    frozen = FrozenActivations(model, args.layers, sequences[0][:shared_prefix(sequences)])
    rows = []
    print(f"torch {torch.__version__}, {args.threads} thread(s), fp32, last {args.layers} layers")
    for sample, ids in zip(batch, sequences):
        cached = frozen(ids)
        full_s, full_loss, full_grad = step(model, cached, sample, args.layers, "full")
        none_s, none_loss, none_grad = step(model, cached, sample, args.layers, "none")
        cosine = float(torch.nn.functional.cosine_similarity(full_grad, none_grad, dim=0))
        rows.append((full_s, none_s, cosine))
        print(f"{sample.length:,} tokens ({len(sample.answer_ids)} answer): loss {full_loss:.4f} / {none_loss:.4f}, "
              f"step {full_s:.2f} s full / {none_s:.2f} s none, gradient cosine {cosine:.3f}")
    full, none, cosine = (statistics.mean(column) for column in zip(*rows))
    print(f"mean: step {full:.2f} s full / {none:.2f} s none ({full / none:.1f}x), gradient cosine {cosine:.3f}")


if __name__ == "__main__":
    main()

"""Where an eval sample's time goes on CPU: prefill of the prompt vs decode of the answer, and whether
batching the decode helps (padded static batches through ``generate``, and transformers' continuous
batching with paged attention, which ``transformers serve --continuous-batching`` uses).

Prompts are real ones: the first subset samples (``v1_test_smollm2_2048``, state views, prompt version 3),
rendered with the model's own chat template. Figures are CPU seconds of this process (``time.process_time``)
as well as wall seconds: on a shared machine the wall time depends on the other jobs, the CPU time much less.
Decoding is greedy and never stops early (end-of-turn ignored), as a zero-shot model that does not stop.

    python benchmarks/cpu_generation_cost.py --model runs/real-model/model --batch 4 --new-tokens 33
"""

from __future__ import annotations

import argparse
import time
from typing import Any


def subset_prompts(model_dir: str, count: int) -> list[list[int]]:
    """Token ids of ``count`` subset prompts (every 30th id), with the model's chat template."""
    from transformers import AutoTokenizer

    from envsim.benchmark import load
    from envsim.evaluation.prompting.prompts import build_messages
    from envsim.evaluation.running.subsets import read_ids

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    by_id = {record["id"]: record for record in load("v1", "test")}
    ids = read_ids("v1_test_smollm2_2048")[::30][:count]
    prompts = []
    for sample_id in ids:
        encoded: Any = tokenizer.apply_chat_template(build_messages(by_id[sample_id], "mdp-view", version="3"),
                                                     add_generation_prompt=True, tokenize=True, return_dict=True)
        prompts.append(list(encoded["input_ids"]))
    return prompts


def timed(function: Any) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``function()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def static_batch(model: Any, prompts: list[list[int]], new_tokens: int, pad_id: int) -> dict[str, float]:
    """Prefill of one left-padded batch, then ``new_tokens - 1`` greedy decode steps on its KV cache, each
    timed apart (the decode figure holds no prefill)."""
    import torch

    from envsim.training.kv_cache import returned_cache, with_cache

    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    model(ids[:, -64:], attention_mask=mask[:, -64:])  # warm-up: the first call pays one-off allocations
    state: dict[str, Any] = {}

    def prefill() -> None:
        state["out"] = model(ids, attention_mask=mask, use_cache=True)

    def decode() -> None:
        out, attention = state["out"], mask
        for _ in range(new_tokens - 1):
            token = out.logits[:, -1:].argmax(-1)
            attention = torch.cat([attention, torch.ones_like(token)], dim=1)
            out = model(token, attention_mask=attention, use_cache=True, **with_cache(model, returned_cache(out)))

    prefill_wall, prefill_cpu = timed(prefill)
    decode_wall, decode_cpu = timed(decode)
    steps = new_tokens - 1
    return {"prefill_wall": prefill_wall, "prefill_cpu": prefill_cpu, "step_wall": decode_wall / steps,
            "step_cpu": decode_cpu / steps}


def continuous_batch(model: Any, prompts: list[list[int]], new_tokens: int, pad_id: int) -> dict[str, float]:
    """The same through ``generate_batch`` (continuous batching, paged attention): prefill is a run with one
    new token, decode the difference to a run with ``new_tokens`` (use enough tokens that the difference
    dominates the noise of the prefill)."""
    from transformers import GenerationConfig

    def run(count: int) -> None:
        config = GenerationConfig(max_new_tokens=count, do_sample=False, eos_token_id=-1, pad_token_id=pad_id)
        model.generate_batch(prompts, generation_config=config, progress_bar=False)

    run(2)
    prefill = timed(lambda: run(1))
    total = timed(lambda: run(new_tokens))
    steps = new_tokens - 1
    return {"prefill_wall": prefill[0], "prefill_cpu": prefill[1], "step_wall": (total[0] - prefill[0]) / steps,
            "step_cpu": (total[1] - prefill[1]) / steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="Converted model directory (envsim train fetch-model).")
    parser.add_argument("--batch", type=int, default=4, help="Prompts decoded together.")
    parser.add_argument("--new-tokens", type=int, default=33, help="Answer tokens per prompt (decode steps + 1).")
    parser.add_argument("--threads", type=int, default=1, help="Torch threads.")
    parser.add_argument("--modes", default="single,static,continuous",
                        help="single (batch 1, the first prompt), static, continuous.")
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(args.threads)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    pad_id = AutoTokenizer.from_pretrained(args.model).pad_token_id or 0
    prompts = subset_prompts(args.model, args.batch)
    print(f"prompts: {[len(p) for p in prompts]} tokens; {args.threads} torch thread(s)")
    for mode in args.modes.split(","):
        group = prompts[:1] if mode == "single" else prompts
        with torch.inference_mode():
            run = continuous_batch if mode == "continuous" else static_batch
            figures = run(model, group, args.new_tokens, pad_id)
        tokens = sum(len(p) for p in group)
        print(f"{mode:>10} batch {len(group)}: prefill {tokens} tokens {figures['prefill_cpu']:.1f} CPU s "
              f"({tokens / figures['prefill_cpu']:.0f} tokens/CPU s, wall {figures['prefill_wall']:.1f} s); "
              f"decode {1000 * figures['step_cpu']:.0f} CPU ms/step = {len(group) / figures['step_cpu']:.1f} "
              f"tokens/CPU s (wall {len(group) / figures['step_wall']:.1f} tokens/s)", flush=True)


if __name__ == "__main__":
    main()

"""Prefill and decode throughput of one backend on real subset prompts, per CPU second of this process.

The same prompts (the first ``--prompts`` of ``v1_test_smollm2_2048``, state views, prompt version 3, rendered
with the model's own chat template into token ids) go through either llama.cpp (llama-cpp-python on a GGUF
file) or transformers (torch, fp32) with one thread: prefill of the whole prompt, then ``--new-tokens`` greedy
decode steps on its KV cache, the end of turn ignored. Prints one JSON object.

    python benchmarks/decode_throughput.py --backend llama.cpp --model runs/real-model/model --gguf M.gguf
    python benchmarks/decode_throughput.py --backend transformers --model runs/real-model/model
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable

from cpu_generation_cost import subset_prompts  # benchmarks/ is on sys.path when this script runs


def cpu_timed(function: Callable[[], Any]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of ``function()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def llama_cpp_costs(gguf: str, prompts: list[list[int]], new_tokens: int, threads: int) -> list[dict[str, float]]:
    """Per prompt: prefill and decode (wall, CPU) seconds in llama.cpp."""
    from llama_cpp import Llama

    llm = Llama(model_path=gguf, n_ctx=4096, n_threads=threads, n_threads_batch=threads, verbose=False)
    rows = []
    for prompt in prompts:
        llm.reset()
        prefill = cpu_timed(lambda: llm.eval(prompt))

        def decode() -> None:
            for _ in range(new_tokens):
                llm.eval([int(llm.sample(top_k=1))])

        rows.append({"prompt_tokens": len(prompt), "prefill": prefill, "decode": cpu_timed(decode)})
    return rows


def transformers_costs(model_dir: str, prompts: list[list[int]], new_tokens: int) -> list[dict[str, float]]:
    """Per prompt: prefill and decode (wall, CPU) seconds in transformers (fp32, KV cache)."""
    import torch
    from transformers import AutoModelForCausalLM

    from envsim.training.kv_cache import returned_cache, with_cache

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    rows = []
    with torch.inference_mode():
        for prompt in prompts:
            state: dict[str, Any] = {}

            def prefill() -> None:
                state["out"] = model(torch.tensor([prompt]), use_cache=True)

            def decode() -> None:
                out = state["out"]
                for _ in range(new_tokens):
                    out = model(out.logits[:, -1:].argmax(-1), use_cache=True, **with_cache(model, returned_cache(out)))

            rows.append({"prompt_tokens": len(prompt), "prefill": cpu_timed(prefill), "decode": cpu_timed(decode)})
    return rows


def summary(backend: str, rows: list[dict[str, Any]], new_tokens: int) -> dict[str, Any]:
    """Tokens per CPU second (and per wall second) over all prompts."""
    prompt_tokens = sum(r["prompt_tokens"] for r in rows)
    decoded = new_tokens * len(rows)
    prefill_cpu, decode_cpu = sum(r["prefill"][1] for r in rows), sum(r["decode"][1] for r in rows)
    prefill_wall, decode_wall = sum(r["prefill"][0] for r in rows), sum(r["decode"][0] for r in rows)
    return {"backend": backend, "prompts": len(rows), "prompt_tokens": prompt_tokens, "decoded_tokens": decoded,
            "prefill_tokens_per_cpu_s": round(prompt_tokens / prefill_cpu, 1),
            "decode_tokens_per_cpu_s": round(decoded / decode_cpu, 2),
            "decode_cpu_ms_per_token": round(1000 * decode_cpu / decoded, 1),
            "prefill_tokens_per_wall_s": round(prompt_tokens / prefill_wall, 1),
            "decode_tokens_per_wall_s": round(decoded / decode_wall, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("llama.cpp", "transformers"), required=True)
    parser.add_argument("--model", required=True, help="The HF checkpoint directory (its tokenizer renders prompts).")
    parser.add_argument("--gguf", default=None, help="The GGUF file (llama.cpp).")
    parser.add_argument("--prompts", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    prompts = subset_prompts(args.model, args.prompts)
    if args.backend == "llama.cpp":
        if not args.gguf:
            parser.error("--backend llama.cpp needs --gguf")
        rows = llama_cpp_costs(args.gguf, prompts, args.new_tokens, args.threads)
    else:
        import torch

        torch.set_num_threads(args.threads)
        rows = transformers_costs(args.model, prompts, args.new_tokens)
    print(json.dumps(summary(args.backend, rows, args.new_tokens)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CPU per sample of each step `envsim eval` takes for one sample, measured one step at a time in this process
(no server, no event loop): where `benchmarks/eval_overhead.py`'s end-to-end figure goes.

    python benchmarks/eval_stage_costs.py [--copies 10]

The samples are the shipped v1 test split repeated ``--copies`` times (ids suffixed ``#k``, as
``eval_overhead.py`` writes them), the answers the oracle's after a line of prose, in a fence. Each step runs
over every sample in turn and prints its ``time.process_time`` per sample. What is left of the end-to-end figure
after these steps is the event loop, the HTTP exchange with a server and the reports.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_overhead import write_benchmark  # noqa: E402 - a sibling script


def timed(label: str, samples: int, step: Callable[[], Any]) -> Any:
    """Run ``step`` once, print its CPU per sample, return what it returned."""
    start = time.process_time()
    result = step()
    print(f"{label:66s} {1000 * (time.process_time() - start) / samples:6.3f} ms", flush=True)
    return result


def main() -> None:
    """Measure each step and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=10, help="copies of the 400 v1 test records")
    args = parser.parse_args()
    from envsim.benchmark import load
    from envsim.benchmark.stream import _read_jsonl, check_file
    from envsim.evaluation.endpoints.chat_http import encode_body
    from envsim.evaluation.scoring.parsing import parse_answer
    from envsim.evaluation.prompting.prompts import build_messages
    from envsim.evaluation.endpoints.providers import oracle_answer
    from envsim.evaluation.running.runner import _dump_row
    from envsim.evaluation.scoring.scoring import score_prediction
    from envsim.tokens import eval_token_fields, get_tokenizer

    split = load("v1", "test")
    answers = {r["id"]: "Let me trace the code first.\n```json\n" + oracle_answer(r) + "\n```" for r in split}
    samples = len(split) * args.copies
    tokenizer = get_tokenizer()
    with tempfile.TemporaryDirectory() as name:
        path = write_benchmark(split, samples, Path(name) / "bench.jsonl")
        print(f"{samples} samples (v1 test x {args.copies}), CPU per sample:")
        timed("check of the whole file before the run (check_file)", samples, lambda: check_file(path))
        timed("record read at its turn (strict decoder, sharing), then dropped", samples,
              lambda: sum(1 for _ in _read_jsonl(path, range(samples))))
        records = list(_read_jsonl(path, range(samples)))  # kept for the steps below (a run drops each when scored)
    texts = [answers[r["id"].rpartition("#")[0]] for r in records]
    messages = timed("prompt built (build_messages, mdp, version 1)", samples,
                     lambda: [build_messages(r, "mdp", version="1") for r in records])
    timed("request body encoded", samples, lambda: [encode_body({"model": "m", "messages": m, "temperature": 0.0,
                                                                 "max_tokens": 2048}) for m in messages])
    parsed = timed("answer parsed", samples, lambda: [parse_answer(t) for t in texts])
    scores = timed("scored (FM, CM, CM-lenient, CM-original, classes)", samples,
                   lambda: [score_prediction(r, a) for r, a in zip(records, parsed)])
    counted = timed("prompt and answer tokens counted (Qwen BPE)", samples,
                    lambda: [eval_token_fields(m, t, tokenizer) for m, t in zip(messages, texts)])
    rows = [{"id": r["id"], "status": "scored", **s.to_json(), "answer": t, **c}
            for r, s, t, c in zip(records, scores, texts, counted)]
    timed("result line written as JSON", samples, lambda: [_dump_row(row) for row in rows])
    print(f"mean prompt: {sum(len(json.dumps(m)) for m in messages) / samples:.0f} characters")


if __name__ == "__main__":
    main()

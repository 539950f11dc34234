"""Does copying the tested old values from the prompt lift a tests-trained model's CM? Greedy answers of one
checkpoint to a held-out set, decoded twice by the same loop (``training/copied_tests.py``): the model's own
tested values, and the values copied from the prompt's shown state. Scored by the evaluator's parser and scorer.

    python benchmarks/copied_tests_ab.py --model runs/wide/sft/checkpoints --heldout runs/wide/data/heldout.jsonl \\
        --work runs/copied --arms own copied        # each arm in its own process, one thread each

Answers are appended to WORK/<arm>.jsonl as they come (a run resumes); prints one row per decoded arm and the
paired CM counts, and writes WORK/result.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ARMS = {"own": False, "copied": True}


def decode_arm(args: argparse.Namespace, arm: str) -> None:
    """Decode the held-out calls not yet answered in WORK/<arm>.jsonl."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from envsim.evaluation.prompting.prompts import build_messages
    from envsim.training.copied_tests import decode_copying_tests
    from envsim.training.data import prompt_shown_state
    from envsim.training.sft_cpu import read_samples

    torch.set_num_threads(args.threads)
    records = read_samples(args.heldout)
    path = args.work / f"{arm}.jsonl"
    done = {json.loads(line)["id"] for line in path.read_text().splitlines()} if path.is_file() else set()
    tokenizer = AutoTokenizer.from_pretrained(str(args.model))
    model = AutoModelForCausalLM.from_pretrained(str(args.model))
    model.eval()
    with path.open("a") as sink:
        for record in records:
            if record["id"] in done:
                continue
            started = time.monotonic()
            answer, copied = decode_copying_tests(model, tokenizer, build_messages(record, "mdp-view", version="3"),
                                                  prompt_shown_state(record, "mdp-view"),
                                                  max_new_tokens=args.max_new, copy=ARMS[arm])
            sink.write(json.dumps({"id": record["id"], "answer": answer, "copied": copied,
                                   "seconds": round(time.monotonic() - started, 2)}) + "\n")
            sink.flush()


def report(args: argparse.Namespace) -> dict[str, Any]:
    """Scores of every fully decoded arm, CM per stratum and on change samples, paired CM; WORK/result.json."""
    from envsim.evaluation.scoring.parsing import parse_answer
    from envsim.evaluation.scoring.scoring import score_prediction
    from envsim.training.local_eval import score_answers
    from envsim.training.sft_cpu import read_samples

    records = read_samples(args.heldout)
    right: dict[str, list[bool]] = {}
    result: dict[str, Any] = {"heldout": str(args.heldout), "model": str(args.model), "arms": {}}
    for arm in ARMS:
        path = args.work / f"{arm}.jsonl"
        rows = {r["id"]: r for r in map(json.loads, path.read_text().splitlines())} if path.is_file() else {}
        if set(rows) != {r["id"] for r in records}:
            continue
        answers = [rows[r["id"]]["answer"] for r in records]
        right[arm] = [score_prediction(r, parse_answer(a)).cm for r, a in zip(records, answers)]
        change = [ok for r, ok in zip(records, right[arm]) if r["patch"]]
        row = {**score_answers(records, answers), "cm_change": sum(change) / max(len(change), 1),
               "cm_right": sum(right[arm]), "change_right": sum(change), "change_n": len(change),
               "copied_values": sum(rows[r["id"]]["copied"] for r in records),
               "seconds": round(sum(rows[r["id"]]["seconds"] for r in records), 1)}
        result["arms"][arm] = row
        print(f"{arm:7s} parse-valid {row['parse_valid']:.0%}  FM {row['fm']:.0%}  CM {row['cm']:.0%} "
              f"({row['cm_right']}/{len(records)})  change {row['change_right']}/{row['change_n']}  by stratum "
              + ", ".join(f"{k} {v:.0%}" for k, v in row["cm_by_stratum"].items())
              + f"  values copied {row['copied_values']}  decode {row['seconds']:.0f} s")
    if len(right) == 2:
        own, copied = right["own"], right["copied"]
        result["paired"] = {"both": sum(a and b for a, b in zip(own, copied)),
                            "only_own": sum(a and not b for a, b in zip(own, copied)),
                            "only_copied": sum(b and not a for a, b in zip(own, copied)),
                            "neither": sum(not a and not b for a, b in zip(own, copied))}
        print("paired CM: " + ", ".join(f"{k} {v}" for k, v in result["paired"].items()))
    (args.work / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def main() -> int:
    """Decode the chosen arms (side by side, one process each) and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="a checkpoint trained with replace_tests shown")
    parser.add_argument("--heldout", type=Path, required=True, help="held-out records (train data's heldout.jsonl)")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--max-new", type=int, default=384, help="token cap of an answer (the acceptance run's)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--arm", choices=list(ARMS), help=argparse.SUPPRESS)  # one arm's worker process
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.arm:
        decode_arm(args, args.arm)
        return 0
    workers = [subprocess.Popen([sys.executable, __file__, *sys.argv[1:], "--arm", arm]) for arm in args.arms]
    codes = [w.wait() for w in workers]
    report(args)
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())

"""Does testing the old value before a replace help a small model generalise? A tool-focused A/B on held-out calls.

Trains the same model twice on the same calls of a few tools of the in-environment recipe (docs/real-model.md),
once with the shipped targets (``replace_tests: none``) and once with an RFC 6902 ``test`` of each replaced scalar
the prompt shows before its ``replace`` (``replace_tests: shown``, ``training/patch_form.py``), side by side, one
thread each; then decodes held-out calls of the same tools (another rollout seed, no (state, call) shared with the
training pool) greedily with each model and scores them with the evaluator's parser and scorer. It measures
generalisation to new states of known tools at a fraction of the acceptance run's cost (docs/real-model.md,
"Old values tested first"); it is not the acceptance run.

    python benchmarks/replace_tests_ab.py --model runs/model --work runs/ab-tests          # data, train, eval
    python benchmarks/replace_tests_ab.py --model runs/model --work runs/ab-tests --phases eval

Prints one row per arm (parse-valid, FM, CM, CM per stratum, training seconds) and writes WORK/result.json.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

TOOLS = ("cross_dock_scheduling-v1:advance_hour", "voter_registration-v1:update_registration",
         "issue_dependency_tracker-v1:resolve_issue", "issue_dependency_tracker-v1:add_dependency")
ARMS = {"shipped": "none", "tests": "shown"}


def tool_key(record: dict[str, Any]) -> str:
    """``env:tool`` of a record's call."""
    return f"{record['env']}:{record['action']['name']}"


def build_data(args: argparse.Namespace) -> None:
    """Both arms' SFT data (the recipe's training calls of ``--tools``) and the held-out calls of the same tools."""
    from envsim.construction.pipeline import build_pool, write_jsonl
    from envsim.training.data import load_recipe, recipe_records, write_sft_dataset
    from envsim.training.heldout import fits_cutoff
    from envsim.training.sft_cpu import read_samples
    from envsim.tokens import get_tokenizer

    recipe = load_recipe("in-env")
    tools = set(args.tools)
    envs = sorted({t.split(":")[0] for t in tools})
    pool, records = recipe_records(recipe)
    train = [r for r in records if tool_key(r) in tools]
    counter = get_tokenizer(str(args.model))
    for arm, choice in ARMS.items():
        write_sft_dataset(train, args.work / arm / "data", "in_env", "mdp-view", version="3", cutoff=2048,
                          tokenizer=counter, append_form="dash", replace_tests=choice)
    kept = [{s["id"] for s in read_samples(args.work / arm / "data" / "in_env.jsonl")} for arm in ARMS]
    if kept[0] != kept[1]:
        raise SystemExit(f"the arms kept different samples under the cutoff: {len(kept[0] ^ kept[1])} differ")
    block = recipe["heldout"]
    heldout_pool = build_pool(envs, block["seed"], block["episodes"], block["steps"], "train")
    training_ids = {r["id"] for r in pool}
    fresh = [r for r in heldout_pool if r["id"] not in training_ids and tool_key(r) in tools and r["patch"]]
    by_tool: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in fresh:
        by_tool[tool_key(record)].append(record)
    heldout = []
    rng = random.Random(1013)
    for tool in sorted(by_tool):
        fitting = [r for r in by_tool[tool] if fits_cutoff(r, "mdp-view", "3", 2048, counter)]
        heldout += rng.sample(fitting, min(args.per_tool, len(fitting)))
    write_jsonl(heldout, args.work / "heldout.jsonl")
    print(f"data: {len(kept[0])} training samples of {len(tools)} tools, {len(heldout)} held-out change calls "
          + "(" + ", ".join(f"{t.split(':')[1]} {sum(tool_key(r) == t for r in heldout)}" for t in sorted(tools)) + ")")


def train(args: argparse.Namespace) -> None:
    """Both arms' CPU SFT side by side, one thread each (``envsim train sft --device cpu``)."""
    envsim = str(Path(sys.executable).with_name("envsim"))
    running = {}
    for arm in ARMS:
        out = args.work / arm / "sft"
        if (out / "summary.json").is_file():
            continue
        command = [envsim, "train", "sft", "--device", "cpu", "--model", str(args.model), "--data",
                   str(args.work / arm / "data"), "--out", str(out), "--cutoff", "2048", "--lr", str(args.lr),
                   "--epochs", str(args.epochs), "--batch", "1", "--finetuning", "freeze", "--freeze-layers", "8",
                   "--threads", "1"]
        log = open(args.work / arm / "sft.log", "a")
        running[arm] = (subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), log)
    for arm, (process, log) in running.items():
        code = process.wait()
        log.close()
        if code:
            raise SystemExit(f"{arm}: train sft exited {code} (log: {args.work / arm / 'sft.log'})")


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    """Greedy answers of each arm's model to the held-out calls, scored; WORK/result.json."""
    from envsim.evaluation.prompting.prompts import build_messages
    from envsim.training.local_eval import generate_answers, score_answers
    from envsim.training.sft_cpu import read_samples

    import torch

    torch.set_num_threads(args.eval_threads)
    heldout = read_samples(args.work / "heldout.jsonl")
    prompts = [build_messages(r, "mdp-view", version="3") for r in heldout]
    result: dict[str, Any] = {"tools": list(args.tools), "heldout": len(heldout), "arms": {}}
    for arm in args.arms:                     # decode what is not decoded yet (an arm at a time, resumable)
        if kept_answers(args.work / arm / "answers.jsonl", heldout) is None:
            started = time.monotonic()
            answers = generate_answers(args.work / arm / "sft" / "checkpoints", prompts,
                                       max_new_tokens=args.max_new, batch_size=1)
            (args.work / arm / "answers.jsonl").write_text("".join(json.dumps({"id": r["id"], "answer": a}) + "\n"
                                                                   for r, a in zip(heldout, answers)))
            (args.work / arm / "decode_seconds").write_text(f"{time.monotonic() - started:.1f}\n")
    decoded = {arm: kept_answers(args.work / arm / "answers.jsonl", heldout) for arm in ARMS}
    if any(answers is None for answers in decoded.values()):
        print("decoded: " + ", ".join(arm for arm, answers in decoded.items() if answers is not None)
              + "; the comparison waits for every arm")
        return result
    right: dict[str, list[bool]] = {}
    for arm, answers in decoded.items():
        scores = score_answers(heldout, answers)
        right[arm] = [score_answers([r], [a])["cm"] == 1.0 for r, a in zip(heldout, answers)]
        by_tool = defaultdict(list)
        for record, answer in zip(heldout, answers):
            by_tool[tool_key(record)].append(score_answers([record], [answer])["cm"])
        summary = json.loads((args.work / arm / "sft" / "summary.json").read_text())
        result["arms"][arm] = {**scores, "cm_by_tool": {t: sum(v) / len(v) for t, v in sorted(by_tool.items())},
                               "failing_tests": sum(failing_test(r, a) for r, a in zip(heldout, answers)),
                               "patch_op_f1": round(sum(patch_f1(r, a) for r, a in zip(heldout, answers))
                                                    / max(len(heldout), 1), 3),
                               "train_seconds": summary["train_seconds"],
                               "decode_seconds": float((args.work / arm / "decode_seconds").read_text()),
                               "last_epoch_greedy_exact": summary["last_epoch_greedy_exact"]}
        row = result["arms"][arm]
        print(f"{arm:8s} parse-valid {row['parse_valid']:.0%}  FM {row['fm']:.0%}  CM {row['cm']:.0%} "
              f"({round(row['cm'] * len(heldout))}/{len(heldout)})  patch-op F1 {row['patch_op_f1']:.2f}  "
              f"failing tests {row['failing_tests']}  by tool "
              + ", ".join(f"{t.split(':')[1]} {v:.0%}" for t, v in row["cm_by_tool"].items())
              + f"  train {row['train_seconds']:.0f} s, train-set exact in the last epoch "
                f"{row['last_epoch_greedy_exact']:.0%}")
    first, second = ARMS
    result["paired"] = {"both": sum(a and b for a, b in zip(right[first], right[second])),
                        f"only_{first}": sum(a and not b for a, b in zip(right[first], right[second])),
                        f"only_{second}": sum(b and not a for a, b in zip(right[first], right[second])),
                        "neither": sum(not a and not b for a, b in zip(right[first], right[second]))}
    print("paired CM: " + ", ".join(f"{k} {v}" for k, v in result["paired"].items()))
    (args.work / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def patch_f1(record: dict[str, Any], answer: str) -> float:
    """GRPO's patch-op F1 of the answer against the true patch (tests that hold left out, appends as ``/-``):
    a graded measure beside all-or-nothing CM."""
    from envsim.evaluation.scoring.parsing import parse_answer
    from envsim.training.partial_credit import patch_op_f1
    from envsim.training.patch_form import dash_appends, without_passing_tests

    parsed = parse_answer(answer)
    if not parsed.ok or parsed.patch is None:
        return 0.0
    predicted = dash_appends(record["state"], without_passing_tests(record["state"], list(parsed.patch)))
    return patch_op_f1(predicted, dash_appends(record["state"], list(record["patch"])))


def failing_test(record: dict[str, Any], answer: str) -> bool:
    """Whether the answer's patch has a ``test`` that fails on the record's state at its point of the patch."""
    from envsim.evaluation.scoring.parsing import parse_answer
    from envsim.training.patch_form import without_passing_tests

    parsed = parse_answer(answer)
    if not parsed.ok or not parsed.patch:
        return False
    return any(isinstance(op, dict) and op.get("op") == "test"
               for op in without_passing_tests(record["state"], list(parsed.patch)))


def kept_answers(path: Path, heldout: list[dict[str, Any]]) -> list[str] | None:
    """The answers an earlier eval of the same held-out calls wrote (the eval resumes from them), else None."""
    if not path.is_file():
        return None
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if [row["id"] for row in rows] != [r["id"] for r in heldout]:
        return None
    return [row["answer"] for row in rows]


def main() -> int:
    """Run the chosen phases."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="a checkpoint directory (envsim train fetch-model)")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--tools", nargs="+", default=list(TOOLS), help="env:tool of the calls trained and tested")
    parser.add_argument("--per-tool", type=int, default=12, help="held-out change calls per tool")
    parser.add_argument("--epochs", type=float, default=4.0)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--max-new", type=int, default=320, help="token cap of a decoded answer")
    parser.add_argument("--eval-threads", type=int, default=2)
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS), help="the arms to decode")
    parser.add_argument("--phases", nargs="+", default=["data", "train", "eval"], choices=["data", "train", "eval"])
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if "data" in args.phases:
        build_data(args)
    if "train" in args.phases:
        train(args)
    if "eval" in args.phases:
        evaluate(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Which targets and which data make a small model generalise to new calls of known tools? A tool-focused A/B.

Trains the same model on calls of a few tools of the in-environment recipe (docs/real-model.md), once per arm, and
decodes held-out calls of the same tools (another rollout seed, no (state, call) shared with any arm's training
calls) greedily with each model, scored by the evaluator's parser and scorer. It measures generalisation to new
states of known tools at a fraction of the acceptance run's cost; it is not the acceptance run. The arms:

- ``shipped``: the recipe's own calls of the tools, the shipped targets (``replace_tests: none``), ``--epochs``.
- ``tests``: the same calls, each replaced scalar the prompt shows tested first (``replace_tests: shown``,
  ``training/patch_form.py``; docs/real-model.md, "Old values tested first").
- ``wide``: the same number of gradient steps spent on distinct calls: 4x the recipe's calls of each tool and
  outcome (a longer rollout of the recipe's seed, the held-out calls left out), ``--epochs`` / 4 passes
  (docs/real-model.md, "More calls or more passes").
- ``no-prompt-grad``: the shipped arm's samples and passes, trained without gradient through the prompt's positions
  (``--prompt-grad none``, ``training/sft_cpu.py``: about a third of a step's CPU time; docs/real-model.md,
  "No gradient through the prompt").
- ``tests-no-prompt-grad``: the ``tests`` arm's samples and passes, trained as ``no-prompt-grad`` (the candidate
  recipe of the next acceptance run).
- ``tests-examples``: ``tests-no-prompt-grad`` whose prompts (training and held-out) also list up to 3 logged calls
  of the same tool from the arm's training calls, with their answers (``evaluation/prompting/logged_calls.py``),
  under a cutoff of 2,560 tokens (the calls' prompts are 1,614 tokens on average without them).
- ``tests-16-layers``: ``tests-no-prompt-grad`` with the last 16 of the 30 layers trained instead of 8 (capacity).
- ``read-keys``: ``tests-no-prompt-grad`` whose targets first test each value the call looked up and used as a key
  (``replace_tests: shown+read-keys``, ``training/call_trace.py``: the voter's precinct and party before the tallies).
- ``reads``: the same with a test of every scalar the call read by key (``replace_tests: shown+reads``).
  Both under a cutoff of 2,304 tokens: the longer answers put one of the 123 calls over 2,048.

    python benchmarks/tool_focus_ab.py --model runs/model --work runs/ab-tests          # data, train, eval
    python benchmarks/tool_focus_ab.py --model runs/model --work runs/ab-tests --arms shipped wide --phases eval

Every phase does only what is missing (an arm's data, checkpoint or answers), so a run resumes and an arm can be
added to a finished comparison. Prints one row per arm (parse-valid, FM, CM, patch-op F1, CM per tool, training
seconds), each arm's paired CM against ``shipped``, and writes WORK/result.json.
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
ARMS: dict[str, dict[str, Any]] = {"shipped": {"replace_tests": "none", "scale": 1},
                                   "tests": {"replace_tests": "shown", "scale": 1},
                                   "wide": {"replace_tests": "none", "scale": 4},
                                   "no-prompt-grad": {"replace_tests": "none", "scale": 1, "prompt_grad": "none"},
                                   "tests-no-prompt-grad": {"replace_tests": "shown", "scale": 1,
                                                            "prompt_grad": "none"},
                                   "tests-examples": {"replace_tests": "shown", "scale": 1, "prompt_grad": "none",
                                                      "examples": 3, "cutoff": 2560},
                                   "tests-16-layers": {"replace_tests": "shown", "scale": 1, "prompt_grad": "none",
                                                       "layers": 16},
                                   "read-keys": {"replace_tests": "shown+read-keys", "scale": 1,
                                                 "prompt_grad": "none", "cutoff": 2304},
                                   "reads": {"replace_tests": "shown+reads", "scale": 1, "prompt_grad": "none",
                                             "cutoff": 2304}}
BASELINE = "shipped"


def tool_key(record: dict[str, Any]) -> str:
    """``env:tool`` of a record's call."""
    return f"{record['env']}:{record['action']['name']}"


def build_data(args: argparse.Namespace) -> None:
    """The held-out calls of ``--tools`` and each arm's SFT data, whichever is not written yet."""
    from envsim.construction.pipeline import build_pool, write_jsonl
    from envsim.training.data import load_recipe, recipe_records
    from envsim.training.heldout import fits_cutoff
    from envsim.training.sft_cpu import read_samples
    from envsim.tokens import get_tokenizer

    recipe = load_recipe("in-env")
    tools = set(args.tools)
    envs = sorted({t.split(":")[0] for t in tools})
    pool, records = recipe_records(recipe)
    train = [r for r in records if tool_key(r) in tools]
    counter = get_tokenizer(str(args.model))
    heldout_path = args.work / "heldout.jsonl"
    if not heldout_path.is_file():
        write_jsonl(draw_heldout(recipe, envs, tools, {r["id"] for r in pool}, counter, args.per_tool), heldout_path)
    heldout = read_samples(heldout_path)
    for arm in args.arms:
        if (args.work / arm / "data" / "in_env.jsonl").is_file():
            continue
        calls = train
        if ARMS[arm]["scale"] > 1:
            rollout = recipe["rollout"]
            wide_pool = build_pool(envs, rollout["seed"], rollout["episodes"] * (ARMS[arm]["scale"] + 2),
                                   rollout["steps"], "train")
            taken = {r["id"] for r in train} | {r["id"] for r in heldout}
            fresh = [r for r in wide_pool if r["id"] not in taken and tool_key(r) in tools
                     and fits_cutoff(r, "mdp-view", "3", 2048, counter)]
            calls = train + more_of_the_same(train, fresh, ARMS[arm]["scale"] - 1)
        write_arm_data(args, arm, calls, counter)
        kept = read_samples(args.work / arm / "data" / "in_env.jsonl")
        print(f"data: {arm}: {len(kept)} training samples of {len(tools)} tools")
    print(f"data: {len(heldout)} held-out change calls ("
          + ", ".join(f"{t.split(':')[1]} {sum(tool_key(r) == t for r in heldout)}" for t in sorted(tools)) + ")")


def draw_heldout(recipe: dict[str, Any], envs: list[str], tools: set[str], training_ids: set[str], counter: Any,
                 per_tool: int) -> list[dict[str, Any]]:
    """``per_tool`` change calls of each tool from the recipe's held-out rollout, none in the training pool."""
    from envsim.construction.pipeline import build_pool
    from envsim.training.heldout import fits_cutoff

    block = recipe["heldout"]
    heldout_pool = build_pool(envs, block["seed"], block["episodes"], block["steps"], "train")
    fresh = [r for r in heldout_pool if r["id"] not in training_ids and tool_key(r) in tools and r["patch"]]
    by_tool: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in fresh:
        by_tool[tool_key(record)].append(record)
    heldout: list[dict[str, Any]] = []
    rng = random.Random(1013)
    for tool in sorted(by_tool):
        fitting = [r for r in by_tool[tool] if fits_cutoff(r, "mdp-view", "3", 2048, counter)]
        heldout += rng.sample(fitting, min(per_tool, len(fitting)))
    return heldout


def more_of_the_same(train: list[dict[str, Any]], fresh: list[dict[str, Any]], times: int) -> list[dict[str, Any]]:
    """``times`` x as many calls from ``fresh`` (``train``'s own left out) as ``train`` holds of each (tool, changes
    state or not) group, drawn with a fixed seed; a group the rollout cannot fill stops the run."""
    def group(record: dict[str, Any]) -> tuple[str, bool]:
        return tool_key(record), bool(record["patch"])

    wanted: dict[tuple[str, bool], int] = defaultdict(int)
    for record in train:
        wanted[group(record)] += times
    trained = {r["id"] for r in train}
    by_group: dict[tuple[str, bool], list[dict[str, Any]]] = defaultdict(list)
    for record in (r for r in fresh if r["id"] not in trained):
        by_group[group(record)].append(record)
    rng = random.Random(13)
    more = []
    for key in sorted(wanted):
        if len(by_group[key]) < wanted[key]:
            raise SystemExit(f"the longer rollout has {len(by_group[key])} fresh {key} calls, {wanted[key]} wanted")
        more += rng.sample(by_group[key], wanted[key])
    return more


def write_arm_data(args: argparse.Namespace, arm: str, calls: list[dict[str, Any]], counter: Any) -> None:
    """An arm's SFT files (mdp-view, prompt version 3, cutoff 2,048, dash appends, its ``replace_tests``);
    every call must fit the cutoff, so arms of the same calls train on the same samples."""
    from envsim.training.data import write_sft_dataset
    from envsim.training.sft_cpu import read_samples

    write_sft_dataset(calls, args.work / arm / "data", "in_env", "mdp-view", version="3",
                      cutoff=ARMS[arm].get("cutoff", 2048),
                      tokenizer=counter, append_form="dash", replace_tests=ARMS[arm]["replace_tests"],
                      logged_examples=ARMS[arm].get("examples", 0))
    kept = {s["id"] for s in read_samples(args.work / arm / "data" / "in_env.jsonl")}
    if kept != {r["id"] for r in calls}:
        raise SystemExit(f"{arm}: {len({r['id'] for r in calls} - kept)} calls did not fit the cutoff")


def train(args: argparse.Namespace) -> None:
    """The arms' CPU SFT side by side (``envsim train sft --device cpu``), the cores shared between them;
    an arm of ``scale`` x the calls makes ``--epochs`` / ``scale`` passes, the same number of steps."""
    envsim = str(Path(sys.executable).with_name("envsim"))
    pending = [arm for arm in args.arms if not (args.work / arm / "sft" / "summary.json").is_file()]
    threads = args.threads or max(1, 2 // max(len(pending), 1))
    running = {}
    for arm in pending:
        command = [envsim, "train", "sft", "--device", "cpu", "--model", str(args.model), "--data",
                   str(args.work / arm / "data"), "--out", str(args.work / arm / "sft"),
                   "--cutoff", str(ARMS[arm].get("cutoff", 2048)),
                   "--lr", str(args.lr), "--epochs", str(args.epochs / ARMS[arm]["scale"]), "--batch", "1",
                   "--finetuning", "freeze", "--freeze-layers", str(ARMS[arm].get("layers", 8)),
                   "--threads", str(threads),
                   "--prompt-grad", ARMS[arm].get("prompt_grad", "full")]
        log = open(args.work / arm / "sft.log", "a")
        running[arm] = (subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), log)
    for arm, (process, log) in running.items():
        code = process.wait()
        log.close()
        if code:
            raise SystemExit(f"{arm}: train sft exited {code} (log: {args.work / arm / 'sft.log'})")


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    """Greedy answers of each arm's model to the held-out calls, scored; WORK/result.json (every decoded arm)."""
    from envsim.evaluation.prompting.logged_calls import load_logged_calls
    from envsim.evaluation.prompting.prompts import build_messages
    from envsim.training.local_eval import generate_answers
    from envsim.training.sft_cpu import read_samples

    import torch

    torch.set_num_threads(args.eval_threads)
    heldout = read_samples(args.work / "heldout.jsonl")
    for arm in args.arms:                     # decode what is not decoded yet (an arm at a time, resumable)
        if kept_answers(args.work / arm / "answers.jsonl", heldout) is None:
            k = ARMS[arm].get("examples", 0)
            pool = load_logged_calls(args.work / arm / "data") if k else None
            examples = pool.examples_for(k) if pool else (lambda record: ())
            prompts = [build_messages(r, "mdp-view", version="3", examples=examples(r)) for r in heldout]
            started = time.monotonic()
            answers = generate_answers(args.work / arm / "sft" / "checkpoints", prompts,
                                       max_new_tokens=args.max_new, batch_size=1)
            (args.work / arm / "answers.jsonl").write_text("".join(json.dumps({"id": r["id"], "answer": a}) + "\n"
                                                                   for r, a in zip(heldout, answers)))
            (args.work / arm / "decode_seconds").write_text(f"{time.monotonic() - started:.1f}\n")
    decoded = {arm: answers for arm in ARMS
               if (answers := kept_answers(args.work / arm / "answers.jsonl", heldout)) is not None}
    result: dict[str, Any] = {"tools": list(args.tools), "heldout": len(heldout), "arms": {}, "paired": {}}
    right = {arm: [cm_right(r, a) for r, a in zip(heldout, answers)] for arm, answers in decoded.items()}
    for arm, answers in decoded.items():
        result["arms"][arm] = arm_row(args, arm, heldout, answers)
        if arm != BASELINE and BASELINE in right:
            result["paired"][arm] = paired(right[BASELINE], right[arm], arm)
            print(f"paired CM, {BASELINE} against {arm}: "
                  + ", ".join(f"{k} {v}" for k, v in result["paired"][arm].items()))
    (args.work / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def cm_right(record: dict[str, Any], answer: str) -> bool:
    """Whether the answer's next state matches exactly (the scorer's CM)."""
    from envsim.training.local_eval import score_answers

    return score_answers([record], [answer])["cm"] == 1.0


def arm_row(args: argparse.Namespace, arm: str, heldout: list[dict[str, Any]], answers: list[str]) -> dict[str, Any]:
    """One arm's scores, CM per tool, patch-op F1, failing tests and costs; printed as one line."""
    from envsim.training.local_eval import score_answers

    by_tool = defaultdict(list)
    for record, answer in zip(heldout, answers):
        by_tool[tool_key(record)].append(cm_right(record, answer))
    summary = json.loads((args.work / arm / "sft" / "summary.json").read_text())
    row = {**score_answers(heldout, answers), "train_samples": summary.get("samples"),
           "cm_by_tool": {t: sum(v) / len(v) for t, v in sorted(by_tool.items())},
           "failing_tests": sum(failing_test(r, a) for r, a in zip(heldout, answers)),
           "patch_op_f1": round(sum(patch_f1(r, a) for r, a in zip(heldout, answers)) / max(len(heldout), 1), 3),
           "train_seconds": summary["train_seconds"], "steps": summary.get("steps"),
           "prompt_grad": summary.get("prompt_grad", "full"),
           "decode_seconds": float((args.work / arm / "decode_seconds").read_text()),
           "last_epoch_greedy_exact": summary["last_epoch_greedy_exact"]}
    print(f"{arm:14s} parse-valid {row['parse_valid']:.0%}  FM {row['fm']:.0%}  CM {row['cm']:.0%} "
          f"({round(row['cm'] * len(heldout))}/{len(heldout)})  patch-op F1 {row['patch_op_f1']:.2f}  "
          f"failing tests {row['failing_tests']}  by tool "
          + ", ".join(f"{t.split(':')[1]} {v:.0%}" for t, v in row["cm_by_tool"].items())
          + f"  train {row['train_seconds']:.0f} s, train-set exact in the last epoch "
            f"{row['last_epoch_greedy_exact']:.0%}")
    return row


def paired(first: list[bool], second: list[bool], name: str) -> dict[str, int]:
    """Paired CM counts of two arms on the same held-out calls (the discordant pairs decide a McNemar test)."""
    return {"both": sum(a and b for a, b in zip(first, second)),
            f"only_{BASELINE}": sum(a and not b for a, b in zip(first, second)),
            f"only_{name}": sum(b and not a for a, b in zip(first, second)),
            "neither": sum(not a and not b for a, b in zip(first, second))}


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
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS),
                        help="the arms to build, train and decode (the report covers every decoded arm)")
    parser.add_argument("--threads", type=int, default=0, help="threads per training arm (0: the 2 cores shared)")
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

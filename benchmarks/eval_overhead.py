"""Evaluator overhead, end to end, against a local OpenAI-compatible server (``evaluation/fake_server.py``).

    python benchmarks/eval_overhead.py [--samples 400] [--latency 0.1] [--concurrency 64] [--repeats 3]

Runs the real ``envsim eval --model oracle --base-url URL`` command as a child process on the shipped v1
test split (the fake server answers with the oracle's answers, in its own process) and prints, as the
median of ``--repeats`` runs:

1. start-up: CPU and wall of ``envsim eval --help`` (interpreter, imports of the command line);
2. zero-latency server, concurrency 8 (the default): the command's CPU time in total and per sample
   (total minus start-up, divided by the samples), its wall time and its peak memory (max RSS);
3. a server that takes ``--latency`` seconds per request at ``--concurrency``: wall time against the
   floor ``samples / concurrency * latency``.

Prompt sizes are counted (not estimated) with ``envsim.tokens``: see ``benchmarks/prompt_tokens.py``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENVSIM = [sys.executable, "-c", "from envsim.cli import main; main()"]


def child_run(args: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of one child ``envsim`` command."""
    env = {**os.environ, "ENVSIM_PROGRESS": "off"}
    with tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(ENVSIM + args, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)  # this child's own usage (not the server's)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"envsim {' '.join(args)} exited {proc.returncode}: {err.read()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def eval_args(base_url: str, run_dir: Path, samples: int, concurrency: int) -> list[str]:
    """The ``envsim eval`` command line of one measured run."""
    limit = [] if samples >= 400 else ["--limit", str(samples)]
    return ["eval", "--model", "oracle", "--base-url", base_url, "--run-dir", str(run_dir), "--overwrite",
            "--concurrency", str(concurrency), *limit]


def measure(records: list[dict], samples: int, latency: float, concurrency: int, repeats: int
            ) -> tuple[float, float, float]:
    """Median wall, median CPU and the largest peak RSS of ``repeats`` evaluations against a fresh server."""
    from envsim.evaluation.fake_server import server_process

    walls, cpus, peaks = [], [], []
    with server_process(records, latency=latency) as base_url, tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            wall, cpu, peak = child_run(eval_args(base_url, Path(tmp) / f"run{i}", samples, concurrency))
            walls.append(wall)
            cpus.append(cpu)
            peaks.append(peak)
            shutil.rmtree(Path(tmp) / f"run{i}", ignore_errors=True)
    return statistics.median(walls), statistics.median(cpus), max(peaks)


def main() -> None:
    """Run the three measurements and print them."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from envsim.benchmark import load

    records = load("v1", "test")
    samples = min(args.samples, len(records))
    startups = [child_run(["eval", "--help"]) for _ in range(args.repeats)]
    startup_wall = statistics.median(s[0] for s in startups)
    startup_cpu = statistics.median(s[1] for s in startups)
    print(f"start-up (envsim eval --help): {startup_cpu:.2f} s CPU, {startup_wall:.2f} s wall")
    wall, cpu, peak = measure(records, samples, 0.0, 8, args.repeats)
    print(f"{samples} samples, zero-latency server, concurrency 8: {cpu:.2f} s CPU in total "
          f"({1000 * (cpu - startup_cpu) / samples:.2f} ms per sample after start-up), {wall:.2f} s wall "
          f"(server process not included in CPU), peak memory {peak:.0f} MB")
    wall, cpu, _ = measure(records, samples, args.latency, args.concurrency, args.repeats)
    floor = samples / args.concurrency * args.latency
    print(f"{samples} samples at {1000 * args.latency:.0f} ms latency, concurrency {args.concurrency}: "
          f"{wall:.2f} s wall (latency floor {floor:.2f} s, {wall / floor:.2f}x), {cpu:.2f} s CPU")


if __name__ == "__main__":
    main()

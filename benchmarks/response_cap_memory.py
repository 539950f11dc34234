"""Peak memory of ``envsim eval`` when every answer is 100 MB, with and without the response cap.

    python benchmarks/response_cap_memory.py [--samples 8] [--concurrency 8] [--mb 100] [--uncapped]

A local hostile server (its own process) answers every prompt with a ``--mb`` MB chunked body;
``envsim eval`` runs in a child process on normal answers (the baseline), with the default cap
(4 MiB) and, with ``--uncapped``, with the cap raised above the answer size (what happened before
the cap existed; slow: the whole answer is decoded and its tokens counted). Prints peak RSS.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def peak_rss_mb(cmd: list[str]) -> tuple[float, float, int]:
    """Run ``cmd`` in a fresh child (via a wrapper, so RUSAGE_CHILDREN is its own); peak RSS MB, seconds, rc."""
    wrapper = ("import resource, subprocess, sys, json; rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, "
               "stderr=subprocess.DEVNULL); print(json.dumps([resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc]))")
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True, check=True).stdout
    kb, rc = json.loads(out.strip().splitlines()[-1])
    return kb / 1024, time.monotonic() - start, rc


def main() -> None:
    """Measure and print peak memory with and without the cap."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--uncapped", action="store_true")
    args = parser.parse_args()
    from envsim.benchmark import load
    from envsim.evaluation.baselines.hostile_server import hostile_server_process

    every = load("v1", "test")
    records, normal = every[: args.samples], every[args.samples: 2 * args.samples]  # normal: answered truly
    process, url = hostile_server_process(records + normal, {r["id"]: "huge" for r in records},
                                          huge_bytes=args.mb << 20)
    runs = [("normal answers (baseline)", normal, None), ("cap 4 MiB (default)", records, None)]
    if args.uncapped:
        runs.append((f"cap above the answer ({args.mb + 50} MiB)", records, (args.mb + 50) << 20))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for number, (label, rows, cap) in enumerate(runs):
                bench = Path(tmp) / f"bench{number}.jsonl"
                bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
                cmd = [sys.executable, "-m", "envsim.cli.main", "eval", "--model", "hostile", "--base-url", url,
                       "--benchmark", str(bench), "--run-dir", str(Path(tmp) / f"run-{number}"),
                       "--concurrency", str(args.concurrency), "--max-retries", "0", "--timeout", "300"]
                if cap:
                    cmd += ["--max-response-bytes", str(cap)]
                rss, seconds, rc = peak_rss_mb(cmd)
                print(f"{label:36} {args.samples} x {args.mb} MB answers, concurrency {args.concurrency}: "
                      f"peak RSS {rss:7.1f} MB, {seconds:5.1f} s, exit {rc}")
    finally:
        process.terminate()
        process.join(10)


if __name__ == "__main__":
    main()

"""Client CPU of ``envsim eval`` from two checkouts, run at the same time: a comparison that holds on a machine whose
speed drifts from minute to minute (on 2026-11-26 one identical Python loop took 1.33-2.45 s, so runs one after
the other could not tell a 5 % change from the noise).

    git worktree add /tmp/other COMMIT && python -m venv /tmp/other-venv && /tmp/other-venv/bin/pip install -e /tmp/other
    python benchmarks/eval_cpu_pairs.py --other /tmp/other-venv/bin/python [--samples 1600] [--pairs 6]
                                        [--records FILE] [--other-figure MS]

Each pair starts both commands together against one table server (``table_server.py``; the oracle's answers after
a line of prose), each pinned to one CPU, the two swapping CPUs every pair; the server takes whatever CPU is left.
Both see the same machine for the same seconds, so their CPU ratio keeps little of the drift. Printed: each pair's
CPU (``os.wait4``: user + system of the command) and ratio (this checkout's over the other's), the same for CPU per
sample after start-up (the CPU of ``envsim eval --help``, run as a pair just before, subtracted: the figure
``eval_overhead.py`` reports), then the medians and ranges. One unmeasured run of each first byte-compiles what they
import. Linux only (CPU pinning).

``--other-figure MS``: a CPU per sample after start-up the other checkout once measured, e.g. the figure an issue
was filed with, on a day the machine ran at another speed. The script then also prints this checkout's figure
scaled by the median per-sample ratio: an estimate of what it would have measured that day, labelled as one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from child_usage import child_environment  # noqa: E402 - sibling modules of this script
from eval_overhead import RECORDS_HELP, answer_table, eval_args, write_benchmark  # noqa: E402
from table_server import table_server  # noqa: E402


def start(python: str, cpu: int, args: list[str], log: Path) -> subprocess.Popen:
    """``envsim ARGS`` of the checkout ``python`` belongs to, pinned to ``cpu``, its stderr written to ``log``. It runs
    in ``log``'s folder: ``python -c`` puts its working directory first on ``sys.path``, so run from a checkout it
    would import that checkout's ``envsim`` whatever ``python`` is."""
    with log.open("w") as handle:
        return subprocess.Popen(["taskset", "-c", str(cpu), python, "-c", "from envsim.cli import main; main()",
                                 *args], env=child_environment({"ENVSIM_PROGRESS": "lines"}), cwd=log.parent,
                                stdout=subprocess.DEVNULL, stderr=handle)


def package_folder(python: str, cwd: Path) -> str:
    """The folder of the ``envsim`` package that ``python`` imports when run in ``cwd``."""
    code = "import envsim, os; print(os.path.dirname(os.path.realpath(envsim.__file__)))"
    return subprocess.run([python, "-c", code], cwd=cwd, env=child_environment(), capture_output=True, text=True,
                          check=True).stdout.strip()


def finish(process: subprocess.Popen, label: str, log: Path) -> float:
    """CPU seconds of a started command (user + system); exits with its stderr's tail when it failed."""
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{label} failed: {log.read_text(errors='replace')[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    """Run the pairs and print them."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--other", required=True, help="the Python of the other checkout's environment")
    parser.add_argument("--samples", type=int, default=1600, help="samples per run (the records repeated)")
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--records", default="v1", help=RECORDS_HELP)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--other-figure", type=float, default=None, metavar="MS",
                        help="a CPU per sample after start-up the other checkout once measured (e.g. an issue's figure "
                             "from a day the machine ran at another speed): also print this checkout's figure scaled "
                             "by the median ratio, labelled an estimate")
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("two CPUs are needed: one per command")
    from envsim.benchmark import load

    records = load(args.records, "test")
    pythons = {"this": sys.executable, "other": args.other}
    with tempfile.TemporaryDirectory() as name, table_server(answer_table(records)) as base_url:
        tmp = Path(name)
        bench = write_benchmark(records, args.samples, tmp / "bench.jsonl")
        logs = {label: tmp / f"{label}.log" for label in pythons}
        folders = {label: package_folder(python, tmp) for label, python in pythons.items()}
        print(f"this: {folders['this']}; other: {folders['other']}", flush=True)
        if folders["this"] == folders["other"]:
            raise SystemExit("both Pythons import the same envsim: nothing would be compared")
        for label, python in pythons.items():  # not measured: byte-compiles what a run imports
            warm = start(python, 0, eval_args(base_url, bench, tmp / f"warm-{label}", args.concurrency), logs[label])
            finish(warm, label, logs[label])
        ratios, sample_ratios = [], []
        for pair in range(args.pairs):
            cpus = {"this": pair % 2, "other": 1 - pair % 2}
            startup = run_pair(pythons, cpus, lambda label: ["eval", "--help"], logs)
            cpu = run_pair(pythons, cpus, lambda label: eval_args(base_url, bench, tmp / label, args.concurrency), logs)
            ratios.append(cpu["this"] / cpu["other"])
            per_sample = {label: 1000 * (cpu[label] - startup[label]) / args.samples for label in pythons}
            sample_ratios.append(per_sample["this"] / per_sample["other"])
            print(f"pair {pair + 1}: this {cpu['this']:.2f} s CPU (cpu {cpus['this']}; {per_sample['this']:.2f} ms per "
                  f"sample after start-up), other {cpu['other']:.2f} s (cpu {cpus['other']}; "
                  f"{per_sample['other']:.2f} ms), ratio {ratios[-1]:.3f} ({sample_ratios[-1]:.3f} per sample after "
                  "start-up)", flush=True)
    middle = statistics.median(sample_ratios)
    print(f"this / other, {args.samples} samples, {args.pairs} pairs: median {statistics.median(ratios):.3f}, "
          f"range {min(ratios):.3f}-{max(ratios):.3f}; per sample after start-up: median {middle:.3f}, "
          f"range {min(sample_ratios):.3f}-{max(sample_ratios):.3f}")
    if args.other_figure is not None:
        print(f"estimate: where the other checkout measured {args.other_figure:.2f} ms per sample after start-up, this "
              f"one would measure {args.other_figure * middle:.2f} ms ({args.other_figure * min(sample_ratios):.2f}-"
              f"{args.other_figure * max(sample_ratios):.2f}), scaled by the median ratio")


def run_pair(pythons: dict[str, str], cpus: dict[str, int], args_of: Callable[[str], list[str]],
             logs: dict[str, Path]) -> dict[str, float]:
    """CPU seconds of ``envsim ARGS`` (``args_of(label)``) run by both Pythons at once, each pinned to its CPU."""
    running = {label: start(python, cpus[label], args_of(label), logs[label]) for label, python in pythons.items()}
    return {label: finish(process, label, logs[label]) for label, process in running.items()}


if __name__ == "__main__":
    main()

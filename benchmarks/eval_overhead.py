"""Evaluator overhead, end to end, against a server that is never the bottleneck (``table_server.py``: one
asyncio process answering every request from a table of prompt -> answer).

    python benchmarks/eval_overhead.py [--sizes 400,4000,40000] [--latency 0.05] [--concurrency 64,256]
                                       [--latency-samples 4000] [--repeats 1] [--records FILE]

The benchmark of N samples is the shipped v1 test split (or the records of ``--records FILE``) repeated (ids
suffixed ``#k``) and written as a JSONL file. The v1 split repeated ten times is the issue's workload; a pool of
4,000 distinct records (``envsim construct --split test --pool 4000 --seed 7 --episodes 12 --out FILE``) is a
run with no repeated record; the server answers every prompt with the oracle's answer after a line of prose, in a fence (computed
once, before the server starts). Each figure is of the real ``envsim eval --model table --base-url URL``
command run as a child process, measured with ``os.wait4`` (the child's own CPU time, user + system, its
worker processes included; the server's is not) and its own peak resident memory (``VmHWM``, see
``child_usage.py``: ``ru_maxrss`` would start from this script's size), printed as the median of ``--repeats`` runs:

1. start-up: CPU and wall of ``envsim eval --help`` (interpreter and command-line imports);
2. for each size, zero latency, concurrency 64: the command's CPU in total and per sample after start-up
   ((total - start-up) / samples), wall, peak memory (max RSS) and when the first progress line appeared;
3. ``--latency`` seconds per request at each ``--concurrency`` over ``--latency-samples`` samples: wall
   against the latency floor ``ceil(samples / concurrency) * latency`` and against the client's own CPU.

Children run with Python's bytecode cache on (``child_usage.child_environment``), after one unmeasured run that
byte-compiles what they import, as a user's first run does once. Wall figures depend on what else runs on the
machine; CPU figures are the process's own.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from child_usage import run_python  # noqa: E402 - sibling modules of this script
from table_server import prompt_key, table_server  # noqa: E402

ENVSIM = ["-c", "from envsim.cli import main; main()"]


@dataclass
class Run:
    """One child ``envsim`` command: wall and CPU seconds, peak RSS (MB), seconds to its first progress line."""

    wall: float
    cpu: float
    peak_mb: float
    first_line: float | None


def child_run(args: list[str]) -> Run:
    """Run ``envsim ARGS`` with progress as plain lines; its own resource usage (``child_usage``: CPU from
    ``os.wait4``, peak memory its own ``VmHWM``, never the parent's size at fork)."""
    usage = run_python(ENVSIM + args, env={"ENVSIM_PROGRESS": "lines"})
    if usage.exit_code != 0:
        raise SystemExit(f"envsim {' '.join(args)} exited {usage.exit_code}: {usage.tail}")
    return Run(usage.wall, usage.cpu, usage.peak_mb, usage.first_line)


def write_benchmark(records: list[dict], samples: int, path: Path) -> Path:
    """``samples`` records: the split repeated, each copy's ids suffixed ``#k``, as a JSONL file."""
    with path.open("w", encoding="utf-8") as handle:
        for i in range(samples):
            record = dict(records[i % len(records)])
            record["id"] = f"{record['id']}#{i // len(records)}"
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def answer_table(records: list[dict]) -> dict[str, str]:
    """Prompt (``prompt_key`` of the messages of prompt version 1, ``mdp``) -> the oracle's answer after prose,
    in a fence."""
    from envsim.evaluation.prompting.prompts import build_messages
    from envsim.evaluation.endpoints.providers import oracle_answer

    return {prompt_key(build_messages(r, "mdp", version="1")):
            "Let me trace the code first.\n```json\n" + oracle_answer(r) + "\n```" for r in records}


RECORDS_HELP = ("the records the samples cycle through: a shipped benchmark's test split (v1) or a JSONL file, e.g. "
                "a pool of distinct records from 'envsim construct --split test --pool 4000 --out FILE'")


def eval_args(base_url: str, bench: Path, run_dir: Path, concurrency: int) -> list[str]:
    """The ``envsim eval`` command line of one measured run."""
    return ["eval", "--model", "table", "--base-url", base_url, "--benchmark", str(bench), "--run-dir", str(run_dir),
            "--overwrite", "--concurrency", str(concurrency)]


def measure(base_url: str, bench: Path, tmp: Path, concurrency: int, repeats: int) -> Run:
    """Median wall and CPU, largest peak and slowest first line of ``repeats`` runs."""
    runs = [child_run(eval_args(base_url, bench, tmp / f"run{i}", concurrency)) for i in range(repeats)]
    firsts = [r.first_line for r in runs if r.first_line is not None]
    return Run(statistics.median(r.wall for r in runs), statistics.median(r.cpu for r in runs),
               max(r.peak_mb for r in runs), max(firsts) if firsts else None)


#: A fixed workload of the standard library alone (JSON round trips of the frozen v1 test file, a Python loop): its
#: CPU shows how fast the machine runs Python at the moment, whatever EnvSim's code becomes.
REFERENCE = ("import json, pathlib, sys\n"
             "text = pathlib.Path(sys.argv[1]).read_text(encoding='utf-8')\n"
             "for _ in range(5):\n"
             "    json.dumps([json.loads(line) for line in text.splitlines() if line.strip()], sort_keys=True)\n"
             "total = 0\n"
             "for i in range(3_000_000):\n"
             "    total += i\n")


def reference_cpu() -> float:
    """CPU seconds of ``REFERENCE`` in a child: printed before and after the measured runs, so figures of
    different days (or a machine whose speed drifts during the measurement) can be told apart."""
    from envsim.benchmark import benchmark_path

    return run_python(["-c", REFERENCE, str(benchmark_path("v1", "test"))]).cpu


def main() -> None:
    """Run the measurements and print them."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="400,4000,40000", help="sample counts of the zero-latency runs")
    parser.add_argument("--concurrency", default="64,256", help="concurrencies of the latency runs")
    parser.add_argument("--latency", type=float, default=0.05, help="server latency (s) of the latency runs")
    parser.add_argument("--latency-samples", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--records", default="v1", help=RECORDS_HELP)
    args = parser.parse_args()
    from envsim.benchmark import load

    records = load(args.records, "test")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    table = answer_table(records)
    print(f"machine: reference workload {reference_cpu():.2f} s CPU before the runs", flush=True)
    child_run(["eval", "--help"])  # not measured: byte-compiles the command-line modules (child_environment)
    startups = [child_run(["eval", "--help"]) for _ in range(max(3, args.repeats))]
    startup_cpu = statistics.median(s.cpu for s in startups)
    print(f"start-up (envsim eval --help): {startup_cpu:.2f} s CPU, {statistics.median(s.wall for s in startups):.2f} s "
          "wall", flush=True)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        with table_server(table) as base_url:
            # not measured: byte-compiles what a run imports (EnvSim's modules, the environments of its records),
            # as a user's first run does once
            child_run(eval_args(base_url, write_benchmark(records, min(len(records), 400), tmp / "warm.jsonl"), tmp / "warm", 64))
            for samples in sizes:
                bench = write_benchmark(records, samples, tmp / f"bench{samples}.jsonl")
                run = measure(base_url, bench, tmp / f"zero{samples}", 64, args.repeats)
                first = f"{run.first_line:.2f} s" if run.first_line is not None else "none"
                print(f"{samples} samples, zero latency, concurrency 64: {run.cpu:.2f} s CPU "
                      f"({1000 * (run.cpu - startup_cpu) / samples:.2f} ms per sample after start-up), "
                      f"{run.wall:.2f} s wall, peak memory {run.peak_mb:.0f} MB, first progress line {first}",
                      flush=True)
        samples = args.latency_samples
        bench = write_benchmark(records, samples, tmp / f"bench{samples}.jsonl")
        with table_server(table, latency=args.latency) as base_url:
            for concurrency in [int(c) for c in args.concurrency.split(",") if c and samples]:
                run = measure(base_url, bench, tmp / f"latency{concurrency}", concurrency, args.repeats)
                floor = math.ceil(samples / concurrency) * args.latency
                print(f"{samples} samples at {1000 * args.latency:.0f} ms latency, concurrency {concurrency}: "
                      f"{run.wall:.2f} s wall, latency floor {floor:.2f} s ({run.wall / floor:.2f}x), "
                      f"{run.cpu:.2f} s client CPU ({run.wall / run.cpu:.2f}x its CPU), peak memory "
                      f"{run.peak_mb:.0f} MB", flush=True)
    print(f"machine: reference workload {reference_cpu():.2f} s CPU after the runs (a figure far from the one before "
          "means the machine's speed changed during the measurement)", flush=True)


if __name__ == "__main__":
    main()

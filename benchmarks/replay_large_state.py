"""Replay speed on a state of more than 3 MB (issue 53, must-show: at least 5 calls/s with ``--workers 2``, end to
end).

    PYTHONPATH=. python benchmarks/replay_large_state.py [--tasks 10] [--calls 15] [--workers 2] [--serial]

A log of ``--tasks`` tasks of ``--calls`` calls each is written for ``tests.fixtures.flights.big:BigAirlineEnv``
(the airline fixture at production size: a state of more than 3,000,000 characters; each call validates and dumps
the whole pydantic database, as the user's wrapper does): each task starts from the initial database, its calls
drawn by the generic explorer (``StateExplorer``, seeded by task). Each line carries its starting state, as a log
written by the user's own system does (``--no-state``: lines name the seed instead). Then ``envsim construct
--split test --policy replay --workers N`` runs end to end in a fresh process (imports, the check of the log,
labelling, records with verified views, counted view-prompt tokens, states stored once, files written) and its
wall time, CPU time (all processes) and calls per second are printed; with ``--serial``, also one process, and
whether both wrote the same files byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ENV = "tests.fixtures.flights.big:BigAirlineEnv"
MODULE = "tests.fixtures.flights.big"
ROOT = Path(__file__).resolve().parent.parent


def write_log(path: Path, tasks: int, calls: int, with_state: bool) -> int:
    """The replay log; returns the initial state's size in canonical JSON characters."""
    from envsim.construction.cow_labelling import EpisodeLabeller
    from envsim.construction.state_explorer import StateExplorer
    from envsim.delta import canonical_json
    from envsim.envs.registry import get_env
    from envsim.envs.sandbox import trust_module

    trust_module(MODULE)
    env_class = get_env(ENV)
    state = env_class.sample_state(0)
    head = json.dumps({"env": ENV, "state": state} if with_state else {"env": ENV, "seed": 0})[:-1]
    with path.open("w") as handle:
        for task in range(tasks):
            labeller, policy, actions = EpisodeLabeller(env_class, state), StateExplorer(2000 + task), []
            for _ in range(calls):
                action = policy.next_action(env_class, labeller.state)
                labeller.label(action)
                actions.append(action.to_json())
            handle.write(head + ', "actions": ' + json.dumps(actions) + "}\n")
    return len(canonical_json(state))


def children_cpu() -> float:
    """CPU seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def construct(log: Path, out: Path, workers: int) -> tuple[float, float]:
    """Wall and CPU seconds of ``envsim construct --policy replay`` in a fresh process (exit code checked)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cpu, started = children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-c", "from envsim.cli import main; main()", "construct", "--split", "test",
                           "--policy", "replay", "--replay-log", str(log), "--env-module", MODULE, "--out", str(out),
                           "--workers", str(workers), "--no-progress"], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"construct failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, children_cpu() - cpu


def files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--calls", type=int, default=15, help="calls per task")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-state", action="store_true", help="lines name the seed instead of carrying the state")
    parser.add_argument("--serial", action="store_true", help="also one process, and compare the files")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        log = work / "log.jsonl"
        chars = write_log(log, options.tasks, options.calls, not options.no_state)
        total = options.tasks * options.calls
        print(f"replay log: {options.tasks} tasks x {options.calls} calls = {total} calls on {ENV}, initial state "
              f"{chars:,} characters, {'each line carrying it' if not options.no_state else 'lines naming a seed'}; "
              f"log {log.stat().st_size / 1e6:.1f} MB")
        runs: dict[int, Any] = {}
        for workers in ([1] if options.serial else []) + [options.workers]:
            out = work / f"w{workers}" / "replayed.jsonl"
            out.parent.mkdir()
            wall, cpu = construct(log, out, workers)
            runs[workers] = out.parent
            print(f"construct --policy replay --workers {workers}, end to end: {total} calls in {wall:.1f} s = "
                  f"{total / wall:.2f} calls/s wall; {cpu:.1f} CPU-s in all processes = {total / cpu:.2f} calls per "
                  "CPU-second")
        if options.serial:
            same = files(runs[1]) == files(runs[options.workers])
            print(f"the same files from one process and {options.workers}: {'yes' if same else 'NO'}")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()

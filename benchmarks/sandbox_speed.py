"""Sandbox throughput for untrusted (string) classes: calls per second, in-process, cold and warm.

    python benchmarks/sandbox_speed.py [--calls 300] [--cold 10] [--threads 2]

- in-process: the same class run in this process without any sandbox (the upper bound);
- cold: a new confined worker per call (start, import, confine, call, stop);
- warm: one confined worker per class, a fresh forked child per call (the normal path);
- warm + determinism check: ``execute(..., check_determinism=True)`` steps per second;
- warm, N threads: N classes served in parallel by N workers (aggregate calls per second).

It also prints the CPU seconds one warm call costs (this process + the worker + its call children),
so the figure can be read on a busy machine too: calls/s per core = 1 / CPU seconds per call.
The target is at least 200 warm calls/s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time

from envsim.envs.adapters import from_envscaler
from envsim.envs.adapters.foreign import wrap_class
from envsim.envs.sandbox import call_in_process, close_workers, confinement_report, execute, run_request
from envsim.records import Action

SOURCE = '''
from typing import Optional

class Inventory:
    """A small store inventory."""

    def __init__(self, config):
        self.items = config["items"]
        self.log = config.get("log", [])

    def restock(self, sku: str, amount: int, note: Optional[str] = None) -> dict:
        """Add stock to an item.

        Args:
            sku: Item to restock.
            amount: Units to add.
            note: Optional note.
        """
        if sku not in self.items:
            return {"success": False, "error": f"unknown sku {sku}"}
        self.items[sku]["stock"] += amount
        self.log.append({"sku": sku, "amount": amount, "note": note})
        return {"success": True, "stock": self.items[sku]["stock"]}
'''
STATE = {"items": {f"S{i}": {"name": f"item {i}", "stock": i} for i in range(20)}, "log": []}
ACTION = {"name": "restock", "arguments": {"sku": "S3", "amount": 4}}


def _request(source: str = SOURCE) -> dict:
    return {"source": source, "class_name": "Inventory", "load": "init", "tools": ["restock"],
            "state": STATE, "action": ACTION}


def _rate(n: int, fn) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - start)


def _cpu_seconds(pids: list[int]) -> float:
    """CPU seconds of this process plus the given processes and their reaped children."""
    total = sum(os.times()[:2])
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += sum(int(v) for v in fields[11:15]) / tick  # utime, stime, cutime, cstime
    return total


def main() -> None:
    """Measure and print the figures (also as one JSON line)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--cold", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    layers = confinement_report()
    print("confinement layers:", {k: v or "active" for k, v in layers.items()})

    ns: dict = {}
    exec(compile(SOURCE, "<bench>", "exec"), ns)  # trusted benchmark source, for the in-process bound
    cls = wrap_class(ns["Inventory"], load="init", tools=["restock"], source=SOURCE)
    in_process = _rate(args.calls, lambda: call_in_process(cls, STATE, Action.from_json(ACTION)))

    cold = _rate(args.cold, lambda: run_request(_request(), fresh=True))

    run_request(_request())  # start the warm worker
    from envsim.envs.sandbox import runner as sandbox
    pids = [w.proc.pid for w in sandbox._POOL._workers.values()]
    cpu_before = _cpu_seconds(pids)
    warm = _rate(args.calls, lambda: run_request(_request()))
    cpu_per_call = (_cpu_seconds(pids) - cpu_before) / args.calls

    env = from_envscaler({"env_class_code": SOURCE, "env_class_name": "Inventory", "init_config": STATE})
    steps = _rate(max(args.calls // 2, 1), lambda: execute(env, STATE, ACTION, check_determinism=True))

    sources = [SOURCE.replace("Inventory", f"Inventory{i}") for i in range(args.threads)]
    for i, source in enumerate(sources):
        run_request({**_request(source), "class_name": f"Inventory{i}"})
    per_thread = args.calls // args.threads

    def worker(i: int) -> None:
        request = {**_request(sources[i]), "class_name": f"Inventory{i}"}
        for _ in range(per_thread):
            run_request(request)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.threads)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    parallel = per_thread * args.threads / (time.perf_counter() - start)
    close_workers()

    figures = {"in_process_calls_per_s": round(in_process), "cold_calls_per_s": round(cold, 1),
               "warm_calls_per_s": round(warm), "warm_steps_per_s_with_determinism_check": round(steps),
               f"warm_calls_per_s_{args.threads}_threads": round(parallel),
               "cpu_ms_per_warm_call": round(cpu_per_call * 1000, 2),
               "warm_calls_per_s_per_core_from_cpu": round(1 / cpu_per_call) if cpu_per_call else None,
               "cores": os.cpu_count(), "load_average_1min": round(os.getloadavg()[0], 2)}
    for key, value in figures.items():
        print(f"{key:45} {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

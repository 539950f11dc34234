"""Labelling one's own environment at τ speed (issue 43): replayed calls per second on the fixture shop, and the
weight of a stored pool.

    PYTHONPATH=. python benchmarks/replay_speed.py [--tasks 10] [--calls 15] [--baseline 4] [--pool 60]

1. **Replay speed.** A log of ``--tasks`` tasks of ``--calls`` calls each is written for the fixture shop
   (``tests.fixtures.shopdb.wrapper:ShopEnv``: a 1,126,205-character state, or ``--users/--orders/...`` for
   another size, drawn deterministically by ``make_db``): each task starts from the initial database and its
   calls are the generic explorer's (``StateExplorer``, seeded by task), each on the state the previous left.
   Then, timed on this machine:

   * ``executor``: the path construction took before (``envs.sandbox.executor.execute`` + ``labelling.to_record``:
     whole-state JSON round trips, the id hashed from the whole state) on the first ``--baseline`` calls;
   * ``labelling``: ``cow_labelling.label_calls`` over the whole log (the copy-on-write run; the tool itself
     included: the fixture's wrapper validates and dumps its whole pydantic database on every call);
   * ``construct``: ``envsim construct --split test --policy replay --replay-log LOG`` end to end (labelling,
     records with verified views, counted view-prompt tokens, states stored once, files written), in a fresh
     process, and its output's size; then the same with ``--workers N`` (whole tasks in N processes: the fastest
     wall time of ``--repeat``, and whether it wrote the same files byte for byte).

   Each timing is the run of ``--repeat`` that took the least CPU time (this process and its children), with its
   wall time: on a shared machine the wall time is what the load leaves, the CPU time what the work costs.

2. **Stored pool.** ``construct --split test --env tests.fixtures.shopdb.sized:MidShopEnv --pool N`` (a
   158,262-character state) and the bytes written (records file + state blobs), against the same records
   written inline (every record holding its state and next state).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SHOP = "tests.fixtures.shopdb.wrapper:ShopEnv"
MID = "tests.fixtures.shopdb.sized:MidShopEnv"


def write_log(path: Path, tasks: int, calls: int, sizes: dict[str, int] | None) -> tuple[str, int]:
    """The replay log: ``tasks`` explorer episodes of ``calls`` calls from the initial database; returns the
    environment id used and the initial state's length in canonical JSON characters."""
    from envsim.construction.cow_labelling import EpisodeLabeller
    from envsim.construction.state_explorer import StateExplorer
    from envsim.delta import canonical_json
    from envsim.envs.registry import get_env
    from envsim.envs.sandbox import trust_module

    trust_module("tests.fixtures.shopdb.wrapper")
    env_class = get_env(SHOP)
    state = env_class.sample_state(0)
    entry: dict[str, Any] = {"env": SHOP}
    if sizes:
        from tests.fixtures.shopdb.data import make_db

        state = env_class.normalise(make_db(0, **sizes).model_dump(mode="json"))
        entry["state"] = state
    lines = []
    for task in range(tasks):
        labeller, policy, actions = EpisodeLabeller(env_class, state), StateExplorer(1000 + task), []
        for _ in range(calls):
            action = policy.next_action(env_class, labeller.state)
            labeller.label(action)
            actions.append(action.to_json())
        lines.append(json.dumps({**entry, "actions": actions}))
    path.write_text("\n".join(lines) + "\n")
    return SHOP, len(canonical_json(state))


def best(runs: int, fn: Any) -> tuple[float, float, Any]:
    """Wall and CPU time (this process and its children) of the run of ``fn`` that took the least CPU of ``runs``
    (on a shared machine the CPU time is what the work costs, the wall time what the load allows), and the last
    result."""
    import resource

    def cpu() -> float:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    runs_: list[tuple[float, float]] = []
    result = None
    for _ in range(runs):
        wall, used = time.perf_counter(), cpu()
        result = fn()
        runs_.append((time.perf_counter() - wall, cpu() - used))
    wall, used = min(runs_, key=lambda run: run[1])  # the least disturbed run: the one the work cost least CPU
    return wall, used, result


def rate(count: int, wall: float, used: float) -> str:
    """``N calls in W s = R calls/s (C CPU-s: R' calls per CPU-second)``."""
    return (f"{count} calls in {wall:.1f} s = {count / wall:.1f} calls/s wall; {used:.1f} CPU-s = "
            f"{count / used:.1f} calls per CPU-second")


def executor_path(log: Path, calls: int) -> int:
    """Label the first ``calls`` logged calls as construction did before (executor + ``to_record``)."""
    from envsim.construction.labelling import to_record
    from envsim.construction.policies import read_log
    from envsim.envs.sandbox import execute

    episode = next(read_log(log))
    state, done = episode.state, 0
    for action in episode.actions[:calls]:
        transition = execute(episode.env_class, state, action)
        to_record(transition, episode.env_class, "test")
        state, done = transition.next_state, done + 1
    return done


def traced_path(episodes: list[Any]) -> tuple[int, int, float]:
    """Label every call of the read log's ``episodes`` copy-on-write; returns (calls, calls the executor labelled
    instead, CPU seconds spent in the tools themselves: the fixture's wrapper validating and dumping its whole
    database)."""
    import envsim.construction.cow_labelling as cow

    in_tools = [0.0]
    real = cow.call_tool

    def timed(env: Any, action: Any) -> Any:
        started = time.process_time()
        try:
            return real(env, action)
        finally:
            in_tools[0] += time.process_time() - started

    cow.call_tool = timed
    done = fallbacks = 0
    starts: dict[Any, Any] = {}
    try:
        for episode in episodes:
            for call in cow.label_calls(episode.env_class, episode.state, episode.actions, starts):
                done += 1
                fallbacks += not call.traced
    finally:
        cow.call_tool = real
    return done, fallbacks, in_tools[0]


def construct(args: list[str]) -> float:
    """Wall time of ``envsim construct ARGS`` in a fresh process (exit code checked)."""
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", "from envsim.cli import main; main()", "construct", *args,
                           "--no-progress"], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"construct failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds


def folder_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` (0 if it does not exist)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def inline_bytes(out: Path) -> int:
    """Bytes of ``out``'s records written with whole states (what the file weighs without stored states)."""
    from envsim.benchmark import load
    from envsim.construction.stored_states import materialise
    from envsim.envs.sandbox import trust_module

    trust_module("tests.fixtures.shopdb.sized")
    return sum(len(json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False)) + 1
               for r in materialise(load(str(out))))


def replay_figures(options: argparse.Namespace, work: Path) -> None:
    sizes = {k: getattr(options, k) for k in ("users", "products", "orders", "reviews") if getattr(options, k)}
    log = work / "log.jsonl"
    env_id, chars = write_log(log, options.tasks, options.calls, sizes or None)
    total = options.tasks * options.calls
    print(f"replay log: {options.tasks} tasks x {options.calls} calls = {total} calls on {env_id}, "
          f"initial state {chars:,} characters")
    wall, used, done = best(options.repeat, lambda: executor_path(log, options.baseline))
    print(f"executor (before): {rate(done, wall, used)}")
    from envsim.construction.policies import read_log

    wall, used, episodes = best(1, lambda: list(read_log(log)))
    print(f"reading the log (the initial state built and normalised once): {wall:.1f} s, {used:.1f} CPU-s")
    wall, used, (done, fallbacks, in_tools) = best(options.repeat, lambda: traced_path(episodes))
    print(f"labelling (copy-on-write): {rate(done, wall, used)}; {fallbacks} labelled by the executor; "
          f"the tool itself (the wrapper validating and dumping its database) {in_tools:.1f} CPU-s = "
          f"{1000 * in_tools / done:.0f} ms a call, EnvSim {1000 * (used - in_tools) / done:.0f} ms a call")
    out = work / "replayed.jsonl"
    wall, used, _ = best(options.repeat, lambda: construct(
        ["--split", "test", "--policy", "replay", "--replay-log", str(log), "--env-module",
         "tests.fixtures.shopdb.wrapper", "--out", str(out)]))
    written = sum(1 for line in out.read_text().splitlines() if line.strip())
    print(f"construct --policy replay, end to end (a fresh process: imports, the initial state and each tool's "
          f"shown code once included): {written} records, {rate(total, wall, used)}; "
          f"{out.stat().st_size / 1e6:.2f} MB + {folder_bytes(work / 'replayed_states') / 1e6:.2f} MB of blobs")
    if options.workers > 1:
        parallel = work / "parallel" / "replayed.jsonl"
        parallel.parent.mkdir()
        runs = [best(1, lambda: construct(
            ["--split", "test", "--policy", "replay", "--replay-log", str(log), "--env-module",
             "tests.fixtures.shopdb.wrapper", "--out", str(parallel), "--workers", str(options.workers)]))
            for _ in range(options.repeat)]
        wall_w, used_w, _ = min(runs)  # the fastest wall: the workers share the machine's cores
        same = parallel.read_bytes() == out.read_bytes() and all(
            (parallel.parent / p.relative_to(work)).read_bytes() == p.read_bytes()
            for p in (work / "replayed_states").rglob("*") if p.is_file())
        print(f"construct --policy replay --workers {options.workers}, end to end: {total} calls in {wall_w:.1f} s = "
              f"{total / wall_w:.1f} calls/s wall ({used_w:.1f} CPU-s in all processes); the same files as one "
              f"process: {'yes' if same else 'NO'}")
    first = work / "first.jsonl"  # the same start-up with one call per tool: what the whole log adds is per call
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    seen: dict[str, Any] = {}
    for entry in entries:
        for index, action in enumerate(entry["actions"]):
            seen.setdefault(action["name"], {**entry, "actions": entry["actions"][:index + 1]})
    first.write_text("".join(json.dumps(e) + "\n" for e in seen.values()))
    calls_first = sum(len(e["actions"]) for e in seen.values())
    wall_1, used_1, _ = best(options.repeat, lambda: construct(
        ["--split", "test", "--policy", "replay", "--replay-log", str(first), "--env-module",
         "tests.fixtures.shopdb.wrapper", "--out", str(work / "first_out.jsonl")]))
    more = total - calls_first
    if more > 0 and used > used_1:
        print(f"  start-up, measured on a log reaching each of the {len(seen)} tools once ({calls_first} calls): "
              f"{wall_1:.1f} s, {used_1:.1f} CPU-s; the other {more} calls: {rate(more, wall - wall_1, used - used_1)}")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


def pool_figures(options: argparse.Namespace, work: Path) -> None:
    out = work / "mid.jsonl"
    seconds = construct(["--split", "test", "--env", MID, "--pool", str(options.pool), "--episodes", "4",
                         "--steps", "20", "--out", str(out)])
    records = sum(1 for line in out.read_text().splitlines() if line.strip())
    stored, blobs = out.stat().st_size, folder_bytes(work / "mid_states")
    print(f"stored pool: {records} records of {MID} in {(stored + blobs) / 1e6:.2f} MB "
          f"({stored / 1e6:.2f} MB records + {blobs / 1e6:.2f} MB blobs; inline: {inline_bytes(out) / 1e6:.1f} MB); "
          f"built in {seconds:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--calls", type=int, default=15, help="calls per task")
    parser.add_argument("--baseline", type=int, default=4, help="calls labelled the executor's way")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--pool", type=int, default=60, help="records of the stored-pool figure (0: skip it)")
    parser.add_argument("--skip-replay", action="store_true")
    parser.add_argument("--workers", type=int, default=min(os.cpu_count() or 1, 4),
                        help="processes of the parallel end-to-end figure (1: skip it)")
    for name in ("users", "products", "orders", "reviews"):
        parser.add_argument(f"--{name}", type=int, default=0, help=f"{name} of a database of another size")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        if not options.skip_replay:
            replay_figures(options, work)
        if options.pool:
            pool_figures(options, work)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()

"""Issue 54's replay and point-release reproductions (findings 4-9), re-run at the issue's sizes: one line per
reproduction, ``held`` or ``FAILED``, with what was seen (wall time and peak memory where the issue gave them).

    PYTHONPATH=. python benchmarks/trust_round_four_replay.py [--only WORD ...]

Each ``construct`` runs in a fresh process, as a user's would. The unit tests
(tests/construction/test_trust_round_four_replay.py, tests/construction/test_trust_round_four_point_release.py)
hold scaled-down versions. Exit code 1 when any line failed.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from reproductions import Reproductions  # beside this script

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHOP = "tests.fixtures.shopdb.small:SmallShopEnv"
SHOP_MODULE = "tests.fixtures.shopdb.small"
SLOW = "tests.fixtures.slow_desk:SlowDesk"
SLOW_MODULE = "tests.fixtures.slow_desk"
WORK = Path(tempfile.mkdtemp(prefix="trust4-replay-"))
CHECKS = Reproductions()
check = CHECKS.check


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _construct_args(log: Path, out: Path, workers: int, module: str) -> list[str]:
    return [sys.executable, "-c", "from envsim.cli import main; main()", "construct", "--split", "test", "--policy",
            "replay", "--replay-log", str(log), "--env-module", module, "--out", str(out), "--no-progress",
            "--workers", str(workers)]


def construct(log: Path, out: Path, workers: int = 1, module: str = SHOP_MODULE) -> tuple[int, str, float, float]:
    """``envsim construct --policy replay`` in a fresh process: exit code, its stderr, wall seconds, its own peak
    resident MB (``child_usage``: never the parent's size)."""
    from child_usage import run_python

    usage = run_python(_construct_args(log, out, workers, module)[1:], env=_env())
    return usage.exit_code, usage.tail, usage.wall, usage.peak_mb


def good_lines(tasks: int = 2) -> str:
    """Log lines of the small shop: ``tasks`` tasks of two reads each."""
    return "".join(json.dumps({"env": SHOP, "actions": [
        {"name": "get_user_details", "arguments": {"user_id": f"user_{i}"}} for i in range(task, task + 2)]}) + "\n"
        for task in range(tasks))


def refused_at_line(name: str, bad: bytes, reason: str, workers: tuple[int, ...] = (1, 2)) -> tuple[bool, str]:
    """A log of two good lines and ``bad`` as line 3: refused at LOG:3 with ``reason``, no traceback, nothing
    written, in every mode of ``workers``."""
    log = WORK / f"{name}.jsonl"
    log.write_bytes(good_lines().encode() + bad + b"\n")
    seen = []
    held = True
    for count in workers:
        out = WORK / f"{name}-{count}" / "out.jsonl"
        code, output, wall, peak = construct(log, out, count)
        ok = code == 1 and f"{log}:3:" in output and reason in output and "Traceback" not in output \
            and not out.exists()
        held &= ok
        seen.append(f"--workers {count}: exit {code} in {wall:.1f} s, peak {peak:.0f} MB"
                    + ("" if ok else f" [{output.strip()[-160:]!r}]"))
    return held, f"{reason!r} at LOG:3; " + "; ".join(seen)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@check("4", "a log line nested 100,000 deep")
def deep_line() -> tuple[bool, str]:
    line = '{"env": "' + SHOP + '", "state": ' + '{"a": ' * 100_000 + "1" + "}" * 100_000 + ', "actions": []}'
    return refused_at_line("deep-line", line.encode(), "nested deeper than 200 levels")


@check("4", "a state nested 900 deep")
def deep_state() -> tuple[bool, str]:
    line = '{"env": "' + SHOP + '", "state": {"deep": ' + nested(900) + '}, "actions": []}'
    return refused_at_line("deep-state", line.encode(), "nested deeper than 200 levels")


@check("4", "a state holding 10 M values (the issue: 121 s, 3.8 GB, nothing written)")
def ten_million() -> tuple[bool, str]:
    line = '{"env": "' + SHOP + '", "state": {"x": [' + ",".join(["0"] * 10_000_000) + ']}, "actions": []}'
    return refused_at_line("ten-million", line.encode(), "more than 2,000,000 JSON values")


@check("4", "1e999 in arguments")
def infinity() -> tuple[bool, str]:
    line = '{"env": "' + SHOP + '", "actions": [{"name": "get_user_details", "arguments": {"user_id": 1e999}}]}'
    return refused_at_line("infinity", line.encode(), "overflows to infinity")


@check("4", "invalid UTF-8")
def not_utf8() -> tuple[bool, str]:
    line = b'{"env": "' + SHOP.encode() + b'", "note": "\xff\xfe", "actions": []}'
    return refused_at_line("utf8", line, "not UTF-8")


@check("4", "a 900-deep argument (was written into a benchmark file eval refuses)")
def deep_argument() -> tuple[bool, str]:
    line = ('{"env": "' + SHOP + '", "actions": [{"name": "get_user_details", "arguments": {"user_id": '
            + nested(900) + "}}]}")
    return refused_at_line("deep-argument", line.encode(), "nested deeper than 200 levels")


@check("5", "a bare \\r between two JSON objects: the same refusal in both modes, before any work")
def bare_cr() -> tuple[bool, str]:
    one = json.dumps({"env": SHOP, "actions": []})
    return refused_at_line("bare-cr", (one + "\r" + one).encode(), "not a JSON line (Extra data")


@check("5", "a \\r inside a valid line: accepted by both modes, the same files")
def cr_inside() -> tuple[bool, str]:
    log = WORK / "cr-inside.jsonl"
    log.write_text(good_lines().replace(', "actions"', ',\r"actions"'))
    outs = [WORK / f"cr-inside-{w}" / "out.jsonl" for w in (1, 2)]
    codes = [construct(log, out, w)[0] for out, w in zip(outs, (1, 2))]
    same = all(o.exists() for o in outs) and outs[0].read_bytes() == outs[1].read_bytes()
    return codes == [0, 0] and same, f"exit codes {codes}; same files: {same}"


def slow_log(path: Path, tasks: int) -> None:
    path.write_text("".join(json.dumps({"env": SLOW, "actions": [
        {"name": "raise_counter", "arguments": {"counter_id": f"C{1 + (task + k) % 4}"}} for k in range(task % 3 + 1)]})
        + "\n" for task in range(tasks)))


def start(log: Path, out: Path, workers: int) -> subprocess.Popen[str]:
    return subprocess.Popen(_construct_args(log, out, workers, SLOW_MODULE), env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def journaled(journal: Path) -> int:
    try:
        return journal.read_text().count('{"task":')
    except FileNotFoundError:
        return 0


def wait_for(journal: Path, count: int, process: subprocess.Popen[str]) -> bool:
    deadline = time.monotonic() + 120
    while journaled(journal) < count:
        if process.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def alive(pid: int) -> bool:
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


def clean_output(log: Path) -> bytes:
    out = WORK / f"clean-{log.stem}" / "out.jsonl"
    construct(log, out, 1, SLOW_MODULE)
    return out.read_bytes() if out.exists() else b""


def resumed(log: Path, out: Path, workers: int, kept: int, tasks: int) -> tuple[bool, str]:
    code, output, wall, _ = construct(log, out, workers, SLOW_MODULE)
    said = f"resuming from {out}.replay-journal: {kept} of {tasks} tasks" in output
    same = out.exists() and out.read_bytes() == clean_output(log)
    return code == 0 and said and same, f"re-run: exit {code} in {wall:.1f} s, resumed said: {said}, " \
                                        f"files as a clean run's: {same}"


@check("6", "kill -9 of a worker: no traceback, work kept, the re-run resumes")
def kill_worker() -> tuple[bool, str]:
    log, out = WORK / "kill-worker.jsonl", WORK / "kill-worker" / "out.jsonl"
    slow_log(log, 30)
    process = start(log, out, 2)
    if not wait_for(Path(f"{out}.replay-journal"), 4, process):
        return False, "no task journaled"
    os.kill(children(process.pid)[0], signal.SIGKILL)
    _, err = process.communicate(timeout=120)
    kept = journaled(Path(f"{out}.replay-journal"))
    first = process.returncode == 1 and "replay worker stopped unexpectedly" in err and "Traceback" not in err
    held, seen = resumed(log, out, 2, kept, 30)
    return first and held, f"exit {process.returncode}, {kept} tasks kept; {seen}"


@check("6", "kill -9 of the parent: no orphan workers")
def kill_parent() -> tuple[bool, str]:
    log, out = WORK / "kill-parent.jsonl", WORK / "kill-parent" / "out.jsonl"
    slow_log(log, 60)
    process = start(log, out, 2)
    if not wait_for(Path(f"{out}.replay-journal"), 2, process):
        return False, "no task journaled"
    workers = children(process.pid)
    process.kill()
    process.communicate(timeout=30)
    started = time.monotonic()
    while any(alive(pid) for pid in workers) and time.monotonic() - started < 10:
        time.sleep(0.02)
    left = [pid for pid in workers if alive(pid)]
    return not left and len(workers) == 2, f"{len(workers)} workers, {len(left)} alive " \
                                          f"{time.monotonic() - started:.2f} s after the kill"


@check("6", "Ctrl-C (SIGINT to the group): exit 130, what is kept said, the re-run resumes")
def ctrl_c() -> tuple[bool, str]:
    log, out = WORK / "ctrl-c.jsonl", WORK / "ctrl-c" / "out.jsonl"
    slow_log(log, 30)
    process = start(log, out, 2)
    if not wait_for(Path(f"{out}.replay-journal"), 4, process):
        return False, "no task journaled"
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=120)
    kept = journaled(Path(f"{out}.replay-journal"))
    first = process.returncode == 130 and "interrupted: " in err and "are kept in" in err and "Traceback" not in err
    held, seen = resumed(log, out, 2, kept, 30)
    return first and held, f"exit {process.returncode}: {err.strip()[:90]!r}...; {seen}"


@check("6", "a log changed after its check: named at its line, the work before it kept")
def changed_log() -> tuple[bool, str]:
    log, out = WORK / "changed.jsonl", WORK / "changed" / "out.jsonl"
    slow_log(log, 30)
    process = start(log, out, 2)
    if not wait_for(Path(f"{out}.replay-journal"), 2, process):
        return False, "no task journaled"
    lines = log.read_text().splitlines()
    lines[-1] = lines[-1].replace('"actions"', ' "actions"')
    log.write_text("\n".join(lines) + "\n")
    _, err = process.communicate(timeout=120)
    ok = process.returncode == 1 and f"{log}:30: the log changed after it was checked" in err and "are kept in" in err
    return ok, f"exit {process.returncode}: {err.strip()[-150:]!r}"


@check("7", "100,000 tasks with no calls: --workers 2 against one process (the issue: 5x slower)")
def many_tasks() -> tuple[bool, str]:
    from envsim.construction.replay_workers import replayed_records
    from envsim.envs.sandbox import trust_module

    trust_module(SHOP_MODULE)
    log = WORK / "many.jsonl"
    log.write_text((json.dumps({"env": SHOP, "actions": []}) + "\n") * 100_000)
    times = {}
    for workers in (1, 2):
        started = time.perf_counter()
        list(replayed_records(log, "test", workers))
        times[workers] = time.perf_counter() - started
    ratio = times[2] / times[1]
    return ratio < 1.5, f"one process {times[1]:.1f} s, --workers 2 {times[2]:.1f} s ({ratio:.2f}x)"


@check("8", "a symlink planted at OUT_states: no blob written through it")
def states_link() -> tuple[bool, str]:
    log, out = WORK / "states-link.jsonl", WORK / "states-link" / "replayed.jsonl"
    from tests.construction.test_replay_whole import _log

    _log(log, 3, 12)
    outside = WORK / "states-outside"
    outside.mkdir()
    out.parent.mkdir()
    (out.parent / "replayed_states").symlink_to(outside, target_is_directory=True)
    code, output, _, _ = construct(log, out, 1)
    written = list(outside.iterdir())
    return not written and code == 1 and "symbolic link" in output, \
        f"exit {code}, {len(written)} files outside: {output.strip()[-120:]!r}"


def folder_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def point_release(*args: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "envsim.construction.point_release", *args], capture_output=True,
                          text=True, env=_env())
    return done.returncode, done.stdout + done.stderr


def release_refused(args: list[str], watched: list[str], expect: str) -> tuple[bool, str]:
    from envsim.benchmark import BENCHMARK_DIR

    before = {name: folder_hash(BENCHMARK_DIR / name) for name in watched}
    code, output = point_release(*args)
    unchanged = {name: folder_hash(BENCHMARK_DIR / name) for name in watched} == before
    ok = code == 1 and expect in output and unchanged and "Traceback" not in output
    return ok, f"exit {code}, shipped folders unchanged: {unchanged}: {output.strip()[:110]!r}"


@check("9", "--base v1 --release v1 (was: v1 rewritten in place, then SameFileError)")
def release_onto_base() -> tuple[bool, str]:
    return release_refused(["--base", "v1", "--release", "v1"], ["v1"], "exists already")


@check("9", "--base v1 --release v2.1 (was: the shipped v2.1 test file replaced, 400 -> 3 lines)")
def release_onto_shipped() -> tuple[bool, str]:
    return release_refused(["--base", "v1", "--release", "v2.1"], ["v1", "v2.1"], "exists already")


@check("9", "../ and absolute release names")
def release_names() -> tuple[bool, str]:
    seen, held = [], True
    for name in ("../escaped-release", str(WORK / "absolute-release")):
        code, output = point_release("--base", "v1", "--release", name)
        ok = code == 1 and "a release is a plain folder name" in output and not (WORK / "absolute-release").exists() \
            and not (ROOT / "escaped-release").exists()
        held &= ok
        seen.append(f"{name}: exit {code}")
    return held, "; ".join(seen)


def small_base(name: str) -> Path:
    from envsim.benchmark import benchmark_path

    base = WORK / name / "base"
    (base / "states").mkdir(parents=True)
    lines = benchmark_path("v1", "test").read_text(encoding="utf-8").splitlines()[:3]
    (base / "test.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (base / "test_envs.txt").write_text("a\n")
    (base / "states" / "blob.json.gz").write_bytes(b"blob")
    return base


def derive(base: Path, out: Path) -> str:
    """``derive_release`` in this process; returns its error (``""`` when it wrote)."""
    from envsim.construction.point_release import ReleaseError, derive_release

    try:
        derive_release(base, out)
    except ReleaseError as exc:
        return str(exc)
    return ""


@check("9", "links planted in the output (were written through by copy2 / copytree)")
def output_links() -> tuple[bool, str]:
    base, out = small_base("out-links"), WORK / "out-links" / "release"
    victim = WORK / "out-links" / "victim.txt"
    victim.write_text("keep")
    out.mkdir()
    (out / "test_envs.txt").symlink_to(victim)
    (out / "test.jsonl").symlink_to(victim)
    first = derive(base, out)
    files_ok = victim.read_text() == "keep" and not first
    outside = WORK / "out-links" / "outside"
    outside.mkdir()
    (out / "states").rename(WORK / "out-links" / "old-states")
    (out / "states").symlink_to(outside, target_is_directory=True)
    second = derive(base, out)
    return files_ok and "writes no link" in second and not list(outside.iterdir()), \
        f"file links replaced, target kept: {files_ok}; folder link: {second[-70:]!r}"


@check("9", "links inside the base (were followed, their targets copied in)")
def base_links() -> tuple[bool, str]:
    base, out = small_base("base-links"), WORK / "base-links" / "release"
    (base / "test_envs.txt").unlink()
    (base / "test_envs.txt").symlink_to("/etc/passwd")
    error = derive(base, out)
    leaked = any("root:" in p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    return "symbolic link" in error and not leaked, f"{error[-80:]!r}; /etc/passwd copied: {leaked}"


def bad_base_line(name: str, line: str, expect: str) -> tuple[bool, str]:
    base = small_base(name)
    lines = (base / "test.jsonl").read_text(encoding="utf-8").splitlines()
    (base / "test.jsonl").write_text("\n".join([*lines[:2], line]) + "\n", encoding="utf-8")
    error = derive(base, WORK / name / "release")
    return "test.jsonl:3:" in error and expect in error, error[-120:]


def v1_record() -> dict:
    from envsim.benchmark import benchmark_path

    return json.loads(benchmark_path("v1", "test").read_text(encoding="utf-8").splitlines()[0])


def dump(record: dict) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@check("9", "an untrusted environment in the base")
def untrusted() -> tuple[bool, str]:
    return bad_base_line("untrusted", dump({**v1_record(), "env": "os:system"}), "cannot be used")


@check("9", "a non-JSON base line")
def non_json() -> tuple[bool, str]:
    return bad_base_line("non-json", "{not json", "not a JSON line")


@check("9", "a base line nested 100,000 deep")
def deep_base_line() -> tuple[bool, str]:
    return bad_base_line("deep-base", '{"env": ' + nested(100_000) + "}", "nested deeper than 200")


@check("9", "a changed code in the base (was carried into the release)")
def changed_code() -> tuple[bool, str]:
    return bad_base_line("changed-code", dump({**v1_record(), "code": "def f():\n    return 1\n"}),
                         "its code is not what")


@check("9", "a changed observation in the base (was carried into the release)")
def changed_observation() -> tuple[bool, str]:
    return bad_base_line("changed-observation", dump({**v1_record(), "observation": {"changed": True}}),
                         "its observation is not what")


@check("9", "a release that would change more than the import lines")
def release_changes_more() -> tuple[bool, str]:
    from envsim.construction import point_release as release

    old = v1_record()
    new = json.loads(json.dumps(old))
    new["observation"] = {"changed": True}
    problem = release.release_problem(old, new) or ""
    return "observation" in problem, problem[:120]


@check("9", "a record without env_version (skipped the environment check)")
def no_env_version() -> tuple[bool, str]:
    record = v1_record()
    record.pop("env_version")
    return bad_base_line("no-version", dump(record), "no env_version")


def main() -> int:
    """Run the checks (``--only WORD ...``); exit 1 unless all held."""
    return CHECKS.main(__doc__.split("\n\n")[0], WORK)


if __name__ == "__main__":
    sys.exit(main())

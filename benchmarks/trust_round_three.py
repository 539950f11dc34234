"""Issue 45's attacks at full size, each in its own process: wall time, peak RSS and how it ended.

    python benchmarks/trust_round_three.py [--only NAME ...]

The unit tests (tests/envs/test_view_bounds.py, tests/benchmark/test_deep_states.py, tests/test_safe_files.py,
tests/evaluation/test_run_dir_links.py, tests/benchmark/test_blob_cache.py) run scaled-down versions; this prints
the figures docs/threat-model.md quotes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time

ATTACKS: dict[str, str] = {
    # 1. a ~5 MB record: 100,000 records and 9,000 reads of a loop variable (the audit: ~2.5 hours)
    "view: 100k records x 9,000 loop reads": """
        from envsim.envs.views import compute_view
        state = {"d": {f"k{i}": {"a": i} for i in range(100_000)}}
        code = "def f(self):\\n    for x in self.d.values():\\n" + "        y = x['a']\\n" * 9_000 + "    return 1\\n"
        print(len(code), "code chars;", compute_view(state, "f", {}, code).widened)
    """,
    # 1b. one 20,000-element tuple, folded into ever longer text (the audit: 18 MB/s to 11.1 GB)
    "view: 20,000-element tuple, s = s + s": """
        from envsim.envs.views import compute_view
        tup = "(" + ",".join(str(i) for i in range(20_000)) + ")"
        code = f"T = {tup}\\n\\ndef f(self):\\n    s = str(T)\\n" + "    s = s + s\\n" * 60 + "    return self.d\\n"
        view = compute_view({"d": {"a": 1}}, "f", {}, code)
        print("view", view.state, view.widened)
    """,
    # 2. a 12 MB `code` field under mdp-view (the audit: 5.9 GB while parsed)
    "code: 12 MB under mdp-view": """
        from envsim.evaluation.prompting.prompts import view_problem
        code = "x = [" + "1," * 6_000_000 + "]\\n"
        print(view_problem({"code": code}))
    """,
    # 3. 11 stored ops of 190 levels each: a state 2,100 levels deep (the audit: RecursionError, exit 1, no summary)
    "deep: 2,100-level composed state, eval --model executor": """
        import json, shutil, sys
        from pathlib import Path
        from click.testing import CliRunner
        from envsim.benchmark import BENCHMARK_DIR
        from envsim.cli import main
        v2 = BENCHMARK_DIR / "v2"
        row = json.loads((v2 / "tau.jsonl").open().readline())
        out = Path(sys.argv[1])
        (out / "tau_states").mkdir(parents=True)
        for ref in (row["state_ref"]["base"], row["tools_ref"]):
            name = ref.removeprefix("sha256:") + ".json.gz"
            shutil.copyfile(v2 / "tau_states" / name, out / "tau_states" / name)
        def nest(n):
            v = 1
            for _ in range(n):
                v = {"a": v}
            return v
        ops, path = [], "/deep"
        for _ in range(11):
            ops.append({"op": "add", "path": path, "value": nest(190)})
            path += "/a" * 190
        bad = {**row, "id": "deep", "state_ref": {"base": row["state_ref"]["base"], "patch": ops}}
        (out / "tau_x.jsonl").write_text(json.dumps(row) + "\\n" + json.dumps(bad) + "\\n")
        result = CliRunner().invoke(main, ["eval", "--model", "executor", "--benchmark", str(out / "tau_x.jsonl"),
                                           "--no-progress", "--runs-root", str(out / "runs")])
        print("exit", result.exit_code, result.output.strip()[-200:])
    """,
    # 5. results.jsonl linked to /dev/zero, read by envsim report (the audit: read until MemoryError)
    "read: results.jsonl -> /dev/zero, envsim report": """
        import os, sys
        from pathlib import Path
        from click.testing import CliRunner
        from envsim.cli import main
        run = Path(sys.argv[1]) / "run"
        r = CliRunner().invoke(main, ["eval", "--model", "null", "--limit", "4", "--run-dir", str(run), "--no-progress"])
        assert r.exit_code == 0, r.output
        os.unlink(run / "results.jsonl")
        os.symlink("/dev/zero", run / "results.jsonl")
        result = CliRunner().invoke(main, ["report", str(run)])
        print("exit", result.exit_code, result.output.strip()[-160:])
    """,
    # 5b. a FIFO cm_by_delta.png, read by envsim view (the audit: hangs)
    "read: FIFO cm_by_delta.png, envsim view": """
        import os, sys
        from pathlib import Path
        from click.testing import CliRunner
        from envsim.cli import main
        run = Path(sys.argv[1]) / "run"
        r = CliRunner().invoke(main, ["eval", "--model", "null", "--limit", "4", "--run-dir", str(run), "--no-progress"])
        assert r.exit_code == 0, r.output
        os.unlink(run / "cm_by_delta.png")
        os.mkfifo(run / "cm_by_delta.png")
        result = CliRunner().invoke(main, ["view", str(run), "--out", str(Path(sys.argv[1]) / "page.html")])
        print("exit", result.exit_code, result.output.strip()[-120:])
    """,
    # Also: 256 KiB of shown code (7,500 methods) made into the executor's module (the audit: 6.4 s)
    "executor: 256 KiB of shown code": """
        import time
        from envsim.evaluation.baselines.executor_baseline import build_module
        code = "".join(f"def m{i}(self):\\n    return {i}\\n\\n" for i in range(7_500))
        started = time.perf_counter()
        build_module(code, "m5")
        print(f"{len(code):,} chars built in {time.perf_counter() - started:.2f} s")
    """,
    # Also: 8 blobs of ~1 M empty objects each (just under MAX_BLOB_VALUES) loaded in turn (the audit: 8 x 32 MiB of
    # {} in an 8-entry cache peaked at 6.3 GB; a 32 MiB one is now refused unparsed)
    "blobs: 8 blobs of 1 M {} each, then one of 32 MiB": """
        import gzip, hashlib, sys
        from pathlib import Path
        from envsim.benchmark import state_store
        folder = Path(sys.argv[1])
        def store(text):
            digest = hashlib.sha256(text).hexdigest()
            (folder / f"{digest}.json.gz").write_bytes(gzip.compress(text, 1))
            return "sha256:" + digest
        for i in range(8):
            ref = store(b'{"t":%d,"x":[' % i + b"{}," * 998_999 + b"{}]}")  # (bytes.join would cost 80 B an item)
            state_store.load_blob(str(folder), ref)
        print("cached blobs", len(state_store._BLOBS))
        ref = store(b'{"x":[' + b"{}," * 10_999_999 + b"{}]}")
        try:
            state_store.load_blob(str(folder), ref)
        except state_store.StateRefError as exc:
            print(str(exc)[-110:])
    """,
}


def run(name: str, body: str) -> None:
    """Run one attack in a child process; print its wall time, its own peak RSS and its last output line."""
    with tempfile.TemporaryDirectory() as scratch:
        started = time.monotonic()
        child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(body), scratch], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        output = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the largest child's so far
        child.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.monotonic() - started
    last = (output.strip().splitlines() or [""])[-1]
    print(f"{name}: {elapsed:.1f} s, peak RSS {usage.ru_maxrss / 1024:.0f} MiB, exit {child.returncode}\n"
          f"    {last[:300]}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="substrings of the attack names to run")
    args = parser.parse_args()
    for name, body in ATTACKS.items():
        if not args.only or any(part in name for part in args.only):
            run(name, body)


if __name__ == "__main__":
    main()

"""Hostile benchmark rows against ``envsim eval`` (issue 32): each row is written into a τ-style benchmark file
beside a copy of the shipped ``tau_states/``, and ``envsim eval --model null --benchmark FILE`` runs on it as a
user would, in its own process; the script prints the exit code, wall time, the process's peak RSS and the
first line of its error.

    python benchmarks/state_ref_attacks.py

Rows: the copy bomb in ``state_ref.patch`` (add 100 kB at /n, then 25 ``copy /n -> /n/b<i>``: 2^25 copies;
before the bound: 300 s and 10.6 GB when killed), the same bomb in a chained episode's step patch, a traversal
digest (``sha256:../../../../tmp/x``), a hash mismatch, and a v1 row whose ``code`` is 900 nested parentheses
evaluated with ``--prompt-mode mdp-view``. Target: each stops within 10 s below 500 MB, naming FILE:LINE.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from envsim.benchmark import BENCHMARK_DIR

V2 = BENCHMARK_DIR / "v2"
EPISODES = "<episodes>"  # a chained file has no --benchmark FILE route: its loader (load_episodes) is run
BOMB = ([{"op": "add", "path": "/n", "value": {"a": "x" * 100_000}}]
        + [{"op": "copy", "from": "/n", "path": f"/n/b{i}"} for i in range(25)])


def _first(path: Path) -> dict:
    return json.loads(path.open(encoding="utf-8").readline())


def attack_files(folder: Path) -> list[tuple[str, Path, list[str]]]:
    """(name, benchmark file, extra eval options) for every hostile row, written under ``folder``."""
    shutil.copytree(V2 / "tau_states", folder / "tau_states")
    row = _first(V2 / "tau.jsonl")
    base = row["state_ref"]["base"]
    episode = _first(V2 / "tau_chained.jsonl")
    episode["steps"][0]["patch"] = BOMB
    wrong = "sha256:" + "a" * 64
    shutil.copyfile(folder / "tau_states" / f"{base[7:]}.json.gz", folder / "tau_states" / f"{wrong[7:]}.json.gz")
    v1 = [json.loads(line) for line in (BENCHMARK_DIR / "v1" / "test.jsonl").open(encoding="utf-8").readlines()[:3]]
    v1[1]["code"] = "(" * 900 + ")" * 900
    files = {
        "copy bomb in state_ref.patch": ("tau_bomb.jsonl", [row, {**row, "id": "bomb", "state_ref": {"base": base, "patch": BOMB}}], []),
        "copy bomb in a chained step (loader)": ("tau_chained_bomb.jsonl", [episode], [EPISODES]),
        "traversal digest": ("tau_traversal.jsonl", [{**row, "state_ref": {"base": "sha256:../../../../tmp/x", "patch": []}}], []),
        "hash mismatch": ("tau_hash.jsonl", [row, {**row, "id": "swapped", "state_ref": {"base": wrong, "patch": []}}], []),
        "900 nested parentheses, mdp-view": ("deep_code.jsonl", v1, ["--prompt-mode", "mdp-view"]),
    }
    out = []
    for name, (file_name, rows, options) in files.items():
        path = folder / file_name
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        out.append((name, path, options))
    return out


def run_one(path: Path, options: list[str], runs: Path) -> tuple[int, float, float, str]:
    """Exit code, wall seconds, peak RSS in MB and the first error line of ``envsim eval`` on ``path`` (of the
    chained-episode loader for ``[EPISODES]``)."""
    command = [sys.executable, "-c", "from envsim.cli import main; main()", "eval", "--model", "null",
               "--benchmark", str(path), "--runs-root", str(runs), "--no-progress", *options]
    if options == [EPISODES]:
        command = [sys.executable, "-c", "import sys\nfrom envsim.construction.chained import load_episodes\ntry:\n"
                   f"    load_episodes({str(path)!r})\nexcept ValueError as exc:\n    sys.exit(f'Error: {{exc}}')"]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = process.stdout.read() if process.stdout else ""
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    error = next((line for line in output.splitlines() if line.startswith("Error")), output.strip()[-200:])
    return os.waitstatus_to_exitcode(status), wall, usage.ru_maxrss / 1024, error


def main() -> None:
    """Print one line per hostile row."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print(f"{'row':36} {'exit':>4} {'wall s':>7} {'peak MB':>8}  error")
        for name, path, options in attack_files(folder):
            code, wall, peak, error = run_one(path, options, folder / "runs")
            print(f"{name:36} {code:>4} {wall:7.2f} {peak:8.0f}  {error.replace(str(folder), '<tmp>')[:160]}")


if __name__ == "__main__":
    main()

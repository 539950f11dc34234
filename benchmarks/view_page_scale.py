"""``envsim view`` on a large run: the page's weight, ``view``'s wall time and peak memory, and how fast headless
Chromium shows the page.

    python benchmarks/view_page_scale.py [--samples 4000] [--model null] [--benchmark FILE] [--repeats 3]
    python benchmarks/view_page_scale.py --page PAGE.html        # Chromium figures of a page written elsewhere

A benchmark of ``--samples`` samples (benchmark v1 test repeated under new ids, or ``--benchmark FILE``) is scored
by ``--model`` (``null``: no server) into a run directory, ``envsim view`` writes its page in a child process (wall
seconds and its own peak resident memory, ``child_usage``), and Chromium opens the page ``--repeats`` times:

* ``render``: the page's own ``data-render-ms`` (from navigation to the first page of samples built and laid out);
* ``open``: the wall seconds of ``chromium --headless --screenshot`` on the page, beside the same on a blank page
  (the browser's own start); ``--dump-dom`` is not timed: it serialises the whole DOM, the embedded data included.

Prints one line per figure (medians).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from child_usage import run_python

CLI = "from envsim.cli import main; main()"


def chromium() -> str:
    """The Chromium binary (exit with a message when there is none)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        sys.exit("chromium is not installed (apt-get install -y chromium)")
    return found


def _chromium(page: Path, profile: Path, output: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--window-size=1400,1000",
                           *output, page.resolve().as_uri()], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"chromium failed on {page}: {done.stderr[-500:]}")
    return time.perf_counter() - start, done.stdout


def browser_figures(page: Path, work: Path, repeats: int) -> dict[str, float | None]:
    """Median in-page render ms, screenshot wall s of the page and of a blank page."""
    blank = work / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body>blank</body></html>")
    renders, opens, blanks = [], [], []
    for i in range(repeats):
        _, dom = _chromium(page, work / f"profile-dom-{i}", ["--dump-dom"])
        found = re.search(r'<body[^>]*data-render-ms="(\d+)"', dom)
        if found:
            renders.append(int(found.group(1)))
        opens.append(_chromium(page, work / f"profile-shot-{i}", [f"--screenshot={work / 'page.png'}"])[0])
        blanks.append(_chromium(blank, work / f"profile-blank-{i}", [f"--screenshot={work / 'blank.png'}"])[0])
    return {"render_ms": statistics.median(renders) if renders else None, "open_s": statistics.median(opens),
            "blank_s": statistics.median(blanks)}


def build_benchmark(path: Path, samples: int) -> None:
    """``samples`` records: benchmark v1 test repeated, each copy under new ids."""
    from envsim.benchmark import load

    records = load("v1", "test")
    with path.open("w", encoding="utf-8") as handle:
        for i in range(samples):
            record = records[i % len(records)]
            handle.write(json.dumps({**record, "id": f"{record['id']}~{i // len(records)}"}) + "\n")


def main() -> None:
    """Build, score and view the run, then print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=4000)
    parser.add_argument("--model", default="null")
    parser.add_argument("--benchmark", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--page", type=Path, default=None, help="only the Chromium figures of this page")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="envsim-view-scale-") as tmp:
        work = Path(tmp)
        page = args.page
        if page is None:
            bench = args.benchmark or work / "bench.jsonl"
            if args.benchmark is None:
                build_benchmark(bench, args.samples)
            run, page = work / "run", work / "page.html"
            scored = run_python(["-c", CLI, "eval", "--model", args.model, "--benchmark", str(bench),
                                 "--run-dir", str(run), "--no-progress"])
            if scored.exit_code != 0:
                sys.exit(f"eval failed: {scored.tail[-500:]}")
            viewed = run_python(["-c", CLI, "view", str(run), "--out", str(page)])
            if viewed.exit_code != 0:
                sys.exit(f"view failed: {viewed.tail[-500:]}")
            count = sum(1 for _ in bench.open(encoding="utf-8"))
            print(f"samples: {count} ({args.model} model)")
            print(f"view: {viewed.wall:.1f} s wall, {viewed.cpu:.1f} s CPU, peak {viewed.peak_mb:.0f} MB")
        print(f"page: {page.stat().st_size / 1e6:.1f} MB")
        figures = browser_figures(page, work, args.repeats)
        render = figures["render_ms"]
        print(f"chromium render (data-render-ms, median of {args.repeats}): "
              f"{'n/a (the page does not time itself)' if render is None else f'{render / 1000:.2f} s'}")
        print(f"chromium open (--screenshot wall, median of {args.repeats}): {figures['open_s']:.2f} s "
              f"(a blank page: {figures['blank_s']:.2f} s)")


if __name__ == "__main__":
    main()

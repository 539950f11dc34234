"""Print the parent's peak RSS while ``execute()`` labels calls whose answers are huge (issue 21.9).

    python benchmarks/state_size_memory.py [--mib 15.7]

A tool returns a next state holding ``[{}, {}, ...]`` of about MIB mebibytes as JSON (15.7 MiB = 4.1 million
values), or a 1,000,000-item list (under the value cap, over the Δ cap). The figure is VmHWM growth of this
process (Linux; the smaller case runs first): the values the tool builds count too, as a JSON decode of the same answer would.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from envsim.envs import Environment, tool
from envsim.envs.base import StateError
from envsim.envs.sandbox import execute


def _peak_mib() -> int:
    with open("/proc/self/status") as handle:
        return int(handle.read().split("VmHWM:")[1].split()[0]) // 1024


class Bloat(Environment):
    """A tool that fills the state with empty objects."""

    name = "bloat"
    items = 0

    @classmethod
    def sample_state(cls, seed: int) -> dict[str, Any]:
        """An empty list."""
        return {"items": []}

    @tool(write=True)
    def fill(self) -> dict:
        """Fill the list."""
        self.items = [{} for _ in range(type(self).items)]
        return {"success": True}


def main() -> None:
    """Run both cases and print peak RSS growth, seconds and the outcome."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=float, default=15.7)
    args = parser.parse_args()
    for label, items in (("1,000,000 {}", 1_000_000), (f"{args.mib} MiB of {{}}", int(args.mib * 2**20 / 4))):
        Bloat.items = items
        before = _peak_mib()
        started = time.perf_counter()
        try:
            outcome = f"labelled, |Δ| = {execute(Bloat, {'items': []}, {'name': 'fill', 'arguments': {}}).delta_size}"
        except StateError as exc:
            outcome = f"StateError: {exc}"
        print(f"{label:22} peak RSS +{_peak_mib() - before} MiB  {time.perf_counter() - started:.1f} s  {outcome}",
              flush=True)


if __name__ == "__main__":
    main()

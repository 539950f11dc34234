"""Print how long Δ labelling (``envsim.delta.compute_delta``) takes on long lists, hostile and ordinary.

    python benchmarks/delta_scaling.py [--sizes 500,1000,2000,10000]

Each case diffs ``{"items": old}`` against ``{"items": new}``, checks that the patch is exact (applying it to
the old state gives the new one) and prints seconds and |Δ|. The "repeats" cases are the ones difflib spends
n x m steps per block on (issue 21.7: 500 items took 1.8 s, 2,000 took 121 s before the alignment budget).
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any, Callable

from envsim.delta import apply_patch, compute_delta, same_json

Case = Callable[[int], tuple[list[Any], list[Any]]]


def _cases() -> dict[str, Case]:
    rnd = random.Random(0)
    return {
        "repeats: n zeros -> 2n zeros": lambda n: ([0] * n, [0] * (2 * n)),
        "repeats: random 0/1 -> random 0/1": lambda n: ([rnd.randint(0, 1) for _ in range(n)],
                                                        [rnd.randint(0, 1) for _ in range(n + n // 3)]),
        "repeats: n {} -> n+1 {}": lambda n: ([{}] * n, [{}] * (n + 1)),
        "records: one removed in the middle": lambda n: ([{"id": i, "v": i % 7} for i in range(n)],
                                                         [{"id": i, "v": i % 7} for i in range(n) if i != n // 2]),
        "records: every 10th edited": lambda n: ([{"id": i, "v": 0} for i in range(n)],
                                                 [{"id": i, "v": int(i % 10 == 0)} for i in range(n)]),
    }


def main() -> None:
    """Time every case at every size and print one line each."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="500,1000,2000,10000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'case':40} {'items':>6} {'seconds':>8} {'|Δ|':>6}  exact")
    for name, make in _cases().items():
        for n in sizes:
            old, new = make(n)
            started = time.perf_counter()
            delta = compute_delta({"items": old}, {"items": new})
            seconds = time.perf_counter() - started
            exact = same_json(apply_patch({"items": old}, delta.patch), {"items": new})
            print(f"{name:40} {n:>6} {seconds:>8.3f} {delta.size:>6}  {exact}", flush=True)


if __name__ == "__main__":
    main()

"""The number format of CPU training: bfloat16 autocast where the CPU multiplies bfloat16 natively, else fp32.

On a CPU with AVX512-BF16 or AMX (AMD Zen 4 and later, Intel Cooper Lake, Sapphire Rapids and later), oneDNN
multiplies bfloat16 matrices several times faster than fp32: on this project's 2-core AMD EPYC, a 1,200 x 576 by
576 x 1,536 product runs at 483 GFLOP/s in bfloat16 against 109 in fp32 (one thread), and a CPU SFT step of
SmolLM2-135M's last 8 layers on a 1,220-token sample takes 1.23 s against 2.89 s (``benchmarks/cpu_precision.py``).
Without those instructions torch emulates bfloat16 and autocast is slower than fp32, so ``auto`` keeps fp32 there.

Autocast keeps the weights, the optimizer state and the gradients in fp32 (mixed precision, as LLaMA-Factory's
``bf16: true`` does on a GPU); only the matrix products run in bfloat16. The loss is computed from fp32 logits.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

#: ``--precision`` values of the CPU trainers: ``auto`` resolves to ``bf16`` or ``fp32`` (``native_bf16``).
PRECISIONS = ("auto", "bf16", "fp32")
#: /proc/cpuinfo flags of native bfloat16 matrix arithmetic.
BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The CPU's feature flags as /proc/cpuinfo lists them (empty where there is no such file)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags") and ":" in line:
            return set(line.split(":", 1)[1].split())
    return set()


def native_bf16(flags: set[str] | None = None) -> bool:
    """Whether the CPU multiplies bfloat16 natively (AVX512-BF16 or AMX)."""
    return any(flag in (cpu_flags() if flags is None else flags) for flag in BF16_FLAGS)


def resolve_precision(precision: str, flags: set[str] | None = None) -> str:
    """``bf16`` or ``fp32`` for a ``--precision`` value; ``ValueError`` for an unknown one."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    if precision == "auto":
        return "bf16" if native_bf16(flags) else "fp32"
    return precision


@contextlib.contextmanager
def cpu_autocast(precision: str) -> Iterator[None]:
    """Within the block, CPU matrix products run in bfloat16 when ``precision`` is ``bf16`` (a resolved value)."""
    if precision != "bf16":
        yield
        return
    import torch

    with torch.autocast("cpu", dtype=torch.bfloat16):
        yield

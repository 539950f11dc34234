"""``--tau-path FOLDER``: where τ-bench is, for the commands that run its environments (``tau/retail``,
``tau/airline``). The adapter finds τ-bench in this order: this option, an installed ``tau_bench`` package,
``$ENVSIM_TAU_BENCH`` (``envsim.envs.adapters.tau.locate_tau_bench``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import click


def _use_tau_path(ctx: click.Context, param: click.Parameter, folder: Path | None) -> None:
    """Put τ-bench at ``folder`` first on the import path (and in ``$ENVSIM_TAU_BENCH`` for worker processes)."""
    if folder is None:
        return
    from envsim.envs.adapters.tau import ENV_VAR, TauBenchNotFound, locate_tau_bench

    try:
        located = locate_tau_bench(folder)
    except TauBenchNotFound as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    os.environ[ENV_VAR] = str(located or folder)


def tau_path_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--tau-path`` to a click command; the value is consumed here, not passed on."""
    return click.option(
        "--tau-path", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
        expose_value=False, is_eager=True, callback=_use_tau_path,
        help="Folder holding τ-bench's tau_bench/ package, for tau/retail and tau/airline (default: an installed "
             "tau_bench, else $ENVSIM_TAU_BENCH).",
    )(command)

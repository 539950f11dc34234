"""Shared by ``envsim train sft`` and ``envsim train rl``: node options, the trainer launch and its exit code."""

from __future__ import annotations

import os
import subprocess
from typing import Any, Callable, Iterable
from pathlib import Path

import click

from envsim.training.run_files import RunFiles


def node_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--nnodes/--node-rank/--master-addr/--master-port``: explicit flags win over $MASTER_* and Slurm's variables."""
    options = [
        click.option("--nnodes", type=int, default=None, help="Nodes (default: $SLURM_NNODES, else 1)."),
        click.option("--node-rank", type=int, default=None,
                     help="This node's rank, 0 on the rendezvous node (default: $SLURM_NODEID, else 0)."),
        click.option("--master-addr", default=None,
                     help="Host of node 0 (default: $MASTER_ADDR, else the first host of $SLURM_JOB_NODELIST)."),
        click.option("--master-port", type=int, default=None,
                     help="Rendezvous port (default: $MASTER_PORT, else 29500)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def resolve_nodes(nnodes: int | None, node_rank: int | None, master_addr: str | None, master_port: int | None,
                  gpus: int | None) -> Any:
    """The ``NodeLayout`` of this process, or a usage error."""
    from envsim.training.launch import LayoutError, resolve_layout

    try:
        return resolve_layout(nnodes=nnodes, node_rank=node_rank, master_addr=master_addr, master_port=master_port,
                              gpus=gpus)
    except LayoutError as exc:
        raise click.UsageError(str(exc)) from None


def node_header(layout: Any) -> str:
    """``# node R of N ...`` line above each node's command in a dry run."""
    return (f"# node {layout.node_rank} of {layout.nnodes} ({layout.gpus_per_node} GPUs per node, "
            f"{layout.world_size} processes, rendezvous {layout.master_addr}:{layout.master_port})")


class LaunchFailed(click.ClickException):
    """The launched trainer exited non-zero; the command exits with the trainer's code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def launch(command: list[str], env: dict[str, str], label: str, run: RunFiles,
           written: Iterable[Path | None]) -> None:
    """Run the trainer; on a non-zero exit take back this command's config files (``RunFiles.take_back``)
    and raise ``LaunchFailed`` with the trainer's exit code (128 + N when killed by signal N)."""
    try:
        code = subprocess.call(command, env={**os.environ, **env})
    except OSError as exc:
        click.echo(f"cannot start {command[0]}: {exc}", err=True)
        code = 127
    if code == 0:
        return
    what = f"was killed by signal {-code}" if code < 0 else f"exited with {code}"
    raise LaunchFailed(f"{label} {what} (see the output above); {run.take_back(written)}",
                       128 - code if code < 0 else code)


#: What installs the [train] extra (LLaMA-Factory with its matched torch set; TRL, transformers come with it).
TRAIN_INSTALL = 'pip install -e ".[train]"'


#: What installs the CPU path (torch's CPU build first, then the [cpu] extra); docs/real-model.md, Install.
CPU_INSTALL = ('pip install "torch==2.13.0+cpu" --index-url https://download.pytorch.org/whl/cpu, then '
               'pip install -e ".[cpu]"; see docs/real-model.md, Install')


def require_cpu_training(what: str) -> None:
    """Stop with ``CPU_INSTALL`` when torch or transformers, which the CPU loop ``what`` needs, is not installed."""
    import importlib.util

    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        raise click.ClickException(f"{what} needs {' and '.join(missing)}: {CPU_INSTALL}")


def missing_train_extras(multi_gpu: bool) -> list[str]:
    """Modules of the [train] extra that ``envsim train rl`` needs and cannot import."""
    import importlib.util

    needed = ["trl", "transformers", "datasets"] + (["accelerate"] if multi_gpu else [])
    return [m for m in needed if importlib.util.find_spec(m) is None]

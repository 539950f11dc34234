"""Where a training process runs: nodes, this node's rank, the rendezvous address and GPUs per node.

Resolution order for every value: the explicit CLI flag, then the usual environment variables
(``MASTER_ADDR`` / ``MASTER_PORT`` as torchrun uses them, then Slurm's ``SLURM_NNODES``,
``SLURM_NODEID``, ``SLURM_JOB_NODELIST`` and ``SLURM_GPUS_ON_NODE``), then single-node defaults.
The launch commands themselves live with their trainers (``training.sft`` for LLaMA-Factory,
``training.rl`` for accelerate); this module only describes the layout and writes files safely on a
file system that every node shares.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

DEFAULT_MASTER_PORT = 29500


class LayoutError(ValueError):
    """The node layout is incomplete or contradictory."""


@dataclass(frozen=True)
class NodeLayout:
    """The job's shape as seen from one node."""

    nnodes: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int = DEFAULT_MASTER_PORT
    gpus_per_node: int = 1

    @property
    def world_size(self) -> int:
        """Processes (GPUs) over all nodes."""
        return self.nnodes * self.gpus_per_node

    @property
    def multi_node(self) -> bool:
        """More than one node."""
        return self.nnodes > 1

    def for_rank(self, rank: int) -> "NodeLayout":
        """The same job as seen from node ``rank``."""
        return NodeLayout(self.nnodes, rank, self.master_addr, self.master_port, self.gpus_per_node)

    def all_nodes(self) -> list["NodeLayout"]:
        """One layout per node, rank 0 first (what ``--dry-run`` prints)."""
        return [self.for_rank(rank) for rank in range(self.nnodes)]


def first_host(nodelist: str) -> str:
    """First host name of a Slurm node list, in its compressed form or not.

    ``gpu[01-04,07],cpu1`` -> ``gpu01``; ``rack[1-2]-n[3-4]`` -> ``rack1-n3``; ``node7`` -> ``node7``.
    Slurm expands bracket groups as a Cartesian product, so the first host takes the first value of
    each group (zero padding kept)."""
    depth, end = 0, len(nodelist)
    for index, char in enumerate(nodelist):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            end = index
            break
    item = nodelist[:end].strip()
    if depth < 0 or item.count("[") != item.count("]"):
        raise LayoutError(f"cannot read the Slurm node list {nodelist!r}")
    host = re.sub(r"\[([^\]]*)\]", lambda m: re.split(r"[,-]", m.group(1))[0], item)
    if not host or any(c in host for c in "[]"):
        raise LayoutError(f"cannot read the Slurm node list {nodelist!r}")
    return host


def _int(value: str | None, what: str) -> int | None:
    if value is None or value.strip() == "":
        return None
    match = re.match(r"^\s*(\d+)", value)       # SLURM_GPUS_ON_NODE / SLURM_NNODES are plain numbers
    if not match:
        raise LayoutError(f"{what}={value!r} is not a number")
    return int(match.group(1))


def resolve_layout(*, nnodes: int | None = None, node_rank: int | None = None, master_addr: str | None = None,
                   master_port: int | None = None, gpus: int | None = None,
                   env: Mapping[str, str] | None = None) -> NodeLayout:
    """The node layout: explicit values win over ``MASTER_*`` and Slurm variables, which win over defaults."""
    env = os.environ if env is None else env
    nnodes = nnodes if nnodes is not None else (_int(env.get("SLURM_NNODES"), "SLURM_NNODES")
                                                or _int(env.get("SLURM_JOB_NUM_NODES"), "SLURM_JOB_NUM_NODES") or 1)
    if node_rank is None:       # Slurm's node id only counts in a multi-node job (one task per node)
        node_rank = (_int(env.get("SLURM_NODEID"), "SLURM_NODEID") if nnodes > 1 else None) or 0
    if gpus is None:
        gpus = _int(env.get("SLURM_GPUS_ON_NODE"), "SLURM_GPUS_ON_NODE") or 1
    if master_port is None:
        master_port = _int(env.get("MASTER_PORT"), "MASTER_PORT") or DEFAULT_MASTER_PORT
    if master_addr is None:
        master_addr = env.get("MASTER_ADDR") or None
    if master_addr is None and env.get("SLURM_JOB_NODELIST") and nnodes > 1:
        master_addr = first_host(env["SLURM_JOB_NODELIST"])
    if nnodes < 1:
        raise LayoutError("--nnodes must be at least 1")
    if gpus < 1:
        raise LayoutError("--gpus must be at least 1")
    if not 0 <= node_rank < nnodes:
        raise LayoutError(f"--node-rank {node_rank} is outside 0..{nnodes - 1}")
    if not 0 < master_port < 65536:
        raise LayoutError(f"--master-port {master_port} is not a TCP port")
    if master_addr is None:
        if nnodes > 1:
            raise LayoutError("several nodes need --master-addr (the host name or IP of node 0), or $MASTER_ADDR, "
                              "or a Slurm allocation ($SLURM_JOB_NODELIST)")
        master_addr = "127.0.0.1"
    return NodeLayout(nnodes, node_rank, master_addr, master_port, gpus)


def write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` atomically (temporary file + rename) unless ``path`` already holds it.

    Every node of a multi-node job writes the same config files into a shared run directory; a plain
    ``write_text`` would let one node read a file another node is truncating."""
    from envsim.safe_files import read_bytes, write_text

    try:  # read as a run file is read: a link (or a FIFO) there is never followed, so it is replaced below
        if read_bytes(path, len(text.encode("utf-8"))) == text.encode("utf-8"):
            return
    except OSError:
        pass
    write_text(path, text)  # a temporary file renamed into place, never through a link planted at the name


def format_env(env: Mapping[str, str]) -> str:
    """``K=V`` pairs as a shell prefix (values quoted when needed)."""
    import shlex

    return " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())

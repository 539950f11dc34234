"""Worker processes of a replay (``construct --policy replay --workers N``) that never outlive their parent and
leave Ctrl-C to it.

``worker_start`` is the pool's initializer: the worker ignores SIGINT (the terminal sends Ctrl-C to the whole
foreground group; the parent handles it, keeps what was labelled and says so), asks the kernel to kill it when the
parent dies (Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``), and, as a fallback elsewhere, watches its parent id from a
thread. ``ctrl_c_ignored`` keeps SIGINT ignored in the parent while the workers are forked, so no worker sees
Ctrl-C before it ignores it itself; ``stop_workers`` kills them at once when the parent stops early.
"""

from __future__ import annotations

import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Iterator

from envsim.process_guard import die_with_parent

__all__ = ["ctrl_c_ignored", "stop_workers", "worker_start"]


def _watch_parent(parent: int) -> None:
    """Exit this process once ``parent`` is no longer its parent (the parent died; portable fallback)."""
    import time

    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def worker_start(parent: int) -> None:
    """Start of a replay worker: dies with its parent (never an orphan), leaves Ctrl-C to the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent=parent)          # exits at once when the parent died before the request
    if os.getppid() != parent:              # no prctl (not Linux) and the parent is already gone
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="envsim-parent-watch").start()


@contextmanager
def ctrl_c_ignored() -> Iterator[None]:
    """SIGINT ignored in this process meanwhile (main thread only; elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's workers now (a batch in progress is dropped; what was journaled stays)."""
    processes = list(getattr(pool, "_processes", {}).values())  # no public handle on the workers
    for process in processes:
        try:
            process.kill()
        except (OSError, ValueError):
            pass
    # no cancel_futures: the pool marks every pending batch broken itself (cancelling them too races with that)
    pool.shutdown(wait=True)

"""Child processes that cannot outlive the process that started them, and bounds on what they may use: the one
place EnvSim asks for this (the sandbox's workers, replay's workers, ``envsim serve``'s server and converter).

``envsim serve`` starts a server, and a conversion starts llama.cpp's converter; if ``envsim serve`` is killed
(``kill -9``: no handler runs), its children must go too; so must a sandbox or replay worker. Linux's ``PR_SET_PDEATHSIG`` asks the kernel to signal
the child when its parent dies; it is set in the child between ``fork`` and ``exec`` (``preexec``), and the child
then checks that the parent it was forked from is still its parent (it may have died before the call). Elsewhere
(no ``prctl``) the child is started as before and the parent's own handlers stop it."""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def death_signal_arm(sig: int = signal.SIGKILL) -> Callable[[], bool]:
    """A function that, called in a process, makes the kernel send it ``sig`` when its parent dies; ``prctl`` is
    looked up now, so the function still works where loading a library no longer can (a confined sandbox worker).
    It returns whether the kernel took the request (Linux only)."""
    prctl = _prctl()

    def arm() -> bool:
        return prctl is not None and prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0

    return arm


def die_with_parent(sig: int = signal.SIGKILL, parent: int | None = None) -> bool:
    """In the calling process: be sent ``sig`` when the parent dies; exits at once when the parent is already gone
    (``parent``: the process id it must have, e.g. taken before a fork). Returns whether the kernel took the
    request (Linux only)."""
    parent = os.getppid() if parent is None else parent
    if not death_signal_arm(sig)():
        return False
    if os.getppid() != parent or parent == 1:  # the parent died before the request: do as if it had come
        os._exit(1)
    return True


def child_setup(sig: int = signal.SIGKILL, data_limit: int | None = None) -> Callable[[], None]:
    """A ``preexec_fn`` for ``subprocess``: the child gets ``sig`` when this process dies and, with ``data_limit``,
    at most that many bytes of data memory (``RLIMIT_DATA``: heap and private writable mappings; reading a file
    through ``mmap`` does not count), so a runaway allocation ends in ``MemoryError`` rather than exhausting the
    machine."""
    parent = os.getpid()
    prctl = _prctl()  # looked up here: the child only calls it

    def setup() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
            if os.getppid() != parent:  # this process died between fork and the request
                os._exit(1)
        if data_limit is not None:
            resource.setrlimit(resource.RLIMIT_DATA, (data_limit, data_limit))

    return setup


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user counts: signalling it is refused, not unknown)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

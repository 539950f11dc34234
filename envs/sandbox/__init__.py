"""Running environment code: the trust boundary, the in-process caller, the executor and the confined sandbox.

One entry point for "how does a tool call run": import the public names from here
(``from envsim.envs.sandbox import execute, run_request, trust_module``). The modules, by job:

* ``trust``: which code an environment id may import (data never names code nobody trusted);
* ``calling``: one tool called in-process the way a real tool layer does (errors become observations);
* ``executor``: one call on a known state labelled as a transition (observation, next state, Δ);
* ``runner``: untrusted code run in confined worker processes (``Limits``, ``run_request``);
* ``worker``: the worker process itself (``python -I -m envsim.envs.sandbox.worker``);
* ``confine``: the operating-system layers a worker applies to itself (rlimits, uid, Landlock, seccomp);
* ``packages``: the third-party packages a worker imports before it confines itself (the user's own).

Names are imported on first use, so ``import envsim.envs.sandbox`` (and the worker's start) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "trust": ("env_refusal", "forget_trusted", "trust_module", "trust_target", "user_trusted_modules"),
    "calling": ("call_in_process", "call_tool", "is_return_error"),
    "executor": ("MAX_STATE_VALUES", "NondeterminismError", "StateError", "check_json_state", "check_size",
                 "execute"),
    "runner": ("Limits", "SandboxError", "WORKDIR_PREFIX", "close_workers", "confinement_report", "run_request",
               "sweep_stale_workdirs", "uncovered_layers"),
    "worker": ("REQUESTABLE",),
    "packages": ("allowed_packages",),
}
_HOME = {name: module for module, names in _PUBLIC.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    """Import a public name (``execute``, ``run_request``, ``trust_module``, ...) from its module on first use."""
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

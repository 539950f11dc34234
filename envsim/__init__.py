"""EnvSim: measure and train LLM environment simulators.

The Python API is imported on first use, so ``import envsim`` stays cheap:
``envsim.evaluate(...)`` (``envsim.evaluation.api``) scores a model like ``envsim eval`` does."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_API = {"evaluate": "envsim.evaluation.api", "EvalSummary": "envsim.evaluation.eval_summary",
        "GroupRates": "envsim.evaluation.eval_summary", "EvalStopped": "envsim.evaluation.errors"}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    """Import an API name (``envsim.evaluate``, ``envsim.EvalSummary``, ...) from its module on first use."""
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'envsim' has no attribute {name!r}")

"""EnvSim: measure and train LLM environment simulators.

The Python API is imported on first use, so ``import envsim`` stays cheap; each function does what its
command does and returns a typed summary:
``envsim.evaluate(...)`` (``envsim.evaluation.api``) scores a model like ``envsim eval``;
``envsim.construct(...)`` (``envsim.construction.api``) builds a split or pool like ``envsim construct``;
``envsim.simulate(...)`` (``envsim.simulation.simulate``, a coroutine) rolls agents out like ``envsim simulate``;
``envsim.train_data(...)`` (``envsim.training.api``) writes SFT data like ``envsim train data``."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_API = {"evaluate": "envsim.evaluation.api", "EvalSummary": "envsim.evaluation.running.eval_summary",
        "GroupRates": "envsim.evaluation.running.eval_summary", "EvalStopped": "envsim.evaluation.errors",
        "construct": "envsim.construction.api", "ConstructSummary": "envsim.construction.construct_options",
        "ConstructStopped": "envsim.construction.errors",
        "simulate": "envsim.simulation.simulate", "SimulationRun": "envsim.simulation.simulate",
        "train_data": "envsim.training.api", "TrainDataSummary": "envsim.training.api",
        "TrainDataStopped": "envsim.training.errors"}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    """Import an API name (``envsim.evaluate``, ``envsim.construct``, ``envsim.EvalSummary``, ...) from its
    module on first use."""
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'envsim' has no attribute {name!r}")

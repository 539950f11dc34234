"""The built-in baselines' names (``null``, ``oracle``, ``executor``) and the "did you mean" hint for a misspelt one,
shared by ``envsim eval --model`` and ``envsim simulate --simulator``."""

from __future__ import annotations

import difflib
from typing import Sequence

BUILT_IN_MODELS = ("null", "oracle", "executor")


def unknown_builtin_hint(name: str, urls: Sequence[str], role: str = "simulator") -> str | None:
    """An error message when ``name`` without any endpoint URL looks like a misspelt built-in (``nul``,
    ``Oracle``); ``None`` otherwise (the preflight judges every other name). ``role`` names what ``name`` is
    (``simulator``, ``model``)."""
    if urls or name in BUILT_IN_MODELS:
        return None
    close = difflib.get_close_matches(name.lower(), BUILT_IN_MODELS, n=1, cutoff=0.6)
    if not close:
        return None
    return (f"unknown {role} {name!r} and no --base-url: did you mean {close[0]!r}? The built-in {role}s "
            f"are {', '.join(BUILT_IN_MODELS)}; any other name is a model at --base-url.")

"""The key/value cache keyword of a transformers model's forward, across the versions EnvSim runs under.

transformers 4.57 and 5.6 (the [train] extra, LLaMA-Factory's range) take and return ``past_key_values``; 5.24 (the
[cpu] extra) renamed both to ``cache`` and warns that ``past_key_values`` goes in 5.40. The CPU trainers and the
decode benchmarks pass the name the model's own ``forward`` declares and read the cache back under either name.
"""

from __future__ import annotations

import inspect
from typing import Any


def cache_keyword(module: Any) -> str:
    """``"cache"`` where ``module.forward`` declares it (transformers >= 5.2x), else ``"past_key_values"``."""
    return "cache" if "cache" in inspect.signature(module.forward).parameters else "past_key_values"


def with_cache(module: Any, cache: Any) -> dict[str, Any]:
    """Keyword arguments that hand ``cache`` to ``module``'s forward under the name it declares."""
    return {cache_keyword(module): cache}


def returned_cache(output: Any) -> Any:
    """The key/value cache a forward returned (``output.cache`` or, before the rename, ``past_key_values``)."""
    if "cache" in output.keys():
        return output["cache"]
    return output["past_key_values"]

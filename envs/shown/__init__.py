"""What the model sees of an environment's code: ``code(a_t)`` for a tool call, and how it is found.

One entry point for "what does the model see": import the public names from here
(``from envsim.envs.shown import shown_tool_code, tool_code``). The modules, by job:

* ``source``: the frozen ``tool_code`` of built-in, v1/v2, BFCL and τ-bench records (a tool plus the helpers it
  calls), the class source and ``env_version`` (hash of the source that defines an environment's behaviour);
* ``follow``: the functions that actually run for a tool, followed as objects (``__wrapped__``, inherited methods,
  delegation to toolkits);
* ``code``: ``shown_tool_code``, the module-shaped code of records of your own environments (everything the call
  needs, ending with ``ENTRY_LINE``);
* ``refs``: what a piece of code refers to, read from its syntax tree;
* ``names``: where a name comes from (the module-level statement binding it);
* ``render``: the collected definitions rendered as one module;
* ``imports``: the standard-library import lines shown code needs (``with_imports``).

Names are imported on first use, so importing the package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "source": ("SOURCE_ATTRIBUTE", "class_source", "constant_source", "env_version", "tool_code"),
    "follow": ("ToolSourceNotFound",),
    "code": ("ENTRY_LINE", "shown_tool_code"),
    "imports": ("free_names", "with_imports"),
}
_HOME = {name: module for module, names in _PUBLIC.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    """Import a public name (``shown_tool_code``, ``tool_code``, ``env_version``, ...) from its module on first use."""
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

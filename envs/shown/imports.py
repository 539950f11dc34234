"""The import lines shown code needs: standard-library names the code uses but does not define.

Shown code (``envs.shown.source.tool_code``, τ-bench's tool classes, BFCL's methods) is cut out of its module, so the
module's own imports are not part of it: a date helper calls ``_dt.date(...)`` after ``import datetime as _dt``,
a τ-bench tool calls ``deepcopy`` after ``from copy import deepcopy``, a BFCL method catches
``InvalidOperation`` from ``decimal``. ``shown_imports`` finds the names the code reads and never binds, looks
them up in the modules the code came from, and writes the import statement of each one that belongs to the
standard library (``typing`` names excepted: annotations are not run and every reader knows them).

The result is deterministic: lines sorted, one per name, whatever the hash seed.
"""

from __future__ import annotations

import ast
import builtins
import sys
import types
from typing import Any, Iterable, Mapping

from envsim import ast_parse

__all__ = ["free_names", "import_line", "shown_imports", "with_imports"]

_SKIPPED_MODULES = frozenset({"typing", "typing_extensions", "__future__", "builtins"})


def free_names(code: str) -> set[str]:
    """Names ``code`` reads that it never binds (assignment, def, class, import, parameter, loop, ``except``,
    comprehension, ``global``) and that are not builtins. Code that does not parse gives an empty set."""
    try:
        tree = ast_parse.parse(code)
    except SyntaxError:
        return set()
    read: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
    return {name for name in read - bound if not hasattr(builtins, name)}


def _stdlib(module_name: str) -> bool:
    top = module_name.split(".")[0]
    return top in sys.stdlib_module_names and top not in _SKIPPED_MODULES and not top.startswith("_")


def import_line(name: str, value: Any) -> str | None:
    """The statement that binds ``name`` to ``value`` when ``value`` is a standard-library module or an object
    a standard-library module exports under its own name; ``None`` otherwise."""
    if isinstance(value, types.ModuleType):
        module = value.__name__
        if not _stdlib(module):
            return None
        return f"import {module}" if module == name else f"import {module} as {name}"
    module = getattr(value, "__module__", None)
    own = getattr(value, "__name__", None)
    if not isinstance(module, str) or not isinstance(own, str):
        return None
    for candidate in dict.fromkeys((module, module.lstrip("_"), module.split(".")[0])):  # _decimal -> decimal
        home = sys.modules.get(candidate)
        if _stdlib(candidate) and home is not None and getattr(home, own, None) is value:
            return f"from {candidate} import {own}" + ("" if own == name else f" as {name}")
    return None


def shown_imports(code: str, scopes: Iterable[Mapping[str, Any]]) -> list[str]:
    """Import statements for the standard-library names ``code`` uses without binding them, each looked up
    in the first of ``scopes`` (module globals, in order) that defines it; sorted, one line per name."""
    scopes = list(scopes)
    lines = set()
    for name in free_names(code):
        for scope in scopes:
            if name in scope:
                line = import_line(name, scope[name])
                if line:
                    lines.add(line)
                break
    return sorted(lines)


def with_imports(code: str, scopes: Iterable[Mapping[str, Any]]) -> str:
    """``code`` headed by the import statements it needs (unchanged when it needs none)."""
    lines = shown_imports(code, scopes)
    return "\n".join(lines) + "\n\n" + code if lines else code

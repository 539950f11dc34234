"""Where a name that shown code uses comes from: the module-level statement that binds it, read from source.

``envsim.envs.shown.code`` follows the names a tool's code uses. Each name is looked up in the syntax tree of
the module the code is defined in (never through ``repr`` of its value, so what is shown is the module's own
text and does not depend on the hash seed):

* a ``def`` or ``class`` statement of that module (or of a module it imports the name from, followed through
  re-exports) is shown as its source;
* an assignment (``ACTIVE = (Status.NEW, Status.OPEN)``, ``CHANNELS = {"email", "chat"}``) is shown as the
  statement's source text;
* an import of a standard-library or installed module (``import datetime as _dt``, ``from copy import
  deepcopy``) is shown as an import statement naming just that name;
* EnvSim's own runner names (``Environment``, ``ToolError``, ``tool``) are provided by the prompt's rules and
  are not shown; builtins need nothing.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import functools
import importlib.util
import inspect
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envsim import ast_parse

#: EnvSim modules whose functions are shown as environment code (helpers the built-in environments use).
HELPER_MODULES = ("envsim.envs.library", "envsim.envs.sampling", "envsim.envs.validation")

_STDLIB = {Path(sysconfig.get_paths()[key]).resolve() for key in ("stdlib", "platstdlib")}


@dataclass(frozen=True)
class ModuleSource:
    """A module's source text, its lines and its syntax tree."""

    name: str
    text: str
    lines: tuple[str, ...]
    tree: ast.Module


@functools.lru_cache(maxsize=512)
def module_source(name: str) -> ModuleSource | None:
    """The source of an imported module (``None`` when it has none: built-in, compiled or string-defined)."""
    module = sys.modules.get(name)
    if module is None:
        return None
    try:
        text = inspect.getsource(module)
        tree = ast_parse.parse(text)
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    return ModuleSource(name, text, tuple(text.splitlines()), tree)


def is_runner_module(name: str) -> bool:
    """EnvSim's own modules, except the helper modules whose code the built-in environments show."""
    return (name == "envsim" or name.startswith("envsim.")) and not name.startswith(HELPER_MODULES)


@functools.lru_cache(maxsize=1024)
def is_user_module(name: str) -> bool:
    """A module whose code is shown: defined in a ``.py`` file outside the standard library and installed
    packages (the user's own code, or EnvSim's environment helpers)."""
    if name.startswith(HELPER_MODULES):
        return True
    if is_runner_module(name):
        return False
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if module is None or not path or not str(path).endswith(".py"):
        return False
    resolved = Path(path).resolve()
    if any(root in resolved.parents for root in _STDLIB) or {"site-packages", "dist-packages"} & set(resolved.parts):
        return False
    return True


def bound_names(stmt: ast.stmt) -> list[str]:
    """The names a module-level statement binds (compound statements: the names bound anywhere inside)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [a.asname or a.name.split(".")[0] for a in stmt.names if a.name != "*"]
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        # ``Env.tool = ...`` and ``table[key] = ...`` bind no name (the Name in them is read)
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and
                isinstance(n.ctx, (ast.Store, ast.Del))]
    if isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
        inner = [s for field in ("body", "orelse", "finalbody") for s in getattr(stmt, field, [])]
        inner += [s for handler in getattr(stmt, "handlers", []) for s in handler.body]
        names = [n for s in inner for n in bound_names(s)]
        if isinstance(stmt, ast.For):
            names += [n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)]
        return names
    return []


@functools.lru_cache(maxsize=512)
def top_level_bindings(module_name: str) -> dict[str, tuple[ast.stmt, ...]]:
    """Name -> the module-level statements that bind it, in source order."""
    source = module_source(module_name)
    found: dict[str, list[ast.stmt]] = {}
    for stmt in source.tree.body if source else ():
        for name in dict.fromkeys(bound_names(stmt)):
            found.setdefault(name, []).append(stmt)
    return {name: tuple(stmts) for name, stmts in found.items()}


def statement_text(source: ModuleSource, stmt: ast.stmt) -> str:
    """The source text of a module-level statement, decorators included."""
    return "\n".join(source.lines[start_line(stmt):stmt.end_lineno])


def imported_module(stmt: ast.ImportFrom | ast.Import, alias: ast.alias, module_name: str) -> str:
    """The absolute name of the module an import statement reads ``alias`` from (relative imports resolved)."""
    if isinstance(stmt, ast.Import):
        return alias.name
    package = module_name if _is_package(module_name) else module_name.rpartition(".")[0]
    return importlib.util.resolve_name("." * stmt.level + (stmt.module or ""), package) if stmt.level else \
        (stmt.module or "")


def _is_package(module_name: str) -> bool:
    return hasattr(sys.modules.get(module_name), "__path__")


def import_text(stmt: ast.Import | ast.ImportFrom, alias: ast.alias, module_name: str) -> str:
    """An import statement binding only ``alias`` (absolute: ``from copy import deepcopy``, ``import datetime
    as _dt``)."""
    named = alias.name + (f" as {alias.asname}" if alias.asname else "")
    if isinstance(stmt, ast.Import):
        return f"import {named}"
    return f"from {imported_module(stmt, alias, module_name)} import {named}"


def alias_of(stmt: ast.Import | ast.ImportFrom, name: str) -> ast.alias | None:
    """The alias of an import statement that binds ``name``."""
    return next((a for a in stmt.names if (a.asname or a.name.split(".")[0]) == name), None)


def start_line(stmt: ast.stmt) -> int:
    """The index of a statement's first line (its first decorator's)."""
    return min([d.lineno for d in getattr(stmt, "decorator_list", [])] + [stmt.lineno]) - 1


def real_name(value: Any) -> tuple[str, str]:
    """Where a function was really defined: ``(module, qualname)`` from its code and globals (``functools.wraps``
    copies the wrapped function's ``__module__`` and ``__qualname__`` onto a wrapper)."""
    code = getattr(value, "__code__", None)
    if code is not None and hasattr(code, "co_qualname"):
        return value.__globals__.get("__name__", value.__module__), code.co_qualname
    return getattr(value, "__module__", "") or "", getattr(value, "__qualname__", "") or ""


def own_members(cls: type) -> set[str]:
    """Names of the callables (methods, static and class methods, properties) a class defines itself."""
    return {name for name, value in vars(cls).items() if callable(value) or isinstance(value, (staticmethod,
                                                                                               classmethod,
                                                                                               property))}


def is_data_class(cls: type) -> bool:
    """Classes shown whole: Enums, exceptions, pydantic models, dataclasses, named tuples, typed dicts."""
    if issubclass(cls, (enum.Enum, BaseException)) or dataclasses.is_dataclass(cls):
        return True
    bases = {f"{b.__module__}.{b.__qualname__}" for b in cls.__mro__[1:]}
    return (any(name.startswith("pydantic.") for name in bases) or hasattr(cls, "_fields")
            or hasattr(cls, "__total__"))


def class_node(cls: type) -> tuple[ModuleSource, ast.ClassDef] | None:
    """The ``class`` statement of a class in its module's source (top level, or nested in top-level classes)."""
    source = module_source(cls.__module__)
    if source is None or "<locals>" in cls.__qualname__:
        return None
    body: list[ast.stmt] = source.tree.body
    node = None
    for part in cls.__qualname__.split("."):
        node = next((s for s in body if isinstance(s, ast.ClassDef) and s.name == part), None)
        if node is None:
            return None
        body = node.body
    return (source, node) if node is not None else None


#: Decorators that do not make a method run by itself (a method under them runs only when called).
_PLAIN_DECORATORS = ("classmethod", "staticmethod")
#: Plain-named members a library calls by itself (pydantic after validation, Enum on a value it lacks).
_IMPLICIT_MEMBERS = ("model_post_init", "_missing_", "_generate_next_value_")


def always_kept_members(node: ast.ClassDef) -> list[str]:
    """The members of a data class that run or shape it without being called by name: fields, constants, nested
    classes, dunder methods (``__post_init__``, ``__lt__``) and decorated methods (validators, properties,
    computed fields). Its plain methods (``load``, ``dump``, ``to_row``) are shown only where the call reaches
    them."""
    kept: list[str] = []
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorators = [d.func if isinstance(d, ast.Call) else d for d in stmt.decorator_list]
            named = {d.id if isinstance(d, ast.Name) else d.attr if isinstance(d, ast.Attribute) else "?"
                     for d in decorators}
            if (stmt.name.startswith("__") and stmt.name.endswith("__")) or named - set(_PLAIN_DECORATORS) \
                    or stmt.name in _IMPLICIT_MEMBERS:
                kept.append(stmt.name)
        else:
            kept += [n for n in bound_names(stmt) if n not in kept]
    return kept


def member_statements(node: ast.ClassDef, name: str) -> list[ast.stmt]:
    """The statements of a class body that bind ``name``."""
    return [s for s in node.body if name in bound_names(s)]

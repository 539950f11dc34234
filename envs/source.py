"""Source code shown to simulators: ``code(a_t)`` (a tool plus the helpers it calls) and the full class.

``tool_code`` starts from the tool method and follows, transitively, calls to other methods of the
class (``self._helper(...)``, ``self.other_tool(...)``) and to plain functions defined in the
environment's own module or in ``envsim`` helper modules. Module-level constants the code reads
are listed after the functions, so the snippet is self-contained for a reader.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import sys
import textwrap
from typing import Any, Callable

SOURCE_ATTRIBUTE = "_envsim_source"   # adapters of string code set the class source here


def class_source(cls: type) -> str:
    """Full source of an environment class (``full-class`` prompt mode)."""
    given = cls.__dict__.get(SOURCE_ATTRIBUTE)
    if given:
        return given
    return textwrap.dedent(inspect.getsource(cls))


def env_version(cls: type) -> str:
    """Short sha256 of the source that defines the environment's behaviour (its whole module, or given source)."""
    cached = cls.__dict__.get("_envsim_version")
    if cached:
        return cached
    given = cls.__dict__.get(SOURCE_ATTRIBUTE)
    if given:
        text = given
    else:
        module = sys.modules.get(cls.__module__)
        try:
            text = inspect.getsource(module) if module else class_source(cls)
        except (OSError, TypeError):
            text = class_source(cls)
    version = hashlib.sha256(text.encode()).hexdigest()[:16]
    setattr(cls, "_envsim_version", version)
    return version


def _method_nodes(cls: type) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(class_source(cls))
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    named = [n for n in classes if n.name == cls.__name__]
    methods: dict[str, ast.FunctionDef] = {}
    for node in (named or classes)[:1]:
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                methods.setdefault(item.name, item)
    return methods


def _references(node: ast.AST) -> tuple[set[str], set[str]]:
    """Attributes used on ``self`` and bare names read inside a function."""
    self_attrs: set[str] = set()
    names: set[str] = set()
    body = node.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else [node]
    for sub in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
            self_attrs.add(sub.attr)
        elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            names.add(sub.id)
    return self_attrs, names


HELPER_MODULES = ("envsim.envs.library", "envsim.envs.sampling", "envsim.envs.validation")


def _is_helper_function(obj: Any, home_module: str) -> bool:
    """Plain functions of the environment's own module or of the shared environment helpers."""
    module = getattr(obj, "__module__", "") or ""
    return inspect.isfunction(obj) and (module == home_module or module.startswith(HELPER_MODULES))


def _is_constant(obj: Any) -> bool:
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return True
    if isinstance(obj, (list, tuple, dict, set, frozenset)):
        return len(repr(obj)) < 2000
    return False


def _literal_constants(source: str) -> dict[str, Any]:
    """Module-level ``NAME = <literal>`` assignments of a class source given as a string (its module is never
    imported: the values are read from the syntax tree)."""
    constants: dict[str, Any] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return constants


@functools.lru_cache(maxsize=4096)
def tool_code(cls: type, tool_name: str) -> str:
    """Source of the tool method plus the methods and helper functions it calls, followed transitively
    (adapters that declare per-tool sources, such as τ-bench's tool classes, give them as is)."""
    declared = cls.__dict__.get("_envsim_tool_sources")
    if declared and tool_name in declared:
        return declared[tool_name]
    methods = _method_nodes(cls)
    if tool_name not in methods:
        raise KeyError(f"{cls.__name__} has no method {tool_name!r}")
    source_lines = class_source(cls).splitlines()
    module = sys.modules.get(cls.__module__)
    module_globals: dict[str, Any] = vars(module) if module else _literal_constants(class_source(cls))
    seen_methods: list[str] = []
    seen_functions: dict[str, Callable[..., Any]] = {}
    constants: dict[str, Any] = {}
    pending = [("method", tool_name)]
    while pending:
        kind, name = pending.pop(0)
        if kind == "method":
            if name in seen_methods:
                continue
            seen_methods.append(name)
            node: ast.AST = methods[name]
            self_attrs, names = _references(node)
            pending += [("method", a) for a in sorted(self_attrs) if a in methods and a not in seen_methods]
        else:
            if name in seen_functions:
                continue
            fn = module_globals.get(name) if kind == "function" else None
            if fn is None:
                continue
            seen_functions[name] = fn
            try:
                node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
            except (OSError, TypeError, SyntaxError, IndexError):
                continue
            _, names = _references(node)
            module_globals = {**vars(sys.modules[fn.__module__]), **module_globals}
        for ref in sorted(names):
            value = module_globals.get(ref)
            if _is_helper_function(value, cls.__module__) and ref not in seen_functions:
                pending.append(("function", ref))
            elif ref.isupper() and ref in module_globals and _is_constant(value):
                constants[ref] = value
    parts = []
    for name in seen_methods:
        node = methods[name]
        start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
        parts.append(textwrap.dedent("\n".join(source_lines[start:node.end_lineno])))
    for fn in seen_functions.values():
        try:
            parts.append(textwrap.dedent(inspect.getsource(fn)).rstrip())
        except (OSError, TypeError):
            continue
    if constants:
        parts.append("\n".join(f"{k} = {v!r}" for k, v in sorted(constants.items())))
    return "\n\n".join(parts) + "\n"

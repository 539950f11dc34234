"""Follow the functions that actually run for a tool, as objects rather than as one class's syntax tree.

``envsim.envs.shown.source.tool_code`` reads a class's own source first (built-in environments, v1-frozen). A tool
that source does not define - a method attached after the class statement, a ``functools.wraps`` chain, an
inherited method, a tool that hands the call to a toolkit object or to another class's static method - is
found here from the callable the executor calls (``ToolSpec.method``): its ``__wrapped__`` chain is unwrapped
to the innermost function with source, and from there the methods (``self.helper(...)``, inherited ones
included), delegations (``self.toolkit.method(...)`` where ``__init__`` sets ``self.toolkit = Toolkit(...)``,
``Class.method(...)``, ``module.Class.method(...)``) and module helper functions it reaches are followed
transitively. A tool with no source anywhere raises ``ToolSourceNotFound``: no record may show code that
denies the tool it ran.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import sysconfig
import textwrap
from pathlib import Path
from typing import Any, Callable, Iterator

from envsim import ast_parse
from envsim.envs.shown.refs import dotted_name as _dotted

#: Module prefixes whose functions are never shown as a tool's code (the runner, not the environment).
RUNNER_MODULES = ("envsim.",)


class ToolSourceNotFound(LookupError):
    """A tool the environment has, whose source cannot be found: construction stops rather than lie (not a
    ``KeyError``, which callers read as "no such tool")."""


def has_source(fn: Any) -> bool:
    """Whether ``inspect.getsource`` can read ``fn`` (a Python function defined in a file)."""
    return inspect.isfunction(fn) and source_of(fn) is not None


def source_of(fn: Any) -> str | None:
    """``inspect.getsource(fn)``, or ``None`` where it cannot be read; kept per object (reading a function's source
    tokenizes its file from the function on: following one class's tools asks for the same functions thousands
    of times)."""
    try:
        return _kept_source(fn)
    except TypeError:  # not hashable: read, not kept
        return _read_source(fn)


def _read_source(fn: Any) -> str | None:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return None


_kept_source = functools.lru_cache(maxsize=16384)(_read_source)


def unwrap_chain(fn: Callable[..., Any]) -> list[Callable[..., Any]]:
    """``fn`` and every function its ``__wrapped__`` attributes lead to, outermost first (cycles cut)."""
    chain: list[Callable[..., Any]] = []
    current: Any = fn
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = getattr(current, "__wrapped__", None)
    return chain


def running_function(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """The innermost function of the ``__wrapped__`` chain that has source and is not EnvSim's own proxy."""
    for candidate in reversed(unwrap_chain(fn)):
        if has_source(candidate) and not _is_runner(candidate):
            return candidate
    return None


def _is_runner(fn: Any) -> bool:
    return (getattr(fn, "__module__", "") or "").startswith(RUNNER_MODULES) and \
        "envsim.envs.library" not in (fn.__module__ or "")


_STDLIB = {Path(sysconfig.get_paths()[key]).resolve() for key in ("stdlib", "platstdlib")}


def _is_stdlib(obj: Any) -> bool:
    module = sys.modules.get(getattr(obj, "__module__", "") or "")
    path = getattr(module, "__file__", None)
    if module is None or path is None:
        return True  # built-in modules
    resolved = Path(path).resolve()
    return any(root in resolved.parents for root in _STDLIB) and "site-packages" not in resolved.parts


def owner_class(fn: Callable[..., Any]) -> type | None:
    """The class a function was defined in, from its ``__qualname__`` (``None`` for plain or local functions)."""
    qualname = getattr(fn, "__qualname__", "")
    if "<locals>" in qualname or "." not in qualname:
        return None
    obj: Any = sys.modules.get(fn.__module__)
    for part in qualname.split(".")[:-1]:
        obj = getattr(obj, part, None)
    return obj if inspect.isclass(obj) else None


def class_function(klass: type | None, name: str) -> Callable[..., Any] | None:
    """The function ``klass.name`` runs (looked up along the MRO; static/class methods unwrapped), with source."""
    if klass is None:
        return None
    try:
        value = inspect.getattr_static(klass, name)
    except AttributeError:
        return None
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, property):
        value = value.fget
    found = running_function(value) if callable(value) else None
    return found if found is not None and not _is_stdlib(found) else None


def function_node(fn: Callable[..., Any]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The syntax tree of ``fn``'s own source (decorators included), or ``None``."""
    source = source_of(fn)
    try:
        node = ast_parse.parse(textwrap.dedent(source)).body[0] if source is not None else None
    except (SyntaxError, IndexError):
        return None
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def called_chains(node: ast.AST) -> Iterator[list[str]]:
    """Dotted names called inside a function body (``self.toolkit.get(...)``, ``tools.Get.invoke(...)``)."""
    body = node.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else [node]
    for sub in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(sub, ast.Call):
            chain = _dotted(sub.func)
            if chain and len(chain) >= 2:
                yield chain


def attribute_classes(klass: type | None) -> dict[str, type]:
    """``self.<attr>`` -> class, for attributes a method of ``klass`` sets to ``SomeClass(...)`` (delegation
    targets such as ``self.toolkit = ShopToolkit(db)``); classes are resolved in the method's module. Found once
    per class (a copy is returned)."""
    if klass is None:
        return {}
    return dict(_attribute_classes(klass))


@functools.lru_cache(maxsize=1024)
def _attribute_classes(klass: type) -> dict[str, type]:
    found: dict[str, type] = {}
    for base in reversed(klass.__mro__):
        if base is object or _is_stdlib(base):
            continue
        for value in vars(base).values():
            fn = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
            if not has_source(fn):
                continue
            node = function_node(fn)
            for sub in ast.walk(node) if node is not None else ():
                if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call):
                    target_class = _resolve(_dotted(sub.value.func), fn.__globals__)
                    if not inspect.isclass(target_class) or _is_stdlib(target_class):
                        continue
                    for target in sub.targets:
                        chain = _dotted(target) if isinstance(target, ast.Attribute) else None
                        if chain and len(chain) == 2 and chain[0] == "self":
                            found[chain[1]] = target_class
    return found


def _resolve(chain: list[str] | None, scope: dict[str, Any]) -> Any:
    if not chain or chain[0] not in scope:
        return None
    obj = scope[chain[0]]
    for part in chain[1:]:
        try:
            obj = inspect.getattr_static(obj, part)
        except AttributeError:
            return None
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
    return obj


def delegated_function(chain: list[str], scope: dict[str, Any], attributes: dict[str, type]) -> \
        Callable[..., Any] | None:
    """The function a call chain hands over to, when it is a method of a user class: ``self.<attr>.<method>``
    (``attr`` set to a class instance, see ``attribute_classes``) or ``[module.]Class.method`` resolved in
    ``scope`` (the calling function's module globals)."""
    if chain[0] == "self":
        if len(chain) == 3 and chain[1] in attributes:
            return class_function(attributes[chain[1]], chain[2])
        return None
    holder = _resolve(chain[:-1], scope)
    if not inspect.isclass(holder) or _is_stdlib(holder):
        return None
    target = class_function(holder, chain[-1])
    if target is None or not target.__qualname__.startswith(holder.__qualname__ + "."):
        return None  # inherited from a library base (pydantic's model_validate): not the user's code
    return target

"""Source code shown to simulators: ``code(a_t)`` (a tool plus the helpers it calls) and the full class.

``tool_code`` starts from the tool method and follows, transitively, calls to other methods of the
class (``self._helper(...)``, ``self.other_tool(...)``) and to plain functions defined in the
environment's own module or in ``envsim`` helper modules. Module-level constants the code reads
are listed after the functions, so the snippet is self-contained for a reader.

A tool the class's own source does not define (attached after the class statement, wrapped with
``functools.wraps``, inherited, delegating to a toolkit object) is followed from the callable the executor
runs (``envsim.envs.shown.follow``); a tool without any source raises ``ToolSourceNotFound``.
"""

from __future__ import annotations

import ast
import enum
import functools
import hashlib
import inspect
import sys
import textwrap
from typing import Any, Callable

from envsim import ast_parse
from envsim.envs.shown.follow import (ToolSourceNotFound, attribute_classes, called_chains, class_function,
                                       delegated_function, function_node, owner_class, running_function)

__all__ = ["SOURCE_ATTRIBUTE", "ToolSourceNotFound", "class_source", "env_version", "tool_code"]

SOURCE_ATTRIBUTE = "_envsim_source"   # adapters of string code set the class source here


def class_source(cls: type) -> str:
    """Full source of an environment class (``full-class`` prompt mode)."""
    given = cls.__dict__.get(SOURCE_ATTRIBUTE)
    if given:
        return given
    return _inspected_source(cls)


@functools.lru_cache(maxsize=1024)
def _inspected_source(cls: type) -> str:
    """``inspect.getsource`` of a class, dedented, read once per class: Python 3.11 parses the class's whole module
    on every call (``tool_code`` asks twice per tool: 860 module parses, 18 s of re-deriving v1.1's dev split)."""
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


@functools.lru_cache(maxsize=1024)
def _method_nodes(cls: type) -> dict[str, ast.FunctionDef]:
    """The methods of ``cls``'s own class body by name, parsed once per class (read, never changed, by callers)."""
    tree = ast_parse.parse(class_source(cls))
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
    if isinstance(obj, (str, int, float, bool, enum.Enum)) or obj is None:
        return True
    if isinstance(obj, (list, tuple, dict, set, frozenset)):
        return len(repr(obj)) < 2000
    return False


def _is_enum_class(obj: Any) -> bool:
    return inspect.isclass(obj) and issubclass(obj, enum.Enum) and obj is not enum.Enum


def constant_source(value: Any) -> str:
    """``value`` as Python source a reader can parse: ``repr`` for plain values and containers, an Enum member
    as ``Class.NAME`` (its ``repr``, ``<Class.NAME: 'v'>``, is no Python), a set's items sorted (a set's own
    order follows string hashing, so it changed with ``PYTHONHASHSEED``)."""
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, (set, frozenset)):
        items = ", ".join(sorted(constant_source(v) for v in value))
        body = "{" + items + "}" if items else ("set()" if isinstance(value, set) else "")
        return f"frozenset({body})" if isinstance(value, frozenset) else body
    if type(value) in (list, tuple):
        items = [constant_source(v) for v in value]
        if isinstance(value, tuple):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    if type(value) is dict:
        return "{" + ", ".join(f"{constant_source(k)}: {constant_source(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _enum_classes_in(value: Any) -> list[type]:
    """The Enum classes whose members ``value`` holds (at any depth of lists, tuples, sets and dicts)."""
    if isinstance(value, enum.Enum):
        return [type(value)]
    if isinstance(value, dict):
        return [c for pair in value.items() for item in pair for c in _enum_classes_in(item)]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [c for item in value for c in _enum_classes_in(item)]
    return []


def _enum_class_source(cls: type) -> str:
    """The class statement of an Enum: its source, or (none readable) its members written out."""
    try:
        return textwrap.dedent(inspect.getsource(cls)).rstrip()
    except (OSError, TypeError):
        bases = ", ".join(b.__name__ for b in cls.__bases__)
        members = "\n".join(f"    {m.name} = {m.value!r}" for m in cls)
        return f"class {cls.__name__}({bases}):\n{members or '    pass'}"


def constants_source(constants: dict[str, Any]) -> str:
    """The constants block of ``code(a_t)``: the Enum classes the code or its constants use (their class
    statements), then ``NAME = value`` lines, each sorted by name; every line parses as Python."""
    classes = {name: value for name, value in constants.items() if _is_enum_class(value)}
    plain = {name: value for name, value in constants.items() if name not in classes}
    for value in plain.values():
        for cls in _enum_classes_in(value):
            classes.setdefault(cls.__name__, cls)
    parts = [_enum_class_source(cls) for _, cls in sorted(classes.items())]
    if plain:
        parts.append("\n".join(f"{k} = {constant_source(v)}" for k, v in sorted(plain.items())))
    return "\n\n".join(parts)


def _literal_constants(source: str) -> dict[str, Any]:
    """Module-level ``NAME = <literal>`` assignments of a class source given as a string (its module is never
    imported: the values are read from the syntax tree)."""
    constants: dict[str, Any] = {}
    for node in ast_parse.parse(source).body:
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
        return _followed_tool_code(cls, tool_name)
    source_lines = class_source(cls).splitlines()
    module = sys.modules.get(cls.__module__)
    module_globals: dict[str, Any] = vars(module) if module else _literal_constants(class_source(cls))
    seen_methods: list[str] = []
    seen_functions: dict[str, Callable[..., Any]] = {}
    constants: dict[str, Any] = {}
    delegated: list[Callable[..., Any]] = []
    foreign = getattr(cls, "_foreign", object)
    attributes = attribute_classes(foreign if foreign is not object else cls)
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
            for chain in called_chains(node):
                target = delegated_function(chain, module_globals, attributes)
                if target is not None and all(target is not d for d in delegated):
                    delegated.append(target)
        else:
            if name in seen_functions:
                continue
            fn = module_globals.get(name) if kind == "function" else None
            if fn is None:
                continue
            seen_functions[name] = fn
            try:
                node = ast_parse.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
            except (OSError, TypeError, SyntaxError, IndexError):
                continue
            _, names = _references(node)
            module_globals = {**vars(sys.modules[fn.__module__]), **module_globals}
        for ref in sorted(names):
            value = module_globals.get(ref)
            if _is_helper_function(value, cls.__module__) and ref not in seen_functions:
                pending.append(("function", ref))
            elif (ref.isupper() and ref in module_globals and _is_constant(value)) or _is_enum_class(value):
                constants[ref] = value
    parts = []
    for name in seen_methods:
        node = methods[name]
        start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
        parts.append(textwrap.dedent("\n".join(source_lines[start:node.end_lineno])))
    if delegated:  # a tool handing the call to a toolkit object or another class (never in built-ins)
        followed, followed_constants = _follow_functions(delegated, known=list(seen_functions.values()),
                                                         home=foreign if foreign is not object else cls)
        parts += followed
        constants = {**followed_constants, **constants}
    for fn in seen_functions.values():
        try:
            parts.append(textwrap.dedent(inspect.getsource(fn)).rstrip())
        except (OSError, TypeError):
            continue
    if constants:
        parts.append(constants_source(constants))
    return "\n\n".join(parts) + "\n"


def _followed_tool_code(cls: type, tool_name: str) -> str:
    """``code(a_t)`` of a tool the class source does not define, from the function the executor runs."""
    spec = cls.tool_specs().get(tool_name) if hasattr(cls, "tool_specs") else None
    if spec is None:
        raise KeyError(f"{cls.__name__} has no method {tool_name!r}")
    start = running_function(spec.method)
    if start is None:
        raise ToolSourceNotFound(f"no source found for tool {tool_name!r} of {cls.__name__}: neither the class "
                                 f"source nor the function it runs ({spec.method!r}, __wrapped__ chain followed) "
                                 f"can be read; define the tool in a .py file")
    parts, constants = _follow_functions([start])
    if constants:
        parts.append(constants_source(constants))
    return "\n\n".join(parts) + "\n"


def _follow_functions(starts: list[Callable[..., Any]], known: list[Callable[..., Any]] = (),
                      home: type | None = None) -> tuple[list[str], dict[str, Any]]:
    """Sources of ``starts`` and, transitively, of the methods (along the MRO), delegations and module helper
    functions they call (``known`` ones are not repeated), plus the constants they read. A method of another
    class than ``home`` (default: the first function's) is headed by a ``# in class ...`` comment."""
    home = home or owner_class(starts[0])
    methods: list[Callable[..., Any]] = []
    functions: list[Callable[..., Any]] = []
    constants: dict[str, Any] = {}
    pending = list(starts)
    while pending:
        fn = pending.pop(0)
        if any(fn is seen for seen in [*methods, *functions, *known]):
            continue
        node = function_node(fn)
        if node is None:
            continue
        owner = owner_class(fn)
        (methods if owner is not None else functions).append(fn)
        self_attrs, names = _references(node)
        pending += [m for a in sorted(self_attrs) if (m := class_function(owner, a)) is not None]
        attributes = attribute_classes(owner)
        pending += [d for chain in called_chains(node)
                    if (d := delegated_function(chain, fn.__globals__, attributes)) is not None]
        for ref in sorted(names):
            value = fn.__globals__.get(ref)
            if _is_helper_function(value, fn.__module__):
                pending.append(value)
            elif (ref.isupper() and _is_constant(value)) or _is_enum_class(value):
                constants[ref] = value
    parts = []
    for fn in [*methods, *functions]:
        text = textwrap.dedent(inspect.getsource(fn)).rstrip()
        owner = owner_class(fn)
        if owner is not None and owner is not home:
            text = f"# in class {owner.__qualname__} ({owner.__module__})\n{text}"
        parts.append(text)
    return parts, constants

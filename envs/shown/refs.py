"""What a piece of code refers to, read from its syntax tree: the free names it reads, ``self.X`` members, dotted
calls (``self.kit.get(...)``, ``module.Class.method(...)``), classes it calls and methods it calls on other
objects. ``envsim.envs.shown.code`` follows these to show everything a tool's call needs."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


@dataclass
class Refs:
    """What a piece of code refers to."""

    names: set[str] = field(default_factory=set)            # free names read
    at_definition: set[str] = field(default_factory=set)    # ... of them, read when the definition runs
    self_attrs: set[str] = field(default_factory=set)       # self.X / cls.X
    chains: list[list[str]] = field(default_factory=list)   # dotted names called (self.kit.get, Class.method)
    dotted: set[tuple[str, str]] = field(default_factory=set)   # Name.attr read
    called: set[str] = field(default_factory=set)           # Name(...) called
    super_calls: set[str] = field(default_factory=set)      # super().X
    attr_calls: set[str] = field(default_factory=set)       # x.name(...) on anything but self
    #: ``getattr(receiver, name)``: (the receiver's dotted name or ``None``, the attribute's name as a string
    #: constant, or the variable holding it: a by-name dispatch ``getattr(toolkit, name)``, ``name`` bound in a
    #: closure) as ``(receiver, constant, variable)``
    lookups: list[tuple[tuple[str, ...] | None, str | None, str | None]] = field(default_factory=list)
    #: ``REGISTRY[key]`` on a free name: (the name, the key as a string constant, or the variable holding it)
    entries: list[tuple[str, str | None, str | None]] = field(default_factory=list)


def local_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names a function binds itself (parameters, assignments, inner definitions and imports, not globals)."""
    args = node.args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    declared = {n for sub in ast.walk(node) if isinstance(sub, ast.Global) for n in sub.names}
    stored = {sub.id for stmt in node.body for sub in ast.walk(stmt)
              if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del))}
    inner = {sub.name for stmt in node.body for sub in ast.walk(stmt)
             if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    args_of_inner = {a.arg for stmt in node.body for sub in ast.walk(stmt)
                     if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                     for a in [*sub.args.posonlyargs, *sub.args.args, *sub.args.kwonlyargs]}
    imported = {a.asname or a.name.split(".")[0] for stmt in node.body for sub in ast.walk(stmt)
                if isinstance(sub, (ast.Import, ast.ImportFrom)) for a in sub.names}
    return (params | stored | inner | args_of_inner | imported) - declared


def dotted_name(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]`` when the chain starts at a bare name, else ``None``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *parts[::-1]]


def scan(nodes: list[ast.AST], refs: Refs, selves: set[str], local: set[str]) -> None:
    """Add to ``refs`` what ``nodes`` read (``selves``: the names ``self`` goes by; ``local``: names not global)."""
    for sub in (n for top in nodes for n in ast.walk(top)):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in local:
            refs.names.add(sub.id)
        elif isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and sub.value.id not in local:
            key = sub.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                refs.entries.append((sub.value.id, key.value, None))
            elif isinstance(key, ast.Name):
                refs.entries.append((sub.value.id, None, key.id))
        elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
            if sub.value.id in selves:
                refs.self_attrs.add(sub.attr)
            elif sub.value.id not in local:
                refs.dotted.add((sub.value.id, sub.attr))
        if isinstance(sub, ast.Call):
            chain = dotted_name(sub.func)
            if chain and len(chain) >= 2:
                refs.chains.append(chain)
            if isinstance(sub.func, ast.Name):
                refs.called.add(sub.func.id)
                if sub.func.id in ("getattr", "hasattr") and len(sub.args) >= 2:
                    _lookup(sub.args[0], sub.args[1], refs, selves)
            elif isinstance(sub.func, ast.Attribute):
                receiver = sub.func.value
                if (isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name)
                        and receiver.func.id == "super"):
                    refs.super_calls.add(sub.func.attr)
                elif not (isinstance(receiver, ast.Name) and receiver.id in selves):
                    refs.attr_calls.add(sub.func.attr)


def _lookup(receiver: ast.expr, name: ast.expr, refs: Refs, selves: set[str]) -> None:
    """Record ``getattr(receiver, name)``: a constant name reads like ``receiver.name``; a variable name is kept
    for the caller that knows its value (a closure cell)."""
    chain = dotted_name(receiver)
    holder = tuple(("self" if chain[0] in selves else chain[0], *chain[1:])) if chain else None
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        refs.lookups.append((holder, name.value, None))
        if holder == ("self",):
            refs.self_attrs.add(name.value)
        else:
            refs.attr_calls.add(name.value)
    elif isinstance(name, ast.Name):
        refs.lookups.append((holder, None, name.id))


def function_refs(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Refs:
    """Names a function uses: in its decorators and defaults (read at definition), its body, and its signature's
    annotations (shown so the reader knows the types; never needed at definition: they are not evaluated)."""
    refs = Refs()
    args = node.args
    functions = [node, *(s for stmt in node.body for s in ast.walk(stmt)
                         if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)))]
    firsts = [(f.args.posonlyargs + f.args.args)[:1] for f in functions]
    selves = {first[0].arg for first in firsts if first and first[0].arg in ("self", "cls")}
    at_definition = [*node.decorator_list, *args.defaults, *(d for d in args.kw_defaults if d is not None)]
    scan(at_definition, refs, selves, set())
    refs.at_definition = set(refs.names)
    scan(list(node.body), refs, selves, local_names(node))
    hints = [a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
             if a is not None and a.annotation is not None] + ([node.returns] if node.returns is not None else [])
    scan(hints, refs, set(), set())  # shown for the reader (the type names), not read when the code runs
    return refs


def class_level_refs(node: ast.ClassDef, members: list[ast.stmt] | None = None) -> Refs:
    """Names a class statement reads when it runs: bases, keywords, decorators and its body's statements
    (methods: decorators and defaults; field annotations count: pydantic and dataclasses read them)."""
    refs = Refs()
    header = [*node.bases, *(k.value for k in node.keywords), *node.decorator_list]
    scan(header, refs, set(), set())
    for stmt in node.body if members is None else members:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = function_refs(stmt)
            refs.names |= inner.at_definition
        elif isinstance(stmt, ast.ClassDef):
            refs.names |= class_level_refs(stmt).names
        else:
            scan([stmt], refs, set(), set())
    refs.at_definition = set(refs.names)
    return refs

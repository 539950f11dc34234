"""Static read analysis of a tool's code: which parts of the state a call can read.

The analyser walks the tool function's AST (and the helpers the code defines) with abstract values:

* ``Node(paths)``: the state value at one of these full-state paths (``data``/``self`` is the root,
  ``self.x`` is ``("x",)``);
* ``Known(values)``: concrete candidate values (argument values, literals, module constants, values
  read from the state when a state value is used as a key — references followed record to record);
* ``Seq(elem)`` / ``DictV(items)`` / ``TupleV(items)``: containers built by the code;
* ``UNKNOWN``.

The tool is never run: statements are interpreted abstractly, only pure operations on known argument
values are folded (f-strings, arithmetic, ``str`` methods), and the state is only *read* to follow
references (``users[order["user_id"]]``) and to filter scans (``for u in users.values(): if
u["email"] == email``: only matching records are kept, with a filter note for the rest). The result
is a :class:`ReadNeeds`: subtrees needed whole, containers whose key set is needed, membership
answers and filter notes. ``envsim.envs.views.view`` turns it into a :class:`View`.
"""

from __future__ import annotations

import ast
import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

Path = tuple  # a full-state path: str keys for dicts, int indices for lists

#: Most candidate values kept for one known value before it widens to UNKNOWN.
MAX_KNOWN = 64
#: Deepest helper-call nesting analysed.
MAX_CALL_DEPTH = 6
#: Most statements interpreted for one call (the budget of the fixpoint).
MAX_STEPS = 20000

_PURE_STR_METHODS = {"lower", "upper", "strip", "lstrip", "rstrip", "casefold", "title", "capitalize",
                     "startswith", "endswith", "split", "replace", "join", "format", "isdigit"}
_CASE_FOLDS = {"lower", "upper", "casefold", "strip", "lstrip", "rstrip"}
_PURE_BUILTINS = {"int": int, "float": float, "str": str, "round": round, "abs": abs, "len": len,
                  "bool": bool, "min": min, "max": max, "sorted": sorted, "sum": sum, "tuple": tuple,
                  "list": list, "set": set}
_MUTATORS_NO_READ = {"append", "extend", "add", "insert", "appendleft"}


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


@dataclass(frozen=True)
class Node:
    """The state value at one of ``paths``."""
    paths: frozenset


@dataclass(frozen=True)
class Known:
    """One of the concrete ``values`` (a tuple, deduplicated)."""
    values: tuple


@dataclass(frozen=True)
class Seq:
    """A sequence built by the code whose elements are ``elem``."""
    elem: Any


@dataclass(frozen=True)
class DictV:
    """A dict literal built by the code: ``items`` maps known keys to abstract values."""
    items: tuple


@dataclass(frozen=True)
class TupleV:
    """A tuple of abstract values (for unpacking)."""
    items: tuple


@dataclass(frozen=True)
class ItemsOf:
    """``node.items()`` (pairs of key and child)."""
    node: Node


@dataclass
class FilterNote:
    """A scan of ``collection`` kept only the records whose ``field`` compares equal to ``values``."""
    collection: Path
    field: tuple
    values: tuple
    casefold: bool
    matched: list

    def text(self) -> str:
        """The note as the view shows it."""
        target = _short(list(self.values)) if len(self.values) != 1 else _short(self.values[0])
        how = " (ignoring case and surrounding spaces)" if self.casefold else ""
        shown = ", ".join(_short(k) for k in self.matched) if self.matched else "none"
        return (f"{pointer(self.collection)}: records whose {'.'.join(map(str, self.field))} equals {target}{how}: "
                f"{shown}; no other record matches.")


@dataclass
class ReadNeeds:
    """What a call can read, as full-state paths."""
    full: set = field(default_factory=set)        # subtrees needed whole
    keys: set = field(default_factory=set)        # containers whose key set is needed
    absent: set = field(default_factory=set)      # (container path, key) pairs that do not exist
    filters: list = field(default_factory=list)   # FilterNote
    reach: set = field(default_factory=set)       # containers written to: present in the view, maybe empty
    scan_fields: set = field(default_factory=set)  # (collection, field) a scan tests on each record it visits
    widened: list = field(default_factory=list)   # reasons the analysis had to widen

    def add_filter(self, note: FilterNote) -> None:
        """Record ``note``, merging with an equal filter seen before."""
        for old in self.filters:
            if (old.collection, old.field, old.values, old.casefold) == (note.collection, note.field, note.values,
                                                                       note.casefold):
                old.matched = sorted(set(old.matched) | set(note.matched), key=str)
                return
        self.filters.append(note)


def pointer(path: Iterable[Any]) -> str:
    """The JSON pointer of a path (``/orders/#W1/status``; the root is ``/``)."""
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts) if parts else "/"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


def _dedupe(values: Iterable[Any]) -> tuple:
    seen: dict[str, Any] = {}
    for v in values:
        try:
            key = json.dumps(v, sort_keys=True, default=repr)
        except (TypeError, ValueError):
            key = repr(v)
        seen.setdefault(key, v)
    return tuple(seen.values())


def known(*values: Any) -> Any:
    """A ``Known`` of ``values`` (UNKNOWN when there are too many)."""
    vals = _dedupe(values)
    return Known(vals) if len(vals) <= MAX_KNOWN else UNKNOWN


def _union(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None or a == b:
        return a
    if isinstance(a, Node) and isinstance(b, Node):
        return Node(a.paths | b.paths)
    if isinstance(a, Known) and isinstance(b, Known):
        return known(*a.values, *b.values)
    if isinstance(a, Seq) and isinstance(b, Seq):
        return Seq(_union(a.elem, b.elem))
    return UNKNOWN if not (isinstance(a, Node) or isinstance(b, Node)) else _Mixed.of(a, b)


class _Mixed:
    """A union that holds state nodes and something else: used values still mark the nodes."""

    @staticmethod
    def of(a: Any, b: Any) -> Any:
        nodes = [x for x in (a, b) if isinstance(x, Node)]
        return Node(frozenset().union(*(n.paths for n in nodes)))


class _Return(Exception):
    pass


class ReadAnalyzer:
    """Abstract interpreter of one tool call over one state (read only)."""

    def __init__(self, state: Any, source: str, root_names: tuple[str, ...] = ("self", "data")) -> None:
        self.state = state
        self.needs = ReadNeeds()
        self.root_names = root_names
        self.module = ast.parse(source)
        self.functions: dict[str, ast.FunctionDef] = {}
        self.constants: dict[str, Any] = {}
        self._collect(self.module.body)
        self.steps = 0
        self.depth = 0
        self._loop_vars: set[str] = set()
        self._pairs: dict[str, str] = {}  # value variable -> key variable of a ``for k, v in d.items()``
        self.written: dict[Path, list] = {}  # state path -> abstract values the call may have written there
        self._derefs: set = set()

    # -- set-up -------------------------------------------------------------------------------------
    def _collect(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(stmt.name, stmt)
            elif isinstance(stmt, ast.ClassDef):
                self._collect(stmt.body)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                try:
                    self.constants[stmt.targets[0].id] = ast.literal_eval(stmt.value)
                except (ValueError, SyntaxError, TypeError):
                    pass

    def entry(self, tool_name: str) -> ast.FunctionDef | None:
        """The function the call runs: ``invoke`` (τ-bench), the tool's own name, or the first one."""
        for name in ("invoke", tool_name):
            if name in self.functions:
                return self.functions[name]
        return next(iter(self.functions.values()), None)

    def analyse(self, tool_name: str, arguments: dict[str, Any]) -> ReadNeeds:
        """Analyse the call ``tool_name(**arguments)`` and return what it can read."""
        func = self.entry(tool_name)
        if func is None:
            self.needs.widened.append("no function in the tool code: whole state")
            self.needs.full.add(())
            return self.needs
        params = [a.arg for a in func.args.args]
        env: dict[str, Any] = {}
        defaults = dict(zip(params[len(params) - len(func.args.defaults):], func.args.defaults))
        for i, name in enumerate(params):
            if i == 0 and name in self.root_names:
                env[name] = Node(frozenset({()}))
            elif name in arguments:
                env[name] = known(arguments[name])
            elif name in defaults:
                env[name] = self._literal(defaults[name])
            else:
                env[name] = UNKNOWN
        for arg, default in zip(func.args.kwonlyargs, func.args.kw_defaults):
            env[arg.arg] = known(arguments[arg.arg]) if arg.arg in arguments else (
                self._literal(default) if default is not None else UNKNOWN)
        try:
            self._run_body(func.body, env)
            self.use(env.get("<return>"))  # the observation is the returned value, read whole
        except _Return:
            pass
        except _Budget:
            self.needs.widened.append(f"analysis budget ({MAX_STEPS} steps) spent: whole state")
            self.needs.full.add(())
        return self.needs

    def _literal(self, node: ast.AST) -> Any:
        try:
            return known(ast.literal_eval(node))
        except (ValueError, SyntaxError, TypeError):
            return UNKNOWN

    # -- state access -------------------------------------------------------------------------------
    def at(self, path: Path) -> Any:
        """The state value at ``path`` (``KeyError``/``IndexError``/``TypeError`` when absent)."""
        value = self.state
        for key in path:
            value = value[key]
        return value

    def use(self, value: Any) -> None:
        """``value`` is read whole: its state nodes are needed as full subtrees."""
        if isinstance(value, Node):
            self.needs.full.update(value.paths)
        elif isinstance(value, Seq):
            self.use(value.elem)
        elif isinstance(value, (DictV, TupleV)):
            for item in value.items:
                self.use(item[1] if isinstance(value, DictV) else item)
        elif isinstance(value, ItemsOf):
            self.use(value.node)

    def deref(self, value: Any) -> Any:
        """``value`` as concrete candidates: state nodes are read (and needed) to follow references."""
        if isinstance(value, Known):
            return value
        if isinstance(value, Node):
            self.use(value)
            out = []
            for p in value.paths:
                try:
                    out.append(self.at(p))
                except (KeyError, IndexError, TypeError):
                    pass
                for written in self.written.get(p, ()):  # values the call may have written there before
                    if p in self._derefs:  # a write that refers back to itself: not followed
                        return UNKNOWN
                    self._derefs.add(p)
                    try:
                        later = self.deref(written)
                    finally:
                        self._derefs.discard(p)
                    if not isinstance(later, Known):
                        return UNKNOWN
                    out.extend(later.values)
            return known(*out)
        return UNKNOWN

    def write(self, target: Any, key: Any, value: Any) -> None:
        """``target[key] = value`` on the state: later reads of that path may see ``value`` too (writes add
        candidates, never remove them: branches are not told apart)."""
        if not (isinstance(target, Node) and isinstance(key, Known)):
            return
        for p in target.paths:
            for k in key.values:
                if isinstance(k, (str, int, bool)):
                    self.written.setdefault(p + (k,), []).append(value)

    def _write_target(self, target: ast.expr, value: Any, env: dict[str, Any]) -> None:
        """Record a write through a subscript (``x[k] = v``) or a state attribute (``self.x = v``)."""
        if isinstance(target, ast.Subscript):
            self.write(self.eval(target.value, env), self._index_value(target.slice, env), value)
        elif (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
              and target.value.id in self.root_names):
            self.write(self.eval(target.value, env), Known((target.attr,)), value)

    def children(self, node: Node) -> Node:
        """All children of the containers at ``node`` (their key sets are needed)."""
        out = set()
        for p in node.paths:
            try:
                container = self.at(p)
            except (KeyError, IndexError, TypeError):
                continue
            self.needs.keys.add(p)
            if isinstance(container, dict):
                out.update(p + (k,) for k in container)
            elif isinstance(container, list):
                self.needs.full.add(p)  # lists are shown whole
                out.update(p + (i,) for i in range(len(container)))
        return Node(frozenset(out))

    def subscript(self, base: Any, key: Any, *, default: Any = None, membership: bool = False) -> Any:
        """``base[key]`` (``base.get(key, default)`` when ``default`` is given)."""
        if isinstance(key, Node):
            key = self.deref(key)
        if isinstance(base, Node):
            if not isinstance(key, Known):
                return self.children(base)
            out = set()
            for p in base.paths:
                try:
                    container = self.at(p)
                except (KeyError, IndexError, TypeError):
                    continue
                for k in key.values:
                    if isinstance(container, dict):
                        if isinstance(k, (str, int, float, bool)) and k in container:
                            out.add(p + (k,))
                        elif isinstance(k, (str, int, float, bool)) or k is None:
                            self.needs.absent.add((p, k))
                    elif isinstance(container, list):
                        self.needs.full.add(p)
                        if isinstance(k, int) and -len(container) <= k < len(container):
                            out.add(p + (k % len(container),))
                    elif isinstance(container, str):
                        self.needs.full.add(p)
            result: Any = Node(frozenset(out))
            if default is not None:
                result = _union(result, default) if out else default
            return result
        if isinstance(base, DictV) and isinstance(key, Known):
            items = dict((k, v) for k, v in base.items)
            vals = [items[k] for k in key.values if isinstance(k, (str, int)) and k in items]
            result = None
            for v in vals:
                result = _union(result, v)
            return result if result is not None else (default or UNKNOWN)
        if isinstance(base, Seq):
            return base.elem
        if isinstance(base, TupleV):
            if isinstance(key, Known) and all(isinstance(k, int) for k in key.values):
                result = None
                for k in key.values:
                    if -len(base.items) <= k < len(base.items):
                        result = _union(result, base.items[k])
                return result if result is not None else UNKNOWN
            result = None
            for item in base.items:
                result = _union(result, item)
            return result or UNKNOWN
        if isinstance(base, Known) and isinstance(key, Known):
            out_vals = []
            for b, k in itertools.product(base.values, key.values):
                try:
                    if isinstance(k, slice):
                        out_vals.append(b[k])
                    elif isinstance(b, dict):
                        if k in b:
                            out_vals.append(b[k])
                        elif default is not None and isinstance(default, Known):
                            out_vals.extend(default.values)
                    else:
                        out_vals.append(b[k])
                except (KeyError, IndexError, TypeError):
                    continue
            return known(*out_vals)
        if isinstance(base, Known) and not isinstance(key, Known):
            elems = []
            for b in base.values:
                if isinstance(b, dict):
                    elems.extend(b.values())
                elif isinstance(b, (list, tuple)):
                    elems.extend(b)
                else:
                    return UNKNOWN
            return known(*elems)
        return UNKNOWN

    def iterate(self, value: Any) -> Any:
        """The abstract element of iterating over ``value``."""
        if isinstance(value, Node):
            return self.children(value)
        if isinstance(value, ItemsOf):
            kids = self.children(value.node)
            return TupleV((known(*(p[-1] for p in kids.paths)), kids))
        if isinstance(value, Seq):
            return value.elem
        if isinstance(value, Known):
            elems = []
            for v in value.values:
                if isinstance(v, dict):
                    elems.extend(v.keys())
                elif isinstance(v, (list, tuple, set, str)):
                    elems.extend(v)
                else:
                    return UNKNOWN
            return known(*elems)
        if isinstance(value, DictV):
            return known(*(k for k, _ in value.items))
        if isinstance(value, TupleV):
            result = None
            for item in value.items:
                result = _union(result, item)
            return result or UNKNOWN
        return UNKNOWN

    # -- statements ---------------------------------------------------------------------------------
    def _run_body(self, body: list[ast.stmt], env: dict[str, Any]) -> None:
        for stmt in body:
            self._stmt(stmt, env)

    def _tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _Budget()

    def _stmt(self, stmt: ast.stmt, env: dict[str, Any]) -> None:
        self._tick()
        if isinstance(stmt, ast.Expr):
            self._expr_used(stmt.value, env)
        elif isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value, env)
            for target in stmt.targets:
                self._assign(target, value, env)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self._assign(stmt.target, self.eval(stmt.value, env), env)
        elif isinstance(stmt, ast.AugAssign):
            old, rhs = self.eval(stmt.target, env), self.eval(stmt.value, env)
            self.use(old)
            self.use(rhs)
            new = self._fold(lambda a, b: _binop(stmt.op, a, b), [self.deref(old), self.deref(rhs)])
            if isinstance(stmt.target, ast.Name):
                env[stmt.target.id] = new
            else:
                self._write_target(stmt.target, new, env)
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None:
                value = self.eval(stmt.value, env)
                env["<return>"] = _union(env.get("<return>"), value)
        elif isinstance(stmt, ast.If):
            self._if(stmt, env)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._for(stmt, env)
        elif isinstance(stmt, ast.While):
            for _ in range(2):
                self._expr_used(stmt.test, env)
                self._run_body(stmt.body, env)
            self._run_body(stmt.orelse, env)
        elif isinstance(stmt, ast.Try):
            self._run_body(stmt.body, env)
            for handler in stmt.handlers:
                self._run_body(handler.body, env)
            self._run_body(stmt.orelse, env)
            self._run_body(stmt.finalbody, env)
        elif isinstance(stmt, ast.With):
            for item in stmt.items:
                self.use(self.eval(item.context_expr, env))
            self._run_body(stmt.body, env)
        elif isinstance(stmt, ast.Raise):
            if stmt.exc is not None:
                self._expr_used(stmt.exc, env)
        elif isinstance(stmt, ast.Assert):
            self._expr_used(stmt.test, env)
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                if isinstance(target, ast.Subscript):
                    self.use(self.eval(target.value, env))
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            self._collect([stmt])
        # pass, break, continue, import, global: nothing read

    def _expr_used(self, node: ast.expr, env: dict[str, Any]) -> None:
        self.use(self.eval(node, env))

    def _assign(self, target: ast.expr, value: Any, env: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, elt in enumerate(target.elts):
                if isinstance(value, TupleV) and len(value.items) == len(target.elts):
                    part = value.items[i]
                elif isinstance(value, Known):
                    part = self.subscript(value, Known((i,)))
                else:
                    part = self.subscript(value, UNKNOWN) if isinstance(value, (Seq, TupleV)) else UNKNOWN
                    if isinstance(value, Node):
                        part = self.children(value)
                self._assign(elt, part, env)
        elif isinstance(target, ast.Subscript):
            # a write: the container is reached (present in the view, not read whole); a computed key is
            # evaluated; the value written is read whole (it goes into the patch or the observation)
            container = self.eval(target.value, env)
            self._index_value(target.slice, env)
            if isinstance(container, Node):
                self.needs.reach.update(container.paths)
            self.use(value)
            self._write_target(target, value, env)
        elif isinstance(target, ast.Attribute):
            self.eval(target.value, env)
            self.use(value)
            self._write_target(target, value, env)
        elif isinstance(target, ast.Starred):
            self._assign(target.value, Seq(self.iterate(value)), env)

    def _if(self, stmt: ast.If, env: dict[str, Any]) -> None:
        narrowed = None if stmt.orelse else self._narrow(stmt.test, env)
        if narrowed is not None:
            inner = dict(env)
            inner.update(narrowed)
            self._expr_used(stmt.test, inner)
            self._run_body(stmt.body, inner)
            for name, value in inner.items():
                if name not in narrowed and inner[name] is not env.get(name):
                    env[name] = _union(env.get(name), value)
            return
        test = self.eval(stmt.test, env)
        self.use(test)
        self._run_body(stmt.body, env)
        self._run_body(stmt.orelse, env)

    def _note_pair(self, target: ast.expr, iterable: Any) -> None:
        """Remember ``k, v`` of ``for k, v in d.items()``: narrowing ``v`` narrows ``k`` with it."""
        if (isinstance(iterable, ItemsOf) and isinstance(target, ast.Tuple) and len(target.elts) == 2
                and all(isinstance(e, ast.Name) for e in target.elts)):
            self._pairs[target.elts[1].id] = target.elts[0].id

    def _for(self, stmt: ast.For, env: dict[str, Any]) -> None:
        iterable = self.eval(stmt.iter, env)
        self._note_pair(stmt.target, iterable)
        elem = self.iterate(iterable)
        names = {n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)}
        self._loop_vars |= names
        for _ in range(2):  # a second pass lets values assigned in the body reach the next iteration
            self._assign(stmt.target, elem, env)
            self._run_body(stmt.body, env)
        self._run_body(stmt.orelse, env)

    # -- filters (scan narrowing) -------------------------------------------------------------------
    def _narrow(self, test: ast.expr, env: dict[str, Any]) -> dict[str, Any] | None:
        """Bindings of loop variables narrowed by the equality conjuncts of ``test`` (None: no narrowing)."""
        conjuncts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        narrowed: dict[str, Any] = {}
        for conj in conjuncts:
            reached = dict(env)
            reached.update(narrowed)  # a conjunct is read on the records the earlier conjuncts let through
            if not (isinstance(conj, ast.Compare) and len(conj.ops) == 1 and isinstance(conj.ops[0], ast.Eq)):
                self.use(self.eval(conj, reached))
                continue
            for var_side, other in ((conj.left, conj.comparators[0]), (conj.comparators[0], conj.left)):
                split = self._var_field(var_side)
                if split is None:
                    continue
                name, fields, folded = split
                current = narrowed.get(name, env.get(name))
                if name not in self._loop_vars or not isinstance(current, Node) or not current.paths:
                    continue
                if name in {n.id for n in ast.walk(other) if isinstance(n, ast.Name)}:
                    continue
                other_known = self.deref(self._strip_fold(other, reached))
                if not isinstance(other_known, Known):
                    continue
                folded = folded or self._is_folded(other)
                # records narrowed by an earlier conjunct are shown: the code reads this field on each of them
                narrowed[name] = self._filter(current, fields, other_known.values, folded, show_all=name in narrowed)
                if name in self._pairs:
                    narrowed[self._pairs[name]] = Known(_dedupe(p[-1] for p in narrowed[name].paths))
                break
            else:  # an equality that narrows nothing is read like any other conjunct
                self.use(self.eval(conj, reached))
        return narrowed or None

    def _strip_fold(self, node: ast.expr, env: dict[str, Any]) -> Any:
        while (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr in _CASE_FOLDS and not node.args):
            node = node.func.value
        return self.eval(node, env)

    @staticmethod
    def _is_folded(node: ast.expr) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _CASE_FOLDS)

    def _var_field(self, node: ast.expr) -> tuple[str, tuple, bool] | None:
        """``var["a"]["b"]`` (optionally ``.lower()``...) as (var, ("a", "b"), folded)."""
        folded = False
        while (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr in _CASE_FOLDS and not node.args):
            folded, node = True, node.func.value
        fields: list[Any] = []
        while True:
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                fields.append(node.slice.value)
                node = node.value
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                  and node.args and isinstance(node.args[0], ast.Constant)):
                fields.append(node.args[0].value)
                node = node.func.value
            else:
                break
        if isinstance(node, ast.Name) and fields:
            return node.id, tuple(reversed(fields)), folded
        return None

    def _filter(self, current: Node, fields: tuple, values: tuple, folded: bool, show_all: bool = False) -> Node:
        def norm(v: Any) -> Any:
            return v.strip().casefold() if folded and isinstance(v, str) else v

        wanted = [norm(v) for v in values]
        matched: set = set()
        by_parent: dict[Path, list] = {}
        for p in current.paths:
            try:
                value = self.at(p + fields)
            except (KeyError, IndexError, TypeError):
                self.needs.full.add(p)  # the code would fail here: show the record
                matched.add(p)
                continue
            if any(norm(value) == w for w in wanted):
                matched.add(p)
                self.needs.full.add(p + fields)
            elif show_all:
                self.needs.full.add(p + fields)
            by_parent.setdefault(p[:-1], []).append(p)
        self.needs.scan_fields.update((parent, fields) for parent in by_parent)
        for parent, members in ([] if show_all else by_parent.items()):  # shown fields need no note
            keys = [m[-1] for m in members if m in matched]
            self.needs.add_filter(FilterNote(parent, fields, tuple(values), folded, keys))
        return Node(frozenset(matched))

    # -- expressions --------------------------------------------------------------------------------
    def _index_value(self, node: ast.expr, env: dict[str, Any]) -> Any:
        if isinstance(node, ast.Slice):
            parts = [self.deref(self.eval(x, env)) if x is not None else known(None)
                     for x in (node.lower, node.upper, node.step)]
            if all(isinstance(p, Known) and len(p.values) == 1 for p in parts):
                return Known((slice(*(p.values[0] for p in parts)),))
            return UNKNOWN
        return self.eval(node, env)

    def eval(self, node: ast.expr, env: dict[str, Any]) -> Any:
        """The abstract value of expression ``node`` (reads it makes are recorded; nothing runs)."""
        self._tick()
        if isinstance(node, ast.Constant):
            return Known((node.value,))
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in self.constants:
                return known(self.constants[node.id])
            if node.id in ("True", "False", "None"):
                return known({"True": True, "False": False, "None": None}[node.id])
            return UNKNOWN
        if isinstance(node, ast.Attribute):
            base = self.eval(node.value, env)
            if (isinstance(node.value, ast.Name) and node.value.id in self.root_names and isinstance(base, Node)
                    and base.paths == frozenset({()})):
                return self.subscript(base, Known((node.attr,)))
            return UNKNOWN
        if isinstance(node, ast.Subscript):
            return self.subscript(self.eval(node.value, env), self._index_value(node.slice, env))
        if isinstance(node, ast.Compare):
            return self._compare(node, env)
        if isinstance(node, ast.BoolOp):
            vals = [self.eval(v, env) for v in node.values]
            for v in vals:
                self.use(v)
            return self._fold(lambda *xs: _boolop(node.op, xs), vals)
        if isinstance(node, ast.BinOp):
            left, right = self.eval(node.left, env), self.eval(node.right, env)
            self.use(left)
            self.use(right)
            return self._fold(lambda a, b: _binop(node.op, a, b), [left, right])
        if isinstance(node, ast.UnaryOp):
            operand = self.eval(node.operand, env)
            self.use(operand)
            return self._fold(lambda a: _unaryop(node.op, a), [operand])
        if isinstance(node, ast.IfExp):
            self.use(self.eval(node.test, env))
            return _union(self.eval(node.body, env), self.eval(node.orelse, env))
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                if isinstance(value, ast.FormattedValue):  # a state value is read and formatted as written
                    raw = self.eval(value.value, env)
                    self.use(raw)
                    v = self.deref(raw)
                    parts.append(self._fold(lambda x, f=value: _format(f, x), [v]))
                else:
                    parts.append(self.eval(value, env))
            return self._fold(lambda *xs: "".join(str(x) for x in xs), parts)
        if isinstance(node, ast.FormattedValue):
            v = self.eval(node.value, env)
            self.use(v)
            return UNKNOWN
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self.eval(e, env) for e in node.elts]
            if all(isinstance(i, Known) and len(i.values) == 1 for i in items):
                vals = [i.values[0] for i in items]
                return Known((tuple(vals) if isinstance(node, ast.Tuple) else vals,))
            if isinstance(node, ast.Tuple):
                return TupleV(tuple(items))
            elem = None
            for i in items:
                elem = _union(elem, i)
            return Seq(elem if elem is not None else UNKNOWN)
        if isinstance(node, ast.Dict):
            pairs = []
            for k, v in zip(node.keys, node.values):
                value = self.eval(v, env)
                key = self.eval(k, env) if k is not None else UNKNOWN
                if isinstance(key, Known) and len(key.values) == 1:
                    pairs.append((key.values[0], value))
                else:
                    self.use(value)
                    self.use(key)
            if all(isinstance(v, Known) and len(v.values) == 1 for _, v in pairs) and len(pairs) == len(node.keys):
                try:
                    return Known(({k: v.values[0] for k, v in pairs},))
                except TypeError:
                    pass
            return DictV(tuple(pairs))
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return Seq(self._comprehension(node.generators, [node.elt], env)[0])
        if isinstance(node, ast.DictComp):
            key, value = self._comprehension(node.generators, [node.key, node.value], env)
            self.use(key)
            self.use(value)
            return UNKNOWN
        if isinstance(node, ast.Call):
            return self._call(node, env)
        if isinstance(node, ast.NamedExpr):
            value = self.eval(node.value, env)
            env[node.target.id] = value
            return value
        if isinstance(node, ast.Starred):
            return self.eval(node.value, env)
        if isinstance(node, ast.Lambda):
            return UNKNOWN
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.use(self.eval(child, env))
        return UNKNOWN

    def _fold(self, fn: Any, args: list[Any]) -> Any:
        """Fold a pure operation over known candidates (UNKNOWN if any is unknown or it fails)."""
        if not all(isinstance(a, Known) for a in args):
            return UNKNOWN
        combos = list(itertools.islice(itertools.product(*(a.values for a in args)), MAX_KNOWN + 1))
        if len(combos) > MAX_KNOWN:
            return UNKNOWN
        out = []
        for combo in combos:
            try:
                out.append(fn(*combo))
            except Exception:  # noqa: BLE001 - a failing pure fold is just not known
                continue
        return known(*out) if out else UNKNOWN

    def _compare(self, node: ast.Compare, env: dict[str, Any]) -> Any:
        left = self.eval(node.left, env)
        values = [left]
        for op, comp in zip(node.ops, node.comparators):
            right = self.eval(comp, env)
            if isinstance(op, (ast.In, ast.NotIn)):
                self._membership(left, right)
                if isinstance(right, Known):
                    values.append(right)
                else:
                    values.append(UNKNOWN)
            else:
                self.use(left)
                self.use(right)
                values.append(right)
            left = right
        if len(node.ops) == 1 and all(isinstance(v, Known) for v in values):
            op = node.ops[0]
            return self._fold(lambda a, b: _cmpop(op, a, b), values)
        return UNKNOWN

    def _membership(self, item: Any, container: Any) -> None:
        """``item in container``: a key test on a state dict becomes a membership answer."""
        if isinstance(container, Node):
            key = self.deref(item)
            if isinstance(key, Known):
                for p in container.paths:
                    try:
                        target = self.at(p)
                    except (KeyError, IndexError, TypeError):
                        continue
                    if isinstance(target, dict):
                        for k in key.values:
                            if isinstance(k, (str, int, float, bool)) and k in target:
                                self.needs.full.add(p + (k,))
                            elif isinstance(k, (str, int, float, bool)) or k is None:
                                self.needs.absent.add((p, k))
                    else:
                        self.needs.full.add(p)
            else:
                self.use(item)
                self.needs.keys.update(container.paths)
                for p in container.paths:
                    try:
                        if not isinstance(self.at(p), dict):
                            self.needs.full.add(p)
                    except (KeyError, IndexError, TypeError):
                        continue
        else:
            self.use(item)
            self.use(container)

    def _comprehension(self, generators: list[ast.comprehension], elts: list[ast.expr],
                       env: dict[str, Any]) -> list[Any]:
        inner = dict(env)
        for gen in generators:
            iterable = self.eval(gen.iter, inner)
            self._note_pair(gen.target, iterable)
            names = {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
            self._loop_vars |= names
            if isinstance(iterable, ItemsOf) and gen.ifs and self._key_only(gen, names):
                self._items_by_key(gen, iterable, inner)
                continue
            self._assign(gen.target, self.iterate(iterable), inner)
            for cond in gen.ifs:
                narrowed = self._narrow(cond, inner)
                if narrowed:
                    inner.update(narrowed)
                self.use(self.eval(cond, inner))
        return [self.eval(e, inner) for e in elts]

    def _key_only(self, gen: ast.comprehension, names: set[str]) -> bool:
        """Whether the filters of an ``.items()`` comprehension only look at the key variable."""
        if not (isinstance(gen.target, ast.Tuple) and len(gen.target.elts) == 2
                and isinstance(gen.target.elts[0], ast.Name)):
            return False
        key_name = gen.target.elts[0].id
        used = {n.id for cond in gen.ifs for n in ast.walk(cond) if isinstance(n, ast.Name)}
        return key_name in used and not (used & (names - {key_name}))

    def _items_by_key(self, gen: ast.comprehension, iterable: ItemsOf, env: dict[str, Any]) -> None:
        """Bind ``k, v`` over the children whose key passes the key-only filters."""
        kids = self.children(iterable.node)
        keep = []
        key_name = gen.target.elts[0].id
        for p in kids.paths:
            trial = dict(env)
            trial[key_name] = Known((p[-1],))
            verdicts = [self.eval(cond, trial) for cond in gen.ifs]
            if all(not (isinstance(v, Known) and v.values and not any(v.values)) for v in verdicts):
                keep.append(p)
        self._assign(gen.target, TupleV((known(*(p[-1] for p in keep)), Node(frozenset(keep)))), env)

    def _lambdas(self, node: ast.Call, over: Any, env: dict[str, Any]) -> None:
        """Reads of the lambdas passed to a call (``sorted(xs, key=lambda r: r["score"])``): each parameter
        is bound to an element of ``over``."""
        lambdas = [a for a in list(node.args) + [kw.value for kw in node.keywords] if isinstance(a, ast.Lambda)]
        if not lambdas:
            return
        elem = self.iterate(over) if over is not None else UNKNOWN
        for lam in lambdas:
            inner = dict(env)
            for arg in lam.args.args:
                inner[arg.arg] = elem
            self.use(self.eval(lam.body, inner))

    def _call(self, node: ast.Call, env: dict[str, Any]) -> Any:
        func = node.func
        if isinstance(func, ast.Attribute):
            base = self.eval(func.value, env)
            args = [self.eval(a, env) for a in node.args]
            method = func.attr
            self._lambdas(node, base if method == "sort" else next(
                (a for a, n in zip(args, node.args) if not isinstance(n, ast.Lambda)), None), env)
            if (isinstance(func.value, ast.Name) and func.value.id in self.root_names
                    and method in self.functions):
                fn = self.functions[method]
                static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
                return self._call_function(fn, args if static else [base] + args, node, env)
            if method == "get" and args:
                default = args[1] if len(args) > 1 else Known((None,))
                return self.subscript(base, args[0], default=default)
            if isinstance(base, Node):
                if method == "items":
                    return ItemsOf(base)
                if method == "values":
                    return Seq(self.children(base))
                if method == "keys":
                    kids = self.children(base)
                    return Seq(known(*(p[-1] for p in kids.paths)))
                if method in _MUTATORS_NO_READ:
                    for a in args:
                        self.use(a)
                    for p in base.paths:  # a list grown in place is shown whole (its new indices are known)
                        try:
                            (self.needs.full if isinstance(self.at(p), list) else self.needs.reach).add(p)
                        except (KeyError, IndexError, TypeError):
                            continue
                    return known(None)
                if method in ("copy", "deepcopy"):
                    return base
                if method in ("setdefault", "pop") and args:
                    result = self.subscript(base, args[0], default=args[1] if len(args) > 1 else None)
                    self.use(result)
                    for a in args[1:]:
                        self.use(a)
                    return result
            if isinstance(base, Known) and (method in _PURE_STR_METHODS or method in ("count", "index")):
                pure_args = [a for a in args]
                if all(isinstance(a, Known) for a in pure_args):
                    return self._fold(lambda b, *xs: getattr(b, method)(*xs), [base] + pure_args)
            if isinstance(base, ItemsOf):
                self.use(base)
                return UNKNOWN
            if method in _MUTATORS_NO_READ and not isinstance(base, Node):
                for a in args:
                    self.use(a)
                return known(None)
            self.use(base)
            for a in args:
                self.use(a)
            for kw in node.keywords:
                self.use(self.eval(kw.value, env))
            if isinstance(base, Node) and method in ("copy",):
                return base
            return UNKNOWN
        if isinstance(func, ast.Name):
            name = func.id
            if name in self.functions and name not in env:
                args = [self.eval(a, env) for a in node.args]
                return self._call_function(self.functions[name], args, node, env)
            args = [self.eval(a, env) for a in node.args]
            kwargs = {kw.arg: self.eval(kw.value, env) for kw in node.keywords}
            self._lambdas(node, next((a for a, n in zip(args, node.args) if not isinstance(n, ast.Lambda)), None), env)
            if name in ("deepcopy", "copy") and args:
                return args[0]
            if name == "zip":
                return Seq(TupleV(tuple(self.iterate(a) for a in args)))
            if name == "enumerate" and args:
                return Seq(TupleV((UNKNOWN, self.iterate(args[0]))))
            if name in ("list", "tuple", "sorted", "reversed", "set") and args and not isinstance(args[0], Known):
                if name == "sorted":
                    self.use(args[0])
                return Seq(self.iterate(args[0]))
            if name == "len" and args and isinstance(args[0], Node):
                self.children(args[0])
                return UNKNOWN
            if name == "next" and args:
                return self.iterate(args[0]) if not isinstance(args[0], Seq) else args[0].elem
            if name == "isinstance" and args:
                self.use(args[0])
                return UNKNOWN
            for a in list(args) + list(kwargs.values()):
                self.use(a)
            if name in _PURE_BUILTINS and not kwargs:
                return self._fold(_PURE_BUILTINS[name], args)
            return UNKNOWN
        self.use(self.eval(func, env))
        for a in node.args:
            self.use(self.eval(a, env))
        return UNKNOWN

    def _call_function(self, fn: ast.FunctionDef, args: list[Any], node: ast.Call, env: dict[str, Any]) -> Any:
        """Analyse a helper defined in the tool code with its parameters bound to ``args``."""
        kwargs = {kw.arg: self.eval(kw.value, env) for kw in node.keywords if kw.arg}
        if self.depth >= MAX_CALL_DEPTH:
            for a in list(args) + list(kwargs.values()):
                self.use(a)
            return UNKNOWN
        params = [a.arg for a in fn.args.args]
        inner: dict[str, Any] = {}
        defaults = dict(zip(params[len(params) - len(fn.args.defaults):], fn.args.defaults))
        for i, name in enumerate(params):
            if i < len(args):
                inner[name] = args[i]
            elif name in kwargs:
                inner[name] = kwargs[name]
            elif name in defaults:
                inner[name] = self._literal(defaults[name])
            else:
                inner[name] = UNKNOWN
        for arg, default in zip(fn.args.kwonlyargs, fn.args.kw_defaults):
            inner[arg.arg] = kwargs.get(arg.arg, self._literal(default) if default is not None else UNKNOWN)
        saved_loops, saved_pairs = self._loop_vars, self._pairs
        self._loop_vars, self._pairs = set(), {}
        self.depth += 1
        try:
            self._run_body(fn.body, inner)
        finally:
            self.depth -= 1
            self._loop_vars, self._pairs = saved_loops, saved_pairs
        return inner.get("<return>", known(None))


class _Budget(Exception):
    pass


def _boolop(op: ast.boolop, xs: tuple) -> Any:
    result = xs[0]
    for x in xs[1:]:
        result = (result and x) if isinstance(op, ast.And) else (result or x)
    return result


_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
           ast.Pow: lambda a, b: a ** b if abs(b) < 64 else None}


def _binop(op: ast.operator, a: Any, b: Any) -> Any:
    if isinstance(a, (list, tuple, dict, set)) or isinstance(b, (list, tuple, dict, set)):
        raise TypeError("containers are not folded")
    return _BINOPS[type(op)](a, b)


def _format(node: ast.FormattedValue, value: Any) -> str:
    """``value`` as an f-string field formats it (conversion and a constant format spec)."""
    value = {115: str, 114: repr, 97: ascii}.get(node.conversion, lambda x: x)(value)
    spec = node.format_spec
    if spec is None:
        return format(value)
    if not all(isinstance(p, ast.Constant) for p in spec.values):
        raise ValueError("computed format spec")
    return format(value, "".join(str(p.value) for p in spec.values))


def _unaryop(op: ast.unaryop, a: Any) -> Any:
    if isinstance(op, ast.Not):
        return not a
    if isinstance(op, ast.USub):
        return -a
    if isinstance(op, ast.UAdd):
        return +a
    return ~a


_CMPOPS = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
           ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
           ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b, ast.Is: lambda a, b: a is b,
           ast.IsNot: lambda a, b: a is not b}


def _cmpop(op: ast.cmpop, a: Any, b: Any) -> Any:
    return _CMPOPS[type(op)](a, b)


def analyse_reads(state: Any, tool_name: str, arguments: dict[str, Any], tool_source: str) -> ReadNeeds:
    """What the call ``tool_name(**arguments)`` can read from ``state``, by static analysis of ``tool_source``."""
    return ReadAnalyzer(state, tool_source).analyse(tool_name, arguments)


def iter_paths(needs: ReadNeeds) -> Iterator[Path]:
    """Every path the needs name (full subtrees, key sets, membership containers)."""
    yield from needs.full
    yield from needs.keys
    yield from (p for p, _ in needs.absent)

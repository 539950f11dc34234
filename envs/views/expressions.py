"""Evaluating expressions: folding, comparisons, membership and comprehensions."""

from __future__ import annotations

import ast
import itertools
from typing import Any

from envsim.envs.views.operators import _binop, _boolop, _cmpop, _format, _unaryop, fold_size
from envsim.envs.views.values import (
    MAX_FOLD_SIZE, MAX_KNOWN, UNKNOWN, DictV, ItemsOf, Known, Node, Seq, TupleV, _Raised, _union, known,
)


#: Attribute names of dicts and lists: ``orders.get`` is a method, never a field of a record.
_CONTAINER_METHODS = frozenset(dir(dict)) | frozenset(dir(list))


class ExpressionsMixin:
    """Evaluating expressions for :class:`~envsim.envs.views.analysis.ReadAnalyzer`."""

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
            if node.id in self.constants:  # a module constant: its candidate made once, not at every read
                if node.id not in self._constant_values:
                    self._constant_values[node.id] = known(self.constants[node.id])
                return self._constant_values[node.id]
            if node.id in ("True", "False", "None"):
                return known({"True": True, "False": False, "None": None}[node.id])
            return UNKNOWN
        if isinstance(node, ast.Attribute):
            base = self.eval(node.value, env)
            if (isinstance(node.value, ast.Name) and node.value.id in self.root_names and isinstance(base, Node)
                    and base.paths == frozenset({()})):
                if node.attr in self.handles:  # ``self.db``: the object model rebuilt from the whole state
                    return base
                if node.attr.startswith("_") and not (isinstance(self.state, dict) and node.attr in self.state):
                    return UNKNOWN  # a private attribute is never state (a toolkit object, a cache)
                return self.subscript(base, Known((node.attr,)))
            if isinstance(base, Node) and (node.attr not in _CONTAINER_METHODS or self._has_field(base, node.attr)):
                return self.subscript(base, Known((node.attr,)))  # a field of the dumped model: ``order.status``
            return UNKNOWN
        if isinstance(node, ast.Subscript):
            return self.subscript(self.eval(node.value, env), self._index_value(node.slice, env))
        if isinstance(node, ast.Compare):
            return self._compare(node, env)
        if isinstance(node, ast.BoolOp):
            vals = [self.eval(node.values[0], env)] + [self._eval_maybe(v, env) for v in node.values[1:]]
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
            return _union(self._eval_maybe(node.body, env), self._eval_maybe(node.orelse, env))
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
            try:  # the elements may never be computed (an empty collection): a raise there is not sure
                return Seq(self._comprehension(node.generators, [node.elt], env)[0])
            except _Raised:
                return Seq(UNKNOWN)
        if isinstance(node, ast.DictComp):
            try:
                key, value = self._comprehension(node.generators, [node.key, node.value], env)
            except _Raised:
                return UNKNOWN
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

    def _has_field(self, base: Node, name: str) -> bool:
        """Whether a record at one of ``base``'s paths has the field ``name`` (``order.items`` is a field, not
        ``dict.items``)."""
        for p in base.paths:
            try:
                value = self.at(p)
            except (KeyError, IndexError, TypeError):
                continue
            if isinstance(value, dict) and name in value:
                return True
        return False

    def _eval_maybe(self, node: ast.expr, env: dict[str, Any]) -> Any:
        """``eval`` of an expression that may not be evaluated (short-circuit, one branch): a raise is not sure."""
        try:
            return self.eval(node, env)
        except _Raised:
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
            self.work.charge(1 + sum(fold_size(x) for x in combo) // 256)
            try:
                value = fn(*combo)
            except Exception:  # noqa: BLE001 - a failing pure fold is just not known (FoldTooLarge included)
                continue
            if fold_size(value) <= MAX_FOLD_SIZE:  # a value past the bound (``str(record)``) is not kept
                out.append(value)
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
                elif len(node.ops) == 1 and isinstance(right, Node):
                    return self._membership_fold(left, right, isinstance(op, ast.NotIn))
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
        if all(isinstance(v, Known) and len(v.values) == 1 for v in values):  # ``1 <= rating <= 5``
            ops = node.ops
            return self._fold(lambda *xs: all(_cmpop(o, x, y) for o, x, y in zip(ops, xs, xs[1:])), values)
        return UNKNOWN

    def _membership_fold(self, item: Any, container: Node, negated: bool) -> Any:
        """``key in <state dict>`` as known booleans when the keys and dicts are known and the call wrote no
        key there (the answer then reads the same on the view: present keys are shown, absent ones noted)."""
        key = self.deref(item) if isinstance(item, Node) else item
        if not (isinstance(key, Known) and key.values and container.paths):
            return UNKNOWN
        verdicts = []
        for p in container.paths:
            self.work.charge(len(self.written))
            if any(w[:len(p)] == p and len(w) == len(p) + 1 for w in self.written):
                return UNKNOWN
            try:
                target = self.at(p)
            except (KeyError, IndexError, TypeError):
                return UNKNOWN
            if not isinstance(target, dict) or not all(isinstance(k, (str, int, float, bool)) for k in key.values):
                return UNKNOWN
            verdicts += [(k in target) != negated for k in key.values]
        return known(*verdicts)

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
        self.work.charge(len(env))  # a copy of the variables: paid like any other work
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
            self.work.charge(len(env))  # a copy of the variables: paid like any other work
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
            self.work.charge(len(env))  # a copy of the variables: paid like any other work
            inner = dict(env)
            for arg in lam.args.args:
                inner[arg.arg] = elem
            self.use(self._eval_maybe(lam.body, inner))

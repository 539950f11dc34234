"""Interpreting statements (assignments, branches, loops) and narrowing scans by filters."""

from __future__ import annotations

import ast
from typing import Any

from envsim.envs.views.operators import _CASE_FOLDS, _binop
from envsim.envs.views.values import (
    MAX_STEPS, UNKNOWN, FilterNote, ItemsOf, Known, Node, Path, Seq, TupleV, _Budget, _dedupe, _Raised, _union,
    truth,
)


class StatementsMixin:
    """Interpreting statements and narrowing scans for :class:`~envsim.envs.views.analysis.ReadAnalyzer`."""

    # -- statements ---------------------------------------------------------------------------------
    def _run_body(self, body: list[ast.stmt], env: dict[str, Any]) -> None:
        for stmt in body:
            self._stmt(stmt, env)

    def _tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _Budget()
        if not self.steps & 255:
            self.work.check_clock()

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
                if not self._maybe(stmt.body, env):
                    break
            self._maybe(stmt.orelse, env)
        elif isinstance(stmt, ast.Try):
            for body in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody):
                self._maybe(body, env)
        elif isinstance(stmt, ast.With):
            for item in stmt.items:
                self.use(self.eval(item.context_expr, env))
            self._run_body(stmt.body, env)
        elif isinstance(stmt, ast.Raise):
            if stmt.exc is not None:
                self._expr_used(stmt.exc, env)
            if "<return>" not in env:  # no path of this function returned before: the call ends here
                raise _Raised()
        elif isinstance(stmt, ast.Assert):
            self._expr_used(stmt.test, env)
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                if isinstance(target, ast.Subscript):
                    self.use(self.eval(target.value, env))
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            self._collect([stmt])
        # pass, break, continue, import, global: nothing read

    def _sure(self, test: ast.expr, value: Any, env: dict[str, Any]) -> bool | None:
        """``truth(value)`` of a branch test, unless the test names a local container (aliases or helpers may
        have changed it in place: its known value is not trusted to end the call)."""
        if any(isinstance(n, ast.Name) and _mutable_known(env.get(n.id)) for n in ast.walk(test)):
            return None
        return truth(value)

    def _maybe(self, body: list[ast.stmt], env: dict[str, Any]) -> bool:
        """Run a body that may not run (a loop pass, a handler, an unknown branch); ``False`` if it surely raised."""
        try:
            self._run_body(body, env)
        except _Raised:
            return False
        return True

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
            self.work.charge(len(env))  # a copy of the variables: paid like any other work
            inner = dict(env)
            inner.update(narrowed)
            self._expr_used(stmt.test, inner)
            self._maybe(stmt.body, inner)
            for name, value in inner.items():
                if name not in narrowed and inner[name] is not env.get(name):
                    env[name] = _union(env.get(name), value)
            return
        test = self.eval(stmt.test, env)
        self.use(test)
        verdict = self._sure(stmt.test, test, env)  # a branch surely taken that surely raises ends the call
        if not self._maybe(stmt.body, env) and verdict is True:
            raise _Raised()
        if not self._maybe(stmt.orelse, env) and verdict is False:
            raise _Raised()

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
            if not self._maybe(stmt.body, env):
                break
        self._maybe(stmt.orelse, env)

    # -- filters (scan narrowing) -------------------------------------------------------------------
    def _narrow(self, test: ast.expr, env: dict[str, Any]) -> dict[str, Any] | None:
        """Bindings of loop variables narrowed by the equality conjuncts of ``test`` (None: no narrowing)."""
        conjuncts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        narrowed: dict[str, Any] = {}
        for conj in conjuncts:
            self.work.charge(len(env))  # a copy of the variables: paid like any other work
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
            elif isinstance(node, ast.Attribute):  # ``user.email``: a field of the dumped model
                fields.append(node.attr)
                node = node.value
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
            keys = sorted((m[-1] for m in members if m in matched), key=self._state_position(parent))
            self.needs.add_filter(FilterNote(parent, fields, tuple(values), folded, keys))
        return Node(frozenset(matched))


def _mutable_known(value: Any) -> bool:
    """A known value that holds a list, dict or set (it can change in place)."""
    return isinstance(value, Known) and any(isinstance(v, (list, dict, set)) for v in value.values)

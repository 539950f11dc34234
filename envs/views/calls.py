"""Modelling calls: methods of state values, pure builtins and helper functions of the tool code."""

from __future__ import annotations

import ast
from typing import Any

from envsim.envs.views.operators import _MUTATORS_NO_READ, _PURE_BUILTINS, _PURE_STR_METHODS, check_str_method
from envsim.envs.views.values import MAX_CALL_DEPTH, UNKNOWN, ItemsOf, Known, Node, Seq, TupleV, known


class CallsMixin:
    """Modelling calls for :class:`~envsim.envs.views.analysis.ReadAnalyzer`."""

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
            if method in self.functions and not isinstance(base, (Node, Known, ItemsOf, Seq)):
                # a call handed to another object or class whose code the tool code holds
                # (``tools.GetOrder.invoke(data, ...)``, ``self._kit.lookup(key)``): a static function gets the
                # arguments; a method's ``self`` is taken to hold the same state (the root)
                fn = self.functions[method]
                static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
                return self._call_function(fn, args if static else [Node(frozenset({()}))] + args, node, env)
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
                    return self._fold(lambda b, *xs: check_str_method(b, method, xs) or getattr(b, method)(*xs),
                                      [base] + pure_args)
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
                counted = self.size(args[0])
                if counted is not None:
                    return counted
                self.children(args[0], whole_lists=True)
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
